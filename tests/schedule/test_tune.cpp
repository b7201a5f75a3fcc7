// The GEMM tile tuner: every candidate fits the GPU and schedules, the cost model prefers fewer
// waves and less traffic where the choice is clear, limits hold, a measurement re-ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/loop/verify.h"
#include "core/schedule/schedule.h"
#include "core/schedule/tune.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using gpu::Tile;
using schedule::GemmProblem;
using schedule::TileEstimate;
using te::Expr;

schedule::TuneOptions on(const std::string& gpu) {
  schedule::TuneOptions o;
  o.gpu = gpu::gpu_spec(gpu);
  return o;
}

/// The estimate of `t` at whatever pipeline depth the tuner chose for it (t.stages 0), or at
/// exactly t's.
const TileEstimate* find(const std::vector<TileEstimate>& r, const Tile& t) {
  for (const TileEstimate& e : r) {
    Tile u = e.tile;
    if (t.stages == 0) u.stages = 0;
    if (u == t) return &e;
  }
  return nullptr;
}

te::Op batched_matmul(int64_t batch, int64_t m, int64_t n, int64_t k) {
  te::Tensor a = te::make_input("A", {batch, m, k}, DType::Float32);
  te::Tensor b = te::make_input("B", {batch, k, n}, DType::Float32);
  return te::reduce("C", {batch, m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], i[1], r[0]}) * te::read(b, {i[0], r[0], i[2]});
                    });
}

TEST(Tune, EveryCandidateFitsTheGpuAndSchedules) {
  te::Op op = batched_matmul(2, 50, 70, 30);
  GemmProblem p = schedule::gemm_problem(*op);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.m, 50);
  EXPECT_EQ(p.n, 70);
  EXPECT_EQ(p.k, 30);
  for (const char* name : {"a100", "h100", "t4"}) {
    schedule::TuneOptions o = on(name);
    std::vector<TileEstimate> r = schedule::rank_tiles(p, o);
    ASSERT_FALSE(r.empty()) << name;
    std::printf("%s: %zu of %zu tiles fit; best %s\n", name, r.size(),
                schedule::tile_space().size(), r.front().why().c_str());
    for (size_t i = 0; i < r.size(); ++i) {
      const TileEstimate& e = r[i];
      EXPECT_EQ(e.threads, e.tile.threads());
      EXPECT_GE(e.threads, o.gpu.warp_size);
      EXPECT_LE(e.threads, o.gpu.max_threads_per_block);
      EXPECT_LE(e.regs_per_thread, o.gpu.max_registers_per_thread);
      EXPECT_LE(e.smem_bytes, o.gpu.max_shared_memory_per_block);
      EXPECT_GT(e.blocks_per_sm, 0);
      EXPECT_GT(e.total_us, 0);
      if (i > 0) {
        EXPECT_LE(r[i - 1].total_us, e.total_us * (1 + 1e-6));
      }
    }
  }
  // Each candidate is a schedule the template builds, with the grid and block it promised.
  for (const TileEstimate& e : schedule::rank_tiles(p, on("a100"))) {
    loop::Kernel k = schedule::schedule_op(*op, schedule::with_tile({}, e.tile));
    loop::verify(k);
    EXPECT_EQ(k.launch.block_x, e.threads);
    EXPECT_EQ(k.launch.grid_x, e.blocks);
  }
}

TEST(Tune, LessTrafficOnALargeProblem) {
  // 4096^3: compute-bound at any sensible tile, but small tiles reload the operands many times.
  GemmProblem p{1, 4096, 4096, 4096, 4, 4};
  std::vector<TileEstimate> r = schedule::rank_tiles(p, on("a100"));
  const TileEstimate* big = find(r, {128, 128, 16, 8, 8, true});
  const TileEstimate* small = find(r, {16, 16, 16, 2, 2, true});
  ASSERT_TRUE(big && small);
  EXPECT_LT(big->load_bytes * 4, small->load_bytes);
  EXPECT_LT(big->total_us, small->total_us);
  const TileEstimate& best = r.front();
  std::printf("4096^3 on a100: %s\n", best.why().c_str());
  EXPECT_GE(best.tile.bm * best.tile.bn, 64 * 64);
  EXPECT_TRUE(best.tile.double_buffer);
}

TEST(Tune, FewerWavesWinOnASmallProblem) {
  // 64 x 64 x 1024: one 64x64 tile would leave all but one SM idle; smaller tiles spread out.
  GemmProblem p{1, 64, 64, 1024, 4, 4};
  std::vector<TileEstimate> r = schedule::rank_tiles(p, on("a100"));
  const TileEstimate* one = find(r, {64, 64, 16, 4, 4, true});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->blocks, 1);
  EXPECT_GT(r.front().blocks, 4);
  EXPECT_LT(r.front().total_us, one->total_us);
  std::printf("64x64x1024 on a100: %s\n", r.front().why().c_str());
}

TEST(Tune, WaveQuantization) {
  // The same tile on a problem one block past a whole wave costs a second wave.
  schedule::TuneOptions o = on("a100");
  Tile t{128, 128, 16, 8, 8, true};
  GemmProblem p{1, 128, 128, 512, 4, 4};
  const std::vector<TileEstimate> r1 = schedule::rank_tiles(p, o);
  const TileEstimate* e1 = find(r1, t);
  ASSERT_TRUE(e1);
  int64_t wave = e1->co_resident;
  GemmProblem full{wave, 128, 128, 512, 4, 4}, over{wave + 1, 128, 128, 512, 4, 4};
  const std::vector<TileEstimate> rf = schedule::rank_tiles(full, o),
                                  ro = schedule::rank_tiles(over, o);
  const TileEstimate *ef = find(rf, t), *eo = find(ro, t);
  ASSERT_TRUE(ef && eo);
  EXPECT_DOUBLE_EQ(ef->waves, 1.0);
  EXPECT_GT(eo->compute_us, 1.4 * ef->compute_us);
}

TEST(Tune, DoubleBufferingHidesLoadsWhenOneBlockFitsAnSm) {
  GemmProblem p{1, 2048, 2048, 2048, 4, 4};
  std::vector<TileEstimate> r = schedule::rank_tiles(p, on("h100"));
  for (const TileEstimate& e : r) {
    if (!e.tile.double_buffer) continue;
    Tile single = e.tile;
    single.double_buffer = false;
    const TileEstimate* s = find(r, single);
    ASSERT_TRUE(s);
    if (e.blocks_per_sm == s->blocks_per_sm) {
      EXPECT_LE(e.total_us, s->total_us);
    }
  }
}

TEST(Tune, LimitsHold) {
  te::Op op = batched_matmul(1, 300, 300, 64);
  schedule::TuneOptions o = on("a100");
  o.limits.threads = 128;
  schedule::TuneResult r = schedule::tune_gemm(*op, o);
  ASSERT_TRUE(r.ok());
  for (const TileEstimate& e : r.ranked) EXPECT_EQ(e.threads, 128);
  o.limits.threads = 0;
  o.limits.fit_co_resident = true;
  r = schedule::tune_gemm(*op, o);
  ASSERT_TRUE(r.ok());
  for (const TileEstimate& e : r.ranked) EXPECT_LE(e.blocks, e.co_resident);
  o.limits.threads = 3;  // no tile has 3 threads
  EXPECT_FALSE(schedule::tune_gemm(*op, o).ok());
}

/// rank_tiles keeps its answers by everything it reads: asked again it gives the same ranking,
/// and any other figure of the GPU, precision or limit gives that one's ranking, not a kept one.
TEST(Tune, KeptRankingsFollowEveryInput) {
  auto text = [](const std::vector<TileEstimate>& r) {
    std::string s;
    for (const TileEstimate& e : r) s += e.why() + "\n";
    return s;
  };
  const GemmProblem p{1, 512, 512, 256};
  schedule::TuneOptions o = on("a100");
  const std::string first = text(schedule::rank_tiles(p, o));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(text(schedule::rank_tiles(p, o)), first);
  schedule::TuneOptions slower = o;
  slower.gpu.dram_bandwidth_gbps /= 4;
  schedule::TuneOptions fewer_sms = o;
  fewer_sms.gpu.sm_count /= 2;
  schedule::TuneOptions threads = o;
  threads.limits.threads = 128;
  schedule::TuneOptions fp16 = o;
  fp16.precision = gpu::Precision::FP16;
  GemmProblem wider = p;
  wider.in_bytes = 2;
  for (const auto& [what, other, problem] :
       {std::tuple{"bandwidth", slower, p}, std::tuple{"SMs", fewer_sms, p},
        std::tuple{"threads", threads, p}, std::tuple{"precision", fp16, p},
        std::tuple{"operand bytes", o, wider}})
    EXPECT_NE(text(schedule::rank_tiles(problem, other)), first) << what;
  EXPECT_EQ(text(schedule::rank_tiles(p, o)), first);
}

TEST(Tune, MeasurementReranksTheModelsBest) {
  te::Op op = batched_matmul(1, 256, 256, 256);
  schedule::TuneOptions o = on("a100");
  schedule::TuneResult model = schedule::tune_gemm(*op, o);
  ASSERT_GE(model.ranked.size(), 4u);
  o.measure_top = 4;
  int calls = 0;
  // A measurement that finds the model's order reversed, and the model's third tile failing.
  o.measure = [&](const te::ComputeOp& m, const std::vector<TileEstimate>& c) {
    ++calls;
    EXPECT_EQ(&m, op.get());
    EXPECT_EQ(c.size(), 4u);
    std::vector<double> t;
    for (size_t i = 0; i < c.size(); ++i) t.push_back(i == 2 ? -1.0 : 10.0 - double(i));
    return t;
  };
  schedule::TuneResult r = schedule::tune_gemm(*op, o);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.measured);
  ASSERT_EQ(r.ranked.size(), model.ranked.size());
  EXPECT_EQ(r.ranked[0].tile, model.ranked[3].tile);
  EXPECT_EQ(r.ranked[1].tile, model.ranked[1].tile);
  EXPECT_EQ(r.ranked[2].tile, model.ranked[0].tile);
  EXPECT_EQ(r.ranked[3].tile, model.ranked[2].tile);  // failed: after the measured ones
  EXPECT_EQ(r.ranked[4].tile, model.ranked[4].tile);  // not measured: model order
  EXPECT_NE(r.reason().find("measured"), std::string::npos);
}

TEST(Tune, TensorCoreTilesUnderFp16) {
  // Under fp16 every candidate is a tensor-core tile at the tensor-core peak: on a large
  // problem the best is estimated well below the best FP32 tile and reuses its fragments.
  GemmProblem p{1, 4096, 4096, 4096, 4, 4};
  schedule::TuneOptions o = on("a100");
  const std::vector<TileEstimate> simt = schedule::rank_tiles(p, o);
  o.precision = gpu::Precision::FP16;
  const std::vector<TileEstimate> r = schedule::rank_tiles(p, o);
  ASSERT_FALSE(r.empty());
  EXPECT_LE(r.size(), schedule::tensor_core_tile_space().size());
  for (const TileEstimate& e : r) {
    EXPECT_TRUE(e.tile.tensor_core);
    EXPECT_EQ(e.threads, e.tile.warps_m() * e.tile.warps_n() * 32);
    EXPECT_LE(e.smem_bytes, o.gpu.max_shared_memory_per_block);
    EXPECT_LE(e.regs_per_thread, o.gpu.max_registers_per_thread);
  }
  const TileEstimate& best = r.front();
  std::printf("4096^3 fp16 on a100: %s\n", best.why().c_str());
  EXPECT_EQ(best.why().rfind("gemm_tc tensor-core tile ", 0), 0u) << best.why();
  // Operand panels bound both (the tensor-core tile's re-reads at L2 bandwidth); the math
  // itself is 8x faster.
  EXPECT_LT(best.total_us * 2, simt.front().total_us);
  EXPECT_LT(best.compute_us * 4, simt.front().compute_us);
  EXPECT_GE(best.tile.tm * best.tile.tn, 4);  // 1x1 fragments reload a fragment per MMA
  EXPECT_GE(best.tile.bm * best.tile.bn, 64 * 64);
  // One 16x16 fragment per warp and one warp per block is the worst of the space here (in
  // whichever form of its f32 operands the tuner kept).
  Tile tiny_ring{16, 16, 16, 1, 1, false, true};
  tiny_ring.f32_ring = true;
  const TileEstimate* tiny = find(r, {16, 16, 16, 1, 1, false, true});
  if (!tiny) tiny = find(r, tiny_ring);
  ASSERT_TRUE(tiny);
  EXPECT_GT(tiny->total_us, 4 * best.total_us);
}

TEST(Tune, TensorCoreTilesSpreadASmallGemm) {
  // BERT-sample-sized 128 x 64 x 64: a 64x64 tile gives 2 blocks; smaller tiles spread out.
  GemmProblem p{1, 128, 64, 64, 4, 4};
  schedule::TuneOptions o = on("a100");
  o.precision = gpu::Precision::FP16;
  const std::vector<TileEstimate> r = schedule::rank_tiles(p, o);
  // The 64x64x32 tile in whichever form of its f32 operands the tuner kept (an f32 ring, or
  // converted through registers).
  Tile ring{64, 64, 32, 2, 2, false, true};
  ring.f32_ring = true;
  const TileEstimate* fixed = find(r, {64, 64, 32, 2, 2, false, true});
  if (!fixed) fixed = find(r, ring);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->blocks, 2);
  std::printf("128x64x64 fp16 on a100: %s (fixed 64x64x32: %.2f us)\n", r.front().why().c_str(),
              fixed->total_us);
  EXPECT_GT(r.front().blocks, 2);
  EXPECT_LT(r.front().total_us, fixed->total_us);
}

TEST(Tune, TensorCoreLimitsAndIntegerGemms) {
  te::Op op = batched_matmul(1, 300, 300, 64);
  schedule::TuneOptions o = on("h100");
  o.precision = gpu::Precision::BF16;
  o.limits.threads = 256;  // a merged kernel's block: 8 warps
  schedule::TuneResult r = schedule::tune_gemm(*op, o);
  ASSERT_TRUE(r.ok());
  for (const TileEstimate& e : r.ranked) {
    EXPECT_TRUE(e.tile.tensor_core);
    EXPECT_EQ(e.threads, 256);
  }
  EXPECT_NE(r.reason().find("tensor-core tile"), std::string::npos) << r.reason();
  // Integer operands stay on the SIMT template (the kernels schedule them there).
  te::Tensor a = te::make_input("Ai", {64, 32}, DType::Int32);
  te::Tensor b = te::make_input("Bi", {32, 48}, DType::Int32);
  te::Op imm = te::reduce("Ci", {64, 48}, DType::Int32, te::ReduceKind::Sum, {32},
                          [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                            return te::read(a, {i[0], k[0]}) * te::read(b, {k[0], i[1]});
                          });
  o.limits.threads = 0;
  r = schedule::tune_gemm(*imm, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.best().tile.tensor_core);
  // with_tile hands a tensor-core tile to the tensor-core template's fields only.
  Tile t{128, 64, 64, 4, 2, false, true};
  schedule::ScheduleConfig c = schedule::with_tile({}, t);
  EXPECT_EQ(c.tc_tile, t);
  EXPECT_EQ(c.gemm_tile, schedule::ScheduleConfig{}.gemm_tile);
  EXPECT_EQ(t.threads(), 2 * 2 * 32);
  EXPECT_EQ(t.describe(), "tensor-core tile 128x64x64, warps 2x2 of 4x2 fragments");
  EXPECT_EQ(schedule::with_tile(c, Tile{}).tc_tile.bm, 0);
}

/// The estimate of tensor-core tile `t` in whichever form of its f32 operands the tuner kept.
const TileEstimate* find_tc(const std::vector<TileEstimate>& r, Tile t) {
  t.f32_ring = false;
  if (const TileEstimate* e = find(r, t)) return e;
  t.f32_ring = true;
  return find(r, t);
}

TEST(Tune, TensorCoreTilesOfEqualMainloopRankByOperandTraffic) {
  // 256x16x64 and 64x64x64 at 2 stages, both 4 warps of 4 fragments, on 512 x 512 x 1024 f16:
  // 64 blocks each, one per SM, and the same mainloop structure (4096-element tile, k 64 a
  // trip), so the mainloop prices them alike; 256x16 re-reads the A panels 32 times (64x64:
  // 8), more than twice the operand traffic, and is priced above it.
  GemmProblem p{1, 512, 512, 1024, 2, 2};
  schedule::TuneOptions o = on("a100");
  o.precision = gpu::Precision::FP16;
  Tile skewed_tile{256, 16, 64, 4, 1, false, true}, square_tile{64, 64, 64, 2, 2, false, true};
  skewed_tile.stages = square_tile.stages = 2;
  TileEstimate skewed, square;
  ASSERT_TRUE(schedule::estimate_tile(p, skewed_tile, o, skewed));
  ASSERT_TRUE(schedule::estimate_tile(p, square_tile, o, square));
  std::printf("skewed: %s\nsquare: %s\n", skewed.why().c_str(), square.why().c_str());
  EXPECT_EQ(skewed.blocks, square.blocks);
  ASSERT_NEAR(skewed.mainloop_us, square.mainloop_us, 1e-9 * square.mainloop_us);
  EXPECT_GT(skewed.l2_bytes, 2 * square.l2_bytes);
  EXPECT_EQ(skewed.dram_bytes, square.dram_bytes);  // each operand once; the rest from L2
  EXPECT_GT(skewed.memory_us, square.memory_us);
  // Here the mainloop bounds both (the traffic overlaps it): equal prices, less traffic first.
  EXPECT_GE(skewed.total_us, square.total_us);
  const std::vector<TileEstimate> r = schedule::rank_tiles(p, o);
  const TileEstimate* rs = find(r, {256, 16, 64, 4, 1, false, true});
  const TileEstimate* rq = find(r, {64, 64, 64, 2, 2, false, true});
  ASSERT_TRUE(rs && rq);
  EXPECT_LT(rq - r.data(), rs - r.data());
  // At 4 stages the ring hides the load's latency, the mainloop shortens, and the traffic
  // bounds the skewed tile: priced above the square one.
  skewed_tile.stages = square_tile.stages = 4;
  TileEstimate skewed_slow, square_slow;
  ASSERT_TRUE(schedule::estimate_tile(p, skewed_tile, o, skewed_slow));
  ASSERT_TRUE(schedule::estimate_tile(p, square_tile, o, square_slow));
  std::printf("4 stages: %s\n          %s\n", skewed_slow.why().c_str(), square_slow.why().c_str());
  EXPECT_NEAR(skewed_slow.mainloop_us, square_slow.mainloop_us, 1e-9 * square.mainloop_us);
  EXPECT_GT(skewed_slow.total_us, square_slow.total_us * 1.2) << skewed_slow.why();
  // Every tensor-core estimate is at least its traffic and its K loop's compute.
  for (const TileEstimate& e : r) {
    EXPECT_EQ(e.dram_bytes + e.l2_bytes, e.load_bytes) << e.why();
    EXPECT_GE(e.total_us, e.memory_us) << e.why();
    EXPECT_GE(e.total_us, e.compute_us) << e.why();
  }
}

TEST(Tune, TensorCoreTilesDoNotPadPastTheProblem) {
  // The sample BERT's GEMMs (128 tokens; f32 tensors under fp16). Ranked by the mainloop's
  // price alone (on the GEMM's own FLOPs), 256x16x64 tiles once won here: half of each tile
  // past M. Priced by structure (the FLOPs of whole tiles, the panels' traffic) they lose to
  // a tile within M.
  schedule::TuneOptions o = on("a100");
  o.precision = gpu::Precision::FP16;
  for (const GemmProblem& shape :
       {GemmProblem{1, 128, 256, 128, 4, 4}, GemmProblem{1, 128, 64, 512, 4, 4},
        GemmProblem{1, 128, 192, 128, 4, 4}}) {
    GemmProblem p = shape;
    p.operands_known = true;
    p.operands = {gpu::MmaElem::F32, gpu::MmaElem::F32};
    const std::vector<TileEstimate> r = schedule::rank_tiles(p, o);
    ASSERT_FALSE(r.empty());
    const TileEstimate& best = r.front();
    std::printf("%lldx%lldx%lld: %s\n", static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k), best.why().c_str());
    EXPECT_LE(best.tile.bm, p.m) << best.why();
    const TileEstimate* skewed = find_tc(r, {256, 16, 64, 4, 1, false, true});
    ASSERT_TRUE(skewed);
    EXPECT_GT(skewed->total_us, best.total_us) << skewed->why();
    EXPECT_LE(best.dram_bytes, skewed->dram_bytes) << skewed->why();
  }
}

TEST(Tune, F32RingConversionIsPriced) {
  // The f32 ring converts its stage into the ldmatrix tile every K step behind a second block
  // barrier: at one block per SM its trip costs more than an f16 ring's of the same tile, by at
  // least the conversion's shared traffic and the barrier.
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  const gpu::CostConstants cc = gpu::cost_constants(spec, gpu::Precision::FP16);
  Tile t{64, 64, 32, 2, 2, false, true};
  t.stages = 3;
  t.f32_ring = true;
  auto trip = [&](gpu::MmaElem elem) {
    gpu::StageWork w;
    w.flops = 2LL * 64 * 64 * 1024;
    w.tensor_core = true;
    w.mainloop =
        gpu::mma_mainloop_structure(t, gpu::mma_mainloop(t, {elem, elem}, gpu::Precision::FP16));
    w.grid = 1;
    w.block = t.threads();
    return gpu::mainloop_cost(spec, cc, w, 1, 1);
  };
  const gpu::MainloopCost ring = trip(gpu::MmaElem::F32), f16 = trip(gpu::MmaElem::F16);
  ASSERT_TRUE(ring.priced && f16.priced);
  EXPECT_EQ(ring.steps, f16.steps);
  const double clock = gpu::sm_clock_ghz(spec) * 1e3;  // clocks per microsecond
  // 64x64x32: (64 + 64) x 32 elements converted, 6 bytes each, at 128 bytes a clock.
  const double convert_us = (128.0 * 32 * 6 / gpu::kSharedBytesPerClock) / clock;
  const double barrier_us = gpu::kBlockBarrierClocks / clock;
  std::printf("trip: f16 ring %.4f us, f32 ring %.4f us (conversion %.4f, barrier %.4f)\n",
              f16.compute_us, ring.compute_us, convert_us, barrier_us);
  EXPECT_GE(ring.compute_us, f16.compute_us + convert_us + barrier_us - 1e-9);
  EXPECT_NE(ring.from.find("4-byte operands"), std::string::npos) << ring.from;
}

}  // namespace
}  // namespace souffle
