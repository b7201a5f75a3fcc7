// Tests of the reduction lowering: Reduce*, softmax family and arg reductions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

// x = [[1, 2, 3], [4, 5, 6]]
ConstTensorPtr x23() {
  return values({2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(LowerReduce, AxesAttributeKeepdims) {
  NodeLowering nl;
  auto y = run(make_node("ReduceSum", 1, {{"axes", ints_attr({1})}}), {x23()}, 11, {}, &nl);
  ASSERT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::Sum);
  expect_values(y, {2, 1}, DType::Float32, {6, 15});
  auto z = run(make_node("ReduceMax", 1, {{"axes", ints_attr({-2})}, {"keepdims", int_attr(0)}}),
               {x23()}, 13);
  expect_values(z, {3}, DType::Float32, {4, 5, 6});
}

TEST(LowerReduce, AxesInputAndEmptyAxes) {
  auto axes = values({1}, {0}, DType::Int64);
  auto y = run(make_node("ReduceSum", 2), {x23(), axes}, 13, {false, true});
  expect_values(y, {1, 3}, DType::Float32, {5, 7, 9});
  // No axes: reduce everything, or nothing with noop_with_empty_axes.
  auto all = run(make_node("ReduceMean", 1, {{"keepdims", int_attr(0)}}), {x23()}, 18);
  expect_values(all, {}, DType::Float32, {3.5});
  Lowered noop = lower(make_node("ReduceSum", 2, {{"noop_with_empty_axes", int_attr(1)}}),
                       {x23(), values({0}, {}, DType::Int64)}, 13, {false, true});
  EXPECT_TRUE(noop.nl.ops.empty());
  EXPECT_EQ(noop.nl.outputs[0], noop.inputs[0]);
  EXPECT_THROW(lower(make_node("ReduceSum", 2), {x23(), axes}, 13), UserError);  // not constant
  EXPECT_THROW(lower(make_node("ReduceSum", 1, {{"axes", ints_attr({2})}}), {x23()}, 11),
               UserError);
  EXPECT_THROW(lower(make_node("ReduceSum", 1, {{"axes", ints_attr({1, -1})}}), {x23()}, 11),
               UserError);
}

TEST(LowerReduce, EveryKind) {
  std::map<std::string, std::vector<double>> want = {
      {"ReduceSum", {6, 15}},
      {"ReduceMean", {2, 5}},
      {"ReduceMax", {3, 6}},
      {"ReduceMin", {1, 4}},
      {"ReduceProd", {6, 120}},
      {"ReduceL1", {6, 15}},
      {"ReduceL2", {std::sqrt(14.0), std::sqrt(77.0)}},
      {"ReduceLogSum", {std::log(6.0), std::log(15.0)}},
      {"ReduceLogSumExp",
       {std::log(std::exp(1) + std::exp(2) + std::exp(3)),
        std::log(std::exp(4) + std::exp(5) + std::exp(6))}},
      {"ReduceSumSquare", {14, 77}},
  };
  for (const auto& [op, w] : want) {
    SCOPED_TRACE(op);
    auto y =
        run(make_node(op, 1, {{"axes", ints_attr({1})}, {"keepdims", int_attr(0)}}), {x23()}, 13);
    expect_values(y, {2}, DType::Float32, w, 1e-4);
  }
}

TEST(LowerReduce, IntegerMeanTruncates) {
  auto y = run(make_node("ReduceMean", 1, {{"axes", ints_attr({0})}}),
               {values({2, 2}, {1, -4, 2, -1}, DType::Int32)}, 13);
  expect_values(y, {1, 2}, DType::Int32, {1, -2});
}

TEST(LowerReduce, SoftmaxIsFourStages) {
  NodeLowering nl;
  auto y = run(make_node("Softmax", 1), {x23()}, 13, {}, &nl);
  ASSERT_EQ(nl.ops.size(), 4u);
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::Max);
  EXPECT_EQ(nl.ops[1]->reduce, te::ReduceKind::None);
  EXPECT_EQ(nl.ops[2]->reduce, te::ReduceKind::Sum);
  EXPECT_EQ(nl.ops[3]->reduce, te::ReduceKind::None);
  double s = std::exp(-2) + std::exp(-1) + 1;
  std::vector<double> row{std::exp(-2) / s, std::exp(-1) / s, 1 / s};
  expect_values(y, {2, 3}, DType::Float32, {row[0], row[1], row[2], row[0], row[1], row[2]});
  auto l = run(make_node("LogSoftmax", 1), {x23()}, 13);
  expect_values(l, {2, 3}, DType::Float32,
                {std::log(row[0]), std::log(row[1]), std::log(row[2]), std::log(row[0]),
                 std::log(row[1]), std::log(row[2])},
                1e-5);
}

TEST(LowerReduce, SoftmaxOpsetsDifferInAxes) {
  // Opset 11, axis 0: the whole tensor is one row; opset 13, axis 0: per column.
  auto x = values({2, 2}, {0, 0, 0, 0});
  expect_values(run(make_node("Softmax", 1, {{"axis", int_attr(0)}}), {x}, 11), {2, 2},
                DType::Float32, {0.25, 0.25, 0.25, 0.25});
  expect_values(run(make_node("Softmax", 1, {{"axis", int_attr(0)}}), {x}, 13), {2, 2},
                DType::Float32, {0.5, 0.5, 0.5, 0.5});
}

TEST(LowerReduce, HardmaxPicksFirstMax) {
  auto x = values({2, 3}, {1, 3, 3, 2, 0, 2});
  expect_values(run(make_node("Hardmax", 1), {x}, 13), {2, 3}, DType::Float32, {0, 1, 0, 1, 0, 0});
  // Opset 11 with axis 0 flattens everything: one 1 at the first global max.
  expect_values(run(make_node("Hardmax", 1, {{"axis", int_attr(0)}}), {x}, 11), {2, 3},
                DType::Float32, {0, 1, 0, 0, 0, 0});
}

TEST(LowerReduce, ArgMaxArgMin) {
  auto x = values({2, 3}, {1, 3, 3, 2, 0, 2});
  NodeLowering nl;
  auto a = run(make_node("ArgMax", 1, {{"axis", int_attr(1)}}), {x}, 13, {}, &nl);
  EXPECT_EQ(nl.ops.size(), 2u);
  expect_values(a, {2, 1}, DType::Int64, {1, 0});
  auto last = run(
      make_node(
          "ArgMax", 1,
          {{"axis", int_attr(1)}, {"select_last_index", int_attr(1)}, {"keepdims", int_attr(0)}}),
      {x}, 13);
  expect_values(last, {2}, DType::Int64, {2, 2});
  auto mn = run(make_node("ArgMin", 1), {x}, 13);
  expect_values(mn, {1, 3}, DType::Int64, {0, 1, 1});
}

}  // namespace
}  // namespace souffle::lower
