#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <random>

#include "core/interp/interpreter.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

std::shared_ptr<TensorData> iota(DType t, Shape shape, double scale = 1.0, double offset = 0.0) {
  auto d = std::make_shared<TensorData>(t, shape);
  for (int64_t i = 0; i < d->numel(); ++i) d->set_f64(i, offset + scale * static_cast<double>(i));
  return d;
}

std::shared_ptr<TensorData> random_f32(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto d = std::make_shared<TensorData>(DType::Float32, shape);
  for (int64_t i = 0; i < d->numel(); ++i) d->as<float>()[i] = dist(rng);
  return d;
}

/// A one-op program out[i] = fn(in[i]) over a 1-d input given as values.
std::vector<double> unary_map(DType in_t, DType out_t, const std::vector<double>& values,
                              const std::function<Expr(Expr)>& fn, bool f64 = false) {
  int64_t n = static_cast<int64_t>(values.size());
  Tensor x = te::make_input("x", {n}, in_t);
  te::TeProgram p;
  p.inputs = {x};
  auto op = te::compute("y", {n}, out_t,
                        [&](const std::vector<Expr>& i) { return fn(te::read(x, {i[0]})); });
  p.ops = {op};
  p.outputs = {op->output};
  auto out = interp::run(p, {TensorData::from_f64(in_t, {n}, values)}, {f64, 1});
  return out[0]->to_f64();
}

std::vector<int64_t> binary_i64(te::BinaryOp op, const std::vector<int64_t>& a,
                                const std::vector<int64_t>& b, DType t = DType::Int64) {
  int64_t n = static_cast<int64_t>(a.size());
  Tensor x = te::make_input("x", {n}, t);
  Tensor y = te::make_input("y", {n}, t);
  te::TeProgram p;
  p.inputs = {x, y};
  DType rt = te::is_comparison(op) || te::is_logical(op) ? DType::Bool : t;
  auto o = te::compute("z", {n}, rt, [&](const std::vector<Expr>& i) {
    return te::binary(op, te::read(x, {i[0]}), te::read(y, {i[0]}));
  });
  p.ops = {o};
  p.outputs = {o->output};
  auto out = interp::run(p, {TensorData::from_i64(t, {n}, a), TensorData::from_i64(t, {n}, b)},
                         {false, 1});
  return out[0]->to_i64();
}

TEST(Interp, ElementwiseAdd2D) {
  Tensor a = te::make_input("a", {3, 70}, DType::Float32);
  Tensor b = te::make_input("b", {3, 70}, DType::Float32);
  te::TeProgram p;
  p.inputs = {a, b};
  auto op = te::compute("c", {3, 70}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(a, {i[0], i[1]}) + te::read(b, {i[0], i[1]}) * 2.0;
  });
  p.ops = {op};
  p.outputs = {op->output};
  auto av = iota(DType::Float32, {3, 70});
  auto bv = iota(DType::Float32, {3, 70}, 0.5, 1.0);
  auto out = interp::run(p, {av, bv});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->shape(), (Shape{3, 70}));
  for (int64_t i = 0; i < 210; ++i)
    EXPECT_FLOAT_EQ(out[0]->as<float>()[i], static_cast<float>(i + 2.0 * (1.0 + 0.5 * i)));
}

TEST(Interp, TransposeAndBroadcastRead) {
  Tensor a = te::make_input("a", {4, 5}, DType::Int32);
  Tensor b = te::make_input("b", {4}, DType::Int32);
  te::TeProgram p;
  p.inputs = {a, b};
  auto op = te::compute("t", {5, 4}, DType::Int32, [&](const std::vector<Expr>& i) {
    return te::read(a, {i[1], i[0]}) - te::read(b, {i[1]});
  });
  p.ops = {op};
  p.outputs = {op->output};
  auto out = interp::run(p, {iota(DType::Int32, {4, 5}), iota(DType::Int32, {4}, 100)});
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(out[0]->get_i64(r * 4 + c), c * 5 + r - 100 * c);
}

te::TeProgram matmul_program(int64_t m, int64_t k, int64_t n) {
  Tensor a = te::make_input("a", {m, k}, DType::Float32);
  Tensor b = te::make_input("b", {k, n}, DType::Float32);
  te::TeProgram p;
  p.inputs = {a, b};
  auto op = te::reduce("c", {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                       [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                         return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                       });
  p.ops = {op};
  p.outputs = {op->output};
  return p;
}

class InterpMatMul : public ::testing::TestWithParam<int64_t> {};

// Narrow outputs batch over the reduce axis, wide ones over the output axis: both are exact.
TEST_P(InterpMatMul, MatchesNaiveLoop) {
  int64_t m = 7, k = 130, n = GetParam();
  auto p = matmul_program(m, k, n);
  auto a = random_f32({m, k}, 1), b = random_f32({k, n}, 2);
  auto out = interp::run(p, {a, b});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t r = 0; r < k; ++r)
        acc += static_cast<double>(a->as<float>()[i * k + r]) * b->as<float>()[r * n + j];
      EXPECT_EQ(out[0]->as<float>()[i * n + j], static_cast<float>(acc));
    }
}

INSTANTIATE_TEST_SUITE_P(Widths, InterpMatMul, ::testing::Values(1, 5, 9, 70));

TEST(Interp, ReductionInitAndKinds) {
  Tensor x = te::make_input("x", {2, 3, 4}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x};
  auto sum = te::reduce(
      "s", {2}, DType::Float32, te::ReduceKind::Sum, {3, 4},
      [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        return te::read(x, {i[0], r[0], r[1]});
      },
      te::float_imm(100.0));
  auto mx = te::reduce("m", {3}, DType::Float32, te::ReduceKind::Max, {2, 4},
                       [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                         return te::read(x, {r[0], i[0], r[1]});
                       });
  auto pr = te::reduce("p", {}, DType::Float32, te::ReduceKind::Prod, {4},
                       [&](const std::vector<Expr>&, const std::vector<Expr>& r) {
                         return te::read(x, {te::int_imm(0), te::int_imm(0), r[0]}) + 1.0;
                       });
  p.ops = {sum, mx, pr};
  p.outputs = {sum->output, mx->output, pr->output};
  auto out = interp::run(p, {iota(DType::Float32, {2, 3, 4})});
  EXPECT_EQ(out[0]->to_f64(), (std::vector<double>{100 + 66, 100 + 210}));
  EXPECT_EQ(out[1]->to_f64(), (std::vector<double>{15, 19, 23}));
  EXPECT_EQ(out[2]->to_f64(), (std::vector<double>{24}));
}

TEST(Interp, EmptyReductionGivesInit) {
  Tensor x = te::make_input("x", {2, 0}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x};
  auto s = te::reduce("s", {2}, DType::Float32, te::ReduceKind::Min, {0},
                      [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                        return te::read(x, {i[0], r[0]});
                      });
  p.ops = {s};
  p.outputs = {s->output};
  auto out = interp::run(p, {std::make_shared<TensorData>(DType::Float32, Shape{2, 0})});
  EXPECT_TRUE(std::isinf(out[0]->get_f64(0)));
}

TEST(Interp, GuardedReadIsLazy) {
  // Pad: y[i] = i >= 2 && i < 6 ? x[i - 2] : -1, with a 100-wide output so batches split.
  Tensor x = te::make_input("x", {4}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x};
  auto op = te::compute("y", {100}, DType::Float32, [&](const std::vector<Expr>& i) {
    Expr in = te::logical_and(te::ge(i[0], te::int_imm(2)), te::lt(i[0], te::int_imm(6)));
    return te::select(in, te::read(x, {i[0] - te::int_imm(2)}), te::float_imm(-1));
  });
  p.ops = {op};
  p.outputs = {op->output};
  auto out = interp::run(p, {iota(DType::Float32, {4}, 1, 10)});
  for (int64_t i = 0; i < 100; ++i)
    EXPECT_EQ(out[0]->get_f64(i), i >= 2 && i < 6 ? 10.0 + (i - 2) : -1.0) << i;
}

// A padded 3x3 convolution on a 5-wide image: the output row is too narrow to batch over, so
// the reduction batches over its widest axis (the 40 input channels, not the innermost 3-wide
// kernel row), and the padding's bounds checks are affine comparisons of the vars. Matches a
// naive loop (both accumulate in double, in different orders).
TEST(Interp, PaddedConvBatchesOverWidestReduceAxis) {
  const int64_t c = 40, h = 6, w = 5, co = 3;
  Tensor x = te::make_input("x", {c, h, w}, DType::Float32);
  Tensor k = te::make_input("k", {co, c, 3, 3}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x, k};
  auto conv =
      te::reduce("conv", {co, h, w}, DType::Float32, te::ReduceKind::Sum, {c, 3, 3},
                 [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                   Expr y = i[1] + r[1] - te::int_imm(1), xx = i[2] + r[2] - te::int_imm(1);
                   Expr in = te::logical_and(
                       te::logical_and(te::ge(y, te::int_imm(0)), te::lt(y, te::int_imm(h))),
                       te::logical_and(te::le(te::int_imm(0), xx), te::gt(te::int_imm(w), xx)));
                   return te::select(in, te::read(x, {r[0], y, xx}), te::float_imm(0)) *
                          te::read(k, {i[0], r[0], r[1], r[2]});
                 });
  p.ops = {conv};
  p.outputs = {conv->output};
  auto xv = random_f32({c, h, w}, 3), kv = random_f32({co, c, 3, 3}, 4);
  auto out = interp::run(p, {xv, kv});
  for (int64_t o = 0; o < co; ++o)
    for (int64_t a = 0; a < h; ++a)
      for (int64_t b = 0; b < w; ++b) {
        double acc = 0;
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t dy = 0; dy < 3; ++dy)
            for (int64_t dx = 0; dx < 3; ++dx) {
              int64_t y = a + dy - 1, xx = b + dx - 1;
              if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
              acc += static_cast<double>(xv->as<float>()[(ci * h + y) * w + xx]) *
                     kv->as<float>()[((o * c + ci) * 3 + dy) * 3 + dx];
            }
        EXPECT_NEAR(out[0]->as<float>()[(o * h + a) * w + b], static_cast<float>(acc), 1e-6)
            << o << " " << a << " " << b;
      }
}

TEST(Interp, GatherDataDependentIndexChecked) {
  Tensor x = te::make_input("x", {5}, DType::Float32);
  Tensor idx = te::make_input("idx", {3}, DType::Int64);
  te::TeProgram p;
  p.inputs = {x, idx};
  auto op = te::compute("g", {3}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(x, {te::read(idx, {i[0]})});
  });
  p.ops = {op};
  p.outputs = {op->output};
  auto out = interp::run(
      p, {iota(DType::Float32, {5}, 2), TensorData::from_i64(DType::Int64, {3}, {4, 0, 2})});
  EXPECT_EQ(out[0]->to_f64(), (std::vector<double>{8, 0, 4}));
  EXPECT_THROW(interp::run(p, {iota(DType::Float32, {5}),
                               TensorData::from_i64(DType::Int64, {3}, {5, 0, 0})}),
               InternalError);
}

TEST(Interp, InputShapeMismatchIsUserError) {
  auto p = matmul_program(2, 3, 4);
  try {
    interp::run(p, {iota(DType::Float32, {2, 3}), iota(DType::Float32, {4, 4})});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.node(), "b");
  }
  EXPECT_THROW(interp::run(p, {iota(DType::Float32, {2, 3})}), UserError);
}

TEST(Interp, IntegerDivModEdgeCases) {
  const int64_t mn = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> a = {7, -7, 7, -7, 5, mn, mn};
  std::vector<int64_t> b = {2, 2, -2, -2, 0, -1, 1};
  using te::BinaryOp;
  EXPECT_EQ(binary_i64(BinaryOp::Div, a, b), (std::vector<int64_t>{3, -3, -3, 3, 0, mn, mn}));
  EXPECT_EQ(binary_i64(BinaryOp::Mod, a, b), (std::vector<int64_t>{1, -1, 1, -1, 0, 0, 0}));
  EXPECT_EQ(binary_i64(BinaryOp::FloorDiv, a, b), (std::vector<int64_t>{3, -4, -4, 3, 0, mn, mn}));
  EXPECT_EQ(binary_i64(BinaryOp::FloorMod, a, b), (std::vector<int64_t>{1, 1, -1, -1, 0, 0, 0}));
}

TEST(Interp, IntegerWrapsToWidth) {
  using te::BinaryOp;
  EXPECT_EQ(binary_i64(BinaryOp::Add, {127, -128}, {1, -1}, DType::Int8),
            (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(binary_i64(BinaryOp::Mul, {200}, {2}, DType::UInt8), (std::vector<int64_t>{144}));
  EXPECT_EQ(binary_i64(BinaryOp::Shl, {1, 1}, {7, 8}, DType::UInt8),
            (std::vector<int64_t>{128, 0}));
  EXPECT_EQ(binary_i64(BinaryOp::Shr, {200}, {3}, DType::UInt8), (std::vector<int64_t>{25}));
}

TEST(Interp, UInt64UsesUnsignedSemantics) {
  using te::BinaryOp;
  const int64_t big = -2;  // 2^64 - 2 as a bit pattern
  EXPECT_EQ(binary_i64(BinaryOp::Div, {big}, {2}, DType::UInt64),
            (std::vector<int64_t>{static_cast<int64_t>(~uint64_t{0} / 2)}));
  EXPECT_EQ(binary_i64(BinaryOp::LT, {1}, {big}, DType::UInt64), (std::vector<int64_t>{1}));
  EXPECT_EQ(binary_i64(BinaryOp::Max, {1}, {big}, DType::UInt64), (std::vector<int64_t>{big}));
}

TEST(Interp, FloatModAndFloorMod) {
  std::vector<double> v = {5.5, -5.5};
  auto mod = unary_map(DType::Float64, DType::Float64, v,
                       [](Expr x) { return x % te::float_imm(2.0, DType::Float64); });
  EXPECT_EQ(mod, (std::vector<double>{1.5, -1.5}));
  auto fm = unary_map(DType::Float64, DType::Float64, v,
                      [](Expr x) { return te::floormod(x, te::float_imm(2.0, DType::Float64)); });
  EXPECT_EQ(fm, (std::vector<double>{1.5, 0.5}));
  auto fd = unary_map(DType::Float64, DType::Float64, v,
                      [](Expr x) { return te::floordiv(x, te::float_imm(2.0, DType::Float64)); });
  EXPECT_EQ(fd, (std::vector<double>{2, -3}));
}

TEST(Interp, RoundHalfToEven) {
  auto r = unary_map(DType::Float32, DType::Float32, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6},
                     [](Expr x) { return te::call(te::CallFn::Round, {x}); });
  EXPECT_EQ(r, (std::vector<double>{0, 2, 2, -0.0, -2, 2, -3}));
}

TEST(Interp, CastFloatToIntTruncatesAndSaturates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto r = unary_map(DType::Float32, DType::Int32, {2.7, -2.7, nan, 1e20, -1e20},
                     [](Expr x) { return te::cast(DType::Int32, x); });
  EXPECT_EQ(r, (std::vector<double>{2, -2, 0, 2147483647.0, -2147483648.0}));
  auto u = unary_map(DType::Float32, DType::UInt8, {300, -5, 7.9},
                     [](Expr x) { return te::cast(DType::UInt8, x); });
  EXPECT_EQ(u, (std::vector<double>{255, 0, 7}));
  auto b = unary_map(DType::Float32, DType::Bool, {0, -0.0, 0.1, nan},
                     [](Expr x) { return te::cast(DType::Bool, x); });
  EXPECT_EQ(b, (std::vector<double>{0, 0, 1, 1}));
  auto w = unary_map(DType::Int32, DType::Int8, {300, -129},
                     [](Expr x) { return te::cast(DType::Int8, x); });
  EXPECT_EQ(w, (std::vector<double>{44, 127}));
}

TEST(Interp, CastRoundsInsideAnOp) {
  // 1 + 2^-30 survives in double but not through a cast to f32.
  double v = 1.0 + std::ldexp(1.0, -30);
  auto r = unary_map(DType::Float64, DType::Float64, {v},
                     [](Expr x) { return te::cast(DType::Float64, te::cast(DType::Float32, x)); });
  EXPECT_EQ(r[0], 1.0);
  auto k = unary_map(
      DType::Float64, DType::Float64, {v},
      [](Expr x) { return te::cast(DType::Float64, te::cast(DType::Float32, x)); }, true);
  EXPECT_EQ(k[0], v);
}

TEST(Interp, MaxMinPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto r = unary_map(DType::Float32, DType::Float32, {nan, 1.0, -3.0},
                     [](Expr x) { return te::max(x, te::float_imm(0.0)); });
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 1.0);
  EXPECT_EQ(r[2], 0.0);
  auto m = unary_map(DType::Float32, DType::Float32, {nan},
                     [](Expr x) { return te::min(te::float_imm(0.0), x); });
  EXPECT_TRUE(std::isnan(m[0]));
}

TEST(Interp, CallsAndPredicates) {
  const double inf = std::numeric_limits<double>::infinity();
  auto s =
      unary_map(DType::Float64, DType::Float64, {0.0, 2.0}, [](Expr x) { return te::sigmoid(x); });
  EXPECT_EQ(s[0], 0.5);
  EXPECT_DOUBLE_EQ(s[1], 1.0 / (1.0 + std::exp(-2.0)));
  auto isinf = unary_map(DType::Float32, DType::Bool, {inf, -inf, 1.0},
                         [](Expr x) { return te::call(te::CallFn::IsInf, {x}); });
  EXPECT_EQ(isinf, (std::vector<double>{1, 1, 0}));
  auto isneg = unary_map(DType::Float32, DType::Bool, {inf, -inf, 1.0},
                         [](Expr x) { return te::call(te::CallFn::IsNegInf, {x}); });
  EXPECT_EQ(isneg, (std::vector<double>{0, 1, 0}));
  auto e = unary_map(DType::Float64, DType::Float64, {0.5},
                     [](Expr x) { return te::erf(x) + te::tanh(x) + te::exp(x); });
  EXPECT_DOUBLE_EQ(e[0], std::erf(0.5) + std::tanh(0.5) + std::exp(0.5));
}

TEST(Interp, IntegerPow) {
  auto p = unary_map(DType::Int64, DType::Int64, {3, -2, 2},
                     [](Expr x) { return te::pow(x, te::int_imm(5)); });
  EXPECT_EQ(p, (std::vector<double>{243, -32, 32}));
  auto n = unary_map(DType::Int64, DType::Int64, {1, -1, 2},
                     [](Expr x) { return te::pow(x, te::int_imm(-3)); });
  EXPECT_EQ(n, (std::vector<double>{1, -1, 0}));
}

TEST(Interp, Float16StoreAndF64Option) {
  // f16 intermediate: 1 + 2^-12 rounds to 1 in f16, unless f64 keeps it.
  Tensor x = te::make_input("x", {1}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x};
  auto h = te::compute("h", {1}, DType::Float16, [&](const std::vector<Expr>& i) {
    return te::cast(DType::Float16, te::read(x, {i[0]}));
  });
  auto y = te::compute("y", {1}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::cast(DType::Float32, te::read(h->output, {i[0]}));
  });
  p.ops = {h, y};
  p.outputs = {y->output, h->output};
  auto in = TensorData::from_f64(DType::Float32, {1}, {1.0 + std::ldexp(1.0, -12)});
  auto plain = interp::run(p, {in}, {false, 1});
  EXPECT_EQ(plain[0]->get_f64(0), 1.0);
  EXPECT_EQ(plain[1]->dtype(), DType::Float16);
  auto wide = interp::run(p, {in}, {true, 1});
  EXPECT_EQ(wide[0]->get_f64(0), 1.0 + std::ldexp(1.0, -12));
  EXPECT_EQ(wide[1]->dtype(), DType::Float16);
}

TEST(Interp, OutputsThatAreInputsOrConstants) {
  Tensor x = te::make_input("x", {2}, DType::Float32);
  Tensor c = te::make_constant("c", TensorData::from_i64(DType::Int64, {3}, {1, 2, 3}));
  te::TeProgram p;
  p.inputs = {x};
  p.outputs = {x, c};
  auto in = TensorData::from_f64(DType::Float64, {2}, {1.5, 2.5});  // converted to f32
  auto out = interp::run(p, {in});
  EXPECT_EQ(out[0]->dtype(), DType::Float32);
  EXPECT_EQ(out[0]->to_f64(), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(out[1]->to_i64(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(Interp, SharedSubexpressionUnderSelect) {
  // s = x[i] * 2 is used inside and outside a select whose condition splits every batch.
  Tensor x = te::make_input("x", {90}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x};
  auto op = te::compute("y", {90}, DType::Float32, [&](const std::vector<Expr>& i) {
    Expr s = te::read(x, {i[0]}) * 2.0;
    Expr odd = te::eq(te::floormod(i[0], te::int_imm(3)), te::int_imm(0));
    return s + te::select(odd, s, te::float_imm(0.0));
  });
  p.ops = {op};
  p.outputs = {op->output};
  auto out = interp::run(p, {iota(DType::Float32, {90})});
  for (int64_t i = 0; i < 90; ++i) EXPECT_EQ(out[0]->get_f64(i), i % 3 == 0 ? 4.0 * i : 2.0 * i);
}

TEST(Interp, ThreadCountDoesNotChangeResults) {
  auto p = matmul_program(67, 45, 33);
  auto a = random_f32({67, 45}, 3), b = random_f32({45, 33}, 4);
  auto one = interp::run(p, {a, b}, {false, 1});
  auto many = interp::run(p, {a, b}, {false, 4});
  auto dflt = interp::run(p, {a, b});
  EXPECT_TRUE(*one[0] == *many[0]);
  EXPECT_TRUE(*one[0] == *dflt[0]);
}

TEST(Interp, ChainFreesAndComputes) {
  Tensor x = te::make_input("x", {8, 8}, DType::Float32);
  te::TeProgram p;
  p.inputs = {x};
  Tensor cur = x;
  for (int s = 0; s < 5; ++s) {
    auto op = te::compute("s" + std::to_string(s), {8, 8}, DType::Float32,
                          [&](const std::vector<Expr>& i) {
                            return te::read(cur, {i[0], i[1]}) + 1.0;
                          });
    p.ops.push_back(op);
    cur = op->output;
  }
  p.outputs = {cur};
  auto out = interp::run(p, {iota(DType::Float32, {8, 8})});
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(out[0]->get_f64(i), i + 5.0);
}

TEST(InterpBench, MatMulAndElementwise) {
  // Figures, not a pass/fail timing: 384x768 @ 768x768 and a 5-op element-wise chain.
  int64_t m = 384, k = 768, n = 768;
  if (std::getenv("SOUFFLE_BENCH") == nullptr) m = 48;
  auto p = matmul_program(m, k, n);
  auto a = random_f32({m, k}, 5), b = random_f32({k, n}, 6);
  // CPU time of the calling thread with threads = 1: a per-core figure that other load on the
  // machine does not distort.
  auto cpu = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  double c0 = cpu();
  auto out = interp::run(p, {a, b}, {false, 1});
  double s = cpu() - c0;
  double macs = static_cast<double>(m * k * n);
  std::printf("matmul %ldx%ldx%ld: %.3f s CPU, %.2f ns/MAC per core\n", m, k, n, s, s * 1e9 / macs);
  Tensor x = te::make_input("x", {1024, 1024}, DType::Float32);
  te::TeProgram q;
  q.inputs = {x};
  Tensor cur = x;
  for (int st = 0; st < 5; ++st) {
    auto op = te::compute("e" + std::to_string(st), {1024, 1024}, DType::Float32,
                          [&](const std::vector<Expr>& i) {
                            Expr v = te::read(cur, {i[0], i[1]});
                            return te::tanh(v) * 0.5 + v;
                          });
    q.ops.push_back(op);
    cur = op->output;
  }
  q.outputs = {cur};
  auto xin = random_f32({1024, 1024}, 7);
  c0 = cpu();
  interp::run(q, {xin}, {false, 1});
  s = cpu() - c0;
  std::printf("elementwise chain (tanh(x)*0.5+x): %.3f s CPU, %.1f M elements/s per core\n", s,
              5 * 1024 * 1024 / s / 1e6);
  EXPECT_EQ(out[0]->numel(), m * n);
}

}  // namespace
}  // namespace souffle
