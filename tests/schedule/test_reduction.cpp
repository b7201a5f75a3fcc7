#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using te::Expr;
using te::ReduceKind;
using te::Tensor;

struct Counts {
  int block_barriers = 0, grid_barriers = 0, shuffles = 0, atomics = 0, vector_loops = 0;
};

Counts count(const loop::Kernel& k) {
  Counts c;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    c.block_barriers += s.as<loop::BlockBarrier>() != nullptr;
    c.grid_barriers += s.as<loop::GridBarrier>() != nullptr;
    c.shuffles += s.as<loop::Shuffle>() != nullptr;
    c.atomics += s.as<loop::AtomicAdd>() != nullptr;
    if (const loop::For* f = s.as<loop::For>())
      c.vector_loops += f->for_kind == loop::ForKind::Vectorized;
  });
  return c;
}

/// Emulates `k` on random inputs of `op` and returns the relative L2 error against the
/// interpreter.
double error_of(const te::Op& op, const std::vector<Tensor>& inputs, const loop::Kernel& k) {
  te::TeProgram p;
  p.name = "p";
  p.inputs = inputs;
  p.ops = {op};
  p.outputs = {op->output};
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (const Tensor& t : inputs) {
    auto d = std::make_shared<TensorData>(t->dtype, t->shape);
    for (int64_t i = 0; i < d->numel(); ++i) d->set_f64(i, dist(rng));
    in.push_back(d);
    buffers[t->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  emulate::run_kernel(k, buffers);
  const TensorData& got = *buffers.at(op->output->name);
  double num = 0, den = 0;
  for (int64_t i = 0; i < want[0]->numel(); ++i) {
    double d = got.get_f64(i) - want[0]->get_f64(i);
    num += d * d;
    den += want[0]->get_f64(i) * want[0]->get_f64(i);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

te::Op row_reduce(ReduceKind kind, int64_t rows, int64_t r, Tensor& x) {
  x = te::make_input("x", {rows, r}, DType::Float32);
  return te::reduce("red", {rows}, DType::Float32, kind, {r},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                      return te::read(x, {i[0], k[0]});
                    });
}

TEST(Reduction, ShortRowsTakeOneWarpEachWithoutBarriers) {
  Tensor x;
  te::Op op = row_reduce(ReduceKind::Sum, 40, 20, x);
  loop::Kernel k = schedule::schedule_op(*op);
  Counts c = count(k);
  EXPECT_EQ(k.launch.block_x, 256);  // 8 rows per block
  EXPECT_EQ(k.launch.grid_x, 5);
  EXPECT_EQ(c.block_barriers, 0);
  EXPECT_EQ(c.shuffles, 5);
  EXPECT_LE(error_of(op, {x}, k), 1e-6);
}

TEST(Reduction, LongRowsShuffleThenOneBarrier) {
  Tensor x;
  te::Op op = row_reduce(ReduceKind::Max, 300, 1000, x);
  loop::Kernel k = schedule::schedule_op(*op);
  Counts c = count(k);
  EXPECT_EQ(k.launch.block_x, 256);
  EXPECT_EQ(c.block_barriers, 1);  // the shared tree had log2(256) + 2 = 10
  EXPECT_EQ(c.shuffles, 5 + 3);    // 32 lanes, then 8 warp partials
  EXPECT_EQ(error_of(op, {x}, k), 0.0);
  // A grid smaller than the rows loops over them, and red is reused: one more barrier.
  schedule::ScheduleConfig small;
  small.max_grid = 7;
  loop::Kernel k2 = schedule::schedule_op(*op, small);
  EXPECT_EQ(count(k2).block_barriers, 2);
  EXPECT_EQ(error_of(op, {x}, k2), 0.0);
}

TEST(Reduction, FewLongRowsSumAcrossBlocksWithAtomics) {
  Tensor x;
  te::Op op = row_reduce(ReduceKind::Sum, 3, 40000, x);
  loop::Kernel k = schedule::schedule_op(*op);
  Counts c = count(k);
  EXPECT_TRUE(k.launch.cooperative);
  EXPECT_EQ(k.launch.grid_x % 3, 0);
  EXPECT_GT(k.launch.grid_x, 3);
  EXPECT_EQ(c.grid_barriers, 1);  // the zero-initialising phase, then the atomics
  EXPECT_EQ(c.atomics, 1);
  EXPECT_EQ(k.outputs.size(), 1u);
  // Float atomics add in another order than the interpreter's loop.
  EXPECT_LE(error_of(op, {x}, k), 1e-6);
  const std::string src = codegen::emit_cuda(k);
  EXPECT_NE(src.find("atomicAdd(&red[row], red_acc[0]);"), std::string::npos) << src;
  EXPECT_NE(src.find("grid.sync();"), std::string::npos);
  EXPECT_NE(src.find("__shfl_xor_sync(0xffffffffu, red_acc[0], 16)"), std::string::npos);
}

TEST(Reduction, FewLongRowsMaxAcrossBlocksThroughPartials) {
  Tensor x;
  te::Op op = row_reduce(ReduceKind::Max, 2, 30000, x);
  loop::Kernel k = schedule::schedule_op(*op);
  EXPECT_TRUE(k.launch.cooperative);
  EXPECT_EQ(count(k).grid_barriers, 1);
  EXPECT_EQ(count(k).atomics, 0);
  ASSERT_EQ(k.outputs.size(), 2u);  // the output and the per-block partials
  EXPECT_EQ(k.outputs[1]->shape, (Shape{2, k.launch.grid_x / 2}));
  EXPECT_EQ(error_of(op, {x}, k), 0.0);
}

TEST(Reduction, CrossBlockStageMergesWithItsBarrierUnguarded) {
  // A big injective stage sets the grid; the split reduction's phases are guarded one by one.
  Tensor x;
  te::Op red = row_reduce(ReduceKind::Sum, 2, 20000, x);
  Tensor y = te::make_input("y", {300000}, DType::Float32);
  te::Op big = te::compute("big", {300000}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(y, {i[0]}) * te::float_imm(2.0f);
  });
  loop::Kernel k =
      schedule::merge_stages({schedule::schedule_op(*big), schedule::schedule_op(*red)}, "merged");
  loop::verify(k);
  EXPECT_TRUE(k.launch.cooperative);
  EXPECT_LT(k.stages[1].grid_x, k.launch.grid_x);
  auto xd = std::make_shared<TensorData>(DType::Float32, x->shape);
  auto yd = std::make_shared<TensorData>(DType::Float32, y->shape);
  std::vector<double> want(2, 0.0);
  for (int64_t i = 0; i < xd->numel(); ++i) {
    xd->set_f64(i, static_cast<double>(i % 7) - 3.0);
    want[i / 20000] += xd->get_f64(i);
  }
  for (int64_t i = 0; i < yd->numel(); ++i) yd->set_f64(i, 1.0);
  emulate::Buffers buf{{"x", xd}, {"y", yd}};
  emulate::run_kernel(k, buf);
  EXPECT_EQ(buf.at("red")->get_f64(0), want[0]);
  EXPECT_EQ(buf.at("red")->get_f64(1), want[1]);
  EXPECT_EQ(buf.at("big")->get_f64(299999), 2.0);
}

TEST(Injective, InnermostRowsMoveAsFloat4) {
  Tensor x = te::make_input("x", {6, 64}, DType::Float32);
  Tensor b = te::make_input("b", {64}, DType::Float32);
  Tensor s = te::make_input("s", {6}, DType::Float32);
  te::Op op = te::compute("y", {6, 64}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(x, {i[0], i[1]}) * te::read(s, {i[0]}) + te::read(b, {i[1]});
  });
  loop::Kernel k = schedule::schedule_op(*op);
  EXPECT_EQ(count(k).vector_loops, 3);  // x and b in, y out
  EXPECT_EQ(k.launch.block_x, 96);      // 384 elements, 96 vectors
  EXPECT_LE(error_of(op, {x, b, s}, k), 1e-6);
  const std::string src = codegen::emit_cuda(k);
  EXPECT_NE(src.find("*reinterpret_cast<float4*>(&y["), std::string::npos) << src;
  EXPECT_NE(src.find("*reinterpret_cast<const float4*>(&x["), std::string::npos) << src;
}

TEST(Injective, HalfRowsMoveEightAtATime) {
  Tensor x = te::make_input("x", {4, 32}, DType::Float16);
  te::Op op = te::compute("y", {4, 32}, DType::Float16, [&](const std::vector<Expr>& i) {
    return te::read(x, {i[0], i[1]}) + te::read(x, {i[0], i[1]});
  });
  loop::Kernel k = schedule::schedule_op(*op);
  EXPECT_EQ(count(k).vector_loops, 2);
  EXPECT_EQ(error_of(op, {x}, k), 0.0);
  EXPECT_NE(codegen::emit_cuda(k).find("uint4"), std::string::npos);
}

TEST(Injective, TransposedOrRaggedRowsStayScalar) {
  Tensor x = te::make_input("x", {64, 6}, DType::Float32);
  te::Op t = te::compute("t", {6, 64}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(x, {i[1], i[0]});
  });
  loop::Kernel k = schedule::schedule_op(*t);
  EXPECT_EQ(count(k).vector_loops, 0);
  EXPECT_EQ(error_of(t, {x}, k), 0.0);
  Tensor z = te::make_input("z", {5, 6}, DType::Float32);
  te::Op r = te::compute("r", {5, 6}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(z, {i[0], i[1]});
  });
  EXPECT_EQ(count(schedule::schedule_op(*r)).vector_loops, 0);
}

}  // namespace
}  // namespace souffle
