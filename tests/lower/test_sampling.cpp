// Tests of sampling at computed coordinates: GridSample and RoiAlign.
#include <gtest/gtest.h>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

// A 1x1x2x3 image: [[0, 1, 2], [3, 4, 5]].
ConstTensorPtr image() {
  return values({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5});
}

TEST(LowerSampling, GridSampleIdentityGridReproducesTheImage) {
  // With align_corners, normalized -1 and 1 are the centres of the corner pixels.
  std::vector<double> g;
  for (double y : {-1.0, 1.0})
    for (double x : {-1.0, 0.0, 1.0}) {
      g.push_back(x);
      g.push_back(y);
    }
  auto grid = values({1, 2, 3, 2}, g);
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    auto y = run(
        make_node("GridSample", 2, {{"align_corners", int_attr(1)}, {"mode", string_attr(mode)}}),
        {image(), grid}, 16);
    expect_values(y, {1, 1, 2, 3}, DType::Float32, {0, 1, 2, 3, 4, 5}, 1e-5);
  }
}

TEST(LowerSampling, GridSamplePaddingModes) {
  // One point left of the image's middle row (x = -2 in normalized units, y = 0).
  auto grid = values({1, 1, 1, 2}, {-2, 0});
  auto zeros =
      run(make_node("GridSample", 2, {{"align_corners", int_attr(1)}}), {image(), grid}, 16);
  expect_values(zeros, {1, 1, 1, 1}, DType::Float32, {0}, 1e-5);
  // border: clamp to column 0, halfway between rows: (0 + 3) / 2.
  auto border =
      run(make_node("GridSample", 2,
                    {{"align_corners", int_attr(1)}, {"padding_mode", string_attr("border")}}),
          {image(), grid}, 16);
  expect_values(border, {1, 1, 1, 1}, DType::Float32, {1.5}, 1e-5);
  // reflection: x = -2 maps to column -1, reflected at 0 to column 1: (1 + 4) / 2 (the ONNX
  // reference evaluator gives the same).
  auto refl =
      run(make_node("GridSample", 2,
                    {{"align_corners", int_attr(1)}, {"padding_mode", string_attr("reflection")}}),
          {image(), grid}, 16);
  expect_values(refl, {1, 1, 1, 1}, DType::Float32, {2.5}, 1e-5);
  EXPECT_THROW(
      lower(make_node("GridSample", 2, {{"mode", string_attr("area")}}), {image(), grid}, 16),
      UserError);
}

TEST(LowerSampling, RoiAlignAveragesItsSamples) {
  // A 4x4 ramp x + 4y; the roi covering it all, one bin, 2x2 samples (output_half_pixel: no
  // half-pixel shift).
  std::vector<double> v;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) v.push_back(x + 4 * y);
  auto x = values({1, 1, 4, 4}, v);
  auto rois = values({1, 4}, {0, 0, 4, 4});
  auto batch = values({1}, {0}, DType::Int64);
  auto y = run(make_node("RoiAlign", 3,
                         {{"sampling_ratio", int_attr(2)},
                          {"coordinate_transformation_mode", string_attr("output_half_pixel")}}),
               {x, rois, batch}, 16);
  // Samples at (1, 1), (1, 3), (3, 1), (3, 3): values 5, 7, 13, 15 -> 10.
  expect_values(y, {1, 1, 1, 1}, DType::Float32, {10}, 1e-5);
  // Adaptive sampling (ratio 0) needs constant rois; with them, the same result.
  EXPECT_THROW(lower(make_node("RoiAlign", 3), {x, rois, batch}, 16), UserError);
  auto adaptive =
      run(make_node("RoiAlign", 3,
                    {{"coordinate_transformation_mode", string_attr("output_half_pixel")}}),
          {x, values({1, 4}, {0, 0, 2, 2}), batch}, 16, {false, true, false});
  // ceil(2 / 1) = 2 samples a side at 0.5 and 1.5: values 2.5, 3.5, 6.5, 7.5 -> 5 (clamped
  // taps stay inside).
  expect_values(adaptive, {1, 1, 1, 1}, DType::Float32, {5}, 1e-5);
}

}  // namespace
}  // namespace souffle::lower
