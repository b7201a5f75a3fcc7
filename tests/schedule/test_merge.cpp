// merge_stages on its own: stages that need no grid barrier become one kernel with the stages
// in order and no grid synchronization; a stage whose dependence needs a grid barrier gets one,
// and the boundary (typed and in words) names the tensor that forced it. Each merged kernel is
// emulated against the interpreter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/loop/mutator.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

int count_grid_barriers(const loop::Kernel& k) {
  int n = 0;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& s) { n += s.as<loop::GridBarrier>() != nullptr; });
  return n;
}

te::Op scale(const std::string& name, const Tensor& in, float by) {
  return te::compute(name, in->shape, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(in, i) * te::imm(DType::Float32, by);
  });
}

te::Op matmul(const std::string& name, const Tensor& a, const Tensor& b) {
  return te::reduce(name, {a->shape[0], b->shape[1]}, DType::Float32, te::ReduceKind::Sum,
                    {a->shape[1]}, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

std::vector<loop::Kernel> stages_of(const std::vector<te::Op>& ops,
                                    const schedule::ScheduleConfig& c = {}) {
  std::vector<loop::Kernel> out;
  for (const te::Op& op : ops) out.push_back(schedule::schedule_op(*op, c));
  return out;
}

std::vector<std::string> stage_names(const loop::Kernel& k) {
  std::vector<std::string> names;
  for (const loop::StageInfo& st : k.stages) names.push_back(st.tes.empty() ? "" : st.tes[0]);
  return names;
}

/// An element-wise stage reading what the one before wrote at its own index: each thread reads
/// only what it wrote, so the two are one kernel without any barrier, in program order.
TEST(Merge, ThreadOwnedStagesBecomeOneKernelInOrder) {
  Tensor x = te::make_input("x", {1000}, DType::Float32);
  te::Op a = scale("a", x, 2.0f);
  te::Op b = scale("b", a->output, 3.0f);
  const loop::Kernel k = schedule::merge_stages(stages_of({a, b}), "k");
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(stage_names(k), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(count_grid_barriers(k), 0);
  EXPECT_FALSE(k.launch.cooperative);
  ASSERT_EQ(k.boundaries.size(), 1u);
  const StageBoundary& bd = k.boundaries[0];
  EXPECT_EQ(bd.before, 0);
  EXPECT_EQ(bd.after, 1);
  EXPECT_EQ(bd.kind, BoundaryKind::None);
  EXPECT_EQ(bd.reason, BoundaryReason::ThreadOwned);
  EXPECT_EQ(bd.tensor, "a");
  EXPECT_NE(k.stages[1].schedule.find("no barrier: each thread reads only what it wrote of a"),
            std::string::npos)
      << k.stages[1].schedule;
  EXPECT_LE(schedule_test::emulated_error({a, b}, {k}, 3), 1e-6);
}

/// Stages that read nothing of each other are independent: one kernel, no barrier.
TEST(Merge, IndependentStagesNeedNoBarrier) {
  Tensor x = te::make_input("x", {300}, DType::Float32);
  Tensor y = te::make_input("y", {700}, DType::Float32);
  te::Op a = scale("a", x, 2.0f);
  te::Op b = scale("b", y, 5.0f);
  const loop::Kernel k = schedule::merge_stages(stages_of({a, b}), "k");
  EXPECT_EQ(stage_names(k), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(count_grid_barriers(k), 0);
  EXPECT_FALSE(k.launch.cooperative);
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::None);
  EXPECT_EQ(k.boundaries[0].reason, BoundaryReason::Independent);
  EXPECT_TRUE(k.boundaries[0].tensor.empty());
  // The merged grid covers the larger stage.
  EXPECT_EQ(k.launch.grid_x, std::max(k.stages[0].grid_x, k.stages[1].grid_x));
  EXPECT_LE(schedule_test::emulated_error({a, b}, {k}, 4), 1e-6);
}

/// A GEMM reading every column tile of the GEMM before it: a block reads what other blocks
/// wrote, so the merge puts a grid barrier before it (a cooperative kernel), and the boundary
/// names the tensor, its producer stage and a block pair that proves the cross-block read.
TEST(Merge, CrossBlockDependenceGetsAGridBarrierNamingTheTensor) {
  Tensor x = te::make_input("x", {32, 16}, DType::Float32);
  Tensor w1 = te::make_input("w1", {16, 32}, DType::Float32);
  Tensor w2 = te::make_input("w2", {32, 32}, DType::Float32);
  te::Op h = matmul("h", x, w1);
  te::Op y = matmul("y", h->output, w2);
  const schedule::ScheduleConfig c = schedule_test::small_gemm_tile(16, 8, 4);
  const loop::Kernel k = schedule::merge_stages(stages_of({h, y}, c), "k");
  EXPECT_EQ(stage_names(k), (std::vector<std::string>{"h", "y"}));
  EXPECT_GT(k.launch.grid_x, 1);
  EXPECT_EQ(count_grid_barriers(k), 1);
  EXPECT_TRUE(k.launch.cooperative);
  ASSERT_EQ(k.boundaries.size(), 1u);
  const StageBoundary& bd = k.boundaries[0];
  EXPECT_EQ(bd.kind, BoundaryKind::Grid);
  EXPECT_EQ(bd.reason, BoundaryReason::CrossBlock);
  EXPECT_EQ(bd.tensor, "h");
  EXPECT_EQ(bd.producer, 0);
  EXPECT_EQ(bd.grid, k.launch.grid_x);
  EXPECT_GE(bd.consumer_block, 0);
  EXPECT_GE(bd.producer_block, 0);
  EXPECT_NE(bd.consumer_block, bd.producer_block);
  // 32 columns of h in tiles of 8: each block of y reads the 4 column tiles of its rows.
  EXPECT_EQ(bd.awaited_tiles, 4);
  EXPECT_NE(describe(bd).find("h"), std::string::npos) << describe(bd);
  EXPECT_NE(k.stages[1].schedule.find("after a grid barrier (h: "), std::string::npos)
      << k.stages[1].schedule;
  EXPECT_LE(schedule_test::emulated_error({h, y}, {k}, 5), 1e-5);
}

/// Without ownership proofs every dependent stage is refused anything weaker than a grid
/// barrier, and the boundary says so, naming the tensor read.
TEST(Merge, WithoutProofsADependentStageGetsAGridBarrier) {
  Tensor x = te::make_input("x", {1000}, DType::Float32);
  te::Op a = scale("a", x, 2.0f);
  te::Op b = scale("b", a->output, 3.0f);
  schedule::MergeOptions mo;
  mo.prove_ownership = false;
  const loop::Kernel k = schedule::merge_stages(stages_of({a, b}), "k", mo);
  EXPECT_EQ(count_grid_barriers(k), 1);
  EXPECT_TRUE(k.launch.cooperative);
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Grid);
  EXPECT_EQ(k.boundaries[0].reason, BoundaryReason::NoProofs);
  EXPECT_EQ(k.boundaries[0].tensor, "a");
  EXPECT_LE(schedule_test::emulated_error({a, b}, {k}, 6), 1e-6);
}

/// A transpose of the stage before: a thread reads an element another block wrote. The grid
/// barrier's boundary, its proof's sentence and the stage's schedule text name the tensor.
TEST(Merge, TransposeReadIsOrderedByAGridBarrierNamingTheTensor) {
  Tensor x = te::make_input("x", {48, 40}, DType::Float32);
  te::Op a = scale("a", x, 2.0f);
  te::Op t = te::compute("t", {40, 48}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(a->output, {i[1], i[0]});
  });
  schedule::ScheduleConfig c;
  c.block = 64;
  const loop::Kernel k = schedule::merge_stages(stages_of({a, t}, c), "k");
  EXPECT_EQ(stage_names(k), (std::vector<std::string>{"a", "t"}));
  EXPECT_EQ(count_grid_barriers(k), 1);
  EXPECT_TRUE(k.launch.cooperative);
  ASSERT_EQ(k.boundaries.size(), 1u);
  const StageBoundary& bd = k.boundaries[0];
  EXPECT_EQ(bd.kind, BoundaryKind::Grid);
  EXPECT_EQ(bd.reason, BoundaryReason::CrossBlock);
  EXPECT_EQ(bd.tensor, "a");
  EXPECT_NE(bd.detail.find("a element"), std::string::npos) << bd.detail;
  EXPECT_NE(k.stages[1].schedule.find("after a grid barrier (a: block "), std::string::npos)
      << k.stages[1].schedule;
  EXPECT_LE(schedule_test::emulated_error({a, t}, {k}, 7), 1e-6);
}

/// A stage that writes again a tensor an earlier stage wrote since the last barrier is ordered
/// by a grid barrier whatever the proofs, and the boundary names the tensor rewritten.
TEST(Merge, RewritingATensorNeedsAGridBarrier) {
  Tensor x = te::make_input("x", {256}, DType::Float32);
  te::Op a = scale("a", x, 2.0f);
  std::vector<loop::Kernel> stages = stages_of({a, a});
  const loop::Kernel k = schedule::merge_stages(stages, "k");
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Grid);
  EXPECT_EQ(k.boundaries[0].reason, BoundaryReason::Rewrite);
  EXPECT_EQ(k.boundaries[0].tensor, "a");
}

/// Merging nothing is a bug of the caller, not a kernel.
TEST(Merge, NoStagesIsAnInternalError) {
  EXPECT_THROW(schedule::merge_stages({}, "k"), std::logic_error);
}

}  // namespace
}  // namespace souffle
