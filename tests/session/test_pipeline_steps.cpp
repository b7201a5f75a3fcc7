// The teaching steps: one per step run_pipeline runs, in pipeline order, with text and a
// sentence built from what it decided, for the souffle and the unfused strategy; the kernel they
// show is the one compile builds and emits.
#include "core/session/pipeline_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "core/analysis/analysis.h"
#include "core/loop/stmt.h"
#include "core/session/compile.h"
#include "core/session/pipeline.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"

namespace souffle {
namespace {

std::string model(const char* name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + name + "/model.onnx";
}

PipelineStepOptions options(plan::Strategy s) {
  PipelineStepOptions o;
  o.strategy = s;
  o.gpu = gpu::gpu_spec("a100");
  return o;
}

TEST(PipelineSteps, EveryStepInOrderWithTextAndSentence) {
  std::vector<PipelineStep> steps = pipeline_steps(model("bert"), options(plan::Strategy::Souffle));
  ASSERT_EQ(steps.size(), pipeline_step_names().size());
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(steps[i].name);
    EXPECT_EQ(steps[i].name, pipeline_step_names()[i]);
    EXPECT_FALSE(steps[i].title.empty());
    EXPECT_FALSE(steps[i].before.empty());
    EXPECT_FALSE(steps[i].after.empty());
    EXPECT_FALSE(steps[i].sentence.empty());
    EXPECT_EQ(steps[i].sentence.back(), '.');
  }
}

const PipelineStep& step(const std::vector<PipelineStep>& steps, const std::string& name) {
  auto it = std::find_if(steps.begin(), steps.end(),
                         [&](const PipelineStep& s) { return s.name == name; });
  if (it == steps.end()) throw std::runtime_error("no step " + name);
  return *it;
}

TEST(PipelineSteps, SitesAreThePlansChanges) {
  // Each step's changes, one per line, from the plan the walk produced: the horizontal and
  // vertical steps list the applied sites of their kind (members before, result after, the
  // site's reason), partitioning each kernel and its priced decisions, and a step that changed
  // nothing (no edits to apply) says so.
  PipelineStepOptions o = options(plan::Strategy::Souffle);
  o.programs = true;
  PipelineWalk w = walk_pipeline(model("bert"), o);
  const plan::FusionPlan& p = w.result.plan;
  for (const char* kind : {"horizontal", "vertical"}) {
    SCOPED_TRACE(kind);
    std::vector<const plan::TransformSite*> applied;
    for (const plan::TransformSite& t : p.transforms)
      if (plan::transform_kind_name(t.kind) == std::string(kind) && t.applied)
        applied.push_back(&t);
    const PipelineStep& s = step(w.steps, kind);
    ASSERT_FALSE(applied.empty());
    ASSERT_EQ(s.sites.size(), applied.size());
    EXPECT_TRUE(s.changed);
    for (size_t i = 0; i < applied.size(); ++i) {
      EXPECT_EQ(s.sites[i].reason, applied[i]->reason);
      EXPECT_EQ(s.sites[i].before, applied[i]->ops);
      EXPECT_EQ(s.sites[i].after, std::vector<std::string>{applied[i]->result});
      EXPECT_NE(s.sites[i].label.find(std::string(kind) == "horizontal" ? " ∥ " : " + "),
                std::string::npos)
          << s.sites[i].label;
      EXPECT_NE(s.sites[i].label.find(std::string(kind) == "horizontal" ? "→ batched" : "→ fused"),
                std::string::npos)
          << s.sites[i].label;
    }
  }
  // The merged TEs are gone from the program after horizontal fusion; their result is in it.
  const PipelineStep& h = step(w.steps, "horizontal");
  ASSERT_TRUE(p.steps);
  const te::TeProgram& after_h = p.steps->after_horizontal;
  for (const StepSite& site : h.sites) {
    for (const std::string& member : site.before)
      for (const te::Op& op : after_h.ops) EXPECT_NE(op->name, member);
    EXPECT_TRUE(std::any_of(after_h.ops.begin(), after_h.ops.end(),
                            [&](const te::Op& op) { return op->name == site.after.at(0); }));
  }
  const PipelineStep& part = step(w.steps, "partition");
  size_t decisions = 0;
  for (const plan::Partition& k : p.partitions)
    for (const plan::Decision& d : k.decisions) decisions += d.kind != plan::DecisionKind::Start;
  EXPECT_EQ(part.sites.size(), p.partitions.size() + decisions);
  EXPECT_FALSE(step(w.steps, "decisions").changed);
  EXPECT_EQ(step(w.steps, "horizontal").graph_before, StepGraph::Lowered);
  EXPECT_EQ(step(w.steps, "horizontal").graph_after, StepGraph::Horizontal);
  EXPECT_EQ(w.program_of(StepGraph::Horizontal), &after_h);
  // The kernel the last steps show: one line per stage boundary, grid barriers among them.
  const PipelineStep& build = step(w.steps, "build kernels");
  ASSERT_GE(w.partition, 0);
  EXPECT_EQ(build.sites.size(), p.partitions[size_t(w.partition)].boundaries.size());
  EXPECT_TRUE(std::any_of(build.sites.begin(), build.sites.end(), [](const StepSite& s) {
    return s.label.rfind("grid before stage", 0) == 0 && !s.reason.empty();
  }));
}

TEST(PipelineSteps, TheDrawnGraphsAreThoseThePipelineMade) {
  // Asked to keep them, the pipeline keeps the graph as imported (before folding), the analysis
  // of the lowered program and the program after the horizontal step: what the step-through
  // and the walk-through draw, nothing made again. Not asked, it keeps none of them.
  PipelineOptions po;
  po.gpu = gpu::gpu_spec("a100");
  po.keep_steps = true;
  PipelineResult r = run_pipeline(model("bert"), po);
  ASSERT_TRUE(r.model.imported);
  EXPECT_EQ(r.model.imported->nodes.size(), r.model.onnx_nodes);
  EXPECT_GT(r.model.imported->nodes.size(), r.model.graph.nodes.size());  // folding removed some
  ASSERT_TRUE(r.plan.steps);
  EXPECT_EQ(r.plan.steps->input_analysis.tes.size(), r.model.program.ops.size());
  EXPECT_EQ(analysis::print(r.plan.steps->input_analysis),
            analysis::print(analysis::analyze(r.model.program)));
  // Horizontal merged TEs (the walk's sites say which): fewer than lowered, more than planned.
  EXPECT_LT(r.plan.steps->after_horizontal.ops.size(), r.model.program.ops.size());
  EXPECT_GT(r.plan.steps->after_horizontal.ops.size(), r.plan.program.ops.size());

  po.strategy = plan::Strategy::Rules;  // nothing transforms: no program after horizontal
  PipelineResult rules = run_pipeline(model("bert"), po);
  ASSERT_TRUE(rules.plan.steps);
  EXPECT_TRUE(rules.plan.steps->after_horizontal.ops.empty());
  EXPECT_EQ(rules.plan.steps->input_analysis.tes.size(), rules.model.program.ops.size());

  po.keep_steps = false;
  PipelineResult plain = run_pipeline(model("bert"), po);
  EXPECT_FALSE(plain.model.imported);
  EXPECT_FALSE(plain.plan.steps);
}

TEST(PipelineSteps, StepNamesFollowPipelineOrder) {
  // Every step is a record of run_pipeline, in plan::all_steps(); unfused runs no
  // transformation, so it has no horizontal, vertical or re-analyze step.
  for (plan::Strategy s : {plan::Strategy::Souffle, plan::Strategy::Unfused}) {
    SCOPED_TRACE(plan::strategy_name(s));
    PipelineWalk w = walk_pipeline(model("mmoe"), options(s));
    std::vector<std::string> names, expected;
    for (const PipelineStep& st : w.steps) names.push_back(st.name);
    for (plan::Step n : plan::all_steps()) {
      if (n == plan::Step::Compile) break;
      if (s != plan::Strategy::Souffle &&
          (n == plan::Step::Horizontal || n == plan::Step::Vertical || n == plan::Step::Reanalyze))
        continue;
      expected.emplace_back(plan::step_name(n));
    }
    EXPECT_EQ(names, expected);
    ASSERT_EQ(w.result.passes.size(), w.steps.size());
    for (size_t i = 0; i < w.steps.size(); ++i) {
      EXPECT_EQ(w.result.passes[i].name(), w.steps[i].name);
      EXPECT_EQ(w.result.passes[i].step, w.steps[i].step);
      EXPECT_EQ(w.steps[i].ms, w.result.passes[i].ms);
      // Each step reads what the step before produced; the horizontal transformation reads
      // the TE program the analysis described (the lowered one).
      if (i > 0 && w.steps[i].name == "horizontal") {
        EXPECT_EQ(w.steps[i].before, w.steps[i - 2].after);
        EXPECT_EQ(w.steps[i - 2].name, "lower");
      } else if (i > 0) {
        EXPECT_EQ(w.steps[i].before, w.steps[i - 1].after);
      }
    }
  }
}

TEST(PipelineSteps, SentencesCarryTheStepsNumbers) {
  std::vector<PipelineStep> steps = pipeline_steps(model("bert"), options(plan::Strategy::Souffle));
  ASSERT_EQ(steps.size(), pipeline_step_names().size());
  EXPECT_NE(step(steps, "import").sentence.find("Imported"), std::string::npos);
  EXPECT_NE(step(steps, "fold").sentence.find("remain"), std::string::npos);
  EXPECT_NE(step(steps, "lower").sentence.find("tensor expressions"), std::string::npos);
  EXPECT_NE(step(steps, "analyze").sentence.find("compute-intensive"), std::string::npos);
  // BERT's Q/K/V projections read one activation: the horizontal step merges them.
  const PipelineStep& h = step(steps, "horizontal");
  EXPECT_NE(h.sentence.find("Horizontal fusion applied"), std::string::npos) << h.sentence;
  EXPECT_FALSE(h.nodes.empty());
  EXPECT_NE(step(steps, "re-analyze").sentence.find("After the transformations"),
            std::string::npos);
  EXPECT_NE(step(steps, "partition").sentence.find("Partitioned"), std::string::npos);
  EXPECT_NE(step(steps, "decisions").sentence.find("No decisions"), std::string::npos);
  EXPECT_NE(step(steps, "price").sentence.find("µs on"), std::string::npos);
  const PipelineStep& b = step(steps, "build kernels");
  EXPECT_NE(b.sentence.find("Scheduled kernel"), std::string::npos) << b.sentence;
  EXPECT_FALSE(b.nodes.empty());
  EXPECT_NE(step(steps, "emit").after.find("__global__"), std::string::npos);
}

TEST(PipelineSteps, BuildKernelsSaysWhichGemmsKeepTheirWeightsOnChip) {
  std::vector<PipelineStep> steps = pipeline_steps(model("lstm"), options(plan::Strategy::Souffle));
  const PipelineStep& b = step(steps, "build kernels");
  EXPECT_NE(b.sentence.find("2 GEMM stages load their weights into shared memory and 30 later "
                            "ones read them there."),
            std::string::npos)
      << b.sentence;
  // BERT's GEMMs each read weights of their own: none.
  std::vector<PipelineStep> bert = pipeline_steps(model("bert"), options(plan::Strategy::Souffle));
  EXPECT_EQ(step(bert, "build kernels").sentence.find("shared memory"), std::string::npos);
}

TEST(PipelineSteps, UnfusedSaysItDoesNotTransform) {
  std::vector<PipelineStep> steps = pipeline_steps(model("mmoe"), options(plan::Strategy::Unfused));
  EXPECT_NE(step(steps, "analyze").sentence.find("does not transform"), std::string::npos);
  EXPECT_THROW(step(steps, "horizontal"), std::runtime_error);
}

TEST(PipelineSteps, TextIsCutAtTheLimit) {
  PipelineStepOptions o = options(plan::Strategy::Souffle);
  o.max_text = 2000;
  std::vector<PipelineStep> steps = pipeline_steps(model("bert"), o);
  ASSERT_EQ(steps[2].name, "lower");
  EXPECT_LT(steps[2].after.size(), 2200u);
  EXPECT_NE(steps[2].after.find("cut here"), std::string::npos);
}

TEST(PipelineSteps, AMissingFileIsAUserError) {
  EXPECT_THROW(pipeline_steps("/nonexistent/model.onnx", options(plan::Strategy::Souffle)),
               UserError);
}

TEST(PipelineSteps, ScheduleStepShowsTheKernelThatCompileBuilds) {
  // The step-through, the code panel (plan_build + build_plan_kernels) and compile (the
  // pipeline's build kernels step) build one kernel the same way, at the plan's precision: under
  // fp16 its GEMMs are tensor-core tiles in all three.
  const std::string path = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx";
  for (gpu::Precision p : {gpu::Precision::FP32, gpu::Precision::FP16}) {
    SCOPED_TRACE(gpu::precision_name(p));
    PipelineStepOptions so;
    so.strategy = plan::Strategy::Souffle;
    so.gpu = gpu::gpu_spec("a100");
    so.precision = p;
    so.partition = 0;
    std::vector<PipelineStep> steps = pipeline_steps(path, so);
    auto sched = std::find_if(steps.begin(), steps.end(),
                              [](const PipelineStep& s) { return s.name == "build kernels"; });
    ASSERT_NE(sched, steps.end());
    PipelineOptions po;
    po.strategy = so.strategy;
    po.gpu = so.gpu;
    po.precision = p;
    po.until = Step::BuildKernels;
    PipelineResult r = run_pipeline(path, po);
    ASSERT_FALSE(r.kernels.kernels.empty());
    const std::string compiled = loop::print(r.kernels.kernels[0].kernel);
    EXPECT_EQ(sched->after, compiled);
    const PlanBuild b = plan_build(r.plan);
    loop::KernelSet panel = build_plan_kernels(r.plan, b.config, b.options);
    ASSERT_FALSE(panel.kernels.empty());
    EXPECT_EQ(loop::print(panel.kernels[0]), compiled);
    EXPECT_EQ(compiled.find("fragment") != std::string::npos, p == gpu::Precision::FP16);
  }
}

TEST(PipelineSteps, EmittedCudaIsWhatCompileEmits) {
  // The emit step's CUDA C for the shown partition is byte for byte what compile emits for it
  // (its launches joined by a blank line): BERT's kernel under souffle; under rules a partition
  // of one launch and one split into two (Swin).
  struct Case {
    const char* model;
    plan::Strategy strategy;
  };
  for (const Case& c :
       {Case{"bert", plan::Strategy::Souffle}, Case{"swin", plan::Strategy::Rules}}) {
    SCOPED_TRACE(std::string(c.model) + " " + plan::strategy_name(c.strategy));
    PipelineOptions po;
    po.strategy = c.strategy;
    po.gpu = gpu::gpu_spec("a100");
    PipelineResult planned = run_pipeline(model(c.model), po);  // until "price"
    CompileOptions co;
    co.pricer = kernel_pricer(plan_options(po));
    // No NVRTC target: compile's source is written before NVRTC runs (a register cap NVRTC
    // results call for is added after, at the compile step the step-through does not run).
    co.archs.clear();
    const CompileReport compiled = compile_plan(planned.plan, co);
    ASSERT_FALSE(planned.plan.partitions.empty());
    // Souffle's shown kernel; under rules the first partition and the first it launches as
    // several kernels.
    std::vector<size_t> shown = {0};
    if (c.strategy == plan::Strategy::Souffle) {
      shown = {static_cast<size_t>(default_step_partition(planned.plan))};
    } else {
      for (size_t k = 0; k < planned.plan.partitions.size(); ++k)
        if (planned.plan.partitions[k].launches > 1) {
          shown.push_back(k);
          break;
        }
      EXPECT_EQ(shown.size(), 2u) << "no partition of several launches";
    }
    for (size_t k : shown) {
      SCOPED_TRACE("partition " + std::to_string(k));
      PipelineStepOptions so = options(c.strategy);
      so.partition = static_cast<int>(k);
      PipelineWalk w = walk_pipeline(model(c.model), so);
      ASSERT_EQ(w.partition, static_cast<int>(k));
      std::string expected;
      for (const CompiledKernel& ck : compiled.kernels) {
        if (ck.partition != planned.plan.partitions[k].id) continue;
        expected += (expected.empty() ? "" : "\n") + ck.cuda;
      }
      if (expected.empty()) continue;  // a partition of views launches nothing
      EXPECT_EQ(step(w.steps, "emit").after, expected);
      EXPECT_NE(expected.find("__global__"), std::string::npos);
    }
  }
}

TEST(PipelineSteps, TheUsersDecisionsAreThePlansCompileBuilds) {
  // Forbidding one of BERT's horizontal sites: the horizontal step applies one site fewer, the
  // decisions step says it applied the edit, and the CUDA shown is compile's for that plan.
  PipelineWalk plain = walk_pipeline(model("bert"), options(plan::Strategy::Souffle));
  const plan::TransformSite* site = nullptr;
  for (const plan::TransformSite& s : plain.result.plan.transforms)
    if (s.kind == plan::TransformKind::Horizontal && s.applied) {
      site = &s;
      break;
    }
  ASSERT_NE(site, nullptr);
  PipelineStepOptions so = options(plan::Strategy::Souffle);
  so.decisions.edits.push_back({plan::Edit::Kind::Forbid, site->key, ""});
  PipelineWalk edited = walk_pipeline(model("bert"), so);
  EXPECT_NE(step(edited.steps, "decisions").sentence.find("Applied 1 edit and refused 0"),
            std::string::npos)
      << step(edited.steps, "decisions").sentence;
  EXPECT_NE(step(plain.steps, "horizontal").sentence.find("applied 2 of 2 sites"),
            std::string::npos)
      << step(plain.steps, "horizontal").sentence;
  EXPECT_NE(step(edited.steps, "horizontal").sentence.find("applied 1 of 2 sites"),
            std::string::npos)
      << step(edited.steps, "horizontal").sentence;

  PipelineOptions po;
  po.strategy = plan::Strategy::Souffle;
  po.gpu = gpu::gpu_spec("a100");
  po.decisions = so.decisions;
  PipelineResult planned = run_pipeline(model("bert"), po);
  CompileOptions co;
  co.pricer = kernel_pricer(plan_options(po));
  co.archs.clear();
  const CompileReport compiled = compile_plan(planned.plan, co);
  const int k = edited.partition;
  ASSERT_GE(k, 0);
  std::string expected;
  for (const CompiledKernel& ck : compiled.kernels)
    if (ck.partition == planned.plan.partitions[static_cast<size_t>(k)].id)
      expected += (expected.empty() ? "" : "\n") + ck.cuda;
  EXPECT_EQ(step(edited.steps, "emit").after, expected);
  EXPECT_NE(step(edited.steps, "emit").after, step(plain.steps, "emit").after);
}

}  // namespace
}  // namespace souffle
