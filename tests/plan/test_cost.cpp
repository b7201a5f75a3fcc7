// Cost model v1 and the schedule estimate on a hand-built GEMM.
#include <gtest/gtest.h>

#include "core/analysis/analysis.h"
#include "core/gpu/cost.h"
#include "core/plan/plan.h"
#include "core/plan/schedule_estimate.h"
#include "core/te/builder.h"

namespace souffle::plan {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

te::TeProgram gemm_relu(int64_t m, int64_t k, int64_t n) {
  auto a = te::make_input("A", {m, k}, DType::Float32);
  auto b = te::make_input("B", {k, n}, DType::Float32);
  te::Op c = te::reduce("C", {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                        [&](const Idx& i, const Idx& r) {
                          return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                        });
  te::Op y = te::compute("Y", {m, n}, DType::Float32, [&](const Idx& i) {
    return te::max(te::read(c->output, {i[0], i[1]}), te::float_imm(0));
  });
  te::TeProgram p;
  p.name = "gemm";
  p.inputs = {a, b};
  p.outputs = {y->output};
  p.ops = {c, y};
  return p;
}

TEST(Cost, RooflineAddsLaunchAndSyncOverheads) {
  gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  // 1 GFLOP, 1 MB: compute bound at 19.5 TFLOP/s = 51.28 us.
  gpu::KernelCost c = gpu::kernel_cost(a100, 1'000'000'000, 1'000'000, 2);
  EXPECT_NEAR(c.compute_us, 1e9 / 19.5e12 * 1e6, 1e-9);
  EXPECT_NEAR(c.memory_us, 1e6 / 1555e9 * 1e6, 1e-9);
  EXPECT_STREQ(c.bound, "compute");
  EXPECT_NEAR(c.total_us, c.compute_us + 4.0 + 2 * 1.5, 1e-9);
  // Memory bound.
  gpu::KernelCost m = gpu::kernel_cost(a100, 1000, 1'555'000'000, 0);
  EXPECT_STREQ(m.bound, "memory");
  EXPECT_NEAR(m.total_us, 1000.0 + 4.0, 1e-6);
  EXPECT_GT(gpu::peak_flops(a100, gpu::Precision::TF32),
            gpu::peak_flops(a100, gpu::Precision::FP32));
}

TEST(Cost, TrafficKeepsIntermediatesOnChipWhenTheyFit) {
  std::vector<gpu::KernelTensor> ts = {
      {"in", 100, false, false, false},   // read
      {"mid", 400, true, false, true},    // crosses a sync, fits
      {"big", 1000, true, false, true},   // crosses a sync, does not fit what is left
      {"reg", 5000, true, false, false},  // consumed in its own stage
      {"out", 50, true, true, false},     // written
  };
  gpu::KernelTraffic t = gpu::kernel_traffic(ts, 500);
  EXPECT_EQ(t.read_bytes, 100 + 1000);
  EXPECT_EQ(t.write_bytes, 1000 + 50);
  EXPECT_EQ(t.dram_bytes, 2150);
  ASSERT_EQ(t.on_chip, std::vector<std::string>{"mid"});
  ASSERT_EQ(t.spilled, std::vector<std::string>{"big"});
}

TEST(Cost, OnChipBudgetFollowsLiveRanges) {
  // Three 400-byte intermediates crossing syncs in a 1000-byte budget: a (stages 0-1) and
  // b (stages 2-3) never live together; c (stages 1-2) overlaps both, so it fits beside
  // either one (800 bytes) - the budget is per stage, not first come for the whole kernel.
  std::vector<gpu::KernelTensor> ts(4);
  ts[0] = {"a", 400, true, false, true, 0, 1};
  ts[1] = {"b", 400, true, false, true, 2, 3};
  ts[2] = {"c", 400, true, false, true, 1, 2};
  ts[3] = {"d", 400, true, false, true, 1, 3};  // a + c + d = 1200 at stage 1: spills
  gpu::KernelTraffic t = gpu::kernel_traffic(ts, 1000);
  EXPECT_EQ(t.on_chip, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(t.spilled, std::vector<std::string>{"d"});
  EXPECT_EQ(t.dram_bytes, 800);
  // Without ranges every tensor occupies the whole kernel: only two fit.
  for (gpu::KernelTensor& k : ts) k.first_stage = k.last_stage = -1;
  t = gpu::kernel_traffic(ts, 1000);
  EXPECT_EQ(t.on_chip, (std::vector<std::string>{"a", "b"}));
}

TEST(Cost, HandBuiltGemmPlan) {
  te::TeProgram p = gemm_relu(256, 512, 1024);
  PlanOptions o;
  o.gpu = gpu::gpu_spec("a100");
  for (Strategy s : all_strategies()) {
    o.strategy = s;
    FusionPlan fp = plan(p, o);
    verify(fp);
    int64_t gemm_flops = 2LL * 256 * 512 * 1024;
    int64_t io = (256 * 512 + 512 * 1024 + 256 * 1024) * 4LL;
    if (s == Strategy::Unfused) {
      ASSERT_EQ(fp.kernels(), 2u) << print(fp);
      // C is written by the GEMM and read back by the ReLU.
      EXPECT_EQ(fp.dram_bytes, io + 2 * 256 * 1024 * 4LL);
    } else {
      ASSERT_EQ(fp.kernels(), 1u) << print(fp);
      EXPECT_EQ(fp.grid_syncs, 0);
      EXPECT_EQ(fp.dram_bytes, io);  // the ReLU is the GEMM's epilogue
      EXPECT_GE(fp.flops, gemm_flops);
      gpu::KernelCost c = gpu::kernel_cost(o.gpu, fp.flops, fp.dram_bytes, 0);
      EXPECT_NEAR(fp.est_time_us, c.total_us, 1e-9);
    }
  }
}

TEST(Cost, ScheduleEstimateTilesTheOutput) {
  te::TeProgram p = gemm_relu(384, 768, 768);
  analysis::Analysis a = analysis::analyze(p);
  gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  std::vector<ScheduleEstimate> all = estimate_schedules(a.tes[0], a100);
  ASSERT_EQ(all.size(), tile_candidates().size());
  EXPECT_EQ(all[0].blocks, 3 * 6);    // 128x128
  EXPECT_EQ(all[2].blocks, 6 * 12);   // 64x64
  EXPECT_EQ(all[4].blocks, 12 * 24);  // 32x32
  // 128x128 tiles of 256 threads, 128 registers and 64 KB: 2 per SM on 108 SMs.
  EXPECT_EQ(all[0].co_resident, 216);
  ScheduleEstimate best = best_schedule(a.tes[0], a100);
  for (const ScheduleEstimate& e : all) EXPECT_GE(e.est_us, best.est_us * 0.99 - 1e-12);
}

}  // namespace
}  // namespace souffle::plan
