// The tensor-core mainloop's pipeline depth (docs/mainloop.md, "Pipeline depth"): the
// resources model (gpu::tile_resources, gpu::mma_mainloop) describes the shared memory the built
// kernel allocates and the structure the pricer reads from it; the tuner chooses the depth
// (2..4) by the structural mainloop price within shared memory and occupancy, and the chosen
// depth reaches the built kernel.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/schedule/template_util.h"
#include "core/schedule/tune.h"
#include "core/te/builder.h"
#include "tests/schedule/matmul_te.h"

namespace souffle {
namespace {

using gpu::Precision;
using te::Expr;
using te::Tensor;

using test_te::matmul;

/// The mainloop's operands of `op` as the tuner sees them.
gpu::MmaOperands operands(const te::Op& op) {
  schedule::detail::GemmParts g;
  EXPECT_TRUE(schedule::detail::match_gemm(*op, g));
  return schedule::detail::mma_operands(*op, g);
}

loop::Kernel build(const te::Op& op, const gpu::Tile& t, Precision p) {
  schedule::ScheduleConfig c;
  c.precision = p;
  return schedule::schedule_op(*op, schedule::with_tile(c, t));
}

TEST(MmaDepth, ResourcesModelIsTheBuiltKernelsSharedMemoryAndStructure) {
  // Tiles, precisions, operand types and depths: the model's shared bytes are the kernel's
  // arena, its depth is the one the schedule names, and the structure it prices is the one the
  // pricer reads from the built kernel.
  struct C {
    gpu::Tile tile;
    Precision p;
    DType t;
    bool ring = false;  ///< f32 tensors through the f32 cp.async ring
  };
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  int checked = 0;
  for (const C& c : {C{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float16},
                     C{{128, 64, 64, 2, 2, false, true}, Precision::FP16, DType::Float16},
                     C{{64, 128, 16, 1, 2, false, true}, Precision::BF16, DType::BFloat16},
                     C{{64, 64, 32, 2, 2, false, true}, Precision::TF32, DType::Float32},
                     C{{32, 64, 32, 1, 2, false, true}, Precision::TF32, DType::Float32},
                     C{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float32},
                     C{{32, 32, 64, 1, 1, false, true}, Precision::BF16, DType::Float32},
                     C{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float32, true},
                     C{{32, 64, 16, 1, 2, false, true}, Precision::BF16, DType::Float32, true}}) {
    te::Op op = matmul(256, 256, 256, c.t);
    const gpu::MmaOperands ops = operands(op);
    for (int64_t stages : {0, 2, 3, 4}) {
      gpu::Tile t = c.tile;
      t.stages = stages;
      t.f32_ring = c.ring;
      const gpu::TileResources r = gpu::tile_resources(t, dtype_size(c.t), c.p, &ops);
      const loop::Kernel k = build(op, t, c.p);
      const std::string& sched = k.stages[0].schedule;
      EXPECT_EQ(r.smem_bytes, k.launch.dynamic_shared_bytes) << sched;
      EXPECT_NE(sched.find(std::to_string(r.stages) + " stages"), std::string::npos) << sched;
      if (stages > 0) {
        EXPECT_EQ(r.stages, stages);
      }
      EXPECT_EQ(r.threads, k.launch.block_x);
      const gpu::MmaMainloop m = gpu::mma_mainloop(t, ops, c.p);
      const gpu::MainloopStructure want = gpu::mma_mainloop_structure(t, m);
      const gpu::CostConstants cc = gpu::cost_constants(spec, c.p);
      const schedule::KernelPrice kp = schedule::price_kernel(
          k, spec, cc, [&](const std::string&) { return int64_t{2} * 256 * 256 * 256; });
      ASSERT_FALSE(kp.stages.empty());
      const gpu::MainloopStructure& got = kp.stages[0].work.mainloop;
      EXPECT_EQ(got.describe(), want.describe()) << sched;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 36);
  // The f32 tensors under fp16/bf16 are converted: nothing asynchronous, so 2 stages by default.
  const gpu::MmaOperands f32{gpu::MmaElem::F32, gpu::MmaElem::F32};
  EXPECT_EQ(gpu::mma_mainloop({64, 64, 32, 2, 2, false, true}, f32, Precision::FP16).stages, 2);
  // A bf16 tensor under fp16 is converted too.
  const gpu::MmaOperands bf{gpu::MmaElem::BF16, gpu::MmaElem::BF16};
  EXPECT_FALSE(gpu::mma_mainloop({64, 64, 32, 2, 2, false, true}, bf, Precision::FP16).any_async());
  EXPECT_TRUE(gpu::mma_mainloop({64, 64, 32, 2, 2, false, true}, bf, Precision::BF16).any_async());
}

TEST(MmaDepth, DeeperPipelineIsNotPricedSlower) {
  // The same tile at the same occupancy: each stage more hides more of the load's latency, so
  // the price never grows with the depth, and falls where the load is exposed.
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  for (Precision p : {Precision::FP16, Precision::TF32}) {
    const gpu::CostConstants cc = gpu::cost_constants(spec, p);
    const gpu::MmaElem same = p == Precision::TF32 ? gpu::MmaElem::F32 : gpu::MmaElem::F16;
    for (const gpu::Tile& base :
         {gpu::Tile{64, 64, 32, 2, 2, false, true}, gpu::Tile{128, 128, 32, 2, 4, false, true},
          gpu::Tile{32, 32, 64, 1, 1, false, true}}) {
      double prev = 0;
      for (int64_t s = 2; s <= 4; ++s) {
        gpu::Tile t = base;
        t.stages = s;
        gpu::StageWork w;
        w.flops = 2LL * 1024 * 1024 * 1024;
        w.tensor_core = true;
        w.mainloop = gpu::mma_mainloop_structure(t, gpu::mma_mainloop(t, {same, same}, p));
        w.grid = (1024 / t.bm) * (1024 / t.bn);
        w.block = t.threads();
        const gpu::MainloopCost m = gpu::mainloop_cost(spec, cc, w, 1, 1);
        ASSERT_TRUE(m.priced);
        std::printf("%s %s: %.3f us\n", gpu::precision_name(p), t.describe().c_str(), m.total_us);
        if (s > 2) {
          EXPECT_LE(m.total_us, prev * (1 + 1e-12)) << t.describe();
        }
        if (s == 3) {
          EXPECT_LT(m.total_us, prev) << t.describe();  // one block per SM: latency exposed at 2
        }
        prev = m.total_us;
      }
    }
  }
}

schedule::TuneOptions tune_options(const gpu::GpuSpec& spec, Precision p) {
  schedule::TuneOptions o;
  o.gpu = spec;
  o.precision = p;
  return o;
}

const schedule::TileEstimate* find(const std::vector<schedule::TileEstimate>& ranked,
                                   const gpu::Tile& t) {
  for (const schedule::TileEstimate& e : ranked)
    if (e.tile.bm == t.bm && e.tile.bn == t.bn && e.tile.bk == t.bk && e.tile.tm == t.tm &&
        e.tile.tn == t.tn)
      return &e;
  return nullptr;
}

TEST(MmaDepth, TunerPicksDeepWhereItFitsAndTwoWhereSharedMemoryIsTight) {
  te::Op op = matmul(1024, 1024, 1024, DType::Float16);
  const schedule::GemmProblem prob = schedule::gemm_problem(*op);
  EXPECT_EQ(prob.operands.a, gpu::MmaElem::F16);
  EXPECT_EQ(prob.operands.b, gpu::MmaElem::F16);
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  const std::vector<schedule::TileEstimate> ranked =
      schedule::rank_tiles(prob, tune_options(a100, Precision::FP16));
  // The best tile on the Ampere mainloop (warp tiles of 4x4 fragments stay on wmma).
  const schedule::TileEstimate* first = nullptr;
  for (const schedule::TileEstimate& e : ranked)
    if (gpu::mma_warp_tile(e.tile) && !first) first = &e;
  ASSERT_NE(first, nullptr);
  const schedule::TileEstimate& best = *first;
  std::printf("a100: %s\n", best.why().c_str());
  EXPECT_GE(best.tile.stages, 3);
  EXPECT_LE(best.tile.stages, 4);
  EXPECT_NE(best.why().find(std::to_string(best.tile.stages) + " stages"), std::string::npos);
  for (const schedule::TileEstimate& e : ranked) {
    if (!gpu::mma_warp_tile(e.tile)) {
      EXPECT_EQ(e.tile.stages, 0) << e.why();
      continue;
    }
    EXPECT_GE(e.tile.stages, 2);
    EXPECT_LE(e.tile.stages, 4);
    EXPECT_EQ(e.smem_bytes, gpu::tile_resources(e.tile, 2, Precision::FP16).smem_bytes);
    EXPECT_GT(e.mainloop_us, 0);
  }
  // 128x128x64: 32 KB a stage. On the A100 a deep ring fits; with 72 KB per block and SM only
  // 2 stages do.
  const gpu::Tile big{128, 128, 64, 2, 2, false, true};
  const schedule::TileEstimate* roomy = find(ranked, big);
  ASSERT_NE(roomy, nullptr);
  EXPECT_GE(roomy->tile.stages, 3) << roomy->why();
  gpu::GpuSpec tight = a100;
  tight.name = "a100, 72 KB shared";
  tight.shared_memory_per_sm = tight.max_shared_memory_per_block = 72 << 10;
  const std::vector<schedule::TileEstimate> small =
      schedule::rank_tiles(prob, tune_options(tight, Precision::FP16));
  const schedule::TileEstimate* cramped = find(small, big);
  ASSERT_NE(cramped, nullptr);
  std::printf("72 KB: %s\n", cramped->why().c_str());
  EXPECT_EQ(cramped->tile.stages, 2);
  EXPECT_LE(cramped->smem_bytes, tight.max_shared_memory_per_block);

  // f32 tensors under fp16: converted through registers they gain nothing from a deeper ring
  // (2 stages); the f32 cp.async ring is asynchronous, and priced below the conversion where
  // it fits.
  const schedule::GemmProblem f32 =
      schedule::gemm_problem(*matmul(1024, 1024, 1024, DType::Float32));
  EXPECT_EQ(f32.operands.a, gpu::MmaElem::F32);
  int rings = 0, mma = 0;
  for (const schedule::TileEstimate& e :
       schedule::rank_tiles(f32, tune_options(a100, Precision::FP16))) {
    if (!gpu::mma_warp_tile(e.tile)) continue;
    ++mma;
    rings += e.tile.f32_ring;
    if (!e.tile.f32_ring) {
      EXPECT_EQ(e.tile.stages, 2) << e.why();
    }
    EXPECT_EQ(e.smem_bytes, gpu::tile_resources(e.tile, 4, Precision::FP16).smem_bytes);
  }
  std::printf("1024^3 fp16 from f32 tensors: %d of %d Ampere tiles take the f32 ring\n", rings,
              mma);
  EXPECT_GT(mma, 0);
  EXPECT_GT(rings, 0);
  // With 20 KB of shared memory a 64x64x32 tile's ring (2 x 16 KB of f32 and an 8 KB converted
  // tile) does not fit; its 2 x 8 KB fp16 stages do, converting through registers.
  gpu::GpuSpec little = a100;
  little.name = "a100, 20 KB shared";
  little.shared_memory_per_sm = little.max_shared_memory_per_block = 20 << 10;
  const std::vector<schedule::TileEstimate> tight_f32 =
      schedule::rank_tiles(f32, tune_options(little, Precision::FP16));
  const schedule::TileEstimate* conv = find(tight_f32, {64, 64, 32, 2, 2, false, true});
  ASSERT_NE(conv, nullptr);
  EXPECT_FALSE(conv->tile.f32_ring) << conv->why();
  EXPECT_EQ(conv->tile.stages, 2);
}

TEST(MmaDepth, ChosenDepthReachesTheKernel) {
  te::Op op = matmul(512, 512, 512, DType::Float16);
  schedule::TuneResult r =
      schedule::tune_gemm(*op, tune_options(gpu::gpu_spec("a100"), Precision::FP16));
  ASSERT_TRUE(r.ok());
  const schedule::TileEstimate* e = nullptr;
  for (const schedule::TileEstimate& x : r.ranked)
    if (gpu::mma_warp_tile(x.tile) && !e) e = &x;
  ASSERT_NE(e, nullptr);
  const gpu::Tile t = e->tile;
  const loop::Kernel k = build(op, t, Precision::FP16);
  const std::string& sched = k.stages[0].schedule;
  EXPECT_EQ(sched.rfind("gemm_mma", 0), 0u) << sched;
  EXPECT_NE(sched.find(std::to_string(t.stages) + " stages"), std::string::npos) << sched;
  EXPECT_NE(t.describe().find(std::to_string(t.stages) + " stages"), std::string::npos);
  EXPECT_EQ(k.launch.dynamic_shared_bytes, e->smem_bytes);
  // The config's own depth still overrides the tile's.
  schedule::ScheduleConfig c;
  c.precision = Precision::FP16;
  c.mma_stages = t.stages == 2 ? 4 : 2;
  const loop::Kernel k2 = schedule::schedule_op(*op, schedule::with_tile(c, t));
  EXPECT_NE(k2.stages[0].schedule.find(std::to_string(c.mma_stages) + " stages"),
            std::string::npos);
}

}  // namespace
}  // namespace souffle
