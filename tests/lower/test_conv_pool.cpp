// Tests of the conv/pool lowering: output shapes per auto_pad/ceil_mode, TE structure, and values
// against naive loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using testing::expect_near;
using testing::int_attr;
using testing::ints_attr;
using testing::iota;
using testing::make_node;
using testing::run_all;
using testing::string_attr;

/// Lowers `node` on placeholders and runs it; returns every output.
std::vector<ConstTensorPtr> run(const graph::Node& node, const std::vector<ConstTensorPtr>& values,
                                NodeLowering* out_lowering = nullptr, int64_t opset = 17) {
  return run_all(node, values, opset, {}, out_lowering);
}

Shape out_shape(const graph::Node& node, const std::vector<Shape>& shapes) {
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < shapes.size(); ++i)
    ins.push_back(te::make_input("in" + std::to_string(i), shapes[i], DType::Float32));
  return lower_node(node, 17, ins).outputs[0]->shape;
}

/// Naive 2-D conv over NCHW with groups, strides, dilations and begin pads.
std::vector<double> naive_conv(const TensorData& x, const TensorData& w, const TensorData* b,
                               int64_t group, int64_t s, int64_t d, int64_t pad, int64_t oh,
                               int64_t ow) {
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t m = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  std::vector<double> y;
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = b ? b->get_f64(mi) : 0;
          int64_t g = mi / (m / group);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t iy = oy * s + ky * d - pad, ix = ox * s + kx * d - pad;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                int64_t cx = g * cg + ci;
                acc += x.get_f64(((ni * c + cx) * h + iy) * wd + ix) *
                       w.get_f64(((mi * cg + ci) * kh + ky) * kw + kx);
              }
          y.push_back(acc);
        }
  return y;
}

TEST(LowerConv, GroupedStridedDilatedPaddedWithBias) {
  auto x = iota({2, 4, 7, 6});
  auto w = iota({6, 2, 3, 3}, 0.5);
  auto b = iota({6}, 1.0);
  NodeLowering nl;
  auto y = run(make_node("Conv", 3,
                         {{"group", int_attr(2)},
                          {"strides", ints_attr({2, 2})},
                          {"dilations", ints_attr({2, 1})},
                          {"pads", ints_attr({1, 1, 1, 1})}}),
               {x, w, b}, &nl);
  ASSERT_EQ(nl.ops.size(), 2u);  // the conv reduce + the bias
  EXPECT_EQ(nl.ops[0]->reduce, te::ReduceKind::Sum);
  EXPECT_EQ(nl.ops[0]->reduce_axes.size(), 3u);  // C/group, kH, kW
  // H: (7 + 2 - 5) / 2 + 1 = 3; W: (6 + 2 - 3) / 2 + 1 = 3.
  // The naive conv uses one dilation, so compare against dilation 2 on H only by hand below.
  ASSERT_EQ(y[0]->shape(), (Shape{2, 6, 3, 3}));
  // Check with a plain naive loop that supports per-dim dilation.
  std::vector<double> want;
  for (int64_t ni = 0; ni < 2; ++ni)
    for (int64_t mi = 0; mi < 6; ++mi)
      for (int64_t oy = 0; oy < 3; ++oy)
        for (int64_t ox = 0; ox < 3; ++ox) {
          double acc = b->get_f64(mi);
          int64_t g = mi / 3;
          for (int64_t ci = 0; ci < 2; ++ci)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t iy = oy * 2 + ky * 2 - 1, ix = ox * 2 + kx - 1;
                if (iy < 0 || iy >= 7 || ix < 0 || ix >= 6) continue;
                acc += x->get_f64(((ni * 4 + g * 2 + ci) * 7 + iy) * 6 + ix) *
                       w->get_f64(((mi * 2 + ci) * 3 + ky) * 3 + kx);
              }
          want.push_back(acc);
        }
  expect_near(*y[0], {2, 6, 3, 3}, want);
}

TEST(LowerConv, NoPaddingHasNoGuard) {
  auto x = iota({1, 2, 5, 5});
  auto w = iota({3, 2, 3, 3}, 0.5);
  NodeLowering nl;
  auto y = run(make_node("Conv", 2), {x, w}, &nl);
  ASSERT_EQ(nl.ops.size(), 1u);
  EXPECT_EQ(nl.ops[0]->body.kind(), te::ExprKind::Binary);  // a plain product, no select
  expect_near(*y[0], {1, 3, 3, 3}, naive_conv(*x, *w, nullptr, 1, 1, 1, 0, 3, 3));
}

TEST(LowerConv, AutoPadShapes) {
  Shape xs{1, 1, 7, 5}, ws{1, 1, 3, 3};
  EXPECT_EQ(out_shape(make_node("Conv", 2,
                                {{"auto_pad", string_attr("SAME_UPPER")},
                                 {"strides", ints_attr({2, 2})}}),
                      {xs, ws}),
            (Shape{1, 1, 4, 3}));
  EXPECT_EQ(
      out_shape(make_node("Conv", 2,
                          {{"auto_pad", string_attr("VALID")}, {"strides", ints_attr({2, 2})}}),
                {xs, ws}),
      (Shape{1, 1, 3, 2}));
  // 1-D and 3-D.
  EXPECT_EQ(out_shape(make_node("Conv", 2), {{2, 3, 10}, {4, 3, 3}}), (Shape{2, 4, 8}));
  EXPECT_EQ(out_shape(make_node("Conv", 2), {{1, 1, 4, 5, 6}, {2, 1, 2, 2, 2}}),
            (Shape{1, 2, 3, 4, 5}));
}

TEST(LowerConv, SameLowerPadsAtTheBeginning) {
  auto x = iota({1, 1, 4, 4});
  auto w = iota({1, 1, 2, 2}, 0.5);
  auto y = run(make_node("Conv", 2, {{"auto_pad", string_attr("SAME_LOWER")}}), {x, w});
  // Total pad 1 per dim, all at the beginning: equivalent to pads = 1 and dropping the last row.
  std::vector<double> full = naive_conv(*x, *w, nullptr, 1, 1, 1, 1, 5, 5);
  std::vector<double> want;
  for (int oy = 0; oy < 4; ++oy)
    for (int ox = 0; ox < 4; ++ox) want.push_back(full[oy * 5 + ox]);
  expect_near(*y[0], {1, 1, 4, 4}, want);
}

TEST(LowerConv, BadShapesAreUserErrors) {
  auto lower = [](const graph::Node& n, const std::vector<Shape>& s) { return out_shape(n, s); };
  EXPECT_THROW(lower(make_node("Conv", 2), {{1, 3, 5, 5}, {2, 2, 3, 3}}), UserError);
  EXPECT_THROW(lower(make_node("Conv", 2), {{1, 1, 2, 2}, {2, 1, 3, 3}}), UserError);
  EXPECT_THROW(lower(make_node("Conv", 2, {{"auto_pad", string_attr("BOGUS")}}),
                     {{1, 1, 5, 5}, {1, 1, 3, 3}}),
               UserError);
  EXPECT_THROW(lower(make_node("Conv", 2), {{5, 5}, {1, 1}}), UserError);
}

TEST(LowerConvTranspose, MatchesScatterDefinition) {
  auto x = iota({1, 2, 3, 3});
  auto w = iota({2, 3, 3, 2}, 0.5);                       // C=2, M=3, kernel 3x2
  int64_t s = 2, oh = 2 * 2 + 3 + 1, ow = 2 * 2 + 2 + 1;  // output_padding 1
  auto y = run(make_node("ConvTranspose", 2,
                         {{"strides", ints_attr({s, s})}, {"output_padding", ints_attr({1, 1})}}),
               {x, w});
  std::vector<double> want(3 * oh * ow, 0.0);
  for (int c = 0; c < 2; ++c)
    for (int m = 0; m < 3; ++m)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 2; ++b)
              want[(m * oh + i * s + a) * ow + j * s + b] +=
                  x->get_f64((c * 3 + i) * 3 + j) * w->get_f64(((c * 3 + m) * 3 + a) * 2 + b);
  expect_near(*y[0], {1, 3, oh, ow}, want);
}

TEST(LowerConvTranspose, OutputShapeAndAutoPad) {
  Shape xs{1, 1, 3, 3}, ws{1, 2, 3, 3};
  EXPECT_EQ(
      out_shape(make_node("ConvTranspose", 2,
                          {{"strides", ints_attr({3, 2})}, {"output_shape", ints_attr({10, 8})}}),
                {xs, ws}),
      (Shape{1, 2, 10, 8}));
  EXPECT_EQ(out_shape(make_node("ConvTranspose", 2,
                                {{"strides", ints_attr({2, 2})},
                                 {"auto_pad", string_attr("SAME_UPPER")}}),
                      {xs, ws}),
            (Shape{1, 2, 6, 6}));
  EXPECT_EQ(out_shape(make_node("ConvTranspose", 2, {{"pads", ints_attr({1, 2, 1, 2})}}), {xs, ws}),
            (Shape{1, 2, 3, 1}));
}

TEST(LowerMaxPool, PadsCeilAndIndices) {
  auto x = iota({1, 1, 4, 5});
  NodeLowering nl;
  auto out = run(make_node("MaxPool", 1,
                           {{"kernel_shape", ints_attr({3, 3})},
                            {"strides", ints_attr({2, 2})},
                            {"ceil_mode", int_attr(1)}},
                           2),
                 {x}, &nl);
  // H: ceil((4 - 3) / 2) + 1 = 2; W: ceil((5 - 3) / 2) + 1 = 2.
  std::vector<double> want;
  std::vector<double> want_idx;
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox) {
      double best = -std::numeric_limits<double>::infinity();
      int64_t arg = -1;
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
          int iy = oy * 2 + ky, ix = ox * 2 + kx;
          if (iy >= 4 || ix >= 5) continue;
          double v = x->get_f64(iy * 5 + ix);
          if (v > best) best = v, arg = iy * 5 + ix;
        }
      want.push_back(best);
      want_idx.push_back(static_cast<double>(arg));
    }
  expect_near(*out[0], {1, 1, 2, 2}, want);
  EXPECT_EQ(out[1]->dtype(), DType::Int64);
  expect_near(*out[1], {1, 1, 2, 2}, want_idx);
}

TEST(LowerMaxPool, SameUpperAndDilationShapes) {
  EXPECT_EQ(out_shape(make_node("MaxPool", 1,
                                {{"kernel_shape", ints_attr({3, 3})},
                                 {"strides", ints_attr({2, 2})},
                                 {"auto_pad", string_attr("SAME_UPPER")}}),
                      {{1, 3, 7, 8}}),
            (Shape{1, 3, 4, 4}));
  EXPECT_EQ(
      out_shape(make_node("MaxPool", 1,
                          {{"kernel_shape", ints_attr({2, 2})}, {"dilations", ints_attr({2, 2})}}),
                {{1, 1, 4, 4}}),
      (Shape{1, 1, 2, 2}));
  EXPECT_THROW(out_shape(make_node("MaxPool", 1), {{1, 1, 4, 4}}), UserError);
}

TEST(LowerAveragePool, CountIncludePadOrNot) {
  auto x = iota({1, 1, 3, 3});
  for (int include : {0, 1}) {
    auto y = run(make_node("AveragePool", 1,
                           {{"kernel_shape", ints_attr({2, 2})},
                            {"pads", ints_attr({1, 1, 1, 1})},
                            {"count_include_pad", int_attr(include)}}),
                 {x});
    std::vector<double> want;
    for (int oy = 0; oy < 4; ++oy)
      for (int ox = 0; ox < 4; ++ox) {
        double s = 0;
        int n = 0;
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 2; ++kx) {
            int iy = oy + ky - 1, ix = ox + kx - 1;
            if (iy < 0 || iy >= 3 || ix < 0 || ix >= 3) continue;
            s += x->get_f64(iy * 3 + ix);
            ++n;
          }
        want.push_back(s / (include ? 4 : n));
      }
    expect_near(*y[0], {1, 1, 4, 4}, want);
  }
}

TEST(LowerAveragePool, CeilModeClipsTheLastWindow) {
  auto x = iota({1, 1, 4, 4});
  auto y = run(make_node("AveragePool", 1,
                         {{"kernel_shape", ints_attr({3, 3})},
                          {"strides", ints_attr({2, 2})},
                          {"ceil_mode", int_attr(1)}}),
               {x});
  std::vector<double> want;
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox) {
      double s = 0;
      int n = 0;
      for (int iy = oy * 2; iy < std::min(oy * 2 + 3, 4); ++iy)
        for (int ix = ox * 2; ix < std::min(ox * 2 + 3, 4); ++ix) s += x->get_f64(iy * 4 + ix), ++n;
      want.push_back(s / n);
    }
  expect_near(*y[0], {1, 1, 2, 2}, want);
}

TEST(LowerGlobalPool, AverageMaxLp) {
  auto x = iota({2, 3, 2, 2});
  auto avg = run(make_node("GlobalAveragePool", 1), {x});
  auto mx = run(make_node("GlobalMaxPool", 1), {x});
  auto lp = run(make_node("GlobalLpPool", 1), {x});
  std::vector<double> wa, wm, wl;
  for (int nc = 0; nc < 6; ++nc) {
    double s = 0, m = -1e30, q = 0;
    for (int k = 0; k < 4; ++k) {
      double v = x->get_f64(nc * 4 + k);
      s += v, m = std::max(m, v), q += v * v;
    }
    wa.push_back(s / 4), wm.push_back(m), wl.push_back(std::sqrt(q));
  }
  expect_near(*avg[0], {2, 3, 1, 1}, wa);
  expect_near(*mx[0], {2, 3, 1, 1}, wm);
  expect_near(*lp[0], {2, 3, 1, 1}, wl);
}

TEST(LowerLpPool, OrderOne) {
  auto x = iota({1, 1, 4});
  auto y = run(make_node("LpPool", 1, {{"kernel_shape", ints_attr({2})}, {"p", int_attr(1)}}), {x});
  std::vector<double> want;
  for (int o = 0; o < 3; ++o) want.push_back(std::abs(x->get_f64(o)) + std::abs(x->get_f64(o + 1)));
  expect_near(*y[0], {1, 1, 3}, want);
}

TEST(LowerConvInteger, ZeroPointPadding) {
  auto x = TensorData::from_i64(DType::UInt8, {1, 1, 2, 2}, {2, 3, 4, 5});
  auto w = TensorData::from_i64(DType::UInt8, {1, 1, 2, 2}, {1, 1, 1, 1});
  auto xzp = TensorData::from_i64(DType::UInt8, {}, {1});
  auto y = run(make_node("ConvInteger", 3, {{"pads", ints_attr({1, 1, 1, 1})}}), {x, w, xzp});
  EXPECT_EQ(y[0]->dtype(), DType::Int32);
  // x - zp = [[1, 2], [3, 4]], padded with 0, summed over 2x2 windows.
  expect_near(*y[0], {1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4});
}

TEST(LowerMaxUnpool, InvertsMaxPoolIndices) {
  auto x = iota({1, 1, 4, 4});
  auto pooled =
      run(make_node("MaxPool", 1,
                    {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}}, 2),
          {x});
  auto y = run(make_node("MaxUnpool", 2,
                         {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}}),
               {pooled[0], pooled[1]});
  std::vector<double> want(16, 0.0);
  for (int k = 0; k < 4; ++k) want[pooled[1]->get_i64(k)] = pooled[0]->get_f64(k);
  expect_near(*y[0], {1, 1, 4, 4}, want);
}

}  // namespace
}  // namespace souffle::lower
