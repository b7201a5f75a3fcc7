// The teaching steps: every step present in order, with text and a sentence built from what it
// decided, for the souffle and the unfused strategy.
#include "core/session/pipeline_steps.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace souffle
