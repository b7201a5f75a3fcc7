// Tests of selection and order: TopK, ReverseSequence, and the refusal of data-dependent output
// sizes.
#include <gtest/gtest.h>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

TEST(LowerSortSelect, TopKLargestWithTiesInIndexOrder) {
  auto x = values({2, 4}, {3, 1, 3, 2, 0, 5, -1, 5});
  auto k = values({1}, {3}, DType::Int64);
  auto outs = run_all(make_node("TopK", 2, {}, 2), {x, k}, 11, {false, true});
  ASSERT_EQ(outs.size(), 2u);
  expect_values(outs[0], {2, 3}, DType::Float32, {3, 3, 2, 5, 5, 0});
  expect_values(outs[1], {2, 3}, DType::Int64, {0, 2, 3, 1, 3, 0});
}

TEST(LowerSortSelect, TopKSmallestAlongAxis0) {
  auto x = values({3, 2}, {4, 0, 1, 7, 2, -3});
  auto k = values({1}, {2}, DType::Int64);
  auto outs = run_all(make_node("TopK", 2, {{"axis", int_attr(0)}, {"largest", int_attr(0)}}, 2),
                      {x, k}, 11, {false, true});
  expect_values(outs[0], {2, 2}, DType::Float32, {1, -3, 2, 0});
  expect_values(outs[1], {2, 2}, DType::Int64, {1, 2, 2, 0});
  // k must be a constant within the axis.
  EXPECT_THROW(lower(make_node("TopK", 2, {}, 2), {x, k}, 11), UserError);
  EXPECT_THROW(
      lower(make_node("TopK", 2, {}, 2), {x, values({1}, {5}, DType::Int64)}, 11, {false, true}),
      UserError);
}

TEST(LowerSortSelect, ReverseSequencePerBatchLength) {
  // time_axis 0, batch_axis 1: x[t, b]; lengths 3 and 1.
  auto x = values({3, 2}, {0, 10, 1, 11, 2, 12});
  auto lens = values({2}, {3, 1}, DType::Int64);
  auto y = run(make_node("ReverseSequence", 2), {x, lens}, 10);
  expect_values(y, {3, 2}, DType::Float32, {2, 10, 1, 11, 0, 12});
}

TEST(LowerSortSelect, DataDependentSizesSaySo) {
  for (const char* op : {"Unique", "NonMaxSuppression", "NonZero"}) {
    try {
      lower(make_node(op, 1), {values({3}, {1, 0, 1})});
      FAIL() << op << " must be refused";
    } catch (const UserError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("not supported: the output size depends on the input's values"),
                std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace souffle::lower
