// Lowering of sampling at computed coordinates: GridSample and RoiAlign.
//
// Both read their input at positions computed from another tensor (a grid of normalized
// coordinates, or regions of interest), so each becomes one TE whose body computes the
// coordinates, the interpolation taps and their weights, and reads the taps with the padding
// rule; RoiAlign's samples per bin are the reduction axes of an average or a max.
#include <cmath>
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

constexpr DType kF = DType::Float32;  // coordinate arithmetic, as a GPU does it

Expr fimm(double v) {
  return te::imm(kF, v);
}
Expr to_int(const Expr& e) {
  return te::cast(DType::Int64, e);  // truncates toward zero
}
Expr floor_f(const Expr& e) {
  return te::call(te::CallFn::Floor, {e});
}
Expr clamp_i(const Expr& i, int64_t lo, int64_t hi) {
  return te::min(te::max(i, te::int_imm(lo)), te::int_imm(hi));
}

// ---- GridSample ----

enum class Pad { Zeros, Border, Reflection };
enum class Interp { Nearest, Linear, Cubic };

/// Folds x back into [lo, hi] by reflecting at the borders as often as needed.
Expr reflect(const Expr& x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return fimm(lo);
  auto fold = [&](const Expr& dx, bool below) {
    Expr n = floor_f(dx / fimm(range));
    Expr r = dx - n * fimm(range);
    Expr even = te::eq(te::floormod(n, fimm(2)), fimm(0));
    Expr near = below ? fimm(lo) + r : fimm(hi) - r;
    Expr far = below ? fimm(hi) - r : fimm(lo) + r;
    return te::select(even, near, far);
  };
  return te::select(te::lt(x, fimm(lo)), fold(fimm(lo) - x, true),
                    te::select(te::gt(x, fimm(hi)), fold(x - fimm(hi), false), x));
}

/// Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for offset t in [0, 1).
std::vector<Expr> cubic_weights(const Expr& t) {
  const double a = -0.75;
  Expr t1 = t + fimm(1), s = fimm(1) - t, s1 = fimm(2) - t;
  auto outer = [&](const Expr& x) {
    return ((fimm(a) * x - fimm(5 * a)) * x + fimm(8 * a)) * x - fimm(4 * a);
  };
  auto inner = [&](const Expr& x) { return ((fimm(a + 2) * x - fimm(a + 3)) * x) * x + fimm(1); };
  return {outer(t1), inner(t), inner(s), outer(s1)};
}

std::vector<te::Tensor> lower_grid_sample(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), grid = ctx.required(1);
  const graph::Node& node = ctx.node();
  if (!is_float(x->dtype) || !is_float(grid->dtype))
    throw ctx.error("input and grid must be floating-point tensors");
  size_t rank = x->shape.size();
  if (rank < 3) throw ctx.error("input must have shape [N, C, spatial...]");
  size_t dims = rank - 2;
  if (grid->shape.size() != rank || grid->shape[0] != x->shape[0] ||
      grid->shape.back() != static_cast<int64_t>(dims))
    throw ctx.error("grid must have shape [N, out spatial..., " + std::to_string(dims) + "], got " +
                    shape_str(grid->shape));
  std::string mode = node.attr_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  Interp interp;
  if (mode == "nearest")
    interp = Interp::Nearest;
  else if (mode == "bilinear" || mode == "linear")
    interp = Interp::Linear;
  else if (mode == "bicubic" || mode == "cubic")
    interp = Interp::Cubic;
  else
    throw ctx.error("mode '" + mode + "' is not one of nearest, linear, cubic");
  std::string pad_name = node.attr_string("padding_mode", "zeros");
  Pad pad;
  if (pad_name == "zeros")
    pad = Pad::Zeros;
  else if (pad_name == "border")
    pad = Pad::Border;
  else if (pad_name == "reflection")
    pad = Pad::Reflection;
  else
    throw ctx.error("padding_mode '" + pad_name + "' is not one of zeros, border, reflection");
  bool align = node.attr_int("align_corners", 0) != 0;

  Shape out{x->shape[0], x->shape[1]};
  for (size_t d = 0; d < dims; ++d) out.push_back(grid->shape[1 + d]);
  DType od = x->dtype;
  // Source coordinates first, one TE: [N, out spatial..., dims] (the grid lists them last dim
  // first: x, y, ...). Computing them once keeps the sampling TE's body small (a reflection
  // folds its argument several times over).
  std::vector<double> lo(dims), hi(dims);
  for (size_t d = 0; d < dims; ++d) {
    double len = static_cast<double>(x->shape[2 + d]);
    lo[d] = align ? 0.0 : -0.5;
    hi[d] = align ? len - 1 : len - 0.5;
  }
  Shape coord_shape(grid->shape.begin(), grid->shape.end() - 1);
  coord_shape.push_back(static_cast<int64_t>(dims));
  te::Tensor coords = ctx.compute("coords", coord_shape, kF, [&](const Idx& i) {
    Expr sum;
    for (size_t d = 0; d < dims; ++d) {
      double len = static_cast<double>(x->shape[2 + d]);
      Idx gi(i.begin(), i.end() - 1);
      gi.push_back(te::int_imm(static_cast<int64_t>(dims - 1 - d)));
      Expr g = te::cast(kF, te::read(grid, gi));
      Expr c = align ? (g + fimm(1)) / fimm(2) * fimm(len - 1)
                     : ((g + fimm(1)) * fimm(len) - fimm(1)) / fimm(2);
      // Nearest rounds (half to even) before the border rule applies, as the reference does.
      if (interp == Interp::Nearest) c = te::call(te::CallFn::Round, {c});
      if (pad == Pad::Border)
        c = te::min(te::max(c, fimm(0)), fimm(len - 1));
      else if (pad == Pad::Reflection)
        c = reflect(c, lo[d], hi[d]);
      sum = sum.defined()
                ? te::select(te::eq(i.back(), te::int_imm(static_cast<int64_t>(d))), c, sum)
                : c;
    }
    return sum;
  });
  return {ctx.compute("", out, od, [&](const Idx& i) {
    std::vector<Expr> coord(dims);
    for (size_t d = 0; d < dims; ++d) {
      Idx ci{i[0]};
      for (size_t e = 0; e < dims; ++e) ci.push_back(i[2 + e]);
      ci.push_back(te::int_imm(static_cast<int64_t>(d)));
      coord[d] = te::read(coords, ci);
    }
    // The input at integer tap positions, with the padding rule for positions outside it.
    auto pixel = [&](const std::vector<Expr>& pos) {
      Idx xi{i[0], i[1]};
      Expr inside;
      for (size_t d = 0; d < dims; ++d) {
        int64_t len = x->shape[2 + d];
        Expr p = pos[d];
        if (pad == Pad::Zeros) {
          Expr ok = te::logical_and(te::ge(p, te::int_imm(0)), te::lt(p, te::int_imm(len)));
          inside = inside.defined() ? te::logical_and(inside, ok) : ok;
        } else if (pad == Pad::Reflection) {
          p = to_int(reflect(te::cast(kF, p), lo[d], hi[d]));
        }
        xi.push_back(clamp_i(p, 0, len - 1));
      }
      Expr v = te::cast(kF, te::read(x, xi));
      return inside.defined() ? te::select(inside, v, fimm(0)) : v;
    };
    if (interp == Interp::Nearest) {
      std::vector<Expr> pos(dims);
      for (size_t d = 0; d < dims; ++d) pos[d] = to_int(coord[d]);
      return te::cast(od, pixel(pos));
    }
    // Taps and weights per dim, then the sum over every combination of taps.
    std::vector<Expr> base(dims);
    std::vector<std::vector<Expr>> weights(dims);
    std::vector<int64_t> first(dims);
    for (size_t d = 0; d < dims; ++d) {
      Expr f = floor_f(coord[d]);
      Expr t = coord[d] - f;
      base[d] = to_int(f);
      if (interp == Interp::Linear) {
        weights[d] = {fimm(1) - t, t};
        first[d] = 0;
      } else {
        weights[d] = cubic_weights(t);
        first[d] = -1;
      }
    }
    size_t taps = weights[0].size();
    size_t combos = 1;
    for (size_t d = 0; d < dims; ++d) combos *= taps;
    Expr sum;
    for (size_t c = 0; c < combos; ++c) {
      std::vector<Expr> pos(dims);
      Expr w;
      size_t rest = c;
      for (size_t d = dims; d-- > 0;) {
        size_t j = rest % taps;
        rest /= taps;
        pos[d] = base[d] + te::int_imm(first[d] + static_cast<int64_t>(j));
        w = w.defined() ? w * weights[d][j] : weights[d][j];
      }
      Expr term = w * pixel(pos);
      sum = sum.defined() ? sum + term : term;
    }
    return te::cast(od, sum);
  })};
}

// ---- RoiAlign ----

std::vector<te::Tensor> lower_roi_align(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), rois = ctx.required(1), batch = ctx.required(2);
  const graph::Node& node = ctx.node();
  if (x->shape.size() != 4) throw ctx.error("input must have shape [N, C, H, W]");
  if (!is_float(x->dtype) || !is_float(rois->dtype))
    throw ctx.error("input and rois must be floating-point tensors");
  if (rois->shape.size() != 2 || rois->shape[1] != 4)
    throw ctx.error("rois must have shape [num_rois, 4], got " + shape_str(rois->shape));
  int64_t num = rois->shape[0];
  if (batch->shape != Shape{num} || !is_int(batch->dtype))
    throw ctx.error("batch_indices must be an integer tensor of shape [" + std::to_string(num) +
                    "]");
  int64_t oh = node.attr_int("output_height", 1), ow = node.attr_int("output_width", 1);
  int64_t ratio = node.attr_int("sampling_ratio", 0);
  double scale = node.attr_float("spatial_scale", 1.0);
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") throw ctx.error("mode must be avg or max");
  bool half_pixel =
      node.attr_string("coordinate_transformation_mode",
                       ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  if (oh <= 0 || ow <= 0) throw ctx.error("output_height and output_width must be positive");
  int64_t height = x->shape[2], width = x->shape[3];
  double offset = half_pixel ? 0.5 : 0.0;

  // Samples per bin: sampling_ratio, or (0) ceil(roi size / bins) per roi, which the rois'
  // values decide: then they must be constants, and the reduction spans the largest count.
  te::Tensor grid_counts;
  int64_t gh = ratio, gw = ratio;
  if (ratio <= 0) {
    ConstTensorPtr r = ctx.constant(1);
    if (!r)
      throw ctx.error(
          "rois must be a constant when sampling_ratio is 0 (the samples per bin "
          "depend on each roi's size)");
    std::vector<int64_t> counts;
    gh = gw = 1;
    for (int64_t k = 0; k < num; ++k) {
      double rw = (r->get_f64(k * 4 + 2) - r->get_f64(k * 4)) * scale;
      double rh = (r->get_f64(k * 4 + 3) - r->get_f64(k * 4 + 1)) * scale;
      if (!half_pixel) {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      int64_t ch = static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
      int64_t cw = static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
      counts.push_back(ch);
      counts.push_back(cw);
      gh = std::max(gh, ch);
      gw = std::max(gw, cw);
    }
    grid_counts =
        ctx.constant_tensor("samples", TensorData::from_i64(DType::Int64, {num, 2}, counts));
  }
  Shape out{num, x->shape[1], oh, ow};
  DType od = x->dtype;
  auto roi = [&](const Expr& k, int64_t c) {
    return te::cast(kF, te::read(rois, {k, te::int_imm(c)})) * fimm(scale) - fimm(offset);
  };
  // The roi's start and bin size along one axis (c = 0 for x, 1 for y).
  auto start_and_bin = [&](const Expr& k, int64_t c, int64_t bins) {
    Expr start = roi(k, c), size = roi(k, c + 2) - start;
    if (!half_pixel) size = te::max(size, fimm(1));
    return std::make_pair(start, size / fimm(static_cast<double>(bins)));
  };
  auto count_of = [&](const Expr& k, int64_t axis, int64_t fixed) -> Expr {
    if (!grid_counts) return te::int_imm(fixed);
    return te::read(grid_counts, {k, te::int_imm(axis)});
  };
  bool is_max = mode == "max";
  te::ReduceKind kind = is_max ? te::ReduceKind::Max : te::ReduceKind::Sum;
  te::Tensor acc = ctx.reduce("pool", out, kF, kind, {gh, gw}, [&](const Idx& i, const Idx& s) {
    Expr k = i[0];
    auto [y0, bin_h] = start_and_bin(k, 1, oh);
    auto [x0, bin_w] = start_and_bin(k, 0, ow);
    Expr ch = count_of(k, 0, gh), cw = count_of(k, 1, gw);
    Expr yy = y0 + te::cast(kF, i[2]) * bin_h +
              (te::cast(kF, s[0]) + fimm(0.5)) * bin_h / te::cast(kF, ch);
    Expr xx = x0 + te::cast(kF, i[3]) * bin_w +
              (te::cast(kF, s[1]) + fimm(0.5)) * bin_w / te::cast(kF, cw);
    Expr outside = te::logical_or(
        te::logical_or(te::lt(yy, fimm(-1)), te::gt(yy, fimm(static_cast<double>(height)))),
        te::logical_or(te::lt(xx, fimm(-1)), te::gt(xx, fimm(static_cast<double>(width)))));
    // Bilinear taps, clamped at the last row/column as the reference does.
    Expr y = te::max(yy, fimm(0)), xv = te::max(xx, fimm(0));
    Expr ylo = to_int(y), xlo = to_int(xv);
    Expr y_last = te::ge(ylo, te::int_imm(height - 1)),
         x_last = te::ge(xlo, te::int_imm(width - 1));
    ylo = te::select(y_last, te::int_imm(height - 1), ylo);
    xlo = te::select(x_last, te::int_imm(width - 1), xlo);
    Expr yhi = te::select(y_last, ylo, ylo + te::int_imm(1));
    Expr xhi = te::select(x_last, xlo, xlo + te::int_imm(1));
    y = te::select(y_last, te::cast(kF, ylo), y);
    xv = te::select(x_last, te::cast(kF, xlo), xv);
    Expr ly = y - te::cast(kF, ylo), lx = xv - te::cast(kF, xlo);
    Expr hy = fimm(1) - ly, hx = fimm(1) - lx;
    Expr b = te::cast(DType::Int64, te::read(batch, {k}));
    auto at = [&](const Expr& r, const Expr& c) {
      return te::cast(kF, te::read(x, {b, i[1], r, c}));
    };
    Expr t1 = hy * hx * at(ylo, xlo), t2 = hy * lx * at(ylo, xhi);
    Expr t3 = ly * hx * at(yhi, xlo), t4 = ly * lx * at(yhi, xhi);
    Expr v = is_max ? te::max(te::max(t1, t2), te::max(t3, t4)) : t1 + t2 + t3 + t4;
    v = te::select(outside, fimm(0), v);
    // Samples past this roi's own count (adaptive sampling) do not take part.
    if (grid_counts) {
      Expr used = te::logical_and(te::lt(s[0], ch), te::lt(s[1], cw));
      v = te::select(used, v, is_max ? fimm(-INFINITY) : fimm(0));
    }
    return v;
  });
  return {ctx.compute("", out, od, [&](const Idx& i) {
    Expr v = te::read(acc, i);
    if (!is_max) {
      Expr k = i[0];
      Expr n = te::cast(kF, count_of(k, 0, gh) * count_of(k, 1, gw));
      v = v / te::max(n, fimm(1));
    }
    return te::cast(od, v);
  })};
}

}  // namespace

void register_sampling(Registry& r) {
  r.add("GridSample", lower_grid_sample);
  r.add("RoiAlign", lower_roi_align);
}

}  // namespace souffle::lower
