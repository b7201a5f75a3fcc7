// Tests of the optimizer update rules of ai.onnx.preview.training (Adagrad, Momentum, Adam).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

graph::Node training_node(const std::string& op, size_t inputs, size_t outputs,
                          std::map<std::string, graph::Attribute> attrs) {
  graph::Node n = make_node(op, inputs, std::move(attrs), outputs);
  n.domain = "ai.onnx.preview.training";
  return n;
}

TEST(LowerOptimizer, MomentumFirstStepTakesTheWholeGradient) {
  auto r = values({}, {0.5}), t0 = values({}, {0}, DType::Int64),
       t1 = values({}, {1}, DType::Int64);
  auto x = values({2}, {1, 2}), g = values({2}, {1, -1}), v = values({2}, {2, 2});
  auto node = training_node("Momentum", 5, 2,
                            {{"alpha", float_attr(0.5)},
                             {"beta", float_attr(0.25)},
                             {"mode", string_attr("standard")},
                             {"norm_coefficient", float_attr(0)}});
  // T = 0: v' = 0.5 v + g = [2, 0]; x' = x - 0.5 v' = [0, 2].
  auto first = run_all(node, {r, t0, x, g, v});
  expect_values(first[0], {2}, DType::Float32, {0, 2});
  expect_values(first[1], {2}, DType::Float32, {2, 0});
  // T = 1: v' = 0.5 v + 0.25 g = [1.25, 0.75].
  auto later = run_all(node, {r, t1, x, g, v});
  expect_values(later[1], {2}, DType::Float32, {1.25, 0.75});
}

TEST(LowerOptimizer, AdagradAndAdamOneTensor) {
  auto r = values({}, {0.1}), t = values({}, {0}, DType::Int64);
  auto x = values({1}, {1}), g = values({1}, {2}), h = values({1}, {5});
  auto ada = run_all(training_node("Adagrad", 5, 2, {{"epsilon", float_attr(0)}}), {r, t, x, g, h});
  // h' = 5 + 4 = 9; x' = 1 - 0.1 * 2 / 3.
  expect_values(ada[0], {1}, DType::Float32, {1 - 0.2 / 3});
  expect_values(ada[1], {1}, DType::Float32, {9});
  auto v = values({1}, {0});
  auto adam = run_all(
      training_node(
          "Adam", 6, 3,
          {{"alpha", float_attr(0.5)}, {"beta", float_attr(0.5)}, {"epsilon", float_attr(0)}}),
      {r, t, x, g, v, h});
  // v' = 1, h' = 2.5 + 2 = 4.5, x' = 1 - 0.1 * 1 / sqrt(4.5) (no bias correction at T = 0).
  expect_values(adam[0], {1}, DType::Float32, {1 - 0.1 / std::sqrt(4.5)});
  expect_values(adam[1], {1}, DType::Float32, {1});
  expect_values(adam[2], {1}, DType::Float32, {4.5});
  // Groups of unequal count are refused.
  EXPECT_THROW(lower(training_node("Adagrad", 4, 2, {}), {r, t, x, g}), UserError);
}

}  // namespace
}  // namespace souffle::lower
