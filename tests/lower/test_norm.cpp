// Tests of the normalization lowering: the reduce/normalize TE structure and values against
// naive loops.
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
using testing::ints_attr;
using testing::iota;
using testing::make_node;
using testing::run_all;

/// Lowers `node` on placeholders and runs it; returns every output.
std::vector<ConstTensorPtr> run(const graph::Node& node, const std::vector<ConstTensorPtr>& values,
                                NodeLowering* out_lowering = nullptr, int64_t opset = 17) {
  return run_all(node, values, opset, {}, out_lowering);
}

/// Normalizes each contiguous group of `len` values: (v - mean) / sqrt(var + eps).
std::vector<double> normalize_groups(const TensorData& x, int64_t len, double eps,
                                     std::vector<double>* means = nullptr,
                                     std::vector<double>* invs = nullptr) {
  std::vector<double> y;
  for (int64_t g = 0; g < x.numel() / len; ++g) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < len; ++k) m += x.get_f64(g * len + k);
    m /= static_cast<double>(len);
    for (int64_t k = 0; k < len; ++k) v += std::pow(x.get_f64(g * len + k) - m, 2);
    v /= static_cast<double>(len);
    double inv = 1 / std::sqrt(v + eps);
    if (means) means->push_back(m);
    if (invs) invs->push_back(inv);
    for (int64_t k = 0; k < len; ++k) y.push_back((x.get_f64(g * len + k) - m) * inv);
  }
  return y;
}

TEST(LowerBatchNorm, InferenceFormIsOneElementwiseTe) {
  auto x = iota({2, 3, 2, 2});
  auto scale = iota({3}, 0.5, 0.5), bias = iota({3}), mean = iota({3}, 0.1);
  auto var = iota({3}, 0.3, 0.5);
  NodeLowering nl;
  auto y = run(make_node("BatchNormalization", 5, {{"epsilon", float_attr(1e-2)}}),
               {x, scale, bias, mean, var}, &nl, 15);
  ASSERT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::None);
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k)
        want.push_back((x->get_f64((n * 3 + c) * 4 + k) - mean->get_f64(c)) /
                           std::sqrt(var->get_f64(c) + 1e-2) * scale->get_f64(c) +
                       bias->get_f64(c));
  expect_near(*y[0], {2, 3, 2, 2}, want);
}

TEST(LowerBatchNorm, TrainingModeUsesBatchStatistics) {
  auto x = iota({2, 3, 2});
  auto scale = iota({3}, 0.5, 0.5), bias = iota({3}), mean = iota({3}, 0.1);
  auto var = iota({3}, 0.3, 0.5);
  auto out = run(make_node("BatchNormalization", 5, {{"training_mode", int_attr(1)}}, 3),
                 {x, scale, bias, mean, var}, nullptr, 15);
  std::vector<double> y(12), rm(3), rv(3);
  for (int c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 2; ++k) m += x->get_f64((n * 3 + c) * 2 + k) / 4;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 2; ++k) v += std::pow(x->get_f64((n * 3 + c) * 2 + k) - m, 2) / 4;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 2; ++k) {
        int i = (n * 3 + c) * 2 + k;
        y[i] = (x->get_f64(i) - m) / std::sqrt(v + 1e-5) * scale->get_f64(c) + bias->get_f64(c);
      }
    rm[c] = mean->get_f64(c) * 0.9 + m * 0.1;
    rv[c] = var->get_f64(c) * 0.9 + v * 0.1;
  }
  expect_near(*out[0], {2, 3, 2}, y);
  expect_near(*out[1], {3}, rm);
  expect_near(*out[2], {3}, rv);
  // The pre-14 training outputs are not supported.
  std::vector<te::Tensor> ins{te::make_input("x", {2, 3}, DType::Float32)};
  for (int i = 0; i < 4; ++i) ins.push_back(te::make_input("p", {3}, DType::Float32));
  EXPECT_THROW(lower_node(make_node("BatchNormalization", 5, {}, 3), 9, ins), UserError);
}

TEST(LowerInstanceNorm, StatisticsThenNormalize) {
  auto x = iota({2, 3, 4});
  auto scale = iota({3}, 0.5, 0.5), bias = iota({3});
  NodeLowering nl;
  auto y = run(make_node("InstanceNormalization", 3), {x, scale, bias}, &nl);
  ASSERT_EQ(nl.ops.size(), 3u);  // mean, variance, normalize
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::Sum);
  EXPECT_EQ(nl.ops[1]->reduce, te::ReduceKind::Sum);
  EXPECT_EQ(nl.ops[2]->reduce, te::ReduceKind::None);
  std::vector<double> want = normalize_groups(*x, 4, 1e-5);
  for (size_t i = 0; i < want.size(); ++i) {
    int c = static_cast<int>(i / 4) % 3;
    want[i] = want[i] * scale->get_f64(c) + bias->get_f64(c);
  }
  expect_near(*y[0], {2, 3, 4}, want);
}

TEST(LowerLayerNorm, AxisAndOptionalOutputs) {
  auto x = iota({2, 3, 4});
  auto scale = iota({3, 4}, 0.5, 0.5), bias = iota({4});
  auto out = run(make_node("LayerNormalization", 3, {{"axis", int_attr(1)}}, 3), {x, scale, bias});
  std::vector<double> means, invs;
  std::vector<double> want = normalize_groups(*x, 12, 1e-5, &means, &invs);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = want[i] * scale->get_f64(i % 12) + bias->get_f64(i % 4);
  expect_near(*out[0], {2, 3, 4}, want);
  expect_near(*out[1], {2, 1, 1}, means);
  expect_near(*out[2], {2, 1, 1}, invs);
}

TEST(LowerLayerNorm, DefaultAxisAndErrors) {
  auto x = iota({3, 5});
  auto scale = iota({5}, 0.5, 0.5);
  auto y = run(make_node("LayerNormalization", 2), {x, scale});
  std::vector<double> want = normalize_groups(*x, 5, 1e-5);
  for (size_t i = 0; i < want.size(); ++i) want[i] *= scale->get_f64(i % 5);
  expect_near(*y[0], {3, 5}, want);
  std::vector<te::Tensor> ins{te::make_input("x", {3, 5}, DType::Float32),
                              te::make_input("s", {4}, DType::Float32)};
  EXPECT_THROW(lower_node(make_node("LayerNormalization", 2), 17, ins), UserError);
  ins[1] = te::make_input("s", {5}, DType::Float32);
  EXPECT_THROW(lower_node(make_node("LayerNormalization", 2, {{"axis", int_attr(2)}}), 17, ins),
               UserError);
}

TEST(LowerGroupNorm, PerGroupAndPerChannelAffine) {
  auto x = iota({2, 4, 3});
  for (bool per_channel : {false, true}) {
    int64_t np = per_channel ? 4 : 2;
    auto scale = iota({np}, 0.5, 0.5), bias = iota({np});
    auto y = run(make_node("GroupNormalization", 3, {{"num_groups", int_attr(2)}}),
                 {x, scale, bias}, nullptr, per_channel ? 21 : 18);
    std::vector<double> want = normalize_groups(*x, 6, 1e-5);
    for (size_t i = 0; i < want.size(); ++i) {
      int64_t c = static_cast<int64_t>(i / 3) % 4;
      int64_t p = per_channel ? c : c / 2;
      want[i] = want[i] * scale->get_f64(p) + bias->get_f64(p);
    }
    expect_near(*y[0], {2, 4, 3}, want);
  }
}

TEST(LowerLpNorm, L1AndL2) {
  auto x = iota({2, 3});
  for (int64_t p : {1, 2}) {
    auto y = run(make_node("LpNormalization", 1, {{"p", int_attr(p)}, {"axis", int_attr(0)}}), {x});
    std::vector<double> want(6);
    for (int c = 0; c < 3; ++c) {
      double a = x->get_f64(c), b = x->get_f64(3 + c);
      double n = p == 1 ? std::abs(a) + std::abs(b) : std::sqrt(a * a + b * b);
      want[c] = a / n, want[3 + c] = b / n;
    }
    expect_near(*y[0], {2, 3}, want);
  }
}

TEST(LowerMeanVarianceNorm, DefaultAxes) {
  auto x = iota({2, 2, 1, 3});
  auto y = run(make_node("MeanVarianceNormalization", 1), {x});
  std::vector<double> want(12);
  for (int c = 0; c < 2; ++c) {
    double m = 0, v = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 3; ++k) m += x->get_f64((n * 2 + c) * 3 + k) / 6;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 3; ++k) v += std::pow(x->get_f64((n * 2 + c) * 3 + k) - m, 2) / 6;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 3; ++k) {
        int i = (n * 2 + c) * 3 + k;
        want[i] = (x->get_f64(i) - m) / (std::sqrt(v) + 1e-9);
      }
  }
  expect_near(*y[0], {2, 2, 1, 3}, want);
  auto y2 = run(make_node("MeanVarianceNormalization", 1, {{"axes", ints_attr({-1})}}), {x});
  expect_near(*y2[0], {2, 2, 1, 3}, [&] {
    std::vector<double> w = normalize_groups(*x, 3, 0);
    return w;
  }());
}

TEST(LowerLrn, ChannelWindowAtTheEdges) {
  auto x = iota({1, 4, 2});
  auto y = run(make_node("LRN", 1,
                         {{"size", int_attr(3)},
                          {"alpha", float_attr(0.3)},
                          {"beta", float_attr(0.5)},
                          {"bias", float_attr(2.0)}}),
               {x});
  std::vector<double> want;
  for (int c = 0; c < 4; ++c)
    for (int k = 0; k < 2; ++k) {
      double s = 0;
      for (int q = std::max(0, c - 1); q <= std::min(3, c + 1); ++q)
        s += std::pow(x->get_f64(q * 2 + k), 2);
      want.push_back(x->get_f64(c * 2 + k) / std::pow(2.0 + 0.3 / 3 * s, 0.5));
    }
  expect_near(*y[0], {1, 4, 2}, want);
}

}  // namespace
}  // namespace souffle::lower
