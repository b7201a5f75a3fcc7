// The tensor-core tile the GEMM templates record on the stage they build
// (loop::StageInfo::tensor_core) is the one they built: the template, the block tile, the ring
// and, for the Ampere mainloop, gpu::mma_mainloop's register need; price_kernel reads the
// register need there, not from the schedule text (issues 29 and 34).

#include <gtest/gtest.h>

#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"
#include "tests/schedule/matmul_te.h"

namespace souffle {
namespace {

using gpu::Precision;
using te::Expr;
using te::Tensor;

using test_te::matmul;

schedule::ScheduleConfig tc_config(Precision p, const gpu::Tile& tile) {
  schedule::ScheduleConfig c;
  c.precision = p;
  c.tc_tile = tile;
  c.block = tile.threads();
  return c;
}

TEST(TcTile, MmaSyncStageRecordsItsMainloop) {
  struct T {
    gpu::Tile tile;
    Precision p;
    DType in;
    bool ring;
  };
  int checked = 0;
  for (const T& t : {T{{32, 32, 16, 1, 1, false, true}, Precision::FP16, DType::Float32, true},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float32, false},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float16, false},
                     T{{128, 128, 32, 2, 4, false, true}, Precision::BF16, DType::Float32, true},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::TF32, DType::Float32, false}}) {
    gpu::Tile tile = t.tile;
    tile.f32_ring = t.ring;
    const te::Op op = matmul(256, 256, 256, t.in);
    const loop::Kernel k = schedule::schedule_op(*op, tc_config(t.p, tile));
    ASSERT_EQ(k.stages.size(), 1u);
    const TensorCoreTile& got = k.stages[0].tensor_core;
    ASSERT_EQ(got.kind, TcTemplate::MmaSync) << k.stages[0].schedule;
    EXPECT_EQ(k.stages[0].schedule.rfind(tc_template_name(got.kind), 0), 0u);
    // Plain row-major reads: both operands copy by cp.async, as the compute type or (f32 under
    // fp16/bf16) into an f32 ring where the tile asks for one.
    const gpu::MmaElem e = gpu::mma_elem_of(dtype_size(t.in), t.p);
    const gpu::MmaMainloop ml = gpu::mma_mainloop(tile, {e, e}, t.p);
    EXPECT_EQ(got.bm, tile.bm);
    EXPECT_EQ(got.bn, tile.bn);
    EXPECT_EQ(got.bk, tile.bk);
    EXPECT_EQ(got.fm, tile.tm);
    EXPECT_EQ(got.fn, tile.tn);
    EXPECT_EQ(got.warps, tile.warps_m() * tile.warps_n());
    EXPECT_EQ(got.stages, ml.stages);
    EXPECT_EQ(got.f32_ring, ml.any_wide());
    EXPECT_EQ(got.f32_ring, t.ring && t.in == DType::Float32 && t.p != Precision::TF32);
    EXPECT_EQ(got.regs, ml.regs) << k.stages[0].schedule;
    EXPECT_GT(got.regs, 40);
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(TcTile, WmmaAndWgmmaStagesRecordTheirTemplate) {
  // A 4x4-fragment warp tile stays on the wmma template; double-buffered: two stages.
  gpu::Tile big{128, 128, 32, 4, 4, true, true};
  const te::Op op = matmul(256, 256, 256, DType::Float16);
  const loop::Kernel wmma = schedule::schedule_op(*op, tc_config(Precision::FP16, big));
  const TensorCoreTile& w = wmma.stages.at(0).tensor_core;
  EXPECT_EQ(w.kind, TcTemplate::Wmma) << wmma.stages[0].schedule;
  EXPECT_EQ(wmma.stages[0].schedule.rfind("gemm_tc ", 0), 0u);
  EXPECT_EQ(w.bm, 128);
  EXPECT_EQ(w.bn, 128);
  EXPECT_EQ(w.bk, 32);
  EXPECT_EQ(w.fm, 4);
  EXPECT_EQ(w.fn, 4);
  EXPECT_EQ(w.warps, 4);
  EXPECT_EQ(w.stages, 2);
  EXPECT_EQ(w.regs, 0);

  schedule::ScheduleConfig h = tc_config(Precision::FP16, {64, 64, 32, 2, 2, false, true});
  h.wgmma_mainloop = true;
  h.mma_stages = 3;
  const loop::Kernel wg = schedule::schedule_op(*op, h);
  const TensorCoreTile& g = wg.stages.at(0).tensor_core;
  EXPECT_EQ(g.kind, TcTemplate::Wgmma) << wg.stages[0].schedule;
  EXPECT_EQ(wg.stages[0].schedule.rfind("gemm_wgmma ", 0), 0u);
  EXPECT_EQ(g.bm, 64);
  EXPECT_EQ(g.bn, 64);
  EXPECT_EQ(g.warps, 4);
  EXPECT_EQ(g.stages, 3);
  EXPECT_FALSE(g.f32_ring);
  EXPECT_EQ(g.regs, 0);

  // A stage of no tensor-core template records none.
  schedule::ScheduleConfig simt;
  const loop::Kernel s = schedule::schedule_op(*op, simt);
  EXPECT_EQ(s.stages.at(0).tensor_core, TensorCoreTile{}) << s.stages[0].schedule;
}

TEST(TcTile, PricerReadsTheRecordedRegisters) {
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  const gpu::CostConstants cc = gpu::cost_constants(spec, Precision::FP16);
  auto no_flops = [](const std::string&) { return int64_t{0}; };
  const te::Op op = matmul(256, 256, 256, DType::Float32);
  gpu::Tile tile{64, 64, 32, 2, 2, false, true};
  tile.f32_ring = true;
  loop::Kernel k = schedule::schedule_op(*op, tc_config(Precision::FP16, tile));
  const int64_t need = k.stages.at(0).tensor_core.regs;
  ASSERT_GT(need, 0);
  EXPECT_EQ(schedule::price_kernel(k, spec, cc, no_flops).regs, need);
  // The same kernel and schedule text with another recorded need: the price follows the field.
  k.stages[0].tensor_core.regs = 200;
  EXPECT_EQ(schedule::price_kernel(k, spec, cc, no_flops).regs, 200);
  EXPECT_EQ(schedule::cooperative_register_budget(k.stages, 64), 200);
  k.stages[0].tensor_core.regs = 0;
  EXPECT_LT(schedule::price_kernel(k, spec, cc, no_flops).regs, need);
  EXPECT_EQ(schedule::cooperative_register_budget(k.stages, 64), 64);
}

}  // namespace
}  // namespace souffle
