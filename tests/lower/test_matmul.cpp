// Tests of the matmul family lowering: shapes, TE structure and values against naive loops.
#include <gtest/gtest.h>

#include <cmath>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using testing::expect_near;
using testing::float_attr;
using testing::int_attr;
using testing::make_node;
using testing::string_attr;

/// Lowers `node` on placeholders and runs it; returns the first output.
ConstTensorPtr run(const graph::Node& node, const std::vector<ConstTensorPtr>& values,
                   NodeLowering* out_lowering = nullptr) {
  return testing::run(node, values, 17, {}, out_lowering);
}

/// Deterministic, non-trivial values.
std::shared_ptr<TensorData> iota(const Shape& s, double scale = 0.25, DType t = DType::Float32) {
  std::vector<double> v(shape_numel(s));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::fmod(static_cast<double>(i) * 7 + 3, 11) * scale - 1;
  return TensorData::from_f64(t, s, v);
}

TEST(LowerMatMul, BatchedBroadcastIsOneReduce) {
  auto a = iota({2, 1, 3, 4});
  auto b = iota({3, 4, 5}, 0.5);
  NodeLowering nl;
  auto y = run(make_node("MatMul", 2), {a, b}, &nl);
  ASSERT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::Sum);
  ASSERT_EQ(nl.ops[0]->reduce_axes.size(), 1u);
  EXPECT_EQ(nl.ops[0]->reduce_axes[0].extent, 4);
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 5; ++n) {
          double s = 0;
          for (int k = 0; k < 4; ++k)
            s += a->get_f64((p * 3 + m) * 4 + k) * b->get_f64((q * 4 + k) * 5 + n);
          want.push_back(s);
        }
  expect_near(*y, {2, 3, 3, 5}, want);
}

TEST(LowerMatMul, VectorOperandsDropTheirDim) {
  auto a = iota({4});
  auto b = iota({2, 4, 3});
  auto y = run(make_node("MatMul", 2), {a, b});
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int n = 0; n < 3; ++n) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a->get_f64(k) * b->get_f64((p * 4 + k) * 3 + n);
      want.push_back(s);
    }
  expect_near(*y, {2, 3}, want);
  auto dot = run(make_node("MatMul", 2), {a, iota({4}, 1.0)});
  EXPECT_EQ(dot->shape(), Shape{});
}

TEST(LowerMatMul, HalfAccumulatesInFloat) {
  auto a = iota({2, 3}, 0.25, DType::Float16);
  auto b = iota({3, 2}, 0.5, DType::Float16);
  NodeLowering nl;
  auto y = run(make_node("MatMul", 2), {a, b}, &nl);
  ASSERT_EQ(nl.ops.size(), 2u);  // f32 reduce, then the cast down
  EXPECT_EQ(nl.ops[0]->output->dtype, DType::Float32);
  EXPECT_EQ(y->dtype(), DType::Float16);
  std::vector<double> want;
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a->get_f64(m * 3 + k) * b->get_f64(k * 2 + n);
      want.push_back(s);
    }
  ASSERT_EQ(y->shape(), (Shape{2, 2}));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y->get_f64(i), want[i], 1e-2);
}

TEST(LowerMatMul, MismatchIsUserError) {
  std::vector<te::Tensor> ins{te::make_input("a", {2, 3}, DType::Float32),
                              te::make_input("b", {4, 5}, DType::Float32)};
  EXPECT_THROW(lower_node(make_node("MatMul", 2), 17, ins), UserError);
}

TEST(LowerGemm, AllAttributes) {
  auto a = iota({4, 3});       // transposed: K=4, M=3
  auto b = iota({5, 4}, 0.5);  // transposed: N=5, K=4
  auto c = iota({1, 5}, 1.0);
  NodeLowering nl;
  auto y = run(make_node("Gemm", 3,
                         {{"transA", int_attr(1)},
                          {"transB", int_attr(1)},
                          {"alpha", float_attr(0.5)},
                          {"beta", float_attr(2.0)}}),
               {a, b, c}, &nl);
  EXPECT_EQ(nl.ops.size(), 2u);  // the reduce + the alpha/beta/C epilogue
  std::vector<double> want;
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a->get_f64(k * 3 + m) * b->get_f64(n * 4 + k);
      want.push_back(0.5 * s + 2.0 * c->get_f64(n));
    }
  expect_near(*y, {3, 5}, want);
}

TEST(LowerGemm, PlainGemmIsOneReduce) {
  NodeLowering nl;
  auto y = run(make_node("Gemm", 2), {iota({2, 3}), iota({3, 4})}, &nl);
  EXPECT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(y->shape(), (Shape{2, 4}));
}

TEST(LowerGemm, BadBiasIsUserError) {
  std::vector<te::Tensor> ins{te::make_input("a", {2, 3}, DType::Float32),
                              te::make_input("b", {3, 4}, DType::Float32),
                              te::make_input("c", {3, 4}, DType::Float32)};
  EXPECT_THROW(lower_node(make_node("Gemm", 3), 17, ins), UserError);
}

TEST(LowerEinsum, BatchMatmulAndTranspose) {
  auto a = iota({2, 3, 4});
  auto b = iota({2, 4, 5}, 0.5);
  NodeLowering nl;
  auto y = run(make_node("Einsum", 2, {{"equation", string_attr("bij, bjk -> bik")}}), {a, b}, &nl);
  ASSERT_EQ(nl.ops.size(), 1u);
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j)
          s += a->get_f64((p * 3 + i) * 4 + j) * b->get_f64((p * 4 + j) * 5 + k);
        want.push_back(s);
      }
  expect_near(*y, {2, 3, 5}, want);

  // Implicit output: letters used once, in order -> "ji" of "ij" is the transpose.
  auto t = run(make_node("Einsum", 1, {{"equation", string_attr("ji")}}), {iota({3, 2})});
  std::vector<double> want_t;
  auto src = iota({3, 2});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want_t.push_back(src->get_f64(j * 2 + i));
  expect_near(*t, {2, 3}, want_t);
}

TEST(LowerEinsum, EllipsisDiagonalAndSum) {
  // Batch diagonal: "...ii->...i".
  auto x = iota({2, 3, 3});
  auto d = run(make_node("Einsum", 1, {{"equation", string_attr("...ii ->...i")}}), {x});
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 3; ++i) want.push_back(x->get_f64((p * 3 + i) * 3 + i));
  expect_near(*d, {2, 3}, want);
  // Trace in implicit form: a repeated letter is summed.
  auto tr = run(make_node("Einsum", 1, {{"equation", string_attr("ii")}}), {iota({3, 3})});
  auto m = iota({3, 3});
  expect_near(*tr, {}, {m->get_f64(0) + m->get_f64(4) + m->get_f64(8)});
}

TEST(LowerEinsum, BadEquationsAreUserErrors) {
  std::vector<te::Tensor> ins{te::make_input("a", {2, 3}, DType::Float32)};
  EXPECT_THROW(lower_node(make_node("Einsum", 1, {{"equation", string_attr("ijk->i")}}), 17, ins),
               UserError);
  EXPECT_THROW(lower_node(make_node("Einsum", 1, {{"equation", string_attr("ij->q")}}), 17, ins),
               UserError);
  EXPECT_THROW(lower_node(make_node("Einsum", 1, {{"equation", string_attr("ii")}}), 17, ins),
               UserError);
}

TEST(LowerMatMulInteger, ZeroPoints) {
  auto a = TensorData::from_i64(DType::UInt8, {2, 3}, {10, 20, 30, 40, 50, 60});
  auto b = TensorData::from_i64(DType::Int8, {3, 2}, {1, -2, 3, -4, 5, -6});
  auto azp = TensorData::from_i64(DType::UInt8, {}, {10});
  auto bzp = TensorData::from_i64(DType::Int8, {2}, {1, -1});
  auto y = run(make_node("MatMulInteger", 4), {a, b, azp, bzp});
  EXPECT_EQ(y->dtype(), DType::Int32);
  std::vector<double> want;
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) {
      int64_t s = 0;
      for (int k = 0; k < 3; ++k)
        s += (a->get_i64(m * 3 + k) - 10) * (b->get_i64(k * 2 + n) - (n == 0 ? 1 : -1));
      want.push_back(static_cast<double>(s));
    }
  expect_near(*y, {2, 2}, want);
}

TEST(LowerQLinearMatMul, RequantizesWithSaturation) {
  auto a = TensorData::from_i64(DType::UInt8, {1, 2}, {10, 200});
  auto b = TensorData::from_i64(DType::UInt8, {2, 2}, {3, 1, 5, 1});
  auto one = TensorData::from_f64(DType::Float32, {}, {1.0});
  auto ys = TensorData::from_f64(DType::Float32, {}, {4.0});
  auto zp = TensorData::from_i64(DType::UInt8, {}, {0});
  auto yzp = TensorData::from_i64(DType::UInt8, {}, {2});
  auto y = run(make_node("QLinearMatMul", 8), {a, one, zp, b, one, zp, ys, yzp});
  EXPECT_EQ(y->dtype(), DType::UInt8);
  // round((10*3 + 200*5) / 4) + 2 = 260 saturates to 255; round_half_even(52.5) + 2 = 54.
  expect_near(*y, {1, 2}, {255, 54});
}

}  // namespace
}  // namespace souffle::lower
