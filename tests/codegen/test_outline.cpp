// Stage outlining as a decision over loop IR (core/codegen/outline.h): which stages become
// functions, what each function is, and how the kernel calls it, decided before anything is
// printed; the emitter prints what was decided.
#include <gtest/gtest.h>

#include <string>

#include "core/codegen/codegen_cuda.h"
#include "core/codegen/outline.h"
#include "core/loop/verify.h"
#include "tests/codegen/kernels.h"

namespace souffle::codegen {
namespace {

auto nothing_taken = [](const std::string&) { return false; };

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Four steps that differ only in the row of x they read and the state they touch: one
// function, four calls, each handing over its row of x (128 elements further on per step).
TEST(Outline, StepsThatRunTheSameCodeShareOneFunctionCalledAtTheirRows) {
  const loop::Kernel k = testing::row_steps_kernel();
  loop::verify(k);
  const OutlinePlan plan = plan_outlining(k, "steps", StageOutlining::Always, nothing_taken);
  ASSERT_EQ(plan.functions.size(), 1u);
  const loop::Kernel& fn = plan.functions[0].kernel;
  EXPECT_EQ(fn.name, "steps_stage0");
  EXPECT_FALSE(plan.functions[0].fragments);
  // The function takes x's row as a tensor of leading extent 1, then the state in and out.
  ASSERT_EQ(fn.inputs.size(), 2u);
  EXPECT_EQ(fn.inputs[0]->shape, (Shape{1, 128}));
  ASSERT_EQ(plan.calls.size(), 4u);
  std::vector<int64_t> x_offsets;
  for (const auto& [stage, call] : plan.calls) {
    EXPECT_EQ(call.function, "steps_stage0");
    ASSERT_EQ(call.args.size(), call.offsets.size());
    ASSERT_EQ(call.args.size(), 3u);
    EXPECT_EQ(call.args[0]->name, "x");
    EXPECT_EQ(call.offsets[0], 128 * stage->index);
    x_offsets.push_back(call.offsets[0]);
  }
  EXPECT_EQ(x_offsets.size(), 4u);
}

TEST(Outline, ModesAndTakenNames) {
  const loop::Kernel k = testing::row_steps_kernel();
  EXPECT_TRUE(plan_outlining(k, "steps", StageOutlining::Never, nothing_taken).calls.empty());
  // Auto outlines kernels of kOutlineMinStages stages or more, and of kOutlineRepeatMinStages
  // where half of the calls repeat an earlier stage's code; four steps are neither.
  EXPECT_FALSE(wants_outlining(k, StageOutlining::Auto));
  EXPECT_TRUE(wants_outlining(k, StageOutlining::Always));
  EXPECT_TRUE(plan_outlining(k, "steps", StageOutlining::Auto, nothing_taken).calls.empty());
  // A name the unit already has gets "_fn" until it is free.
  const OutlinePlan plan = plan_outlining(
      k, "steps", StageOutlining::Always,
      [](const std::string& n) { return n == "steps_stage0" || n == "steps_stage0_fn"; });
  ASSERT_EQ(plan.functions.size(), 1u);
  EXPECT_EQ(plan.functions[0].kernel.name, "steps_stage0_fn_fn");
}

// Below kOutlineMinStages, Auto outlines a kernel whose stages mostly repeat each other's code
// (one function compiled once instead of the same code per stage), and leaves one of as many
// different stages inline.
TEST(Outline, AutoOutlinesAKernelOfRepeatedStages) {
  const int steps = kOutlineRepeatMinStages;
  ASSERT_LT(steps, kOutlineMinStages);
  const loop::Kernel same = testing::row_steps_kernel(steps);
  loop::verify(same);
  EXPECT_FALSE(wants_outlining(same, StageOutlining::Auto));
  const OutlinePlan plan = plan_outlining(same, "steps", StageOutlining::Auto, nothing_taken);
  EXPECT_EQ(plan.calls.size(), size_t(steps));
  EXPECT_EQ(plan.functions.size(), 1u);
  const loop::Kernel different = testing::row_steps_kernel(steps, true);
  loop::verify(different);
  EXPECT_TRUE(
      plan_outlining(different, "steps", StageOutlining::Auto, nothing_taken).calls.empty());
  EXPECT_EQ(
      plan_outlining(different, "steps", StageOutlining::Always, nothing_taken).functions.size(),
      size_t(steps));
  // One step short of the size: inline.
  const loop::Kernel short_one = testing::row_steps_kernel(steps - 1);
  EXPECT_TRUE(
      plan_outlining(short_one, "steps", StageOutlining::Auto, nothing_taken).calls.empty());
}

// A stage that keeps a tensor in registers across stages cannot be handed to a function: the
// two-stage kernel's stages touch only its parameters, so both are outlined, each its own
// function (they compute different things).
TEST(Outline, DifferentStagesGetFunctionsOfTheirOwn) {
  const loop::Kernel k = testing::two_stage_kernel();
  const OutlinePlan plan = plan_outlining(k, "fused", StageOutlining::Always, nothing_taken);
  ASSERT_EQ(plan.functions.size(), 2u);
  EXPECT_EQ(plan.functions[0].kernel.name, "fused_stage0");
  EXPECT_EQ(plan.functions[1].kernel.name, "fused_stage1");
  EXPECT_EQ(plan.calls.size(), 2u);
}

// Stage functions take no flag epoch: a stage that releases or waits on per-tile flags itself
// stays in the kernel.
TEST(Outline, StagesThatReleaseOrWaitOnFlagsStayInline) {
  const loop::Kernel k = testing::flag_stage_kernel();
  const OutlinePlan plan = plan_outlining(k, "f", StageOutlining::Always, nothing_taken);
  EXPECT_TRUE(plan.functions.empty());
  EXPECT_TRUE(plan.calls.empty());
}

// The emitter prints what the plan says: one definition and one call per stage.
TEST(Outline, TheEmitterPrintsThePlan) {
  const loop::Kernel k = testing::row_steps_kernel();
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;
  const std::string src = emit_cuda(k, o);
  EXPECT_EQ(count(src, "static __device__ __noinline__ void steps_stage0("), 1u) << src;
  EXPECT_EQ(count(src, "steps_stage0("), 5u) << src;  // the definition and four calls
  EXPECT_NE(src.find("x + 384"), std::string::npos) << src;
  o.outlining = StageOutlining::Never;
  EXPECT_EQ(emit_cuda(k, o).find("steps_stage0("), std::string::npos);
}

}  // namespace
}  // namespace souffle::codegen
