// Tests of the signal lowerings: DFT, STFT, windows and MelWeightMatrix.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

TEST(LowerSignal, DftOfARealSignal) {
  // x = [1, 2, 3, 4] (batch 1, real): X = [10, -2+2i, -2, -2-2i].
  auto x = values({1, 4, 1}, {1, 2, 3, 4});
  NodeLowering nl;
  auto y = run(make_node("DFT", 1), {x}, 17, {}, &nl);
  expect_values(y, {1, 4, 2}, DType::Float32, {10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
  // One reduction over the signal, the twiddles a constant: a contraction the planner can tile.
  ASSERT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::Sum);
  // onesided keeps n/2 + 1 bins; dft_length 6 zero-pads.
  auto half = run(make_node("DFT", 1, {{"onesided", int_attr(1)}}), {x}, 17);
  expect_values(half, {1, 3, 2}, DType::Float32, {10, 0, -2, 2, -2, 0}, 1e-5);
  auto padded = run(make_node("DFT", 2), {x, values({}, {6}, DType::Int64)}, 17, {false, true});
  ASSERT_EQ(padded->shape(), (Shape{1, 6, 2}));
  EXPECT_NEAR(padded->get_f64(0), 10, 1e-5);
}

TEST(LowerSignal, InverseDftUndoesTheForward) {
  auto x = values({1, 4, 1}, {1, 2, 3, 4});
  auto spectrum = run(make_node("DFT", 1), {x}, 17);
  auto back = run(make_node("DFT", 1, {{"inverse", int_attr(1)}}), {spectrum}, 17);
  expect_values(back, {1, 4, 2}, DType::Float32, {1, 0, 2, 0, 3, 0, 4, 0}, 1e-5);
  EXPECT_THROW(lower(make_node("DFT", 1, {{"inverse", int_attr(1)}, {"onesided", int_attr(1)}}),
                     {spectrum}, 17),
               UserError);
}

TEST(LowerSignal, StftFramesWithAWindow) {
  // Signal of 6, frames of 4 every 2: 2 frames, 3 one-sided bins; bin 0 = windowed frame sum.
  auto x = values({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  auto window = values({4}, {1, 1, 0, 0});
  auto y = run(make_node("STFT", 3), {x, values({}, {2}, DType::Int64), window}, 17,
               {false, true, false});
  ASSERT_EQ(y->shape(), (Shape{1, 2, 3, 2}));
  EXPECT_NEAR(y->get_f64(0), 3, 1e-5);  // frame 0: 1 + 2
  EXPECT_NEAR(y->get_f64(6), 7, 1e-5);  // frame 1: 3 + 4
}

TEST(LowerSignal, WindowsAreConstants) {
  NodeLowering nl;
  auto hann = run(make_node("HannWindow", 1), {values({}, {4}, DType::Int32)}, 17, {true}, &nl);
  EXPECT_TRUE(nl.ops.empty());
  expect_values(hann, {4}, DType::Float32, {0, 0.5, 1, 0.5}, 1e-6);
  auto sym = run(make_node("HannWindow", 1, {{"periodic", int_attr(0)}}),
                 {values({}, {3}, DType::Int32)}, 17, {true});
  expect_values(sym, {3}, DType::Float32, {0, 1, 0}, 1e-6);
  auto black = run(make_node("BlackmanWindow", 1), {values({}, {2}, DType::Int32)}, 17, {true});
  expect_values(black, {2}, DType::Float32, {0, 1}, 1e-6);
  EXPECT_THROW(lower(make_node("HannWindow", 1), {values({}, {4}, DType::Int32)}, 17), UserError);
}

TEST(LowerSignal, MelWeightMatrixShapeAndRows) {
  // 8 mel bins over a 16-point DFT at 8 kHz: [9, 8], each triangle peaking at 1.
  auto m = run(make_node("MelWeightMatrix", 5),
               {values({}, {8}, DType::Int32), values({}, {16}, DType::Int32),
                values({}, {8192}, DType::Int32), values({}, {0}), values({}, {4096})},
               17, {true, true, true, true, true});
  ASSERT_EQ(m->shape(), (Shape{9, 8}));
  for (int64_t i = 0; i < 8; ++i) {
    double peak = 0;
    for (int64_t j = 0; j < 9; ++j) peak = std::max(peak, m->get_f64(j * 8 + i));
    EXPECT_DOUBLE_EQ(peak, 1.0) << "mel bin " << i;
  }
}

}  // namespace
}  // namespace souffle::lower
