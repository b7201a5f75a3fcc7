// Lowering of Resize and Upsample. Shapes are static, so for every resized axis the source
// coordinate of each output position, its taps and their weights are known at lowering time:
// they become small constant tables (per axis: [out, taps] indices and weights), and the op is one
// compute whose body is a weighted sum of reads through those tables (a plain gather for nearest).
#include <algorithm>
#include <cmath>

#include "core/lower/lower.h"

namespace souffle::lower {

void register_resize(Registry& r);
void register_affine_grid(Registry& r);  // core/lower/affine_grid.cpp

namespace {

using te::Expr;
using te::Tensor;

Expr ci(int64_t v) {
  return te::int_imm(v);
}

enum class Mode { Nearest, Linear, Cubic };

struct ResizeParams {
  Mode mode = Mode::Nearest;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  std::vector<double> roi;  ///< 2 * rank values (starts then ends), tf_crop_and_resize only
};

/// The taps of one axis: for output position x, taps t < ntaps read input index idx[x*ntaps+t]
/// with weight w[x*ntaps+t]; outside[x] marks positions that take the extrapolation value.
struct AxisTable {
  int64_t in = 0, out = 0, ntaps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> outside;
  bool any_outside = false;

  /// Output position x reads input position x with weight one: nothing to do on this axis.
  bool identity() const {
    if (in != out || any_outside) return false;
    for (int64_t x = 0; x < out; ++x)
      for (int64_t t = 0; t < ntaps; ++t) {
        size_t p = static_cast<size_t>(x * ntaps + t);
        bool hit = idx[p] == x && w[p] == 1.0;
        if (!hit && w[p] != 0.0) return false;
      }
    return true;
  }
};

std::vector<double> cubic_coeffs(double r, double a) {
  double s = 1 - r;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

/// Source coordinate of output position x on an axis (ONNX coordinate_transformation_mode).
double source_coord(const LowerCtx& ctx, const ResizeParams& p, double x, double scale, int64_t in,
                    int64_t out, double roi_start, double roi_end) {
  double out_f = scale * static_cast<double>(in);  // the reference uses the unrounded length
  const std::string& c = p.coord;
  if (c == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (c == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / out_f;
    double center = static_cast<double>(in) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  if (c == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  if (c == "align_corners") return out_f == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out_f - 1);
  if (c == "asymmetric") return x / scale;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (c == "tf_crop_and_resize") {
    double span = (roi_end - roi_start) * static_cast<double>(in - 1);
    double v = out_f == 1 ? span / 2 : x * span / (out_f - 1);
    return v + roi_start * static_cast<double>(in - 1);
  }
  throw ctx.error("unknown coordinate_transformation_mode '" + c + "'");
}

AxisTable make_table(const LowerCtx& ctx, const ResizeParams& p, int64_t in, int64_t out,
                     double scale, double roi_start, double roi_end) {
  AxisTable t;
  t.in = in;
  t.out = out;
  t.ntaps = p.mode == Mode::Nearest ? 1 : p.mode == Mode::Linear ? 2 : 4;
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v, 0, in - 1); };
  for (int64_t x = 0; x < out; ++x) {
    double xo = source_coord(ctx, p, static_cast<double>(x), scale, in, out, roi_start, roi_end);
    bool outside = p.coord == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1));
    t.outside.push_back(outside ? 1 : 0);
    t.any_outside = t.any_outside || outside;
    double fl = std::floor(xo);
    bool integral = xo == fl;
    // Prefer the left neighbour: an integral coordinate counts as ratio 1 from the one below.
    int64_t base = static_cast<int64_t>(fl);
    double ratio = xo - fl;
    if (integral) {
      base -= 1;
      ratio = 1;
    }
    if (p.mode == Mode::Nearest) {
      int64_t pick;
      if (integral) {
        pick = base + 1;
      } else if (p.nearest == "round_prefer_floor") {
        pick = ratio <= 0.5 ? base : base + 1;
      } else if (p.nearest == "round_prefer_ceil") {
        pick = ratio < 0.5 ? base : base + 1;
      } else if (p.nearest == "floor") {
        pick = base;
      } else if (p.nearest == "ceil") {
        pick = base + 1;
      } else {
        throw ctx.error("unknown nearest_mode '" + p.nearest + "'");
      }
      t.idx.push_back(clamp(pick));
      t.w.push_back(1.0);
      continue;
    }
    std::vector<double> c = p.mode == Mode::Linear ? std::vector<double>{1 - ratio, ratio}
                                                   : cubic_coeffs(ratio, p.cubic_a);
    int64_t first = p.mode == Mode::Linear ? base : base - 1;
    if (p.exclude_outside) {
      double sum = 0;
      for (size_t k = 0; k < c.size(); ++k) {
        int64_t j = first + static_cast<int64_t>(k);
        if (j < 0 || j >= in) c[k] = 0;
        sum += c[k];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    for (size_t k = 0; k < c.size(); ++k) {
      t.idx.push_back(clamp(first + static_cast<int64_t>(k)));
      t.w.push_back(c[k]);
    }
  }
  return t;
}

/// Builds the resize compute op over x given per-axis output sizes and scales.
Tensor emit_resize(LowerCtx& ctx, const Tensor& x, const ResizeParams& p, const Shape& out,
                   const std::vector<double>& scales) {
  size_t rank = x->shape.size();
  std::vector<AxisTable> tables;
  std::vector<bool> active(rank, false);
  bool any_outside = false;
  for (size_t d = 0; d < rank; ++d) {
    int64_t in = x->shape[d];
    if (in == 0 && out[d] > 0) throw ctx.error("cannot resize an empty dimension");
    double rs = p.roi.empty() ? 0 : p.roi[d], re = p.roi.empty() ? 1 : p.roi[d + rank];
    tables.push_back(out[d] == 0 ? AxisTable{} : make_table(ctx, p, in, out[d], scales[d], rs, re));
    active[d] = out[d] > 0 && !tables.back().identity();
    any_outside = any_outside || tables.back().any_outside;
  }
  if (out == x->shape && std::none_of(active.begin(), active.end(), [](bool a) { return a; }))
    return x;
  DType dt = x->dtype;
  DType acc = dt == DType::Float64 ? DType::Float64 : DType::Float32;
  std::vector<Tensor> idx_t(rank), w_t(rank), out_t(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (!active[d]) continue;
    const AxisTable& t = tables[d];
    std::string ax = std::to_string(d);
    idx_t[d] = ctx.constant_tensor("index" + ax,
                                   TensorData::from_i64(DType::Int64, {t.out, t.ntaps}, t.idx));
    if (p.mode != Mode::Nearest)
      w_t[d] = ctx.constant_tensor("weight" + ax, TensorData::from_f64(acc, {t.out, t.ntaps}, t.w));
    if (t.any_outside) {
      std::vector<int64_t> o(t.outside.begin(), t.outside.end());
      out_t[d] = ctx.constant_tensor("outside" + ax, TensorData::from_i64(DType::Bool, {t.out}, o));
    }
  }
  return ctx.compute("", out, dt, [&](const std::vector<Expr>& i) {
    Expr body;
    if (p.mode == Mode::Nearest) {
      std::vector<Expr> idx(rank);
      for (size_t d = 0; d < rank; ++d)
        idx[d] = active[d] ? te::read(idx_t[d], {i[d], ci(0)}) : i[d];
      body = te::read(x, idx);
    } else {
      // Sum over every combination of taps on the active axes; taps whose weight is zero for
      // every output position are left out.
      std::vector<std::vector<int64_t>> taps(rank);
      for (size_t d = 0; d < rank; ++d) {
        if (!active[d]) {
          taps[d] = {-1};
          continue;
        }
        const AxisTable& t = tables[d];
        for (int64_t k = 0; k < t.ntaps; ++k) {
          bool used = false;
          for (int64_t xo = 0; xo < t.out && !used; ++xo)
            used = t.w[static_cast<size_t>(xo * t.ntaps + k)] != 0.0;
          if (used) taps[d].push_back(k);
        }
        if (taps[d].empty()) taps[d].push_back(0);
      }
      std::vector<size_t> pick(rank, 0);
      while (true) {
        std::vector<Expr> idx(rank);
        Expr w;
        for (size_t d = 0; d < rank; ++d) {
          int64_t k = taps[d][pick[d]];
          if (k < 0) {
            idx[d] = i[d];
            continue;
          }
          idx[d] = te::read(idx_t[d], {i[d], ci(k)});
          Expr wd = te::read(w_t[d], {i[d], ci(k)});
          w = w.defined() ? w * wd : wd;
        }
        Expr term = te::cast(acc, te::read(x, idx));
        if (w.defined()) term = w * term;
        body = body.defined() ? body + term : term;
        size_t d = rank;
        while (d-- > 0) {
          if (++pick[d] < taps[d].size()) break;
          pick[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
      }
      body = te::cast(dt, body);
    }
    if (any_outside) {
      Expr out_any;
      for (size_t d = 0; d < rank; ++d) {
        if (!out_t[d]) continue;
        Expr o = te::read(out_t[d], {i[d]});
        out_any = out_any.defined() ? te::logical_or(out_any, o) : o;
      }
      body = te::select(out_any, te::imm(dt, p.extrapolation), body);
    }
    return body;
  });
}

/// Output sizes and scales from `scales` or `sizes` (one value per listed axis).
void sizes_and_scales(const LowerCtx& ctx, const Tensor& x, const std::vector<int64_t>& axes,
                      const std::vector<double>* scales_in, const std::vector<int64_t>* sizes_in,
                      const std::string& policy, Shape& out, std::vector<double>& scales) {
  size_t rank = x->shape.size();
  out = x->shape;
  scales.assign(rank, 1.0);
  if (scales_in) {
    if (scales_in->size() != axes.size()) throw ctx.error("scales has the wrong length");
    for (size_t k = 0; k < axes.size(); ++k) {
      size_t d = static_cast<size_t>(axes[k]);
      double s = (*scales_in)[k];
      if (!(s > 0)) throw ctx.error("scales must be positive");
      scales[d] = s;
      out[d] = static_cast<int64_t>(s * static_cast<double>(x->shape[d]));
    }
    return;
  }
  if (!sizes_in) throw ctx.error("one of scales and sizes is required");
  if (sizes_in->size() != axes.size()) throw ctx.error("sizes has the wrong length");
  for (int64_t s : *sizes_in)
    if (s < 0) throw ctx.error("sizes must not be negative");
  for (size_t k = 0; k < axes.size(); ++k)
    if (x->shape[static_cast<size_t>(axes[k])] == 0)
      throw ctx.error("cannot resize an empty dimension to a size");
  if (policy == "stretch") {
    for (size_t k = 0; k < axes.size(); ++k) {
      size_t d = static_cast<size_t>(axes[k]);
      out[d] = (*sizes_in)[k];
      scales[d] = static_cast<double>(out[d]) / static_cast<double>(x->shape[d]);
    }
    return;
  }
  if (policy != "not_larger" && policy != "not_smaller")
    throw ctx.error("unknown keep_aspect_ratio_policy '" + policy + "'");
  double s = policy == "not_larger" ? 1e300 : 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    double r = static_cast<double>((*sizes_in)[k]) /
               static_cast<double>(x->shape[static_cast<size_t>(axes[k])]);
    s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t d = static_cast<size_t>(axes[k]);
    scales[d] = s;
    out[d] = static_cast<int64_t>(std::round(s * static_cast<double>(x->shape[d])));
  }
}

Mode parse_mode(const LowerCtx& ctx, const std::string& m) {
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear" || m == "bilinear") return Mode::Linear;
  if (m == "cubic") return Mode::Cubic;
  throw ctx.error("unknown mode '" + m + "'");
}

std::vector<double> constant_floats(const LowerCtx& ctx, size_t input, const char* what) {
  ConstTensorPtr c = ctx.constant(input);
  if (!c)
    throw ctx.error(std::string(what) + " must be a constant (only static shapes are supported)");
  return c->to_f64();
}

std::vector<Tensor> lower_resize(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  const graph::Node& n = ctx.node();
  int64_t rank = static_cast<int64_t>(x->shape.size());
  ResizeParams p;
  p.mode = parse_mode(ctx, n.attr_string("mode", "nearest"));
  if (n.attr_int("antialias", 0) != 0) throw ctx.error("antialias is not supported");
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.opset() < 11) {
    // Resize-10 is Upsample under a new name: asymmetric coordinates, nearest rounds down.
    p.coord = "asymmetric";
    p.nearest = "floor";
    scales = constant_floats(ctx, 1, "Resize's scales");
  } else {
    p.coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
    p.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
    p.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
    p.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    p.extrapolation = n.attr_float("extrapolation_value", 0.0);
    if (ctx.has_input(2)) {
      std::vector<double> s = constant_floats(ctx, 2, "Resize's scales");
      if (!s.empty()) scales = s;
    }
    if (ctx.has_input(3)) {
      std::vector<int64_t> s = ctx.constant_ints(3, "Resize's sizes");
      if (!s.empty()) sizes = s;
    }
    if (scales && sizes) throw ctx.error("only one of scales and sizes may be given");
  }
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  } else {
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& a : axes) {
      a = normalize_axis(ctx, a, rank);
      if (seen[static_cast<size_t>(a)]) throw ctx.error("axes has a repeated axis");
      seen[static_cast<size_t>(a)] = true;
    }
  }
  if (p.coord == "tf_crop_and_resize") {
    std::vector<double> roi = constant_floats(ctx, 1, "Resize's roi");
    if (roi.size() != 2 * axes.size()) throw ctx.error("roi must have two values per axis");
    p.roi.assign(2 * static_cast<size_t>(rank), 0.0);
    for (int64_t d = 0; d < rank; ++d) p.roi[static_cast<size_t>(d + rank)] = 1.0;
    for (size_t k = 0; k < axes.size(); ++k) {
      p.roi[static_cast<size_t>(axes[k])] = roi[k];
      p.roi[static_cast<size_t>(axes[k] + rank)] = roi[k + axes.size()];
    }
  }
  Shape out;
  std::vector<double> sc;
  sizes_and_scales(ctx, x, axes, scales ? &*scales : nullptr, sizes ? &*sizes : nullptr,
                   n.attr_string("keep_aspect_ratio_policy", "stretch"), out, sc);
  return {emit_resize(ctx, x, p, out, sc)};
}

std::vector<Tensor> lower_upsample(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  const graph::Node& n = ctx.node();
  ResizeParams p;
  p.mode = parse_mode(ctx, n.attr_string("mode", "nearest"));
  p.coord = "asymmetric";
  p.nearest = "floor";
  std::vector<double> scales =
      ctx.has_input(1) ? constant_floats(ctx, 1, "Upsample's scales") : n.attr_floats("scales");
  std::vector<int64_t> axes;
  for (size_t d = 0; d < x->shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  Shape out;
  std::vector<double> sc;
  sizes_and_scales(ctx, x, axes, &scales, nullptr, "stretch", out, sc);
  return {emit_resize(ctx, x, p, out, sc)};
}

}  // namespace

void register_resize(Registry& r) {
  r.add("Resize", lower_resize);
  r.add("Upsample", lower_upsample);
  register_affine_grid(r);  // the other op that maps output positions to source coordinates
}

}  // namespace souffle::lower
