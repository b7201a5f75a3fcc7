// Lowering of convolutions and pooling: Conv, ConvInteger, ConvTranspose, MaxPool, AveragePool,
// LpPool and their global forms.
//
// A convolution is one reduce TE over (C/group, k...) whose body multiplies a window read of X by
// a read of W; padding is a guarded read (a select on the window position's bounds), so no padded
// copy of X is ever materialized. Bias is a separate element-wise TE.
#include <algorithm>
#include <functional>
#include <limits>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;

/// The window geometry of one op along each spatial dim.
struct Window {
  size_t rank = 0;  ///< number of spatial dims
  Shape in, kernel, strides, dilations, pads_begin, pads_end, out;
  int64_t eff_kernel(size_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }
  /// Whether some output position's window reaches below 0 / at or past in[d].
  bool may_underflow(size_t d) const { return pads_begin[d] > 0; }
  bool may_overflow(size_t d) const {
    return (out[d] - 1) * strides[d] + (kernel[d] - 1) * dilations[d] - pads_begin[d] >= in[d];
  }
};

std::vector<int64_t> attr_or(const LowerCtx& ctx, const char* key, size_t n, int64_t def) {
  std::vector<int64_t> v = ctx.node().attr_ints(key, {});
  if (v.empty()) return std::vector<int64_t>(n, def);
  if (v.size() != n)
    throw ctx.error(std::string(key) + " has " + std::to_string(v.size()) + " values, expected " +
                    std::to_string(n));
  return v;
}

/// Reads strides/dilations/pads/auto_pad and computes the output size of a forward window op
/// (Conv or a pool). `ceil_mode` rounds the output size up (pools only), dropping a last window
/// that would start inside the end padding.
Window forward_window(const LowerCtx& ctx, const Shape& in, const Shape& kernel, bool ceil_mode) {
  Window w;
  w.rank = in.size();
  w.in = in;
  w.kernel = kernel;
  w.strides = attr_or(ctx, "strides", w.rank, 1);
  w.dilations = attr_or(ctx, "dilations", w.rank, 1);
  for (size_t d = 0; d < w.rank; ++d) {
    if (w.strides[d] < 1) throw ctx.error("strides must be positive");
    if (w.dilations[d] < 1) throw ctx.error("dilations must be positive");
    if (w.kernel[d] < 1) throw ctx.error("kernel sizes must be positive");
  }
  std::string auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  w.pads_begin.assign(w.rank, 0);
  w.pads_end.assign(w.rank, 0);
  w.out.assign(w.rank, 0);
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    std::vector<int64_t> pads = attr_or(ctx, "pads", 2 * w.rank, 0);
    for (size_t d = 0; d < w.rank; ++d) {
      w.pads_begin[d] = pads[d];
      w.pads_end[d] = pads[w.rank + d];
      if (pads[d] < 0 || pads[w.rank + d] < 0) throw ctx.error("pads must be non-negative");
      int64_t span = in[d] + w.pads_begin[d] + w.pads_end[d] - w.eff_kernel(d);
      if (span < 0)
        throw ctx.error("kernel of extent " + std::to_string(w.eff_kernel(d)) +
                        " is larger than the padded input " +
                        std::to_string(in[d] + w.pads_begin[d] + w.pads_end[d]));
      int64_t s = w.strides[d];
      int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= in[d] + w.pads_begin[d]) --o;
      w.out[d] = o;
    }
  } else if (auto_pad == "VALID") {
    for (size_t d = 0; d < w.rank; ++d) {
      int64_t span = in[d] - w.eff_kernel(d);
      if (span < 0) throw ctx.error("kernel is larger than the input");
      w.out[d] = span / w.strides[d] + 1;
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < w.rank; ++d) {
      int64_t s = w.strides[d];
      w.out[d] = (in[d] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * s + w.eff_kernel(d) - in[d]);
      w.pads_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads_end[d] = total - w.pads_begin[d];
    }
  } else {
    throw ctx.error("unknown auto_pad '" + auto_pad + "'");
  }
  for (size_t d = 0; d < w.rank; ++d)
    if (w.out[d] < 1) throw ctx.error("output size is not positive");
  return w;
}

/// The input positions o*s + kk*d - pb of one window element, and the condition that all of them
/// lie inside the input (undefined when no window can leave it).
struct WindowPos {
  std::vector<Expr> pos;
  Expr inside;
};

WindowPos window_pos(const Window& w, const std::vector<Expr>& o, const std::vector<Expr>& kk) {
  WindowPos p;
  for (size_t d = 0; d < w.rank; ++d) {
    Expr e = o[d];
    if (w.strides[d] != 1) e = e * te::int_imm(w.strides[d]);
    Expr k = kk[d];
    if (w.dilations[d] != 1) k = k * te::int_imm(w.dilations[d]);
    e = e + k;
    if (w.pads_begin[d] != 0) e = e - te::int_imm(w.pads_begin[d]);
    auto conj = [&](Expr c) { p.inside = p.inside.defined() ? te::logical_and(p.inside, c) : c; };
    if (w.may_underflow(d)) conj(te::ge(e, te::int_imm(0)));
    if (w.may_overflow(d)) conj(te::lt(e, te::int_imm(w.in[d])));
    p.pos.push_back(e);
  }
  return p;
}

/// X[n, c, pos...], or `pad` outside the input.
Expr guarded_read(const te::Tensor& x, const Expr& n, const Expr& c, const WindowPos& p,
                  const std::function<Expr(Expr)>& value, const Expr& pad) {
  std::vector<Expr> idx{n, c};
  idx.insert(idx.end(), p.pos.begin(), p.pos.end());
  Expr v = value(te::read(x, std::move(idx)));
  return p.inside.defined() ? te::select(p.inside, v, pad) : v;
}

std::vector<Expr> slice(const std::vector<Expr>& v, size_t from, size_t n) {
  return std::vector<Expr>(v.begin() + from, v.begin() + from + n);
}

Shape spatial_of(const Shape& s) {
  return Shape(s.begin() + 2, s.end());
}

void check_image(const LowerCtx& ctx, const te::Tensor& x) {
  if (x->shape.size() < 3)
    throw ctx.error("input must have rank >= 3 (N, C, spatial...), got " + shape_str(x->shape));
}

/// Kernel sizes from W's trailing dims, checked against a kernel_shape attribute when present.
Shape kernel_of(const LowerCtx& ctx, const te::Tensor& w, size_t rank) {
  Shape k = spatial_of(w->shape);
  if (ctx.node().has_attr("kernel_shape") && ctx.node().attr_ints("kernel_shape") != k)
    throw ctx.error("kernel_shape does not match the weight shape " + shape_str(w->shape));
  if (k.size() != rank) throw ctx.error("weight rank does not match the input rank");
  return k;
}

/// Conv and ConvInteger: `xv`/`wv` convert the reads (zero points, widening); `wv` also gets the
/// output channel for per-channel weight zero points.
te::Tensor conv_core(LowerCtx& ctx, const te::Tensor& x, const te::Tensor& w, DType acc,
                     const std::function<Expr(Expr)>& xv,
                     const std::function<Expr(Expr, Expr)>& wv) {
  check_image(ctx, x);
  size_t rank = x->shape.size() - 2;
  if (w->shape.size() != x->shape.size())
    throw ctx.error("weight " + shape_str(w->shape) + " does not match input " +
                    shape_str(x->shape));
  int64_t group = ctx.node().attr_int("group", 1);
  int64_t n = x->shape[0], c = x->shape[1], m = w->shape[0], cg = w->shape[1];
  if (group < 1 || c % group != 0 || m % group != 0 || cg * group != c)
    throw ctx.error("channels " + std::to_string(c) + " and weight " + shape_str(w->shape) +
                    " do not fit group " + std::to_string(group));
  Window win = forward_window(ctx, spatial_of(x->shape), kernel_of(ctx, w, rank), false);
  Shape out{n, m};
  out.insert(out.end(), win.out.begin(), win.out.end());
  Shape red{cg};
  red.insert(red.end(), win.kernel.begin(), win.kernel.end());
  int64_t mg = m / group;
  Expr zero = te::imm(acc, 0);
  return ctx.reduce("conv", out, acc, te::ReduceKind::Sum, red,
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      std::vector<Expr> kk = slice(r, 1, rank);
                      WindowPos p = window_pos(win, slice(i, 2, rank), kk);
                      Expr ch = r[0];
                      if (group != 1)
                        ch = te::floordiv(i[1], te::int_imm(mg)) * te::int_imm(cg) + ch;
                      Expr xr = guarded_read(x, i[0], ch, p, xv, zero);
                      std::vector<Expr> widx{i[1], r[0]};
                      widx.insert(widx.end(), kk.begin(), kk.end());
                      return xr * wv(te::read(w, std::move(widx)), i[1]);
                    });
}

std::vector<te::Tensor> lower_conv(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), w = ctx.required(1), b = ctx.input(2);
  if (!is_float(x->dtype)) throw ctx.error("Conv takes floating-point tensors");
  if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
    throw ctx.error("input, weight and bias types differ");
  DType ct = compute_type(x->dtype);
  auto widen = [&](Expr e) { return te::cast(ct, std::move(e)); };
  te::Tensor y = conv_core(ctx, x, w, ct, widen,
                           [&](Expr e, const Expr&) { return te::cast(ct, std::move(e)); });
  if (b) {
    if (b->shape != Shape{y->shape[1]})
      throw ctx.error("bias shape " + shape_str(b->shape) + " must be [" +
                      std::to_string(y->shape[1]) + "]");
    te::Tensor acc = y;
    return {ctx.compute("bias", acc->shape, x->dtype, [&](const std::vector<Expr>& i) {
      return te::read(acc, i) + te::cast(ct, te::read(b, {i[1]}));
    })};
  }
  if (ct == x->dtype) return {y};
  return {ctx.compute("cast", y->shape, x->dtype,
                      [&](const std::vector<Expr>& i) { return te::read(y, i); })};
}

Expr read_scalar(const te::Tensor& t) {
  return te::read(t, std::vector<Expr>(t->shape.size(), te::int_imm(0)));
}

/// sum (X - x_zp)(W - w_zp) in int32 (w_zp scalar or per output channel): ConvInteger, and the
/// accumulator of QLinearConv.
te::Tensor conv_integer_core(LowerCtx& ctx, const te::Tensor& x, const te::Tensor& w,
                             const te::Tensor& xzp, const te::Tensor& wzp) {
  for (const te::Tensor& t : {x, w})
    if (t->dtype != DType::Int8 && t->dtype != DType::UInt8)
      throw ctx.error("takes int8 or uint8 tensors");
  if (xzp && shape_numel(xzp->shape) != 1) throw ctx.error("x_zero_point must be a scalar");
  int64_t m = w->shape.empty() ? 0 : w->shape[0];
  if (wzp && shape_numel(wzp->shape) != 1 && wzp->shape != Shape{m})
    throw ctx.error("w_zero_point must be a scalar or have one value per output channel");
  const DType i32 = DType::Int32;
  // Padding reads as the zero point, i.e. 0 after subtracting it, which the guard yields.
  auto xv = [&](Expr e) {
    Expr v = te::cast(i32, std::move(e));
    return xzp ? v - te::cast(i32, read_scalar(xzp)) : v;
  };
  auto wv = [&](Expr e, const Expr& oc) {
    Expr v = te::cast(i32, std::move(e));
    if (!wzp) return v;
    Expr z = shape_numel(wzp->shape) == 1 ? read_scalar(wzp) : te::read(wzp, {oc});
    return v - te::cast(i32, z);
  };
  return conv_core(ctx, x, w, i32, xv, wv);
}

std::vector<te::Tensor> lower_conv_integer(LowerCtx& ctx) {
  return {conv_integer_core(ctx, ctx.required(0), ctx.required(1), ctx.input(2), ctx.input(3))};
}

std::vector<te::Tensor> lower_qlinear_conv(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), xs = ctx.required(1), xzp = ctx.required(2);
  te::Tensor w = ctx.required(3), ws = ctx.required(4), wzp = ctx.required(5);
  te::Tensor ys = ctx.required(6), yzp = ctx.required(7), b = ctx.input(8);
  for (const te::Tensor& t : {xs, ys, yzp})
    if (shape_numel(t->shape) != 1) throw ctx.error("x/y scales and zero points must be scalars");
  if (yzp->dtype != DType::Int8 && yzp->dtype != DType::UInt8)
    throw ctx.error("y_zero_point must be int8 or uint8");
  te::Tensor acc = conv_integer_core(ctx, x, w, xzp, wzp);
  int64_t m = acc->shape[1];
  if (shape_numel(ws->shape) != 1 && ws->shape != Shape{m})
    throw ctx.error("w_scale must be a scalar or have one value per output channel");
  if (b && (b->shape != Shape{m} || b->dtype != DType::Int32))
    throw ctx.error("B must be int32 of shape [M]");
  DType yt = yzp->dtype;
  double lo = yt == DType::UInt8 ? 0 : -128, hi = yt == DType::UInt8 ? 255 : 127;
  const DType f = DType::Float32;
  // Requantize: round-half-even((acc + B) * x_scale * w_scale / y_scale) + y_zero_point,
  // saturated to the output type.
  return {ctx.compute("requantize", acc->shape, yt, [&](const std::vector<Expr>& i) {
    Expr a = te::read(acc, i);
    if (b) a = a + te::read(b, {i[1]});
    Expr wsc = shape_numel(ws->shape) == 1 ? read_scalar(ws) : te::read(ws, {i[1]});
    Expr scale = te::cast(f, read_scalar(xs)) * te::cast(f, wsc) / te::cast(f, read_scalar(ys));
    Expr v = te::call(te::CallFn::Round, {te::cast(f, a) * scale}) + te::cast(f, read_scalar(yzp));
    return te::min(te::max(v, te::imm(f, lo)), te::imm(f, hi));
  })};
}

std::vector<te::Tensor> lower_conv_transpose(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), w = ctx.required(1), b = ctx.input(2);
  check_image(ctx, x);
  if (!is_float(x->dtype)) throw ctx.error("ConvTranspose takes floating-point tensors");
  if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
    throw ctx.error("input, weight and bias types differ");
  size_t rank = x->shape.size() - 2;
  if (w->shape.size() != x->shape.size())
    throw ctx.error("weight " + shape_str(w->shape) + " does not match input " +
                    shape_str(x->shape));
  int64_t group = ctx.node().attr_int("group", 1);
  int64_t n = x->shape[0], c = x->shape[1];
  if (group < 1 || w->shape[0] != c || c % group != 0)
    throw ctx.error("channels " + std::to_string(c) + " and weight " + shape_str(w->shape) +
                    " do not fit group " + std::to_string(group));
  int64_t mg = w->shape[1], m = mg * group, cg = c / group;
  Shape in = spatial_of(x->shape);
  Shape kernel = kernel_of(ctx, w, rank);
  std::vector<int64_t> strides = attr_or(ctx, "strides", rank, 1);
  std::vector<int64_t> dil = attr_or(ctx, "dilations", rank, 1);
  std::vector<int64_t> opad = attr_or(ctx, "output_padding", rank, 0);
  std::vector<int64_t> oshape = ctx.node().attr_ints("output_shape", {});
  if (oshape.size() == rank + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
  if (!oshape.empty() && oshape.size() != rank)
    throw ctx.error("output_shape has the wrong number of values");
  std::string auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER")
    throw ctx.error("unknown auto_pad '" + auto_pad + "'");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pads = attr_or(ctx, "pads", 2 * rank, 0);
  Shape pb(rank), out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1 || dil[d] < 1) throw ctx.error("strides and dilations must be positive");
    int64_t full = strides[d] * (in[d] - 1) + opad[d] + (kernel[d] - 1) * dil[d] + 1;
    if (!oshape.empty() || same) {
      out[d] = !oshape.empty() ? oshape[d] : in[d] * strides[d];
      int64_t total = full - out[d];
      if (total < 0)
        pb[d] = 0;  // a larger requested output grows at the end, like output_padding
      else
        pb[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      if (auto_pad == "VALID") pads.assign(2 * rank, 0);
      pb[d] = pads[d];
      out[d] = full - pads[d] - pads[rank + d];
    }
    if (out[d] < 1) throw ctx.error("output size is not positive");
  }
  Shape oshape_full{n, m};
  oshape_full.insert(oshape_full.end(), out.begin(), out.end());
  Shape red{cg};
  red.insert(red.end(), kernel.begin(), kernel.end());
  DType ct = compute_type(x->dtype);
  // Y[o] gathers X[i] * W[kk] over o + pb = i*s + kk*d: a guarded read of the X positions that
  // land on o exactly (the transpose of Conv's window, without materializing a zero-stuffed X).
  te::Tensor y = ctx.reduce(
      "conv_transpose", oshape_full, ct, te::ReduceKind::Sum, red,
      [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        Expr cond;
        auto conj = [&](Expr e) { cond = cond.defined() ? te::logical_and(cond, e) : e; };
        Expr ch = r[0];
        if (group != 1) ch = te::floordiv(i[1], te::int_imm(mg)) * te::int_imm(cg) + ch;
        std::vector<Expr> xidx{i[0], ch};
        std::vector<Expr> widx{ch, group != 1 ? te::floormod(i[1], te::int_imm(mg)) : i[1]};
        for (size_t d = 0; d < rank; ++d) {
          Expr t = i[2 + d] + te::int_imm(pb[d]);
          Expr k = r[1 + d];
          t = t - (dil[d] != 1 ? k * te::int_imm(dil[d]) : k);
          Expr s = te::int_imm(strides[d]);
          if (strides[d] != 1) conj(te::eq(te::floormod(t, s), te::int_imm(0)));
          Expr pos = strides[d] != 1 ? te::floordiv(t, s) : t;
          conj(te::ge(pos, te::int_imm(0)));
          conj(te::lt(pos, te::int_imm(in[d])));
          xidx.push_back(pos);
          widx.push_back(k);
        }
        Expr v =
            te::cast(ct, te::read(x, std::move(xidx))) * te::cast(ct, te::read(w, std::move(widx)));
        return te::select(cond, v, te::imm(ct, 0));
      });
  if (b) {
    if (b->shape != Shape{m}) throw ctx.error("bias shape must be [" + std::to_string(m) + "]");
    return {ctx.compute("bias", y->shape, x->dtype, [&](const std::vector<Expr>& i) {
      return te::read(y, i) + te::cast(ct, te::read(b, {i[1]}));
    })};
  }
  if (ct == x->dtype) return {y};
  return {ctx.compute("cast", y->shape, x->dtype,
                      [&](const std::vector<Expr>& i) { return te::read(y, i); })};
}

/// Kernel, window and output shape of a windowed pool.
struct Pool {
  Window win;
  Shape out;
};

Pool pool_window(const LowerCtx& ctx, const te::Tensor& x) {
  check_image(ctx, x);
  size_t rank = x->shape.size() - 2;
  std::vector<int64_t> kernel = ctx.node().attr_ints("kernel_shape", {});
  if (kernel.size() != rank)
    throw ctx.error("kernel_shape must have one value per spatial dim (" + std::to_string(rank) +
                    ")");
  bool ceil_mode = ctx.node().attr_int("ceil_mode", 0) != 0;
  Pool p;
  p.win = forward_window(ctx, spatial_of(x->shape), kernel, ceil_mode);
  p.out = {x->shape[0], x->shape[1]};
  p.out.insert(p.out.end(), p.win.out.begin(), p.win.out.end());
  return p;
}

std::vector<te::Tensor> lower_max_pool(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  if (x->dtype == DType::Bool) throw ctx.error("MaxPool does not take bool tensors");
  Pool p = pool_window(ctx, x);
  size_t rank = p.win.rank;
  DType ct = compute_type(x->dtype);
  Expr lowest = te::reduce_identity(te::ReduceKind::Max, ct);
  auto widen = [&](Expr e) { return te::cast(ct, std::move(e)); };
  te::Tensor y = ctx.reduce("max", p.out, ct, te::ReduceKind::Max, p.win.kernel,
                            [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                              WindowPos wp = window_pos(p.win, slice(i, 2, rank), r);
                              return guarded_read(x, i[0], i[1], wp, widen, lowest);
                            });
  te::Tensor out = y;
  if (ct != x->dtype)
    out = ctx.compute("cast", y->shape, x->dtype,
                      [&](const std::vector<Expr>& i) { return te::read(y, i); });
  if (ctx.num_outputs() < 2 || ctx.node().outputs[1].empty()) return {out};
  // Indices: the first window element equal to the max, as a flat index into X (row-major, or
  // with the spatial dims reversed for storage_order = 1).
  bool col_major = ctx.node().attr_int("storage_order", 0) != 0;
  const Shape& xs = x->shape;
  te::Tensor idx = ctx.reduce("argmax", p.out, DType::Int64, te::ReduceKind::Min, p.win.kernel,
                              [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                WindowPos wp = window_pos(p.win, slice(i, 2, rank), r);
                                Expr flat = i[0] * te::int_imm(xs[1]) + i[1];
                                for (size_t q = 0; q < rank; ++q) {
                                  size_t d = col_major ? rank - 1 - q : q;
                                  flat = flat * te::int_imm(xs[2 + d]) + wp.pos[d];
                                }
                                std::vector<Expr> xi{i[0], i[1]};
                                xi.insert(xi.end(), wp.pos.begin(), wp.pos.end());
                                Expr none = te::int_imm(std::numeric_limits<int64_t>::max());
                                Expr hit =
                                    te::eq(widen(te::read(x, std::move(xi))), te::read(y, i));
                                Expr v = te::select(hit, flat, none);
                                // Nested selects, not &&, keep the read guarded (only select is
                                // lazy).
                                return wp.inside.defined() ? te::select(wp.inside, v, none) : v;
                              });
  return {out, idx};
}

/// Scatters X to the positions Indices name (flat indices, as MaxPool produces them, into the
/// default unpooled shape). The indices come from a MaxPool of the same geometry, so each output
/// position is gathered from the ceil(k/s) windows that cover it. A given output_shape only pads
/// (or crops) that default result at the end, as the ONNX reference does.
std::vector<te::Tensor> lower_max_unpool(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), ind = ctx.required(1);
  check_image(ctx, x);
  if (ind->shape != x->shape || ind->dtype != DType::Int64)
    throw ctx.error("I must be int64 with the shape of X");
  size_t rank = x->shape.size() - 2;
  std::vector<int64_t> kernel = ctx.node().attr_ints("kernel_shape", {});
  if (kernel.size() != rank) throw ctx.error("kernel_shape must have one value per spatial dim");
  std::vector<int64_t> strides = attr_or(ctx, "strides", rank, 1);
  std::vector<int64_t> pads = attr_or(ctx, "pads", 2 * rank, 0);
  Shape in = spatial_of(x->shape);
  Shape def{x->shape[0], x->shape[1]};
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1 || kernel[d] < 1) throw ctx.error("kernel and strides must be positive");
    def.push_back((in[d] - 1) * strides[d] + kernel[d] - pads[d] - pads[rank + d]);
    if (def.back() < 1) throw ctx.error("output size is not positive");
  }
  Shape out = def;
  if (ctx.has_input(2)) {
    std::vector<int64_t> os = ctx.constant_ints(2, "output_shape");
    if (os.size() != rank + 2 || os[0] != def[0] || os[1] != def[1])
      throw ctx.error("output_shape must be [N, C, spatial...] of the input's N and C");
    for (int64_t e : os)
      if (e < 1) throw ctx.error("output_shape must be positive");
    out = os;
  }
  DType ct = compute_type(x->dtype);
  Expr lowest = te::reduce_identity(te::ReduceKind::Max, ct);
  Shape cand(rank);
  for (size_t d = 0; d < rank; ++d) cand[d] = (kernel[d] + strides[d] - 1) / strides[d];
  te::Tensor gathered = ctx.reduce(
      "gather", def, ct, te::ReduceKind::Max, cand,
      [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        std::vector<Expr> xi{i[0], i[1]};
        Expr cond;
        auto conj = [&](Expr e) { cond = cond.defined() ? te::logical_and(cond, e) : e; };
        for (size_t d = 0; d < rank; ++d) {
          Expr o = i[2 + d] + te::int_imm(pads[d]);
          Expr w = te::floordiv(o, te::int_imm(strides[d])) - r[d];
          conj(te::ge(w, te::int_imm(0)));
          conj(te::lt(w, te::int_imm(in[d])));
          conj(te::gt(w * te::int_imm(strides[d]) + te::int_imm(kernel[d]), o));
          xi.push_back(w);
        }
        Expr flat = i[0];
        for (size_t d = 1; d < def.size(); ++d) flat = flat * te::int_imm(def[d]) + i[d];
        Expr hit = te::eq(te::read(ind, xi), flat);
        Expr v = te::select(hit, te::cast(ct, te::read(x, xi)), lowest);
        return te::select(cond, v, lowest);
      });
  return {ctx.compute("unpool", out, x->dtype, [&](const std::vector<Expr>& i) {
    Expr inside;
    for (size_t d = 2; d < out.size(); ++d)
      if (out[d] > def[d]) {
        Expr c = te::lt(i[d], te::int_imm(def[d]));
        inside = inside.defined() ? te::logical_and(inside, c) : c;
      }
    Expr v = te::read(gathered, i);
    Expr y = te::select(te::eq(v, lowest), te::imm(ct, 0), v);
    return inside.defined() ? te::select(inside, y, te::imm(ct, 0)) : y;
  })};
}

/// Number of window elements kk in [0, k) with lo <= start + kk*d <= hi, as an Int64 expression.
Expr count_in_range(const Expr& start, int64_t k, int64_t dil, int64_t lo, int64_t hi) {
  Expr dd = te::int_imm(dil);
  Expr kmin = te::max(te::int_imm(0), te::floordiv(te::int_imm(lo + dil - 1) - start, dd));
  Expr kmax = te::min(te::int_imm(k - 1), te::floordiv(te::int_imm(hi) - start, dd));
  return te::max(te::int_imm(0), kmax - kmin + te::int_imm(1));
}

std::vector<te::Tensor> lower_average_pool(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  if (!is_float(x->dtype)) throw ctx.error("AveragePool takes floating-point tensors");
  Pool p = pool_window(ctx, x);
  const Window& w = p.win;
  size_t rank = w.rank;
  bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  DType ct = compute_type(x->dtype);
  auto widen = [&](Expr e) { return te::cast(ct, std::move(e)); };
  te::Tensor sum = ctx.reduce("sum", p.out, ct, te::ReduceKind::Sum, w.kernel,
                              [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                WindowPos wp = window_pos(w, slice(i, 2, rank), r);
                                return guarded_read(x, i[0], i[1], wp, widen, te::imm(ct, 0));
                              });
  return {ctx.compute("avg", p.out, x->dtype, [&](const std::vector<Expr>& i) {
    // The divisor counts the window elements inside the input (or inside the padded input with
    // count_include_pad); it is a constant unless some window is clipped.
    Expr count;
    int64_t constant = 1;
    for (size_t d = 0; d < rank; ++d) {
      int64_t lo = include_pad ? -w.pads_begin[d] : 0;
      int64_t hi = include_pad ? w.in[d] + w.pads_end[d] - 1 : w.in[d] - 1;
      int64_t last =
          (w.out[d] - 1) * w.strides[d] - w.pads_begin[d] + (w.kernel[d] - 1) * w.dilations[d];
      if (-w.pads_begin[d] >= lo && last <= hi) {
        constant *= w.kernel[d];
        continue;
      }
      Expr start = i[2 + d] * te::int_imm(w.strides[d]) - te::int_imm(w.pads_begin[d]);
      Expr c = count_in_range(start, w.kernel[d], w.dilations[d], lo, hi);
      count = count.defined() ? count * c : c;
    }
    Expr v = te::read(sum, i);
    if (!count.defined()) return v / te::imm(ct, static_cast<double>(constant));
    if (constant != 1) count = count * te::int_imm(constant);
    return v / te::cast(ct, count);
  })};
}

double lp_order(const LowerCtx& ctx) {
  auto it = ctx.node().attrs.find("p");
  double p = 2;
  if (it != ctx.node().attrs.end())
    p = it->second.kind == graph::Attribute::Kind::Float ? it->second.f
                                                         : static_cast<double>(it->second.i);
  if (!(p > 0)) throw ctx.error("p must be positive");
  return p;
}

/// |x|^p, with the common orders spelled without pow.
Expr lp_term(const Expr& v, double p) {
  if (p == 1) return te::abs(v);
  if (p == 2) return v * v;
  return te::pow(te::abs(v), te::imm(v.dtype(), p));
}

Expr lp_root(const Expr& s, double p) {
  if (p == 1) return s;
  if (p == 2) return te::sqrt(s);
  return te::pow(s, te::imm(s.dtype(), 1.0 / p));
}

std::vector<te::Tensor> lower_lp_pool(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  if (!is_float(x->dtype)) throw ctx.error("LpPool takes floating-point tensors");
  Pool p = pool_window(ctx, x);
  size_t rank = p.win.rank;
  double order = lp_order(ctx);
  DType ct = compute_type(x->dtype);
  auto term = [&](Expr e) { return lp_term(te::cast(ct, std::move(e)), order); };
  te::Tensor sum = ctx.reduce("sum", p.out, ct, te::ReduceKind::Sum, p.win.kernel,
                              [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                WindowPos wp = window_pos(p.win, slice(i, 2, rank), r);
                                return guarded_read(x, i[0], i[1], wp, term, te::imm(ct, 0));
                              });
  return {ctx.compute("root", p.out, x->dtype, [&](const std::vector<Expr>& i) {
    return lp_root(te::read(sum, i), order);
  })};
}

/// The global pools reduce over every spatial dim into [N, C, 1, ...].
enum class GlobalKind { Average, Max, Lp };

std::vector<te::Tensor> lower_global_pool(LowerCtx& ctx, GlobalKind kind) {
  te::Tensor x = ctx.required(0);
  check_image(ctx, x);
  if (kind != GlobalKind::Max && !is_float(x->dtype))
    throw ctx.error("expects a floating-point tensor");
  if (x->dtype == DType::Bool) throw ctx.error("does not take bool tensors");
  size_t rank = x->shape.size() - 2;
  Shape out{x->shape[0], x->shape[1]};
  out.resize(rank + 2, 1);
  Shape red = spatial_of(x->shape);
  DType ct = compute_type(x->dtype);
  double order = kind == GlobalKind::Lp ? lp_order(ctx) : 1;
  auto body = [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
    std::vector<Expr> idx{i[0], i[1]};
    idx.insert(idx.end(), r.begin(), r.end());
    Expr v = te::cast(ct, te::read(x, std::move(idx)));
    return kind == GlobalKind::Lp ? lp_term(v, order) : v;
  };
  te::ReduceKind rk = kind == GlobalKind::Max ? te::ReduceKind::Max : te::ReduceKind::Sum;
  te::Tensor acc = ctx.reduce(kind == GlobalKind::Max ? "max" : "sum", out, ct, rk, red, body);
  if (kind == GlobalKind::Max && ct == x->dtype) return {acc};
  double n = static_cast<double>(shape_numel(red));
  return {ctx.compute(kind == GlobalKind::Lp    ? "root"
                      : kind == GlobalKind::Max ? "cast"
                                                : "avg",
                      out, x->dtype, [&](const std::vector<Expr>& i) {
                        Expr v = te::read(acc, i);
                        if (kind == GlobalKind::Average) return v / te::imm(ct, n);
                        if (kind == GlobalKind::Lp) return lp_root(v, order);
                        return v;
                      })};
}

}  // namespace

void register_conv_pool(Registry& r) {
  r.add("Conv", lower_conv);
  r.add("ConvInteger", lower_conv_integer);
  r.add("QLinearConv", lower_qlinear_conv);
  r.add("ConvTranspose", lower_conv_transpose);
  r.add("MaxPool", lower_max_pool);
  r.add("AveragePool", lower_average_pool);
  r.add("LpPool", lower_lp_pool);
  r.add("MaxUnpool", lower_max_unpool);
  r.add("GlobalAveragePool", [](LowerCtx& c) { return lower_global_pool(c, GlobalKind::Average); });
  r.add("GlobalMaxPool", [](LowerCtx& c) { return lower_global_pool(c, GlobalKind::Max); });
  r.add("GlobalLpPool", [](LowerCtx& c) { return lower_global_pool(c, GlobalKind::Lp); });
}

}  // namespace souffle::lower
