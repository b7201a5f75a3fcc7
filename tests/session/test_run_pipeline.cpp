// run_pipeline (core/session/pipeline.h), the one entry every caller goes through: its steps run
// in plan::Step order, it stops after the step asked for, its instrument sees each step once
// (before and after, the snapshot only where the step changed what it prints), it starts from a
// file, a file's bytes, a loaded model or a plan alike, and a model it cannot take fails with
// the file, the node and the reason; some partitions only, and kernels built before from emit or
// compile on, go through the same steps.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/plan/step.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"

namespace souffle {
namespace {

using plan::Step;

void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
               const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto* vi = list->Add();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

/// y = relu(x · w) + x · w2 with weights as initializers: small, and every step has work
/// (a GEMM, an injective TE, two GEMMs reading one input for the horizontal step).
std::string small_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("small");
  add_value(g->mutable_input(), "x", {4, 16});
  add_value(g->mutable_output(), "y", {4, 8});
  for (const char* w : {"w", "w2"}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(w);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(16);
    t->add_dims(8);
    for (int i = 0; i < 16 * 8; ++i) t->add_float_data(0.01f * static_cast<float>(i % 7));
  }
  add_node(g, "MatMul", "mm", {"x", "w"}, "h");
  add_node(g, "Relu", "relu", {"h"}, "r");
  add_node(g, "MatMul", "mm2", {"x", "w2"}, "h2");
  add_node(g, "Add", "add", {"r", "h2"}, "y");
  return m.SerializeAsString();
}

/// Two inputs whose shapes do not broadcast: type inference fails at node "bad_add".
std::string broken_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("broken");
  add_value(g->mutable_input(), "a", {2, 3});
  add_value(g->mutable_input(), "b", {4});
  add_value(g->mutable_output(), "c", {2, 3});
  add_node(g, "Add", "bad_add", {"a", "b"}, "c");
  return m.SerializeAsString();
}

PipelineOptions options(Step until) {
  PipelineOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.strategy = plan::Strategy::Souffle;
  o.until = until;
  return o;
}

std::vector<Step> steps_of(const PipelineResult& r) {
  std::vector<Step> out;
  for (const plan::PassRecord& p : r.passes) out.push_back(p.step);
  return out;
}

/// plan::all_steps() from `first` to `last`.
std::vector<Step> steps_between(Step first, Step last) {
  std::vector<Step> out;
  for (Step s : plan::all_steps())
    if (s >= first && s <= last) out.push_back(s);
  return out;
}

TEST(RunPipeline, OneNameTableInPipelineOrder) {
  const std::vector<Step>& all = plan::all_steps();
  ASSERT_EQ(all.size(), 13u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(all[i]), i);
    EXPECT_EQ(plan::parse_step(plan::step_name(all[i])), all[i]) << plan::step_name(all[i]);
  }
  EXPECT_EQ(plan::step_name(Step::Reanalyze), "re-analyze");
  EXPECT_EQ(plan::step_name(Step::BuildKernels), "build kernels");
  EXPECT_FALSE(plan::parse_step("cost"));  // the planner prices under one name with or without
  EXPECT_FALSE(plan::parse_step(""));      // a pricer
}

TEST(RunPipeline, StepsRunInOrderUpToEmit) {
  const std::string bytes = small_model();
  PipelineResult r = run_pipeline_bytes(bytes, "small.onnx", options(Step::Emit));
  EXPECT_EQ(steps_of(r), steps_between(Step::Import, Step::Emit));
  EXPECT_EQ(r.model.path, "small.onnx");
  EXPECT_FALSE(r.model.program.ops.empty());
  ASSERT_FALSE(r.plan.partitions.empty());
  ASSERT_FALSE(r.kernels.kernels.empty());
  for (const CompiledKernel& k : r.kernels.kernels) {
    EXPECT_TRUE(k.ok()) << k.error;
    EXPECT_NE(k.cuda.find("__global__"), std::string::npos) << k.name;
  }
  // The plan's own records are the planner's steps of the whole run.
  EXPECT_EQ(r.plan.passes.size(), steps_between(Step::Analyze, Step::Price).size());
  // A strategy that does not transform has no horizontal, vertical or re-analyze step.
  PipelineOptions rules = options(Step::Price);
  rules.strategy = plan::Strategy::Rules;
  PipelineResult p = run_pipeline_bytes(bytes, "small.onnx", rules);
  EXPECT_EQ(steps_of(p), (std::vector<Step>{Step::Import, Step::Fold, Step::Lower, Step::Analyze,
                                            Step::Partition, Step::Decisions, Step::Price}));
}

TEST(RunPipeline, StopsAfterTheStepAskedFor) {
  const std::string bytes = small_model();
  // Load only: what load_model returns.
  PipelineResult load = run_pipeline_bytes(bytes, "small.onnx", options(Step::Lower));
  EXPECT_EQ(steps_of(load), steps_between(Step::Import, Step::Lower));
  EXPECT_FALSE(load.model.program.ops.empty());
  EXPECT_TRUE(load.plan.partitions.empty());
  EXPECT_GT(load.model.load_ms, 0);
  const LoadedModel loaded = load_model_bytes(bytes, "small.onnx");
  EXPECT_EQ(loaded.program.ops.size(), load.model.program.ops.size());
  EXPECT_EQ(loaded.graph.nodes.size(), load.model.graph.nodes.size());
  // A plan without kernels.
  PipelineResult plan = run_pipeline_bytes(bytes, "small.onnx", options(Step::Price));
  EXPECT_EQ(steps_of(plan).back(), Step::Price);
  EXPECT_FALSE(plan.plan.partitions.empty());
  EXPECT_TRUE(plan.kernels.kernels.empty());
  // Kernels built, not emitted.
  PipelineResult built = run_pipeline_bytes(bytes, "small.onnx", options(Step::BuildKernels));
  EXPECT_EQ(steps_of(built).back(), Step::BuildKernels);
  ASSERT_FALSE(built.kernels.kernels.empty());
  for (const CompiledKernel& k : built.kernels.kernels) EXPECT_TRUE(k.cuda.empty()) << k.name;
  // The planner's steps run together: no stop inside them.
  for (Step inside : {Step::Analyze, Step::Horizontal, Step::Partition, Step::Decisions})
    EXPECT_THROW(run_pipeline_bytes(bytes, "small.onnx", options(inside)), std::invalid_argument)
        << plan::step_name(inside);
}

TEST(RunPipeline, InstrumentSeesEachStepOnceWithSnapshotsOnlyWhenChanged) {
  const std::string bytes = small_model();
  PipelineOptions o = options(Step::Emit);
  o.snapshots = true;
  std::vector<std::pair<char, Step>> calls;
  std::vector<plan::PassRecord> records;
  o.instrument.before = [&](Step s) { calls.emplace_back('b', s); };
  o.instrument.after = [&](const plan::PassRecord& r) {
    calls.emplace_back('a', r.step);
    records.push_back(r);
  };
  PipelineResult r = run_pipeline_bytes(bytes, "small.onnx", o);
  const std::vector<Step> want = steps_between(Step::Import, Step::Emit);
  ASSERT_EQ(calls.size(), 2 * want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(calls[2 * i], std::make_pair('b', want[i])) << i;
    EXPECT_EQ(calls[2 * i + 1], std::make_pair('a', want[i])) << i;
  }
  ASSERT_EQ(records.size(), r.passes.size());
  std::string last;
  int unchanged = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const plan::PassRecord& rec = records[i];
    SCOPED_TRACE(std::string(rec.name()));
    EXPECT_EQ(rec.step, r.passes[i].step);
    if (rec.changed) {
      EXPECT_FALSE(rec.snapshot.empty());
      EXPECT_NE(rec.snapshot, last);  // a snapshot is only taken where the step changed it
      last = rec.snapshot;
    } else {
      EXPECT_TRUE(rec.snapshot.empty());
      ++unchanged;
    }
  }
  // Without decisions the decisions step leaves the partition step's kernels as they were.
  const plan::PassRecord* decisions = nullptr;
  for (const plan::PassRecord& rec : records)
    if (rec.step == Step::Decisions) decisions = &rec;
  ASSERT_NE(decisions, nullptr);
  EXPECT_FALSE(decisions->changed);
  EXPECT_GE(unchanged, 1);
  // Without snapshots every record says changed and carries no text.
  PipelineOptions quiet = options(Step::Emit);
  for (const plan::PassRecord& rec : run_pipeline_bytes(bytes, "small.onnx", quiet).passes) {
    EXPECT_TRUE(rec.changed);
    EXPECT_TRUE(rec.snapshot.empty());
  }
}

TEST(RunPipeline, StartsFromALoadedModelOrAPlanWithTheSameResult) {
  const std::string bytes = small_model();
  PipelineResult whole = run_pipeline_bytes(bytes, "small.onnx", options(Step::Emit));
  // From a loaded model: analyze on, the caller's model not copied.
  const LoadedModel m = load_model_bytes(bytes, "small.onnx");
  PipelineResult from_model = run_pipeline(m, options(Step::Emit));
  EXPECT_EQ(steps_of(from_model), steps_between(Step::Analyze, Step::Emit));
  EXPECT_TRUE(from_model.model.program.ops.empty());
  EXPECT_EQ(plan::print(from_model.plan), plan::print(whole.plan));
  // From a plan: build kernels on, with the plan's pricer's kernels or fresh ones alike.
  PipelineResult from_plan = run_pipeline(whole.plan, options(Step::Emit));
  EXPECT_EQ(steps_of(from_plan), steps_between(Step::BuildKernels, Step::Emit));
  ASSERT_EQ(from_plan.kernels.kernels.size(), whole.kernels.kernels.size());
  for (size_t i = 0; i < whole.kernels.kernels.size(); ++i)
    EXPECT_EQ(from_plan.kernels.kernels[i].cuda, whole.kernels.kernels[i].cuda) << i;
  // The kernels compile ships, as one set (what verify and the Python module emulate): the
  // build-kernels step's, whatever step `until` names.
  const ShippedKernels shipped = shipped_kernels(whole.plan, options(Step::Emit));
  ASSERT_TRUE(shipped.ok()) << shipped.failed << ": " << shipped.error;
  EXPECT_EQ(shipped.set.inputs.size(), whole.plan.program.inputs.size());
  EXPECT_EQ(shipped.set.outputs.size(), whole.plan.program.outputs.size());
  ASSERT_EQ(shipped.set.kernels.size(), whole.kernels.kernels.size());
  for (size_t i = 0; i < whole.kernels.kernels.size(); ++i)
    EXPECT_EQ(loop::print(shipped.set.kernels[i]), loop::print(whole.kernels.kernels[i].kernel));
  // A loaded model cannot stop before the plan; a plan cannot stop before its kernels.
  EXPECT_THROW(run_pipeline(m, options(Step::Lower)), std::invalid_argument);
  EXPECT_THROW(run_pipeline(whole.plan, options(Step::Price)), std::invalid_argument);
}

/// Some partitions only (the explorer's kernel cache builds what a view shows), and kernels built
/// before taken from emit or from compile on: the same steps give the same kernels.
TEST(RunPipeline, SomePartitionsOrKernelsBuiltBeforeGoThroughTheSameSteps) {
  const std::string path = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx";
  PipelineOptions rules = options(Step::Emit);
  rules.strategy = plan::Strategy::Rules;
  const PipelineResult whole = run_pipeline(path, rules);
  ASSERT_GE(whole.plan.partitions.size(), 3u);
  const int id = whole.kernels.kernels.back().partition;
  std::vector<const CompiledKernel*> want;
  for (const CompiledKernel& k : whole.kernels.kernels)
    if (k.partition == id) want.push_back(&k);
  ASSERT_LT(want.size(), whole.kernels.kernels.size());
  // One partition's kernels: those of the whole run named for it, through the same steps.
  PipelineOptions one = options(Step::Emit);
  one.partitions = {id};
  const PipelineResult part = run_pipeline(whole.plan, one);
  EXPECT_EQ(steps_of(part), steps_between(Step::BuildKernels, Step::Emit));
  ASSERT_EQ(part.kernels.kernels.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(part.kernels.kernels[i].name, want[i]->name);
    EXPECT_EQ(part.kernels.kernels[i].cuda, want[i]->cuda) << want[i]->name;
  }
  // From emit over kernels built before: the emit step alone, the whole run's CUDA.
  const PipelineResult built = run_pipeline(whole.plan, options(Step::BuildKernels));
  const PipelineResult emitted =
      run_pipeline(whole.plan, built.kernels.kernels, Step::Emit, options(Step::Emit));
  EXPECT_EQ(steps_of(emitted), std::vector<Step>{Step::Emit});
  ASSERT_EQ(emitted.kernels.kernels.size(), whole.kernels.kernels.size());
  for (size_t i = 0; i < whole.kernels.kernels.size(); ++i)
    EXPECT_EQ(emitted.kernels.kernels[i].cuda, whole.kernels.kernels[i].cuda) << i;
  // From compile over emitted kernels: the compile step alone, NVRTC's results filled in.
  PipelineOptions nvrtc = options(Step::Compile);
  nvrtc.compile.archs = {"sm_80"};
  const PipelineResult compiled =
      run_pipeline(whole.plan, part.kernels.kernels, Step::Compile, nvrtc);
  EXPECT_EQ(steps_of(compiled), std::vector<Step>{Step::Compile});
  ASSERT_EQ(compiled.kernels.kernels.size(), want.size());
  for (const CompiledKernel& k : compiled.kernels.kernels) {
    EXPECT_TRUE(k.ok()) << k.name << ": " << k.error;
    ASSERT_EQ(k.per_arch.size(), 1u) << k.name;
    EXPECT_FALSE(k.per_arch[0].ptx.empty()) << k.name;
  }
  // Refused: a partition the plan does not have; kernels built before from build kernels, or
  // stopping before the step they start from; some partitions with measured tiles.
  PipelineOptions missing = options(Step::BuildKernels);
  missing.partitions = {id + 1000};
  EXPECT_THROW(run_pipeline(whole.plan, missing), std::invalid_argument);
  EXPECT_THROW(
      run_pipeline(whole.plan, built.kernels.kernels, Step::BuildKernels, options(Step::Emit)),
      std::invalid_argument);
  EXPECT_THROW(run_pipeline(whole.plan, part.kernels.kernels, Step::Compile, options(Step::Emit)),
               std::invalid_argument);
  PipelineOptions tuned = options(Step::BuildKernels);
  tuned.partitions = {id};
  tuned.tune_measure = [](const te::ComputeOp&, const std::vector<schedule::TileEstimate>& c) {
    return std::vector<double>(c.size(), 1.0);
  };
  EXPECT_THROW(run_pipeline(path, tuned), std::invalid_argument);
}

/// Kernel-level verification runs the kernels compile ships: those of the pipeline's
/// build-kernels step (the plan's pricing built them), not a second build of its own. (The two
/// builds gave the same kernels on the six sample models at fp16 when verify moved onto the
/// pipeline; this keeps verify on compile's path.)
TEST(RunPipeline, VerifyRunsTheKernelsCompileShips) {
  const std::string dir = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe";
  const LoadedModel m = load_model(dir + "/model.onnx");
  const std::vector<TestDataSet> sets = read_test_data(dir);
  ASSERT_FALSE(sets.empty());
  PipelineOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.precision = gpu::Precision::FP16;
  o.until = Step::BuildKernels;
  const KernelVerifyReport rep = verify_kernels(m, sets, o, VerifyOptions{});
  ASSERT_TRUE(rep.ok()) << rep.error;
  const PipelineResult shipped = run_pipeline(dir + "/model.onnx", o);
  ASSERT_EQ(rep.built.kernels.size(), shipped.kernels.kernels.size());
  for (size_t i = 0; i < rep.built.kernels.size(); ++i) {
    ASSERT_TRUE(shipped.kernels.kernels[i].ok()) << shipped.kernels.kernels[i].error;
    EXPECT_EQ(loop::print(rep.built.kernels[i]), loop::print(shipped.kernels.kernels[i].kernel))
        << rep.built.kernels[i].name;
  }
}

TEST(RunPipeline, ErrorsKeepFileNodeAndReason) {
  const std::string bytes = broken_model();
  std::vector<Step> seen;
  PipelineOptions o = options(Step::Price);
  o.instrument.after = [&](const plan::PassRecord& r) { seen.push_back(r.step); };
  try {
    run_pipeline_bytes(bytes, "broken.onnx", o);
    FAIL() << "a model whose shapes do not broadcast planned";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "broken.onnx");
    EXPECT_EQ(e.node(), "bad_add (Add)");
    EXPECT_NE(e.reason().find("broadcast"), std::string::npos) << e.reason();
  }
  EXPECT_EQ(seen, (std::vector<Step>{Step::Import}));  // failed in fold, before its record
  // load_model (the pipeline up to lower) fails the same way.
  try {
    load_model_bytes(bytes, "broken.onnx");
    FAIL() << "a model whose shapes do not broadcast loaded";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "broken.onnx");
    EXPECT_EQ(e.node(), "bad_add (Add)");
  }
}

}  // namespace
}  // namespace souffle
