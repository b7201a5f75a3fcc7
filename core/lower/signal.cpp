// Lowering of signal-processing ops: DFT, STFT, the window functions and MelWeightMatrix.
//
// A DFT of static length is a contraction with a constant matrix of twiddle factors, so DFT and
// STFT become one reduction TE each (out[.., k, c] = sum_{n, r} x[.., n, r] W[c, r, k, n]), which
// the planner schedules like a GEMM. The windows and the mel filter bank depend only on
// constant inputs; they are computed here in double and become constants.
#include <cmath>
#include <numbers>
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

/// Reads a scalar (or one-element) constant integer input; the shape of the output depends on it.
int64_t constant_scalar_int(LowerCtx& ctx, size_t i, const char* what) {
  std::vector<int64_t> v = ctx.constant_ints(i, what);
  if (v.size() != 1) throw ctx.error(std::string(what) + " must hold one value");
  return v[0];
}

double constant_scalar_f64(LowerCtx& ctx, size_t i, const char* what) {
  ConstTensorPtr c = ctx.constant(i);
  if (!c)
    throw ctx.error(std::string(what) + " must be a constant (only static shapes are supported)");
  if (c->numel() != 1) throw ctx.error(std::string(what) + " must hold one value");
  return c->get_f64(0);
}

DType output_datatype(LowerCtx& ctx, DType def) {
  if (!ctx.node().has_attr("output_datatype")) return def;
  auto t = dtype_from_onnx(static_cast<int32_t>(ctx.node().attr_int("output_datatype", 1)));
  if (!t) throw ctx.error("output_datatype is not a type we take");
  return *t;
}

// ---- windows ----

enum class Window { Hann, Hamming, Blackman };

std::vector<te::Tensor> lower_window(LowerCtx& ctx, Window kind) {
  int64_t size = constant_scalar_int(ctx, 0, "size");
  if (size < 0) throw ctx.error("size must not be negative, got " + std::to_string(size));
  bool periodic = ctx.node().attr_int("periodic", 1) != 0;
  DType out = output_datatype(ctx, DType::Float32);
  double n1 = static_cast<double>(periodic ? size : size - 1);
  const double pi = std::numbers::pi;
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double x = static_cast<double>(n);
    switch (kind) {
      case Window::Hann: {
        double s = std::sin(pi * x / n1);
        w[static_cast<size_t>(n)] = s * s;
        break;
      }
      case Window::Hamming: {
        const double alpha = 25.0 / 46.0;
        w[static_cast<size_t>(n)] = alpha - (1 - alpha) * std::cos(2 * pi * x / n1);
        break;
      }
      case Window::Blackman:
        w[static_cast<size_t>(n)] =
            0.42 - 0.5 * std::cos(2 * pi * x / n1) + 0.08 * std::cos(4 * pi * x / n1);
        break;
    }
  }
  return {ctx.constant_tensor("", TensorData::from_f64(out, {size}, w))};
}

// ---- MelWeightMatrix ----

std::vector<te::Tensor> lower_mel_weight_matrix(LowerCtx& ctx) {
  int64_t bins = constant_scalar_int(ctx, 0, "num_mel_bins");
  int64_t dft_length = constant_scalar_int(ctx, 1, "dft_length");
  int64_t sample_rate = constant_scalar_int(ctx, 2, "sample_rate");
  double lower_hz = constant_scalar_f64(ctx, 3, "lower_edge_hertz");
  double upper_hz = constant_scalar_f64(ctx, 4, "upper_edge_hertz");
  if (bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    throw ctx.error("num_mel_bins, dft_length and sample_rate must be positive");
  DType out = output_datatype(ctx, DType::Float32);
  int64_t spectrogram_bins = dft_length / 2 + 1;
  // Mel scale: m = 2595 log10(1 + f / 700); num_mel_bins + 2 points evenly spaced in mel from
  // the lower to the upper edge, mapped back to Hz and then to DFT bins.
  auto to_mel = [](double hz) { return 2595 * std::log1p(hz / 700) / std::log(10.0); };
  double lo = to_mel(lower_hz), hi = to_mel(upper_hz);
  double step = (hi - lo) / static_cast<double>(bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    double mel = static_cast<double>(i) * step + lo;
    double hz = 700 * std::expm1(mel / 2595 * std::log(10.0));
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  std::vector<double> w(static_cast<size_t>(spectrogram_bins * bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spectrogram_bins)
      throw ctx.error("the mel edges fall outside the spectrogram's " +
                      std::to_string(spectrogram_bins) +
                      " bins (upper_edge_hertz above the "
                      "Nyquist frequency?)");
    return w[static_cast<size_t>(j * bins + i)];
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)],
            right = edge[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right; ++j)
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  return {ctx.constant_tensor("", TensorData::from_f64(out, {spectrogram_bins, bins}, w))};
}

// ---- DFT and STFT ----

/// Twiddle factors W[c, r, k, n] for out_c(k) = sum_{n, r} in_r(n) W[c, r, k, n], where c and r
/// are the real (0) and imaginary (1) parts: the forward DFT multiplies by e^{-2 pi i kn/N}, the
/// inverse by e^{+2 pi i kn/N} / N. `components` is 1 for a real input, 2 for a complex one.
te::Tensor twiddles(LowerCtx& ctx, DType dt, int64_t components, int64_t bins, int64_t taps,
                    int64_t length, bool inverse) {
  std::vector<double> w(static_cast<size_t>(2 * components * bins * taps));
  double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  size_t p = 0;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t r = 0; r < components; ++r)
      for (int64_t k = 0; k < bins; ++k)
        for (int64_t n = 0; n < taps; ++n) {
          // (k n mod N) keeps the angle small and exact for long transforms.
          double angle = 2 * std::numbers::pi * static_cast<double>((k * n) % length) /
                         static_cast<double>(length);
          double cs = std::cos(angle) * scale, sn = sign * std::sin(angle) * scale;
          // (a + ib)(cos + i sn) = (a cos - b sn) + i (a sn + b cos)
          double v = c == 0 ? (r == 0 ? cs : -sn) : (r == 0 ? sn : cs);
          w[p++] = v;
        }
  return ctx.constant_tensor("twiddles", TensorData::from_f64(dt, {2, components, bins, taps}, w));
}

std::vector<te::Tensor> lower_dft(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  const graph::Node& node = ctx.node();
  if (!is_float(x->dtype))
    throw ctx.error(std::string("expects a floating-point input, got ") + dtype_name(x->dtype));
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (rank < 3 || (x->shape.back() != 1 && x->shape.back() != 2))
    throw ctx.error("input must have shape [batch, ..., n, 1 or 2], got " + shape_str(x->shape));
  int64_t axis = node.attr_int("axis", ctx.opset() >= 20 ? -2 : 1);
  if (ctx.opset() >= 20 && ctx.has_input(2)) axis = constant_scalar_int(ctx, 2, "axis");
  axis = normalize_axis(ctx, axis, rank);
  if (axis == 0 || axis == rank - 1)
    throw ctx.error("axis must be a signal axis (not the batch or the last), got " +
                    std::to_string(axis));
  bool inverse = node.attr_int("inverse", 0) != 0;
  bool onesided = node.attr_int("onesided", 0) != 0;
  if (inverse && onesided)
    throw ctx.error(
        "an inverse one-sided DFT (a real output from half a spectrum) is not "
        "supported");
  int64_t n_in = x->shape[static_cast<size_t>(axis)];
  int64_t length = ctx.has_input(1) ? constant_scalar_int(ctx, 1, "dft_length") : n_in;
  if (length <= 0) throw ctx.error("dft_length must be positive");
  int64_t bins = onesided ? length / 2 + 1 : length;
  int64_t taps = std::min(n_in, length);  // shorter inputs are zero-padded, longer ones cut
  int64_t comps = x->shape.back();
  DType calc = compute_type(x->dtype);
  te::Tensor w = twiddles(ctx, calc, comps, bins, taps, length, inverse);
  Shape out = x->shape;
  out[static_cast<size_t>(axis)] = bins;
  out.back() = 2;
  Shape extents = comps == 2 ? Shape{taps, 2} : Shape{taps};
  size_t ax = static_cast<size_t>(axis);
  te::Tensor acc =
      ctx.reduce("dft", out, calc, te::ReduceKind::Sum, extents, [&](const Idx& i, const Idx& k) {
        Idx xi = i;
        xi[ax] = k[0];
        Expr r = comps == 2 ? k[1] : te::int_imm(0);
        xi.back() = r;
        return te::cast(calc, te::read(x, xi)) * te::read(w, {i.back(), r, i[ax], k[0]});
      });
  if (calc == x->dtype) return {acc};
  return {ctx.compute("", out, x->dtype,
                      [&](const Idx& i) { return te::cast(x->dtype, te::read(acc, i)); })};
}

std::vector<te::Tensor> lower_stft(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), window = ctx.input(2);
  if (!is_float(x->dtype))
    throw ctx.error(std::string("expects a floating-point signal, got ") + dtype_name(x->dtype));
  if (x->shape.size() != 3 || (x->shape[2] != 1 && x->shape[2] != 2))
    throw ctx.error("signal must have shape [batch, length, 1 or 2], got " + shape_str(x->shape));
  int64_t step = constant_scalar_int(ctx, 1, "frame_step");
  int64_t frame = -1;
  if (ctx.has_input(3)) frame = constant_scalar_int(ctx, 3, "frame_length");
  if (window) {
    if (window->shape.size() != 1) throw ctx.error("window must be 1-D");
    if (frame >= 0 && frame != window->shape[0])
      throw ctx.error("frame_length " + std::to_string(frame) + " differs from the window's " +
                      std::to_string(window->shape[0]));
    frame = window->shape[0];
  }
  if (frame <= 0) throw ctx.error("needs a window or a positive frame_length");
  if (step <= 0) throw ctx.error("frame_step must be positive");
  int64_t length = x->shape[1];
  if (frame > length)
    throw ctx.error("frame_length " + std::to_string(frame) + " exceeds the signal length " +
                    std::to_string(length));
  int64_t comps = x->shape[2];
  bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  if (onesided && comps == 2) throw ctx.error("onesided needs a real signal");
  int64_t frames = (length - frame) / step + 1;
  int64_t bins = onesided ? frame / 2 + 1 : frame;
  DType calc = compute_type(x->dtype);
  te::Tensor w = twiddles(ctx, calc, comps, bins, frame, frame, false);
  Shape out{x->shape[0], frames, bins, 2};
  Shape extents = comps == 2 ? Shape{frame, 2} : Shape{frame};
  te::Tensor acc =
      ctx.reduce("stft", out, calc, te::ReduceKind::Sum, extents, [&](const Idx& i, const Idx& k) {
        Expr r = comps == 2 ? k[1] : te::int_imm(0);
        Expr v = te::cast(calc, te::read(x, {i[0], i[1] * te::int_imm(step) + k[0], r}));
        if (window) v = v * te::cast(calc, te::read(window, {k[0]}));
        return v * te::read(w, {i[3], r, i[2], k[0]});
      });
  if (calc == x->dtype) return {acc};
  return {ctx.compute("", out, x->dtype,
                      [&](const Idx& i) { return te::cast(x->dtype, te::read(acc, i)); })};
}

}  // namespace

void register_signal(Registry& r) {
  r.add("HannWindow", [](LowerCtx& ctx) { return lower_window(ctx, Window::Hann); });
  r.add("HammingWindow", [](LowerCtx& ctx) { return lower_window(ctx, Window::Hamming); });
  r.add("BlackmanWindow", [](LowerCtx& ctx) { return lower_window(ctx, Window::Blackman); });
  r.add("MelWeightMatrix", lower_mel_weight_matrix);
  r.add("DFT", lower_dft);
  r.add("STFT", lower_stft);
}

}  // namespace souffle::lower
