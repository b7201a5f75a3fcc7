// Reduction epilogues: element-wise consumers of a reduction's rows computed by the thread that
// stores the row, intermediates kept in registers; what is_reduction_epilogue refuses.
#include <gtest/gtest.h>

#include "core/emulate/emulate.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"
#include "schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

/// A LayerNorm-like chain over rows of x[rows, r]: ss = sum x^2, ms = ss / r + eps, sq = ms * ms.
struct Chain {
  Tensor x;
  te::Op ss, ms, sq;
};

Chain chain(int64_t rows, int64_t r) {
  Chain c;
  c.x = te::make_input("x", {rows, r}, DType::Float32);
  c.ss = te::reduce("ss", {rows}, DType::Float32, te::ReduceKind::Sum, {r},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                      Expr v = te::read(c.x, {i[0], k[0]});
                      return v * v;
                    });
  c.ms = te::compute("ms", {rows}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(c.ss->output, {i[0]}) / te::float_imm(static_cast<double>(r)) +
           te::float_imm(1e-5);
  });
  c.sq = te::compute("sq", {rows}, DType::Float32, [&](const std::vector<Expr>& i) {
    Expr m = te::read(c.ms->output, {i[0]});
    return m * m;
  });
  return c;
}

int grid_barriers(const loop::Kernel& k) {
  int n = 0;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& s) { n += s.as<loop::GridBarrier>() != nullptr; });
  return n;
}

/// Emulates k on random x and returns the relative L2 error of `out` against the interpreter.
double error_of(const Chain& c, const loop::Kernel& k, const Tensor& out) {
  te::TeProgram p = schedule_test::program_of({c.ss, c.ms, c.sq});
  auto x = schedule_test::random_data(c.x, 5);
  std::vector<ConstTensorPtr> want = interp::run(p, {x});
  emulate::Buffers buffers{{c.x->name, x}};
  emulate::run_kernel(k, buffers);
  size_t at = 0;
  while (at < p.outputs.size() && p.outputs[at] != out) ++at;
  return schedule_test::rel_l2(*buffers.at(out->name), *want.at(at));
}

TEST(ReductionEpilogue, ChainComputedByTheStoringThreadIntermediatesInRegisters) {
  for (int64_t r : {20, 300}) {  // one warp per row; one block per row
    Chain c = chain(70, r);
    ASSERT_TRUE(schedule::is_reduction_epilogue(*c.ss, {}, *c.ms));
    ASSERT_TRUE(schedule::is_reduction_epilogue(*c.ss, {c.ms.get()}, *c.sq));
    loop::Kernel k = schedule::schedule_reduction_fused(*c.ss, {c.ms.get(), c.sq.get()}, {},
                                                        {c.ss->output, c.ms->output});
    ASSERT_EQ(k.outputs.size(), 1u) << loop::print(k);
    EXPECT_EQ(k.outputs[0], c.sq->output);
    EXPECT_EQ(k.stages.size(), 1u);
    EXPECT_NE(k.stages[0].schedule.find("epilogue ms sq"), std::string::npos)
        << k.stages[0].schedule;
    EXPECT_EQ(k.stages[0].tes, (std::vector<std::string>{"ss", "ms", "sq"}));
    EXPECT_EQ(grid_barriers(k), 0);
    EXPECT_LE(error_of(c, k, c.sq->output), 1e-6) << "r " << r;
  }
}

TEST(ReductionEpilogue, KeptIntermediatesAreWrittenToo) {
  Chain c = chain(9, 100);
  loop::Kernel k = schedule::schedule_reduction_fused(*c.ss, {c.ms.get()});
  ASSERT_EQ(k.outputs.size(), 2u);
  EXPECT_LE(error_of(c, k, c.ss->output), 1e-6);
  EXPECT_LE(error_of(c, k, c.ms->output), 1e-6);
}

TEST(ReductionEpilogue, RefusesReadsOfOtherElementsAndSplitRows) {
  Chain c = chain(8, 64);
  // A broadcast of the row result over the row (x - mean) needs every row's value.
  te::Op centred = te::compute("centred", {8, 64}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(c.x, {i[0], i[1]}) - te::read(c.ss->output, {i[0]});
  });
  EXPECT_FALSE(schedule::is_reduction_epilogue(*c.ss, {}, *centred));
  // Another row's result.
  te::Op shifted = te::compute("shifted", {8}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(c.ss->output, {te::int_imm(7) - i[0]});
  });
  EXPECT_FALSE(schedule::is_reduction_epilogue(*c.ss, {}, *shifted));
  // Not a reduction.
  EXPECT_FALSE(schedule::is_reduction_epilogue(*c.ms, {}, *c.sq));
  // Few long rows split over blocks under a grid-synchronized config: no epilogue.
  Chain few = chain(2, 40000);
  schedule::ScheduleConfig coop;
  EXPECT_TRUE(schedule::reduction_splits_rows(*few.ss, coop));
  coop.cross_block_rows = 0;
  EXPECT_FALSE(schedule::reduction_splits_rows(*few.ss, coop));
  loop::Kernel k = schedule::schedule_reduction_fused(*few.ss, {few.ms.get()}, coop);
  EXPECT_EQ(grid_barriers(k), 0);
  EXPECT_LE(error_of(few, k, few.ms->output), 1e-5);
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

// A global average pool's division composed into the Flatten after it (what the vertical
// transformation makes of GlobalAveragePool -> Flatten): flat[0, c] = gap[0, c, 0, 0] / 4 reads
// the row through a reshape over unit axes only, and is stored by the row's thread.
TEST(ReductionEpilogue, FlattenOfAPoolReadsItsRowThroughUnitAxes) {
  const int64_t ch = 96;
  Tensor x = te::make_input("x", {1, ch, 2, 2}, DType::Float32);
  te::Op gap = te::reduce("gap", {1, ch, 1, 1}, DType::Float32, te::ReduceKind::Sum, {2, 2},
                          [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                            return te::read(x, {i[0], i[1], k[0], k[1]});
                          });
  te::Op flat = te::compute("flat", {1, ch}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(gap->output, {i[0], i[1], te::int_imm(0), te::int_imm(0)}) / te::float_imm(4.0);
  });
  // Another column than its own: no epilogue.
  te::Op shifted = te::compute("shifted", {1, ch - 1}, DType::Float32, [&](const auto& i) {
    return te::read(gap->output, {i[0], i[1] + te::int_imm(1), te::int_imm(0), te::int_imm(0)});
  });
  EXPECT_FALSE(schedule::is_reduction_epilogue(*gap, {}, *shifted));
  ASSERT_TRUE(schedule::is_reduction_epilogue(*gap, {}, *flat));
  loop::Kernel k = schedule::schedule_reduction_fused(*gap, {flat.get()}, {}, {gap->output});
  ASSERT_EQ(k.outputs.size(), 1u) << loop::print(k);
  EXPECT_EQ(k.outputs[0], flat->output);
  te::TeProgram p = schedule_test::program_of({gap, flat});
  auto xv = schedule_test::random_data(x, 7);
  std::vector<ConstTensorPtr> want = interp::run(p, {xv});
  emulate::Buffers buffers{{x->name, xv}};
  emulate::run_kernel(k, buffers);
  size_t at = 0;
  while (at < p.outputs.size() && p.outputs[at] != flat->output) ++at;
  ASSERT_LT(at, p.outputs.size());
  EXPECT_LE(schedule_test::rel_l2(*buffers.at(flat->name), *want.at(at)), 1e-6);
}

}  // namespace
}  // namespace souffle
