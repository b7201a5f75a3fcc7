// Cost model v2 over built kernels: the stage formula (rates, waves, occupancy), the barrier
// cost against grid size, calibration constants, and a kernel's bytes read from its loop IR
// (L2 reuse, shared-memory residents, tensor cores only where fragments run).
#include <gtest/gtest.h>

#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

const gpu::GpuSpec& a100() {
  static const gpu::GpuSpec s = gpu::gpu_spec("a100");
  return s;
}

TEST(CostV2, AFullGridReachesTheRooflineAndAShortOneDoesNot) {
  gpu::CostConstants c = gpu::cost_constants(a100(), gpu::Precision::FP32);
  gpu::StageWork w;
  w.flops = 1'000'000'000;
  w.block = 256;
  w.regs = 64;
  w.grid = 108 * 4;
  gpu::StageCost full = gpu::stage_cost(a100(), c, w);
  EXPECT_NEAR(full.flop_us, 1e9 / 19.5e12 * 1e6, 1e-6);
  EXPECT_STREQ(full.bound, "compute");
  // One block: one SM of 108 does the work, at a fraction of its rate (8 warps is enough).
  w.grid = 1;
  gpu::StageCost one = gpu::stage_cost(a100(), c, w);
  EXPECT_NEAR(one.flop_us, full.flop_us * 108, 1e-3);
  // 109 blocks at one block per SM: a second wave for one block (the tail).
  w.regs = 255;  // one 256-thread block of 255 registers per SM
  w.grid = 108;
  gpu::StageCost wave = gpu::stage_cost(a100(), c, w);
  w.grid = 109;
  gpu::StageCost tail = gpu::stage_cost(a100(), c, w);
  EXPECT_EQ(wave.waves, 1);
  EXPECT_EQ(tail.waves, 2);
  EXPECT_GT(tail.total_us, 1.9 * wave.total_us);
}

TEST(CostV2, TensorCoresOnlyForStagesThatUseThem) {
  gpu::CostConstants fp16 = gpu::cost_constants(a100(), gpu::Precision::FP16);
  gpu::StageWork w;
  w.flops = 1'000'000'000;
  w.block = 256;
  w.grid = 108 * 8 * 2;  // two full waves of 8 blocks per SM
  gpu::StageCost simt = gpu::stage_cost(a100(), fp16, w);
  w.tensor_core = true;
  gpu::StageCost tc = gpu::stage_cost(a100(), fp16, w);
  EXPECT_NEAR(simt.flop_us, 1e9 / 19.5e12 * 1e6, 1e-6);
  // Tensor cores are faster than the SIMT cores, but a stage is priced from its mainloop's
  // structure (here none is known: the synchronous template's), never at the 312 TFLOP/s peak.
  EXPECT_TRUE(tc.mainloop.priced);
  EXPECT_GT(tc.flop_us, 1e9 / 312e12 * 1e6 * 1.05);
  EXPECT_LT(tc.flop_us, simt.flop_us);
}

TEST(CostV2, BytesAtDramAndL2Bandwidth) {
  gpu::CostConstants c = gpu::cost_constants(a100(), gpu::Precision::FP32);
  gpu::StageWork w;
  w.block = 256;
  w.grid = 1000;
  w.dram_read_bytes = 1'555'000'000;
  EXPECT_NEAR(gpu::stage_cost(a100(), c, w).dram_us, 1000, 1e-6);
  w.dram_read_bytes = 0;
  w.l2_read_bytes = 1'555'000'000;
  EXPECT_NEAR(gpu::stage_cost(a100(), c, w).l2_us, 1000 / gpu::kL2BandwidthFactor, 1e-6);
}

TEST(CostV2, GridBarrierGrowsWithTheGridAndCalibrationReplacesTheSpec) {
  gpu::CostConstants spec = gpu::cost_constants(a100(), gpu::Precision::FP32);
  EXPECT_EQ(spec.source, "spec A100-SXM4-40GB");
  EXPECT_NEAR(gpu::grid_barrier_cost_us(a100(), spec, 108), 1.5, 1e-9);
  EXPECT_GT(gpu::grid_barrier_cost_us(a100(), spec, 432),
            gpu::grid_barrier_cost_us(a100(), spec, 108));
  gpu::Calibration cal;
  cal.device = "NVIDIA H200";
  cal.file = "h200.json";
  cal.launch_overhead_us = 2.5;
  cal.grid_barrier = {{132, 1, 256, 2.0}, {264, 2, 256, 3.0}};
  cal.grid_barrier_fit = gpu::fit_barrier_cost(cal.grid_barrier);
  gpu::CostConstants m = gpu::cost_constants(a100(), gpu::Precision::FP32, &cal);
  EXPECT_TRUE(m.calibrated);
  EXPECT_DOUBLE_EQ(m.launch_us, 2.5);
  EXPECT_DOUBLE_EQ(m.dram_gbps, 1555);  // not measured: the spec's
  EXPECT_NEAR(gpu::grid_barrier_cost_us(a100(), m, 198), 2.5, 1e-9);
  EXPECT_NE(m.source.find("calibration h200.json (device NVIDIA H200)"), std::string::npos)
      << m.source;
}

/// y = relu(A x B) then z = y + 1 as two merged stages: y crosses into the second stage.
loop::Kernel two_stages(bool resident) {
  Tensor a = te::make_input("A", {64, 32}, DType::Float32);
  Tensor b = te::make_input("B", {32, 64}, DType::Float32);
  te::Op mm = te::reduce("mm", {64, 64}, DType::Float32, te::ReduceKind::Sum, {32},
                         [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                           return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                         });
  te::Op z = te::compute("z", {64, 64}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(mm->output, i) + te::imm(DType::Float32, 1);
  });
  std::vector<loop::Kernel> stages = {schedule::schedule_op(*mm), schedule::schedule_op(*z)};
  schedule::MergeOptions mo;
  if (resident) mo.local = {mm->output};
  return schedule::merge_stages(std::move(stages), "k", mo);
}

TEST(PriceKernel, ReadsBytesFromTheKernelAndReusesL2) {
  gpu::CostConstants c = gpu::cost_constants(a100(), gpu::Precision::FP32);
  auto flops = [](const std::string& te) -> int64_t { return te == "mm" ? 2 * 64 * 64 * 32 : 0; };
  loop::Kernel k = two_stages(false);
  schedule::KernelPrice p = schedule::price_kernel(k, a100(), c, flops);
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(p.flops, 2 * 64 * 64 * 32);
  // Stage 0 reads A and B (first touch: DRAM) and writes mm; stage 1 reads mm back (L2: it was
  // touched just before) and writes z.
  EXPECT_EQ(p.stages[0].work.dram_read_bytes, (64 * 32 + 32 * 64) * 4);
  EXPECT_EQ(p.stages[0].work.write_bytes, 64 * 64 * 4);
  EXPECT_EQ(p.stages[1].work.l2_read_bytes, 64 * 64 * 4);
  EXPECT_EQ(p.stages[1].work.write_bytes, 64 * 64 * 4);
  EXPECT_FALSE(p.stages[0].work.tensor_core);
  EXPECT_GE(p.total_us, p.stages_us + c.launch_us);
  EXPECT_NEAR(p.total_us, p.stages_us + p.launch_us + p.barrier_us, 1e-9);
}

/// y = x * 2 then z = y + 1, element-wise on one mapping: y is block-owned.
loop::Kernel elementwise_pair(bool resident) {
  Tensor x = te::make_input("x", {4096}, DType::Float32);
  te::Op y = te::compute("y", {4096}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(x, i) * te::imm(DType::Float32, 2);
  });
  te::Op z = te::compute("z", {4096}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(y->output, i) + te::imm(DType::Float32, 1);
  });
  std::vector<loop::Kernel> stages = {schedule::schedule_op(*y), schedule::schedule_op(*z)};
  schedule::MergeOptions mo;
  if (resident) mo.local = {y->output};
  return schedule::merge_stages(std::move(stages), "k", mo);
}

TEST(PriceKernel, AResidentIntermediateCostsNoBytes) {
  gpu::CostConstants c = gpu::cost_constants(a100(), gpu::Precision::FP32);
  loop::Kernel global = elementwise_pair(false), shared = elementwise_pair(true);
  schedule::KernelPrice g = schedule::price_kernel(global, a100(), c, {});
  schedule::KernelPrice s = schedule::price_kernel(shared, a100(), c, {});
  ASSERT_EQ(s.on_chip, std::vector<std::string>{"y"});
  // y written once and read back once in DRAM otherwise.
  EXPECT_EQ(g.global_bytes - s.global_bytes, 2 * 4096 * 4);
  EXPECT_EQ(s.grid_barriers, 0);
}

}  // namespace
}  // namespace souffle
