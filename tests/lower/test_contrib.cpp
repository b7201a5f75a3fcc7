// Tests of the com.microsoft contrib lowerings that the committed ONNX Runtime fixtures
// (tests/data/contrib, verified against ONNX Runtime by CTest) cannot cover: the ops ONNX Runtime
// runs only on CUDA (BiasAdd, BiasSplitGelu), the com.microsoft LayerNormalization alias, and the
// refusals that name the input or form not lowered; and the structure the planner relies on
// (FusedMatMul is one reduce, Attention's softmax the usual max / exp / sum / divide).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/lower/lower.h"
#include "core/support/error.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using testing::expect_values;
using testing::float_attr;
using testing::int_attr;
using testing::iota;
using testing::make_node;
using testing::run_all;

graph::Node contrib(const std::string& op, size_t inputs,
                    std::map<std::string, graph::Attribute> attrs = {}, size_t outputs = 1) {
  graph::Node n = make_node(op, inputs, std::move(attrs), outputs);
  n.domain = "com.microsoft";
  return n;
}

std::string reason_of(const graph::Node& node, const std::vector<ConstTensorPtr>& vals) {
  try {
    testing::lower(node, vals);
  } catch (const UserError& e) {
    return e.reason();
  }
  return "no error";
}

TEST(Contrib, BiasAddSumsInputBiasAndSkip) {
  auto x = iota({1, 2, 3}), skip = iota({1, 2, 3}, 0.5, 2), bias = iota({3}, 1, 0);
  ConstTensorPtr y = run_all(contrib("BiasAdd", 3), {x, bias, skip})[0];
  std::vector<double> want;
  for (int64_t i = 0; i < 6; ++i)
    want.push_back(x->get_f64(i) + bias->get_f64(i % 3) + skip->get_f64(i));
  expect_values(y, {1, 2, 3}, DType::Float32, want);
}

TEST(Contrib, BiasSplitGeluGatesTheLeftHalfWithGeluOfTheRight) {
  auto x = iota({1, 2, 4}), bias = iota({4}, 0.5, -0.5);
  ConstTensorPtr y = run_all(contrib("BiasSplitGelu", 2), {x, bias})[0];
  std::vector<double> want;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 2; ++c) {
      double left = x->get_f64(r * 4 + c) + bias->get_f64(c);
      double right = x->get_f64(r * 4 + c + 2) + bias->get_f64(c + 2);
      want.push_back(left * 0.5 * right * (1 + std::erf(right / std::numbers::sqrt2)));
    }
  expect_values(y, {1, 2, 2}, DType::Float32, want);
}

TEST(Contrib, MicrosoftLayerNormalizationIsTheOnnxOne) {
  auto x = iota({2, 3, 4}), scale = iota({4}, 0.5, 0.5), bias = iota({4}, 0.1, 0);
  std::map<std::string, graph::Attribute> attrs = {{"epsilon", float_attr(1e-3)}};
  graph::Node onnx_ln = make_node("LayerNormalization", 3, attrs, 3);
  graph::Node ms_ln = contrib("LayerNormalization", 3, attrs, 3);
  std::vector<ConstTensorPtr> a = run_all(onnx_ln, {x, scale, bias});
  std::vector<ConstTensorPtr> b = run_all(ms_ln, {x, scale, bias});
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    std::vector<double> want;
    for (int64_t i = 0; i < a[k]->numel(); ++i) want.push_back(a[k]->get_f64(i));
    expect_values(b[k], a[k]->shape(), a[k]->dtype(), want, 0);
  }
}

TEST(Contrib, FusedMatMulIsOneReduceAndTheScale) {
  NodeLowering nl;
  run_all(contrib("FusedMatMul", 2, {{"alpha", float_attr(0.5)}, {"transB", int_attr(1)}}),
          {iota({2, 3}), iota({4, 3})}, 17, {}, &nl);
  ASSERT_EQ(nl.ops.size(), 2u);
  EXPECT_NE(nl.ops[0]->name.find("matmul"), std::string::npos);
  EXPECT_EQ(nl.outputs[0]->shape, (Shape{2, 4}));
}

TEST(Contrib, RefusalsNameTheInputOrForm) {
  // Attention with a past state: the input is named.
  graph::Node att = contrib("Attention", 5, {{"num_heads", int_attr(2)}});
  std::string r =
      reason_of(att, {iota({1, 2, 4}), iota({4, 12}), iota({12}), nullptr, iota({2, 1, 2, 3, 2})});
  EXPECT_NE(r.find("'past'"), std::string::npos) << r;
  // Without num_heads.
  r = reason_of(contrib("Attention", 2), {iota({1, 2, 4}), iota({4, 12})});
  EXPECT_NE(r.find("num_heads"), std::string::npos) << r;
  // A 4-D mask_index.
  graph::Node masked = contrib("Attention", 4, {{"num_heads", int_attr(2)}});
  auto mask = TensorData::from_f64(DType::Int32, {1, 1, 2, 2}, {1, 1, 1, 1});
  r = reason_of(masked, {iota({1, 2, 4}), iota({4, 12}), iota({12}), mask});
  EXPECT_NE(r.find("mask_index of shape [1, 1, 2, 2]"), std::string::npos) << r;
  // MultiHeadAttention with packed QKV (no key input).
  r = reason_of(contrib("MultiHeadAttention", 1, {{"num_heads", int_attr(2)}}),
                {iota({1, 2, 2, 3, 2})});
  EXPECT_NE(r.find("packed QKV"), std::string::npos) << r;
  // A past key cache.
  graph::Node mha = contrib("MultiHeadAttention", 7, {{"num_heads", int_attr(2)}});
  r = reason_of(mha, {iota({1, 2, 4}), iota({1, 2, 4}), iota({1, 2, 4}), nullptr, nullptr, nullptr,
                      iota({1, 2, 1, 2})});
  EXPECT_NE(r.find("'past_key'"), std::string::npos) << r;
  // DynamicQuantizeLSTM with peepholes.
  graph::Node lstm = contrib("DynamicQuantizeLSTM", 12, {{"hidden_size", int_attr(1)}});
  auto i8 = [](const Shape& s) {
    return TensorData::from_f64(DType::Int8, s, std::vector<double>(shape_numel(s), 1));
  };
  r = reason_of(lstm, {iota({2, 1, 2}), i8({1, 2, 4}), i8({1, 1, 4}), nullptr, nullptr, nullptr,
                       nullptr, iota({1, 3}), iota({1}), i8({1}), iota({1}), i8({1})});
  EXPECT_NE(r.find("'P'"), std::string::npos) << r;
  // EmbedLayerNormalization with a position table shorter than the sequence.
  auto ids = TensorData::from_f64(DType::Int32, {1, 3}, {0, 1, 0});
  r = reason_of(contrib("EmbedLayerNormalization", 7),
                {ids, nullptr, iota({2, 4}), iota({2, 4}), nullptr, iota({4}), iota({4})});
  EXPECT_NE(r.find("position_embedding has 2 rows for a sequence of 3"), std::string::npos) << r;
}

TEST(Contrib, UnloweredContribOpsAreNotRegistered) {
  // GroupQueryAttention and the like stay out of the registry, so a model holding one is
  // refused before lowering with the op, its domain and its nodes named.
  const Registry& reg = Registry::instance();
  EXPECT_EQ(reg.find("com.microsoft.GroupQueryAttention"), nullptr);
  EXPECT_NE(reg.find("com.microsoft.SkipLayerNormalization"), nullptr);
  EXPECT_NE(reg.find("SimplifiedLayerNormalization"), nullptr);
  graph::Node gqa = contrib("GroupQueryAttention", 1);
  std::string r = reason_of(gqa, {iota({2, 1, 3})});
  EXPECT_NE(r.find("com.microsoft"), std::string::npos) << r;
}

}  // namespace
}  // namespace souffle::lower
