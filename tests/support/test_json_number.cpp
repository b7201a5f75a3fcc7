// json_number_as: numbers from files someone else wrote, read without undefined conversions.
#include <gtest/gtest.h>

#include "core/support/json_number.h"

namespace souffle {
namespace {

using nlohmann::json;

TEST(JsonNumber, WholeNumbersWithinRangeAreRead) {
  EXPECT_EQ(json_number_as<int>(json(42)), 42);
  EXPECT_EQ(json_number_as<int>(json(-7)), -7);
  EXPECT_EQ(json_number_as<int>(json(3.0)), 3);
  EXPECT_EQ(json_number_as<int>(json(2147483647)), 2147483647);
  EXPECT_EQ(json_number_as<int>(json(-2147483648.0)), std::numeric_limits<int>::min());
  EXPECT_EQ(json_number_as<int64_t>(json(uint64_t{1} << 62)), int64_t{1} << 62);
  EXPECT_EQ(json_number_as<double>(json(1e55)), 1e55);
}

TEST(JsonNumber, ValuesATypeCannotHoldAreRefused) {
  EXPECT_FALSE(json_number_as<int>(json(1.36667e55)));  // found by fuzz_measurements
  EXPECT_FALSE(json_number_as<int>(json(2147483648.0)));
  EXPECT_FALSE(json_number_as<int>(json(int64_t{2147483648})));
  EXPECT_FALSE(json_number_as<int>(json(-2147483649.0)));
  EXPECT_FALSE(json_number_as<int>(json(uint64_t{1} << 63)));
  EXPECT_FALSE(json_number_as<int64_t>(json(uint64_t{1} << 63)));
  EXPECT_FALSE(json_number_as<int64_t>(json(9.3e18)));
  EXPECT_FALSE(json_number_as<int>(json(2.5)));
  EXPECT_FALSE(json_number_as<int>(json(true)));
  EXPECT_FALSE(json_number_as<int>(json("3")));
  EXPECT_FALSE(json_number_as<double>(json(nullptr)));
}

}  // namespace
}  // namespace souffle
