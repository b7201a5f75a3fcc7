#include <gtest/gtest.h>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/gpu/nvrtc.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/schedule/schedule.h"
#include "core/schedule/tune.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

/// Worst relative L2 error of the kernel's outputs against the interpreter on random inputs.
double compare(const std::vector<te::Op>& ops, const loop::Kernel& kernel) {
  return schedule_test::emulated_error(ops, {kernel}, 3, true);
}

/// s[i] = sum_k x[i, k] (a block reduction with shared partials), then the GEMM
/// z[i, j] = sum_k (x[i, k] * s[i]) * w[k, j]: its A tiles read s, its B tiles only the weight.
struct RowScaledGemm {
  Tensor x = te::make_input("x", {40, 96}, DType::Float32);
  Tensor w = te::make_input("w", {96, 36}, DType::Float32);
  te::Op s = te::reduce("s", {40}, DType::Float32, te::ReduceKind::Sum, {96},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                          return te::read(x, {i[0], k[0]});
                        });
  te::Op z = te::reduce("z", {40, 36}, DType::Float32, te::ReduceKind::Sum, {96},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                          return (te::read(x, {i[0], k[0]}) * te::read(s->output, {i[0]})) *
                                 te::read(w, {k[0], i[1]});
                        });
};

schedule::ScheduleConfig small_tiles(bool double_buffer) {
  schedule::ScheduleConfig c = schedule_test::small_gemm_tile(16, 16, 8, double_buffer);
  c.block = 64;  // the GEMM's 64 threads, as the reduction
  c.cross_block_rows = 0;
  return c;
}

class Prefetch : public testing::TestWithParam<bool> {};

TEST_P(Prefetch, WeightTileLoadedBeforeTheGridBarrier) {
  RowScaledGemm g;
  schedule::ScheduleConfig c = small_tiles(GetParam());
  ASSERT_EQ(schedule::classify(*g.z), schedule::ScheduleKind::Gemm);
  schedule::MergeOptions o;
  o.arena_growth = 4096;  // the reduction's partials stay beside the prefetched tile
  loop::Kernel k = schedule::merge_stages(
      {schedule::schedule_op(*g.s, c), schedule::schedule_op(*g.z, c)}, "k", o);
  const std::string text = loop::print(k);
  EXPECT_NE(k.stages[1].schedule.find("first K tile of b prefetched before the grid barrier"),
            std::string::npos)
      << k.stages[1].schedule;
  // The B tile's load comes before the barrier, the A tile's (it reads s) after it.
  size_t pre = text.find("first K tile of operand b, prefetched");
  size_t bar = text.find("grid_barrier()");
  size_t a = text.find("first K tile of operand a");
  ASSERT_NE(pre, std::string::npos) << text;
  ASSERT_NE(bar, std::string::npos);
  EXPECT_LT(pre, bar);
  EXPECT_GT(a, bar);
  int grids = 0;
  loop::for_each_stmt(
      k.body, [&](const loop::Stmt& st) { grids += st.kind() == loop::StmtKind::GridBarrier; });
  EXPECT_EQ(grids, 1);
  EXPECT_LE(compare({g.s, g.z}, k), 1e-5);
}

TEST_P(Prefetch, PrefetchedTileDoesNotAliasTheEarlierStagesArena) {
  RowScaledGemm g;
  schedule::ScheduleConfig c = small_tiles(GetParam());
  loop::Kernel red = schedule::schedule_op(*g.s, c);
  schedule::MergeOptions o;
  o.arena_growth = 4096;
  loop::Kernel k = schedule::merge_stages({red, schedule::schedule_op(*g.z, c)}, "k", o);
  int64_t earlier_end = 0;
  for (const loop::SharedSlot& sl : k.shared) {
    bool of_reduction = false;
    for (const loop::SharedSlot& r : red.shared) of_reduction |= r.buffer.get() == sl.buffer.get();
    if (of_reduction) earlier_end = std::max(earlier_end, sl.offset + sl.bytes);
  }
  ASSERT_GT(earlier_end, 0) << "the reduction should use shared memory";
  bool found = false;
  for (const loop::SharedSlot& sl : k.shared)
    if (sl.buffer->name == "z_b") {
      found = true;
      EXPECT_GE(sl.offset, earlier_end);
    }
  EXPECT_TRUE(found);
}

TEST_P(Prefetch, WithoutItTheBarrierComesFirst) {
  RowScaledGemm g;
  schedule::ScheduleConfig c = small_tiles(GetParam());
  schedule::MergeOptions o;
  o.prefetch_weights = false;
  loop::Kernel k = schedule::merge_stages(
      {schedule::schedule_op(*g.s, c), schedule::schedule_op(*g.z, c)}, "k", o);
  const std::string text = loop::print(k);
  EXPECT_EQ(text.find("prefetched"), std::string::npos);
  EXPECT_LT(text.find("grid_barrier()"), text.find("first K tile of operand b"));
  EXPECT_LE(compare({g.s, g.z}, k), 1e-5);
}

TEST_P(Prefetch, NotWhereTheArenaWouldGrow) {
  // By default the tile is not hoisted over the reduction's live partials.
  RowScaledGemm g;
  schedule::ScheduleConfig c = small_tiles(GetParam());
  loop::Kernel red = schedule::schedule_op(*g.s, c), gemm = schedule::schedule_op(*g.z, c);
  loop::Kernel k = schedule::merge_stages({red, gemm}, "k");
  EXPECT_EQ(loop::print(k).find("prefetched"), std::string::npos);
  EXPECT_LE(k.launch.dynamic_shared_bytes,
            std::max(red.launch.dynamic_shared_bytes, gemm.launch.dynamic_shared_bytes));
}

INSTANTIATE_TEST_SUITE_P(Buffering, Prefetch, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? "DoubleBuffered" : "SingleBuffered";
                         });

TEST_P(Prefetch, TensorCoreWeightTileLoadedBeforeTheGridBarrier) {
  // The same pair with the GEMM on tensor cores (fp16, one warp of 2x2 fragments; single or
  // double-buffered): its B chunk 0 is issued before the barrier, its A chunk after it.
  RowScaledGemm g;
  schedule::ScheduleConfig c = small_tiles(false);
  c.block = 32;
  c.precision = gpu::Precision::FP16;
  c.mma_mainloop = false;  // the wmma template
  schedule::ScheduleConfig tc = schedule::with_tile(c, {32, 32, 16, 2, 2, GetParam(), true});
  schedule::MergeOptions o;
  o.arena_growth = 8192;
  loop::Kernel k = schedule::merge_stages(
      {schedule::schedule_op(*g.s, c), schedule::schedule_op(*g.z, tc)}, "k", o);
  ASSERT_NE(k.stages[1].schedule.find("gemm_tc"), std::string::npos) << k.stages[1].schedule;
  EXPECT_NE(k.stages[1].schedule.find("first K tile of b prefetched before the grid barrier"),
            std::string::npos)
      << k.stages[1].schedule;
  const std::string text = loop::print(k);
  size_t pre = text.find("first K tile of operand b, prefetched");
  size_t bar = text.find("grid_barrier()");
  size_t a = text.find("first K tile of operand a");
  ASSERT_NE(pre, std::string::npos) << text;
  EXPECT_LT(pre, bar);
  EXPECT_GT(a, bar);
  const double e = compare({g.s, g.z}, k);
  EXPECT_LE(e, 1e-2);
  EXPECT_GT(e, 0.0);  // fp16 operands: not bit-exact
}

TEST(Prefetch, GemmOfAnEarlierStageOutputIsNotPrefetched) {
  // Both operands read what the kernel wrote: nothing may move before the barrier.
  Tensor x = te::make_input("x", {32, 16}, DType::Float32);
  te::Op y = te::compute("y", {32, 16}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(x, i) + 1.0; });
  te::Op z =
      te::reduce("z", {32, 32}, DType::Float32, te::ReduceKind::Sum, {16},
                 [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                   return te::read(y->output, {i[0], k[0]}) * te::read(y->output, {i[1], k[0]});
                 });
  schedule::ScheduleConfig c = small_tiles(false);
  loop::Kernel k =
      schedule::merge_stages({schedule::schedule_op(*y, c), schedule::schedule_op(*z, c)}, "k");
  EXPECT_EQ(loop::print(k).find("prefetched"), std::string::npos);
  EXPECT_LE(compare({y, z}, k), 1e-5);
}

TEST(Prefetch, PrefetchAndSharedResidentsCompileWithNvrtc) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  RowScaledGemm g;
  schedule::ScheduleConfig c = small_tiles(true);
  // y = 2s, then u = y + 1 by the same threads (y kept in shared memory), then a GEMM scaled by
  // u (after a grid barrier, its weight tile prefetched before it).
  te::Op y = te::compute("y", {40}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(g.s->output, i) * 2.0;
  });
  te::Op u = te::compute("u", {40}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(y->output, i) + 1.0; });
  te::Op z = te::reduce("z", {40, 36}, DType::Float32, te::ReduceKind::Sum, {96},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                          return (te::read(g.x, {i[0], k[0]}) * te::read(u->output, {i[0]})) *
                                 te::read(g.w, {k[0], i[1]});
                        });
  schedule::MergeOptions o;
  o.local = {y->output};
  o.arena_growth = 4096;
  loop::Kernel k =
      schedule::merge_stages({schedule::schedule_op(*g.s, c), schedule::schedule_op(*y, c),
                              schedule::schedule_op(*u, c), schedule::schedule_op(*z, c)},
                             "prefetch_kernel", o);
  EXPECT_NE(k.stages[1].schedule.find("y kept in shared memory"), std::string::npos)
      << k.stages[1].schedule;
  EXPECT_LE(compare({g.s, y, u, z}, k), 1e-5);
  const std::string src = codegen::emit_cuda(k);
  EXPECT_NE(src.find("prefetched before the grid barrier"), std::string::npos) << src;
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileOptions co;
    co.arch = arch;
    gpu::CompileResult r = gpu::compile_cuda(src, "prefetch_kernel.cu", co);
    EXPECT_TRUE(r.ok) << r.error;
  }
}

}  // namespace
}  // namespace souffle
