// Tests of the element-wise lowering: shapes, types and values against hand-computed results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

TEST(LowerElementwise, AddBroadcastsAndIsOneOp) {
  NodeLowering nl;
  auto y = run(make_node("Add", 2), {values({2, 3}, {1, 2, 3, 4, 5, 6}), values({3}, {10, 20, 30})},
               17, {}, &nl);
  EXPECT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::None);
  expect_values(y, {2, 3}, DType::Float32, {11, 22, 33, 14, 25, 36});
}

TEST(LowerElementwise, ShapeMismatchIsUserError) {
  EXPECT_THROW(
      lower(make_node("Mul", 2), {values({2, 3}, std::vector<double>(6)), values({2}, {1, 2})}),
      UserError);
  EXPECT_THROW(lower(make_node("Add", 2), {values({2}, {1, 2}), values({2}, {1, 2}, DType::Int32)}),
               UserError);
}

TEST(LowerElementwise, IntegerDivTruncates) {
  auto y = run(make_node("Div", 2), {values({4}, {7, -7, 7, 9}, DType::Int32),
                                     values({4}, {2, 2, -2, 3}, DType::Int32)});
  expect_values(y, {4}, DType::Int32, {3, -3, -3, 3});
}

TEST(LowerElementwise, PowMixedTypes) {
  auto y = run(make_node("Pow", 2), {values({3}, {1, 2, 3}), values({3}, {2, 3, 2}, DType::Int64)});
  expect_values(y, {3}, DType::Float32, {1, 8, 9});
  auto z = run(make_node("Pow", 2),
               {values({3}, {1, 2, 3}, DType::Int32), values({3}, {1, 2, 3}, DType::Float32)});
  expect_values(z, {3}, DType::Int32, {1, 4, 27});
}

TEST(LowerElementwise, ModSignFollowsDivisorUnlessFmod) {
  auto a = values({4}, {5, -5, 5, -5}, DType::Int32);
  auto b = values({4}, {3, 3, -3, -3}, DType::Int32);
  expect_values(run(make_node("Mod", 2), {a, b}), {4}, DType::Int32, {2, 1, -1, -2});
  expect_values(run(make_node("Mod", 2, {{"fmod", int_attr(1)}}), {a, b}), {4}, DType::Int32,
                {2, -2, 2, -2});
  auto fa = values({4}, {5.5, -5.5, 5.5, -5.5});
  auto fb = values({4}, {2, 2, -2, -2});
  expect_values(run(make_node("Mod", 2, {{"fmod", int_attr(1)}}), {fa, fb}), {4}, DType::Float32,
                {1.5, -1.5, 1.5, -1.5});
}

TEST(LowerElementwise, ClipAttributesBeforeOpset11InputsAfter) {
  auto x = values({4}, {-3, -0.5, 0.5, 3});
  auto old = run(make_node("Clip", 1, {{"min", float_attr(-1)}, {"max", float_attr(1)}}), {x}, 6);
  expect_values(old, {4}, DType::Float32, {-1, -0.5, 0.5, 1});
  // Only a max bound given (min omitted as "").
  graph::Node n = make_node("Clip", 3);
  n.inputs[1] = "";
  auto y = run(n, {x, nullptr, values({}, {0})}, 13);
  expect_values(y, {4}, DType::Float32, {-3, -0.5, 0, 0});
  auto z =
      run(make_node("Clip", 3), {x, values({}, {-2}), values({}, {2})}, 13, {false, true, true});
  expect_values(z, {4}, DType::Float32, {-2, -0.5, 0.5, 2});
}

TEST(LowerElementwise, Activations) {
  auto x = values({4}, {-2, -0.5, 0.5, 2});
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> xs{-2, -0.5, 0.5, 2};
  std::map<std::string, std::function<double(double)>> want = {
      {"Relu", [](double v) { return v > 0 ? v : 0; }},
      {"LeakyRelu", [](double v) { return v < 0 ? 0.01 * v : v; }},
      {"Elu", [](double v) { return v < 0 ? std::exp(v) - 1 : v; }},
      {"Sigmoid", sig},
      {"HardSigmoid", [](double v) { return std::max(0.0, std::min(1.0, 0.2 * v + 0.5)); }},
      {"HardSwish", [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); }},
      {"Softplus", [](double v) { return std::log(1 + std::exp(v)); }},
      {"Softsign", [](double v) { return v / (1 + std::abs(v)); }},
      {"Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"Mish", [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }},
      {"Celu", [](double v) { return std::max(0.0, v) + std::min(0.0, std::exp(v) - 1); }},
      {"Selu",
       [](double v) {
         return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * (std::exp(v) - 1));
       }},
      {"Shrink", [](double v) { return v < -0.5  ? v
                                       : v > 0.5 ? v
                                                 : 0; }},
      {"ThresholdedRelu", [](double v) { return v > 1 ? v : 0; }},
  };
  for (const auto& [op, f] : want) {
    std::vector<double> w;
    for (double v : xs) w.push_back(f(v));
    SCOPED_TRACE(op);
    expect_values(run(make_node(op, 1), {x}), {4}, DType::Float32, w);
  }
  auto t = run(make_node("Gelu", 1, {{"approximate", string_attr("tanh")}}), {x}, 20);
  std::vector<double> w;
  for (double v : xs)
    w.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  expect_values(t, {4}, DType::Float32, w);
  auto p = run(make_node("PRelu", 2), {values({2, 2}, {-1, 1, -2, 2}), values({2}, {0.5, 3})});
  expect_values(p, {2, 2}, DType::Float32, {-0.5, 1, -1, 2});
}

TEST(LowerElementwise, PReluPerChannelBeforeOpset7) {
  auto x = values({1, 2, 2}, {-1, -2, -3, 4});
  auto slope = values({2}, {0.5, 2});
  expect_values(run(make_node("PRelu", 2), {x, slope}, 6), {1, 2, 2}, DType::Float32,
                {-0.5, -1, -6, 4});
  // From opset 7 the slope broadcasts numpy-style: [2] against the last axis.
  expect_values(run(make_node("PRelu", 2), {x, slope}, 9), {1, 2, 2}, DType::Float32,
                {-0.5, -4, -1.5, 4});
}

TEST(LowerElementwise, DropoutRatioNeedNotBeConstantAtInference) {
  auto x = values({2}, {1, 2});
  auto y = run(make_node("Dropout", 2), {x, values({}, {0.3})}, 13);
  expect_values(y, {2}, DType::Float32, {1, 2});
}

TEST(LowerElementwise, HalfComputesInF32) {
  NodeLowering nl;
  auto y = run(make_node("Exp", 1), {values({2}, {0, 1}, DType::Float16)}, 17, {}, &nl);
  expect_values(y, {2}, DType::Float16, {1, 2.71875}, 2e-3);
  ASSERT_EQ(nl.ops.size(), 1u);
  const te::Cast* c = nl.ops[0]->body.as<te::Cast>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->a.dtype(), DType::Float32);
}

TEST(LowerElementwise, VariadicMinMaxSumMean) {
  auto a = values({2}, {1, 5});
  auto b = values({2, 1}, {3, -1});
  auto c = values({1}, {2});
  expect_values(run(make_node("Max", 3), {a, b, c}), {2, 2}, DType::Float32, {3, 5, 2, 5});
  expect_values(run(make_node("Min", 3), {a, b, c}), {2, 2}, DType::Float32, {1, 2, -1, -1});
  expect_values(run(make_node("Sum", 3), {a, b, c}), {2, 2}, DType::Float32, {6, 10, 2, 6});
  expect_values(run(make_node("Mean", 3), {a, b, c}), {2, 2}, DType::Float32,
                {2, 10.0 / 3, 2.0 / 3, 2});
  expect_values(run(make_node("Max", 1), {a}), {2}, DType::Float32, {1, 5});
}

TEST(LowerElementwise, ComparisonsLogicWhere) {
  auto a = values({3}, {1, 2, 3});
  auto b = values({3}, {2, 2, 2});
  expect_values(run(make_node("Less", 2), {a, b}), {3}, DType::Bool, {1, 0, 0});
  expect_values(run(make_node("GreaterOrEqual", 2), {a, b}), {3}, DType::Bool, {0, 1, 1});
  expect_values(run(make_node("Equal", 2), {a, b}), {3}, DType::Bool, {0, 1, 0});
  auto p = values({3}, {1, 0, 1}, DType::Bool);
  auto q = values({3}, {1, 1, 0}, DType::Bool);
  expect_values(run(make_node("Xor", 2), {p, q}), {3}, DType::Bool, {0, 1, 1});
  expect_values(run(make_node("Not", 1), {p}), {3}, DType::Bool, {0, 1, 0});
  auto w = run(make_node("Where", 3), {values({2, 1}, {1, 0}, DType::Bool), a, values({}, {-1})});
  expect_values(w, {2, 3}, DType::Float32, {1, 2, 3, -1, -1, -1});
  EXPECT_THROW(lower(make_node("Where", 3), {a, a, a}), UserError);
}

TEST(LowerElementwise, IsInfIsNaN) {
  double inf = std::numeric_limits<double>::infinity();
  auto x = values({4}, {inf, -inf, std::nan(""), 1});
  expect_values(run(make_node("IsInf", 1), {x}), {4}, DType::Bool, {1, 1, 0, 0});
  expect_values(run(make_node("IsInf", 1, {{"detect_negative", int_attr(0)}}), {x}), {4},
                DType::Bool, {1, 0, 0, 0});
  expect_values(run(make_node("IsInf", 1, {{"detect_positive", int_attr(0)}}), {x}), {4},
                DType::Bool, {0, 1, 0, 0});
  expect_values(run(make_node("IsNaN", 1), {x}), {4}, DType::Bool, {0, 0, 1, 0});
}

TEST(LowerElementwise, CastIdentityDropout) {
  auto x = values({3}, {-1.7, 0.2, 2.9});
  auto c = run(make_node("Cast", 1, {{"to", int_attr(7)}}), {x});  // INT64
  expect_values(c, {3}, DType::Int64, {-1, 0, 2});
  auto cl = run(make_node("CastLike", 2), {x, values({1}, {0}, DType::Float64)});
  expect_values(cl, {3}, DType::Float64, {-1.7, 0.2, 2.9}, 1e-6);
  EXPECT_THROW(lower(make_node("Cast", 1, {{"to", int_attr(8)}}), {x}), UserError);  // STRING
  Lowered id = lower(make_node("Identity", 1), {x});
  EXPECT_TRUE(id.nl.ops.empty());
  EXPECT_EQ(id.nl.outputs[0], id.inputs[0]);
  auto outs = run_all(make_node("Dropout", 1, {}, 2), {x}, 13);
  ASSERT_EQ(outs.size(), 2u);
  expect_values(outs[0], {3}, DType::Float32, {-1.7, 0.2, 2.9});
  expect_values(outs[1], {3}, DType::Bool, {1, 1, 1});
  EXPECT_THROW(lower(make_node("Dropout", 3), {x, values({}, {0.5}), values({}, {1}, DType::Bool)},
                     13, {false, true, true}),
               UserError);
}

TEST(LowerElementwise, BitOps) {
  auto a = values({3}, {1, 12, 255}, DType::UInt8);
  auto s = values({3}, {2, 2, 1}, DType::UInt8);
  expect_values(run(make_node("BitShift", 2, {{"direction", string_attr("LEFT")}}), {a, s}), {3},
                DType::UInt8, {4, 48, 254});
  expect_values(run(make_node("BitShift", 2, {{"direction", string_attr("RIGHT")}}), {a, s}), {3},
                DType::UInt8, {0, 3, 127});
  expect_values(run(make_node("BitwiseNot", 1), {a}), {3}, DType::UInt8, {254, 243, 0});
  expect_values(run(make_node("BitwiseAnd", 2), {a, s}), {3}, DType::UInt8, {0, 0, 1});
}

TEST(LowerElementwise, TrigAndRounding) {
  auto x = values({3}, {-1.5, 0.5, 2.5});
  expect_values(run(make_node("Round", 1), {x}), {3}, DType::Float32, {-2, 0, 2});
  expect_values(run(make_node("Floor", 1), {x}), {3}, DType::Float32, {-2, 0, 2});
  expect_values(run(make_node("Ceil", 1), {x}), {3}, DType::Float32, {-1, 1, 3});
  expect_values(run(make_node("Sign", 1), {x}), {3}, DType::Float32, {-1, 1, 1});
  expect_values(run(make_node("Atan", 1), {x}), {3}, DType::Float32,
                {std::atan(-1.5), std::atan(0.5), std::atan(2.5)});
  expect_values(run(make_node("Reciprocal", 1), {x}), {3}, DType::Float32, {-1 / 1.5, 2, 0.4});
}

}  // namespace
}  // namespace souffle::lower
