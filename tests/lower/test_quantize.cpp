// Tests of the linear quantization lowerings: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear.
#include <gtest/gtest.h>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

TEST(LowerQuantize, RoundsHalfToEvenAndSaturates) {
  auto x = values({6}, {0, 1, 2.5, 3.5, 1000, -1000});
  auto scale = values({}, {0.5});
  auto zp = values({}, {128}, DType::UInt8);
  auto y = run(make_node("QuantizeLinear", 3), {x, scale, zp}, 13);
  // x / 0.5 = 0, 2, 5, 7, 2000, -2000; + 128, saturated to [0, 255].
  expect_values(y, {6}, DType::UInt8, {128, 130, 133, 135, 255, 0});
  auto i8 = run(make_node("QuantizeLinear", 3),
                {values({3}, {0.25, 0.75, -300}), scale, values({}, {0}, DType::Int8)}, 13);
  // 0.5 -> 0 and 1.5 -> 2 (half to even), -600 -> -128.
  expect_values(i8, {3}, DType::Int8, {0, 2, -128});
  // Without a zero point the output is uint8.
  auto u8 = run(make_node("QuantizeLinear", 2), {values({2}, {1, -1}), scale}, 13);
  expect_values(u8, {2}, DType::UInt8, {2, 0});
}

TEST(LowerQuantize, PerAxisScaleAndZeroPoint) {
  auto x = values({2, 3}, {1, 2, 3, 4, 5, 6});
  auto scale = values({3}, {1, 2, 4});
  auto zp = values({3}, {0, 10, 20}, DType::Int8);
  auto y = run(make_node("QuantizeLinear", 3), {x, scale, zp}, 13);
  expect_values(y, {2, 3}, DType::Int8, {1, 11, 21, 4, 12, 22});  // 2.5 -> 2, 1.5 -> 2
  auto back = run(make_node("DequantizeLinear", 3), {y, scale, zp}, 13);
  expect_values(back, {2, 3}, DType::Float32, {1, 2, 4, 4, 4, 8});
  // A per-axis scale of the wrong length names the axis.
  EXPECT_THROW(lower(make_node("QuantizeLinear", 2), {x, values({2}, {1, 2})}, 13), UserError);
}

TEST(LowerQuantize, DynamicQuantizeRoundsTheF32Quotient) {
  // x / scale is -127.49999 in f32 (so -127, not -128 as in double arithmetic) and 25.5 (even:
  // 26): the quotient is rounded to f32 before rounding to an integer, as a GPU computes it.
  auto x = values({6}, {0, 2, -3, -2.5, 1.34, 0.5});
  auto outs = run_all(make_node("DynamicQuantizeLinear", 1, {}, 3), {x}, 11);
  ASSERT_EQ(outs.size(), 3u);
  expect_values(outs[0], {6}, DType::UInt8, {153, 255, 0, 26, 221, 179});
  expect_values(outs[1], {}, DType::Float32, {5.0 / 255}, 1e-8);
  expect_values(outs[2], {}, DType::UInt8, {153});
  // All zeros: scale 1/255, zero point 0.
  auto zeros = run_all(make_node("DynamicQuantizeLinear", 1, {}, 3), {values({2}, {0, 0})}, 11);
  expect_values(zeros[1], {}, DType::Float32, {1.0 / 255}, 1e-8);
  expect_values(zeros[0], {2}, DType::UInt8, {0, 0});
}

// A scale of shape [1] beside a scalar zero point (ONNX Runtime's quantizer writes biases so)
// is one value for the whole tensor; other differing shapes stay an error naming both.
TEST(LowerQuantize, OneElementScaleBesideAScalarZeroPoint) {
  auto x = values({3}, {-3, 0, 7}, DType::Int32);
  auto y = run(make_node("DequantizeLinear", 3),
               {x, values({1}, {0.5}), values({}, {1}, DType::Int32)}, 13);
  expect_values(y, {3}, DType::Float32, {-2, -0.5, 3});
  try {
    lower(make_node("DequantizeLinear", 3),
          {x, values({2}, {0.5, 1}), values({}, {1}, DType::Int32)}, 13);
    ADD_FAILURE() << "accepted a [2] scale beside a scalar zero point";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the scale's [2]"), std::string::npos)
        << e.what();
  }
}

TEST(LowerQuantize, DequantizeInt32) {
  auto x = values({3}, {-5, 0, 100000}, DType::Int32);
  auto y = run(make_node("DequantizeLinear", 2), {x, values({}, {0.5})}, 13);
  expect_values(y, {3}, DType::Float32, {-2.5, 0, 50000});
  EXPECT_THROW(lower(make_node("DequantizeLinear", 2), {values({1}, {1}), values({}, {0.5})}, 13),
               UserError);  // a float input
}

}  // namespace
}  // namespace souffle::lower
