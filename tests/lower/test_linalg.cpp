// Tests of the dense linear algebra lowering: Det.
#include <gtest/gtest.h>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

TEST(LowerLinalg, DetWithPivotingAndBatches) {
  // [[0, 1], [1, 0]] needs a row swap (det -1); [[2, 0, 0], [0, 3, 0], [0, 0, 4]] is 24; a
  // singular matrix is 0.
  auto swap = run(make_node("Det", 1), {values({2, 2}, {0, 1, 1, 0})}, 11);
  expect_values(swap, {}, DType::Float32, {-1});
  auto batch = run(make_node("Det", 1),
                   {values({2, 3, 3}, {2, 0, 0, 0, 3, 0, 0, 0, 4, 1, 2, 3, 2, 4, 6, 1, 0, 1})}, 11);
  expect_values(batch, {2}, DType::Float32, {24, 0});
  // A general 3x3: det [[1, 2, 3], [4, 5, 6], [7, 8, 10]] = -3.
  auto gen = run(make_node("Det", 1), {values({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 10})}, 11);
  expect_values(gen, {}, DType::Float32, {-3}, 1e-4);
  EXPECT_THROW(lower(make_node("Det", 1), {values({2, 3}, {1, 2, 3, 4, 5, 6})}, 11), UserError);
}

}  // namespace
}  // namespace souffle::lower
