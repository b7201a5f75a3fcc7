// Tests of the recurrent lowering against a naive step-by-step reference implementation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

std::vector<double> pseudo(size_t n, double scale, int seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = (std::fmod(static_cast<double>(i) * 7.3 + seed * 3.1, 5.0) - 2.5) * scale;
  return v;
}

double sigm(double v) {
  return 1 / (1 + std::exp(-v));
}

/// Naive reference for layout 0 and one direction. Returns Y [T, B, H] and final H / C.
struct Ref {
  std::vector<double> y, h, c;
};
Ref reference(const std::string& cell, int64_t T, int64_t Bn, int64_t I, int64_t H,
              const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& r, const std::vector<double>& b,
              const std::vector<int64_t>& lens, bool reverse, bool lbr,
              const std::vector<double>& dir_offsets /* {w, r, b} element offsets */) {
  int64_t G = cell == "RNN" ? 1 : cell == "GRU" ? 3 : 4;
  size_t wo = static_cast<size_t>(dir_offsets[0]), ro = static_cast<size_t>(dir_offsets[1]),
         bo = static_cast<size_t>(dir_offsets[2]);
  auto W = [&](int64_t row, int64_t k) { return w[wo + row * I + k]; };
  auto R = [&](int64_t row, int64_t k) { return r[ro + row * H + k]; };
  auto Wb = [&](int64_t row) { return b.empty() ? 0.0 : b[bo + row]; };
  auto Rb = [&](int64_t row) { return b.empty() ? 0.0 : b[bo + G * H + row]; };
  Ref out;
  out.y.assign(T * Bn * H, 0.0);
  out.h.assign(Bn * H, 0.0);
  out.c.assign(Bn * H, 0.0);
  for (int64_t bi = 0; bi < Bn; ++bi) {
    std::vector<double> h(H, 0.0), c(H, 0.0);
    int64_t L = lens.empty() ? T : lens[bi];
    for (int64_t s = 0; s < L; ++s) {
      int64_t t = reverse ? L - 1 - s : s;
      auto xw = [&](int64_t row) {
        double a = 0;
        for (int64_t k = 0; k < I; ++k) a += x[(t * Bn + bi) * I + k] * W(row, k);
        return a;
      };
      auto hr = [&](int64_t row, const std::vector<double>& hv) {
        double a = 0;
        for (int64_t k = 0; k < H; ++k) a += hv[k] * R(row, k);
        return a;
      };
      std::vector<double> nh(H), nc(H);
      for (int64_t j = 0; j < H; ++j) {
        if (cell == "RNN") {
          nh[j] = std::tanh(xw(j) + hr(j, h) + Wb(j) + Rb(j));
        } else if (cell == "LSTM") {
          double ig = sigm(xw(j) + hr(j, h) + Wb(j) + Rb(j));
          double og = sigm(xw(H + j) + hr(H + j, h) + Wb(H + j) + Rb(H + j));
          double fg = sigm(xw(2 * H + j) + hr(2 * H + j, h) + Wb(2 * H + j) + Rb(2 * H + j));
          double cc = std::tanh(xw(3 * H + j) + hr(3 * H + j, h) + Wb(3 * H + j) + Rb(3 * H + j));
          nc[j] = fg * c[j] + ig * cc;
          nh[j] = og * std::tanh(nc[j]);
        }
      }
      if (cell == "GRU") {
        std::vector<double> rg(H), rh(H);
        for (int64_t j = 0; j < H; ++j) {
          rg[j] = sigm(xw(H + j) + hr(H + j, h) + Wb(H + j) + Rb(H + j));
          rh[j] = rg[j] * h[j];
        }
        for (int64_t j = 0; j < H; ++j) {
          double z = sigm(xw(j) + hr(j, h) + Wb(j) + Rb(j));
          double cand =
              lbr ? xw(2 * H + j) + rg[j] * (hr(2 * H + j, h) + Rb(2 * H + j)) + Wb(2 * H + j)
                  : xw(2 * H + j) + hr(2 * H + j, rh) + Rb(2 * H + j) + Wb(2 * H + j);
          nh[j] = (1 - z) * std::tanh(cand) + z * h[j];
        }
      }
      h = nh;
      c = nc;
      for (int64_t j = 0; j < H; ++j) out.y[(t * Bn + bi) * H + j] = h[j];
    }
    for (int64_t j = 0; j < H; ++j) {
      out.h[bi * H + j] = h[j];
      out.c[bi * H + j] = c[j];
    }
  }
  return out;
}

struct Case {
  std::string cell;
  int64_t T = 3, B = 2, I = 2, H = 3;
  bool bias = true;
  std::vector<int64_t> lens = {};
  std::string direction = "forward";
  bool lbr = false;
};

void check_case(const Case& cs) {
  int64_t G = cs.cell == "RNN" ? 1 : cs.cell == "GRU" ? 3 : 4;
  int64_t D = cs.direction == "bidirectional" ? 2 : 1;
  auto x = pseudo(cs.T * cs.B * cs.I, 0.4, 1);
  auto w = pseudo(D * G * cs.H * cs.I, 0.3, 2);
  auto r = pseudo(D * G * cs.H * cs.H, 0.3, 3);
  auto b = cs.bias ? pseudo(D * 2 * G * cs.H, 0.2, 4) : std::vector<double>{};
  std::map<std::string, graph::Attribute> attrs = {{"hidden_size", int_attr(cs.H)},
                                                   {"direction", string_attr(cs.direction)}};
  if (cs.lbr) attrs["linear_before_reset"] = int_attr(1);
  size_t nin = cs.lens.empty() ? (cs.bias ? 4 : 3) : 5;
  graph::Node n = make_node(cs.cell, nin, attrs, cs.cell == "LSTM" ? 3 : 2);
  std::vector<ConstTensorPtr> in = {values({cs.T, cs.B, cs.I}, x), values({D, G * cs.H, cs.I}, w),
                                    values({D, G * cs.H, cs.H}, r)};
  if (nin >= 4) {
    if (cs.bias) {
      in.push_back(values({D, 2 * G * cs.H}, b));
    } else {
      in.push_back(nullptr);
      n.inputs[3] = "";
    }
  }
  std::vector<bool> constant(in.size(), false);
  if (!cs.lens.empty()) {
    std::vector<double> lv(cs.lens.begin(), cs.lens.end());
    in.push_back(values({cs.B}, lv, DType::Int32));
    constant.push_back(false);  // lengths as a model input work too
  }
  auto outs = run_all(n, in, 14, constant);
  ASSERT_GE(outs.size(), 2u);
  std::vector<double> want_y(cs.T * D * cs.B * cs.H), want_h(D * cs.B * cs.H),
      want_c(D * cs.B * cs.H);
  for (int64_t d = 0; d < D; ++d) {
    bool rev = cs.direction == "reverse" || d == 1;
    Ref ref = reference(
        cs.cell, cs.T, cs.B, cs.I, cs.H, x, w, r, b, cs.lens, rev, cs.lbr,
        {static_cast<double>(d * G * cs.H * cs.I), static_cast<double>(d * G * cs.H * cs.H),
         static_cast<double>(d * 2 * G * cs.H)});
    for (int64_t t = 0; t < cs.T; ++t)
      for (int64_t bi = 0; bi < cs.B; ++bi)
        for (int64_t j = 0; j < cs.H; ++j)
          want_y[((t * D + d) * cs.B + bi) * cs.H + j] = ref.y[(t * cs.B + bi) * cs.H + j];
    for (int64_t k = 0; k < cs.B * cs.H; ++k) {
      want_h[d * cs.B * cs.H + k] = ref.h[k];
      want_c[d * cs.B * cs.H + k] = ref.c[k];
    }
  }
  expect_values(outs[0], {cs.T, D, cs.B, cs.H}, DType::Float32, want_y, 1e-5);
  expect_values(outs[1], {D, cs.B, cs.H}, DType::Float32, want_h, 1e-5);
  if (cs.cell == "LSTM") expect_values(outs[2], {D, cs.B, cs.H}, DType::Float32, want_c, 1e-5);
}

TEST(LowerRecurrent, RnnForward) {
  check_case({.cell = "RNN"});
}
TEST(LowerRecurrent, RnnSequenceLensReverse) {
  check_case({.cell = "RNN", .lens = {3, 1}, .direction = "reverse"});
}
TEST(LowerRecurrent, GruBothResetModes) {
  check_case({.cell = "GRU"});
  check_case({.cell = "GRU", .lbr = true});
}
TEST(LowerRecurrent, GruBidirectionalNoBias) {
  check_case({.cell = "GRU", .bias = false, .direction = "bidirectional"});
}
TEST(LowerRecurrent, LstmForwardAndBidirectionalWithLens) {
  check_case({.cell = "LSTM"});
  check_case({.cell = "LSTM", .lens = {2, 3}, .direction = "bidirectional"});
}

TEST(LowerRecurrent, StepStructureAndErrors) {
  auto x = values({3, 2, 2}, pseudo(12, 0.4, 1));
  auto w = values({1, 12, 2}, pseudo(24, 0.3, 2));
  auto r = values({1, 12, 3}, pseudo(36, 0.3, 3));
  graph::Node n = make_node("LSTM", 3, {{"hidden_size", int_attr(3)}}, 3);
  n.outputs = {"", "h", ""};
  Lowered l = lower(n, {x, w, r}, 14);
  // Per step: one gate reduction over input + hidden, then the cell and hidden TEs; plus Y_h.
  ASSERT_EQ(l.nl.ops.size(), 3u * 3 + 1);
  EXPECT_EQ(l.nl.ops[0]->reduce, te::ReduceKind::Sum);
  ASSERT_EQ(l.nl.ops[0]->reduce_axes.size(), 1u);
  EXPECT_EQ(l.nl.ops[0]->reduce_axes[0].extent, 2 + 3);
  EXPECT_EQ(l.nl.ops[0]->output->shape, (Shape{2, 12}));
  EXPECT_FALSE(l.nl.outputs[0]);
  EXPECT_FALSE(l.nl.outputs[2]);
  // Wrong W shape, unknown direction and activation are user errors.
  EXPECT_THROW(lower(n, {x, values({1, 8, 2}, pseudo(16, 1, 1)), r}, 14), UserError);
  graph::Node bad = n;
  bad.attrs["direction"] = string_attr("sideways");
  EXPECT_THROW(lower(bad, {x, w, r}, 14), UserError);
  bad = n;
  graph::Attribute acts;
  acts.kind = graph::Attribute::Kind::Strings;
  acts.strings = {"Sigmoid", "Wobble", "Tanh"};
  bad.attrs["activations"] = acts;
  EXPECT_THROW(lower(bad, {x, w, r}, 14), UserError);
}

}  // namespace
}  // namespace souffle::lower
