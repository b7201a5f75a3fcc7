// The one floor_div / floor_mod / ceil_div every layer uses: rounding toward negative infinity
// for either sign, as the simplifier and the ownership proofs rely on.
#include <gtest/gtest.h>

#include "core/support/int_math.h"

namespace souffle {
namespace {

TEST(IntMath, FloorDivRoundsTowardNegativeInfinity) {
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_div(7, -2), -4);
  EXPECT_EQ(floor_div(-7, -2), 3);
  EXPECT_EQ(floor_div(-8, 2), -4);
  EXPECT_EQ(floor_div(0, 5), 0);
  static_assert(floor_div(-1, 3) == -1);
}

TEST(IntMath, FloorModTakesTheSignOfTheDivisor) {
  EXPECT_EQ(floor_mod(7, 3), 1);
  EXPECT_EQ(floor_mod(-7, 3), 2);
  EXPECT_EQ(floor_mod(7, -3), -2);
  EXPECT_EQ(floor_mod(-6, 3), 0);
  for (int64_t a = -20; a <= 20; ++a)
    for (int64_t b : {-7, -3, -1, 1, 2, 5})
      EXPECT_EQ(floor_div(a, b) * b + floor_mod(a, b), a) << a << " " << b;
}

TEST(IntMath, CeilDivCountsPartialTiles) {
  EXPECT_EQ(ceil_div(0, 4), 0);
  EXPECT_EQ(ceil_div(1, 4), 1);
  EXPECT_EQ(ceil_div(8, 4), 2);
  EXPECT_EQ(ceil_div(9, 4), 3);
  static_assert(ceil_div(27648, 128) == 216);
}

}  // namespace
}  // namespace souffle
