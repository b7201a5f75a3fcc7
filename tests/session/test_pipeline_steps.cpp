// The teaching steps: every step present in order, with text and a sentence built from what it
// decided, for the souffle and the unfused strategy.
#include "core/session/pipeline_steps.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/loop/stmt.h"
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

TEST(PipelineSteps, SentencesCarryTheStepsNumbers) {
  std::vector<PipelineStep> steps = pipeline_steps(model("bert"), options(plan::Strategy::Souffle));
  ASSERT_EQ(steps.size(), 9u);
  EXPECT_NE(steps[0].sentence.find("Imported"), std::string::npos) << steps[0].sentence;
  EXPECT_NE(steps[1].sentence.find("remain"), std::string::npos) << steps[1].sentence;
  EXPECT_NE(steps[2].sentence.find("tensor expressions"), std::string::npos);
  EXPECT_NE(steps[3].sentence.find("compute-intensive"), std::string::npos);
  // BERT's Q/K/V projections read one activation: the horizontal step merges them.
  EXPECT_NE(steps[4].sentence.find("Horizontal fusion applied"), std::string::npos)
      << steps[4].sentence;
  EXPECT_FALSE(steps[4].nodes.empty());
  EXPECT_NE(steps[6].sentence.find("Partitioned"), std::string::npos) << steps[6].sentence;
  EXPECT_NE(steps[7].sentence.find("Scheduled kernel"), std::string::npos) << steps[7].sentence;
  EXPECT_NE(steps[8].after.find("__global__"), std::string::npos);
  EXPECT_FALSE(steps[7].nodes.empty());
}

TEST(PipelineSteps, UnfusedSaysItDoesNotTransform) {
  std::vector<PipelineStep> steps = pipeline_steps(model("mmoe"), options(plan::Strategy::Unfused));
  ASSERT_EQ(steps.size(), 9u);
  EXPECT_NE(steps[4].sentence.find("does not transform"), std::string::npos);
  EXPECT_NE(steps[5].sentence.find("does not transform"), std::string::npos);
}

TEST(PipelineSteps, TextIsCutAtTheLimit) {
  PipelineStepOptions o = options(plan::Strategy::Souffle);
  o.max_text = 2000;
  std::vector<PipelineStep> steps = pipeline_steps(model("bert"), o);
  ASSERT_EQ(steps.size(), 9u);
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
                              [](const PipelineStep& s) { return s.name == "schedule"; });
    ASSERT_NE(sched, steps.end());
    PipelineOptions po;
    po.strategy = so.strategy;
    po.gpu = so.gpu;
    po.precision = p;
    po.until = "build kernels";
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

}  // namespace
}  // namespace souffle
