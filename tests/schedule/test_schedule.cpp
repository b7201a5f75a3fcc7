#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "core/emulate/emulate.h"
#include "core/interp/interpreter.h"
#include "core/loop/verify.h"
#include "core/schedule/schedule.h"
#include "core/session/load.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"
#include "core/te/printer.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using schedule_test::random_data;
using schedule_test::rel_l2;

using schedule::ScheduleKind;
using te::Expr;
using te::Tensor;

/// Runs `ops` through the interpreter and the emulated kernels on the same random inputs and
/// returns the worst relative L2 error over the ops' outputs.
double compare(const std::vector<te::Op>& ops, const std::vector<loop::Kernel>& kernels) {
  return schedule_test::emulated_error(ops, kernels, 7);
}

const LoadedModel& bert() {
  static LoadedModel m =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert/model.onnx");
  return m;
}

int64_t work(const te::ComputeOp& op) {
  int64_t n = 1;
  for (const auto& a : op.axes) n *= a.extent;
  for (const auto& a : op.reduce_axes) n *= a.extent;
  return n;
}

/// The smallest float op of the model scheduled as `kind`, skipping trivial ones.
te::Op pick(ScheduleKind kind, int64_t min_work) {
  te::Op best;
  for (const te::Op& op : bert().program.ops) {
    if (schedule::classify(*op) != kind || !is_float(op->output->dtype)) continue;
    if (work(*op) < min_work) continue;
    if (!best || work(*op) < work(*best)) best = op;
  }
  return best;
}

TEST(Schedule, InjectiveFromBert) {
  te::Op op = pick(ScheduleKind::Injective, 64);
  ASSERT_TRUE(op);
  schedule::ScheduleConfig c;
  c.max_grid = 2;  // exercise the grid-stride loop
  loop::Kernel k = schedule::schedule_op(*op, c);
  std::printf("injective %s: %s\n", op->name.c_str(), te::print(*op).c_str());
  EXPECT_LE(compare({op}, {k}), 1e-5);
}

TEST(Schedule, ReductionFromBert) {
  te::Op op = pick(ScheduleKind::Reduction, 64);
  ASSERT_TRUE(op);
  loop::Kernel k = schedule::schedule_op(*op);
  std::printf("reduction %s: %s\n", op->name.c_str(), te::print(*op).c_str());
  EXPECT_LE(compare({op}, {k}), 1e-5);
}

TEST(Schedule, GemmFromBert) {
  te::Op op = pick(ScheduleKind::Gemm, 1024);
  ASSERT_TRUE(op);
  std::printf("gemm %s: %s\n", op->name.c_str(), te::print(*op).c_str());
  const schedule::ScheduleConfig small = schedule_test::small_gemm_tile(16, 16, 8);
  EXPECT_LE(compare({op}, {schedule::schedule_op(*op, small)}), 1e-5);
  EXPECT_LE(compare({op}, {schedule::schedule_op(*op)}), 1e-5);
}

TEST(Schedule, GemmEdgeTiles) {
  // 37 x 29 x 19: no dimension divides the tile, so every guard is exercised.
  Tensor a = te::make_input("A", {37, 19}, DType::Float32);
  Tensor b = te::make_input("B", {19, 29}, DType::Float32);
  te::Op mm = te::reduce("C", {37, 29}, DType::Float32, te::ReduceKind::Sum, {19},
                         [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                           return te::read(a, {i[0], k[0]}) * te::read(b, {k[0], i[1]});
                         });
  ASSERT_EQ(schedule::classify(*mm), ScheduleKind::Gemm);
  schedule::ScheduleConfig c;
  c.gemm_tile = {16, 8, 4, 2, 2};
  EXPECT_LE(compare({mm}, {schedule::schedule_op(*mm, c)}), 1e-6);
}

TEST(Schedule, EveryBertOpSchedulesAndVerifies) {
  std::map<std::string, int> kinds;
  for (const te::Op& op : bert().program.ops) {
    loop::Kernel k = schedule::schedule_op(*op);
    loop::verify(k);
    ++kinds[schedule::schedule_kind_name(schedule::classify(*op))];
  }
  for (const auto& [k, n] : kinds) std::printf("%s: %d\n", k.c_str(), n);
  EXPECT_GT(kinds["gemm"], 0);
  EXPECT_GT(kinds["injective"], 0);
}

TEST(Schedule, MergedStagesWithGridBarrier) {
  Tensor x = te::make_input("x", {6, 40}, DType::Float32);
  te::Op y = te::compute("y", {6, 40}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(x, i) * 2.0 + 1.0; });
  te::Op s = te::reduce("s", {6}, DType::Float32, te::ReduceKind::Sum, {40},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                          return te::read(y->output, {i[0], k[0]});
                        });
  schedule::ScheduleConfig c;
  c.max_grid = 3;
  c.block = 64;  // both stages then use 64 threads
  loop::Kernel merged =
      schedule::merge_stages({schedule::schedule_op(*y, c), schedule::schedule_op(*s, c)}, "fused");
  EXPECT_TRUE(merged.launch.cooperative);
  EXPECT_EQ(merged.stages.size(), 2u);
  EXPECT_NE(loop::print(merged).find("grid_barrier()"), std::string::npos);
  EXPECT_LE(compare({y, s}, {merged}), 1e-6);

  // Without the grid barrier, blocks read what other blocks wrote in the same phase.
  loop::Kernel broken = merged;
  const auto* fb = broken.body.as<loop::For>();
  const auto* ft = fb->body.as<loop::For>();
  const auto* sq = ft->body.as<loop::Seq>();
  ASSERT_TRUE(sq);
  std::vector<loop::Stmt> kept;
  for (const loop::Stmt& st : sq->stmts)
    if (!st.as<loop::GridBarrier>()) kept.push_back(st);
  broken.body =
      loop::make_for(fb->var, fb->extent.as<te::IntImm>()->value, loop::ForKind::BlockIdxX,
                     loop::make_for(ft->var, ft->extent.as<te::IntImm>()->value,
                                    loop::ForKind::ThreadIdxX, loop::seq(kept)));
  try {
    compare({y, s}, {broken});
    ADD_FAILURE() << "missing grid barrier not caught";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("data race"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace souffle
