// Tests of the loss lowerings: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

// x = [[-1, -2, -3], [-4, -5, -6]] as [N=2, C=3]; targets 0 and 2; weights 1, 2, 3.
ConstTensorPtr x23() {
  return values({2, 3}, {-1, -2, -3, -4, -5, -6});
}
ConstTensorPtr targets() {
  return values({2}, {0, 2}, DType::Int64);
}
ConstTensorPtr weights() {
  return values({3}, {1, 2, 3});
}

TEST(LowerLoss, NllReductions) {
  auto none = run(make_node("NegativeLogLikelihoodLoss", 3, {{"reduction", string_attr("none")}}),
                  {x23(), targets(), weights()});
  expect_values(none, {2}, DType::Float32, {1, 18});
  auto sum = run(make_node("NegativeLogLikelihoodLoss", 3, {{"reduction", string_attr("sum")}}),
                 {x23(), targets(), weights()});
  expect_values(sum, {}, DType::Float32, {19});
  // mean divides by the sum of the picked weights (1 + 3), not by N.
  auto mean = run(make_node("NegativeLogLikelihoodLoss", 3), {x23(), targets(), weights()});
  expect_values(mean, {}, DType::Float32, {19.0 / 4});
  auto unweighted = run(make_node("NegativeLogLikelihoodLoss", 2), {x23(), targets()});
  expect_values(unweighted, {}, DType::Float32, {3.5});
}

TEST(LowerLoss, NllIgnoreIndexOutOfRangeReadsInBounds) {
  // Target -1 is ignored: no loss, no weight, and no out-of-bounds read of x or the weights.
  auto t = values({2}, {-1, 2}, DType::Int64);
  auto mean = run(make_node("NegativeLogLikelihoodLoss", 3, {{"ignore_index", int_attr(-1)}}),
                  {x23(), t, weights()});
  expect_values(mean, {}, DType::Float32, {6});
  auto none = run(make_node("NegativeLogLikelihoodLoss", 2,
                            {{"ignore_index", int_attr(-1)}, {"reduction", string_attr("none")}}),
                  {x23(), t});
  expect_values(none, {2}, DType::Float32, {0, 6});
}

TEST(LowerLoss, NllSpatialTargets) {
  // [N=1, C=2, d=2]: loss[0, d] = -x[0, t[d], d].
  auto x = values({1, 2, 2}, {-1, -2, -3, -4});
  auto t = values({1, 2}, {1, 0}, DType::Int64);
  auto none =
      run(make_node("NegativeLogLikelihoodLoss", 2, {{"reduction", string_attr("none")}}), {x, t});
  expect_values(none, {1, 2}, DType::Float32, {3, 2});
}

TEST(LowerLoss, SoftmaxCrossEntropyWithLogProb) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  auto x = values({1, 2}, {0, std::log(3.0)});
  auto t = values({1}, {1}, DType::Int64);
  auto outs = run_all(make_node("SoftmaxCrossEntropyLoss", 2, {}, 2), {x, t});
  ASSERT_EQ(outs.size(), 2u);
  expect_values(outs[0], {}, DType::Float32, {-std::log(0.75)});
  expect_values(outs[1], {1, 2}, DType::Float32, {std::log(0.25), std::log(0.75)});
}

TEST(LowerLoss, BadShapesNameTheNode) {
  EXPECT_THROW(lower(make_node("NegativeLogLikelihoodLoss", 2),
                     {x23(), values({3}, {0, 1, 2}, DType::Int64)}),
               UserError);
  EXPECT_THROW(lower(make_node("NegativeLogLikelihoodLoss", 2), {x23(), x23()}), UserError);
  EXPECT_THROW(lower(make_node("SoftmaxCrossEntropyLoss", 2, {{"reduction", string_attr("avg")}}),
                     {x23(), targets()}),
               UserError);
}

}  // namespace
}  // namespace souffle::lower
