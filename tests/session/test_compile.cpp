// compile_plan: every kernel of a small model's plans compiles for sm_80 and sm_90; a planted
// compile error and an over-sized cooperative grid are reported on their kernel only.
#include <gtest/gtest.h>

#include "core/gpu/nvrtc.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/support/error.h"

namespace souffle {
namespace {

const LoadedModel& mmoe() {
  static const LoadedModel m =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx");
  return m;
}

plan::FusionPlan plan_of(plan::Strategy s) {
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = gpu::gpu_spec("a100");
  return plan::plan(mmoe().program, po);
}

TEST(Compile, EveryMmoeKernelCompilesForBothArchs) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Souffle}) {
    plan::FusionPlan p = plan_of(s);
    CompileReport r = compile_plan(p, {});
    EXPECT_EQ(r.errors, 0) << plan::strategy_name(s);
    ASSERT_EQ(r.kernels.size(), p.kernels());
    for (size_t i = 0; i < r.kernels.size(); ++i) {
      const CompiledKernel& k = r.kernels[i];
      EXPECT_TRUE(k.ok()) << k.error;
      EXPECT_EQ(k.partition, p.partitions[i].id);
      ASSERT_EQ(k.per_arch.size(), 2u);
      EXPECT_EQ(k.per_arch[0].arch, "sm_80");
      EXPECT_EQ(k.per_arch[1].arch, "sm_90");
      for (const gpu::CompileResult& c : k.per_arch) {
        EXPECT_TRUE(c.ok);
        EXPECT_NE(c.ptx.find(".entry " + k.name), std::string::npos) << k.name;
        EXPECT_NE(c.find_kernel(k.name), nullptr);
      }
      EXPECT_NE(k.cuda.find("extern \"C\""), std::string::npos);
      EXPECT_GT(k.max_registers(), 0);
      EXPECT_GT(k.co_resident, 0);
      if (k.launch.cooperative) {
        EXPECT_LE(k.launch.grid_x, k.co_resident);
      }
    }
    if (s == plan::Strategy::Souffle) {
      ASSERT_EQ(r.kernels.size(), 1u);
      EXPECT_TRUE(r.kernels[0].launch.cooperative);
    }
  }
}

TEST(Compile, PlantedErrorNamesItsKernelAndStageOnly) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::FusionPlan p = plan_of(plan::Strategy::Rules);
  CompileOptions o;
  o.archs = {"sm_80"};
  CompileReport r = compile_plan(p, o);
  ASSERT_GE(r.kernels.size(), 3u);
  ASSERT_EQ(r.errors, 0);
  // An undeclared identifier in the first statement after kernel 1's first stage comment.
  CompiledKernel& bad = r.kernels[1];
  size_t stage = bad.cuda.find("// stage 0");
  ASSERT_NE(stage, std::string::npos) << bad.cuda;
  size_t brace = bad.cuda.find("{\n", stage);
  ASSERT_NE(brace, std::string::npos);
  bad.cuda.insert(brace + 2, "    planted_undeclared_name += 1;\n");
  for (CompiledKernel& k : r.kernels) k.per_arch.clear();
  compile_kernels(r.kernels, gpu::gpu_spec("a100"), o);
  EXPECT_TRUE(r.kernels[0].ok()) << r.kernels[0].error;
  EXPECT_TRUE(r.kernels[2].ok()) << r.kernels[2].error;
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.rfind(bad.name + " (stage 0 `", 0), 0u) << bad.error;
  EXPECT_NE(bad.error.find("planted_undeclared_name"), std::string::npos);
  EXPECT_NE(bad.error.find("> "), std::string::npos) << "the failing line is marked";
  EXPECT_NE(bad.error.find("TEs: "), std::string::npos) << bad.error;
}

TEST(Compile, CooperativeGridBeyondCoResidencyIsAnError) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::FusionPlan p = plan_of(plan::Strategy::Souffle);
  CompileOptions o;
  o.archs = {"sm_80"};
  CompileReport r = compile_plan(p, o);
  ASSERT_EQ(r.kernels.size(), 1u);
  ASSERT_TRUE(r.kernels[0].ok()) << r.kernels[0].error;
  // The same kernel on a GPU with a single SM that takes a single block.
  gpu::GpuSpec tiny = gpu::gpu_spec("a100");
  tiny.name = "tiny";
  tiny.sm_count = 1;
  tiny.max_blocks_per_sm = 1;
  r.kernels[0].per_arch.clear();
  if (r.kernels[0].launch.grid_x < 2) GTEST_SKIP() << "the kernel has a single block";
  compile_kernels(r.kernels, tiny, o);
  EXPECT_EQ(r.kernels[0].co_resident, 1);
  EXPECT_NE(r.kernels[0].error.find(r.kernels[0].name + ": cooperative grid of"), std::string::npos)
      << r.kernels[0].error;
  EXPECT_NE(r.kernels[0].error.find("tiny"), std::string::npos);
}

TEST(Compile, CooperativeGridIsFittedByCappingRegisters) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::FusionPlan p = plan_of(plan::Strategy::Souffle);
  CompileOptions o;
  o.archs = {"sm_80"};
  CompileReport r = compile_plan(p, o);
  ASSERT_EQ(r.kernels.size(), 1u);
  CompiledKernel& k = r.kernels[0];
  ASSERT_TRUE(k.ok()) << k.error;
  const int regs = k.max_registers();
  // A GPU with just enough SMs for the grid at 32 registers per thread, not at the compiled count.
  gpu::GpuSpec small = gpu::gpu_spec("a100");
  small.name = "small";
  const gpu::Occupancy low = gpu::occupancy(small, static_cast<int>(k.launch.block_x), 32, 0);
  small.sm_count = static_cast<int>((k.launch.grid_x + low.blocks_per_sm - 1) / low.blocks_per_sm);
  if (gpu::occupancy(
          small, static_cast<int>(k.launch.block_x), regs,
          k.per_arch[0].find_kernel(k.name)->shared_bytes + k.launch.dynamic_shared_bytes)
          .total_blocks >= k.launch.grid_x)
    GTEST_SKIP() << "registers do not limit this kernel's residency";
  compile_kernels(r.kernels, small, o);
  EXPECT_TRUE(k.ok()) << k.error;
  EXPECT_GT(k.register_cap, 0);
  EXPECT_LT(k.register_cap, regs);
  EXPECT_LE(k.max_registers(), k.register_cap);
  EXPECT_GE(k.co_resident, k.launch.grid_x);
}

TEST(Compile, BadArchIsAUserError) {
  EXPECT_THROW(check_arch("sm80"), UserError);
  EXPECT_THROW(check_arch("gfx90a"), UserError);
  EXPECT_NO_THROW(check_arch("sm_90a"));
  EXPECT_NO_THROW(check_arch("compute_80"));
  CompileOptions o;
  o.archs = {"x86"};
  EXPECT_THROW(compile_plan(plan_of(plan::Strategy::Rules), o), UserError);
}

TEST(Compile, ErrorExcerptMarksTheLogsLines) {
  std::string src = "a\nb\nc\nd\ne\nf\ng\n";
  std::string ex = compile_error_excerpt(src, "k.cu(4): error: bad", 1);
  EXPECT_NE(ex.find(">    4 | d"), std::string::npos) << ex;
  EXPECT_NE(ex.find("     3 | c"), std::string::npos) << ex;
  EXPECT_EQ(ex.find("| b"), std::string::npos) << ex;
}

}  // namespace
}  // namespace souffle
