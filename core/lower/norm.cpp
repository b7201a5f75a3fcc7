// Lowering of the normalization ops: BatchNormalization, InstanceNormalization,
// LayerNormalization, GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN.
//
// Statistics are reduce TEs (the mean, then the variance of x - mean), followed by one
// element-wise normalize TE: the reduce -> broadcast -> element-wise shape that the global
// analysis recognizes and fuses across.
#include <algorithm>
#include <functional>
#include <optional>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;

void check_float(const LowerCtx& ctx, const te::Tensor& t) {
  if (!is_float(t->dtype)) throw ctx.error("expects floating-point tensors");
}

/// Keep-dims reduction of `shape` over the dims with reduced[d]: the output has 1 there, and
/// `body` receives the full-rank index with the reduce vars in the reduced dims.
te::Tensor stat_reduce(LowerCtx& ctx, const std::string& suffix, const Shape& shape,
                       const std::vector<bool>& reduced, DType dtype,
                       const std::function<Expr(const std::vector<Expr>&)>& body) {
  Shape out = shape, red;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) {
      out[d] = 1;
      red.push_back(shape[d]);
    }
  return ctx.reduce(suffix, out, dtype, te::ReduceKind::Sum, red,
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      std::vector<Expr> full;
                      size_t k = 0;
                      for (size_t d = 0; d < shape.size(); ++d)
                        full.push_back(reduced[d] ? r[k++] : i[d]);
                      return body(full);
                    });
}

/// Reads a keep-dims statistic at a full-rank index (reduced dims read 0).
Expr read_stat(const te::Tensor& s, const std::vector<Expr>& i) {
  return read_broadcast(s, i);
}

/// mean and variance (of x - mean) over the `reduced` dims, in `ct`.
struct Moments {
  te::Tensor mean, var;
};

Moments moments(LowerCtx& ctx, const te::Tensor& x, const std::vector<bool>& reduced, DType ct) {
  int64_t n = 1;
  for (size_t d = 0; d < x->shape.size(); ++d)
    if (reduced[d]) n *= x->shape[d];
  Expr inv_n = te::imm(ct, 1.0 / static_cast<double>(n));
  Moments m;
  m.mean = stat_reduce(ctx, "mean", x->shape, reduced, ct, [&](const std::vector<Expr>& i) {
    return te::cast(ct, te::read(x, i)) * inv_n;
  });
  m.var = stat_reduce(ctx, "var", x->shape, reduced, ct, [&](const std::vector<Expr>& i) {
    Expr c = te::cast(ct, te::read(x, i)) - read_stat(m.mean, i);
    return c * c * inv_n;
  });
  return m;
}

/// A per-channel parameter of an [N, C, ...] tensor: shape [C] (or, for BatchNormalization with
/// spatial = 0, the per-activation shape [C, D...]).
Expr read_channel_param(const LowerCtx& ctx, const te::Tensor& p, const Shape& x,
                        const std::vector<Expr>& i, const char* what) {
  if (p->shape == Shape{x[1]}) return te::read(p, {i[1]});
  if (shape_numel(p->shape) == 1)
    return te::read(p, std::vector<Expr>(p->shape.size(), te::int_imm(0)));
  Shape per_act(x.begin() + 1, x.end());
  if (p->shape == per_act) return te::read(p, std::vector<Expr>(i.begin() + 1, i.end()));
  throw ctx.error(std::string(what) + " of shape " + shape_str(p->shape) +
                  " does not fit the input " + shape_str(x));
}

/// Training form (opset 14+, training_mode = 1): normalizes with the batch statistics and
/// returns the updated running statistics, input * momentum + batch * (1 - momentum).
std::vector<te::Tensor> batch_norm_training(LowerCtx& ctx, const te::Tensor& x,
                                            const std::vector<te::Tensor>& params, double eps,
                                            DType ct) {
  const Shape& xs = x->shape;
  for (const te::Tensor& p : params)
    if (p->shape != Shape{xs[1]}) throw ctx.error("training mode needs [C]-shaped parameters");
  double momentum = ctx.node().attr_float("momentum", 0.9);
  std::vector<bool> reduced(xs.size(), true);
  reduced[1] = false;
  Moments m = moments(ctx, x, reduced, ct);
  const te::Tensor &scale = params[0], &bias = params[1];
  te::Tensor y = ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    Expr inv = te::call(te::CallFn::Rsqrt, {read_stat(m.var, i) + te::imm(ct, eps)});
    return (te::cast(ct, te::read(x, i)) - read_stat(m.mean, i)) * inv *
               te::cast(ct, te::read(scale, {i[1]})) +
           te::cast(ct, te::read(bias, {i[1]}));
  });
  auto running = [&](const std::string& suffix, const te::Tensor& in, const te::Tensor& batch) {
    return ctx.compute(suffix, in->shape, in->dtype, [&](const std::vector<Expr>& i) {
      std::vector<Expr> at(xs.size(), te::int_imm(0));
      at[1] = i[0];
      return te::cast(ct, te::read(in, i)) * te::imm(ct, momentum) +
             te::read(batch, at) * te::imm(ct, 1 - momentum);
    });
  };
  std::vector<te::Tensor> outs{y};
  if (ctx.num_outputs() > 1) outs.push_back(running("running_mean", params[2], m.mean));
  if (ctx.num_outputs() > 2) outs.push_back(running("running_var", params[3], m.var));
  return outs;
}

std::vector<te::Tensor> lower_batch_norm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  te::Tensor scale = ctx.required(1), bias = ctx.required(2);
  te::Tensor mean = ctx.required(3), var = ctx.required(4);
  check_float(ctx, x);
  if (x->shape.size() < 2) throw ctx.error("input must have rank >= 2");
  double eps = ctx.node().attr_float("epsilon", 1e-5);
  DType ct = compute_type(x->dtype);
  for (const te::Tensor& t : {scale, bias, mean, var}) check_float(ctx, t);
  if (ctx.opset() >= 14 && ctx.node().attr_int("training_mode", 0) != 0)
    return batch_norm_training(ctx, x, {scale, bias, mean, var}, eps, ct);
  for (size_t o = 1; o < ctx.num_outputs(); ++o)
    if (!ctx.node().outputs[o].empty())
      throw ctx.error("saved statistics outputs of the old training form are not supported");
  const Shape& xs = x->shape;
  // Validates the parameter shapes before building any op.
  std::vector<Expr> probe(xs.size(), te::int_imm(0));
  read_channel_param(ctx, scale, xs, probe, "scale");
  read_channel_param(ctx, bias, xs, probe, "B");
  read_channel_param(ctx, mean, xs, probe, "mean");
  read_channel_param(ctx, var, xs, probe, "var");
  return {ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    auto param = [&](const te::Tensor& t, const char* what) {
      return te::cast(ct, read_channel_param(ctx, t, xs, i, what));
    };
    Expr inv = te::call(te::CallFn::Rsqrt, {param(var, "var") + te::imm(ct, eps)});
    return (te::cast(ct, te::read(x, i)) - param(mean, "mean")) * inv * param(scale, "scale") +
           param(bias, "B");
  })};
}

std::vector<te::Tensor> lower_instance_norm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), scale = ctx.required(1), bias = ctx.required(2);
  check_float(ctx, x);
  const Shape& xs = x->shape;
  if (xs.size() < 3) throw ctx.error("input must have rank >= 3 (N, C, spatial...)");
  if (scale->shape != Shape{xs[1]} || bias->shape != Shape{xs[1]})
    throw ctx.error("scale and B must have shape [C]");
  double eps = ctx.node().attr_float("epsilon", 1e-5);
  DType ct = compute_type(x->dtype);
  std::vector<bool> reduced(xs.size(), true);
  reduced[0] = reduced[1] = false;
  Moments m = moments(ctx, x, reduced, ct);
  return {ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    Expr inv = te::call(te::CallFn::Rsqrt, {read_stat(m.var, i) + te::imm(ct, eps)});
    return (te::cast(ct, te::read(x, i)) - read_stat(m.mean, i)) * inv *
               te::cast(ct, te::read(scale, {i[1]})) +
           te::cast(ct, te::read(bias, {i[1]}));
  })};
}

/// Scale/bias of LayerNormalization broadcast (unidirectionally) to the normalized dims.
void check_trailing_broadcast(const LowerCtx& ctx, const te::Tensor& p, const Shape& xs,
                              int64_t axis, const char* what) {
  size_t tail = xs.size() - static_cast<size_t>(axis);
  if (p->shape.size() > tail)
    throw ctx.error(std::string(what) + " of shape " + shape_str(p->shape) +
                    " has more dims than the normalized shape");
  for (size_t d = 0; d < p->shape.size(); ++d) {
    int64_t want = xs[xs.size() - p->shape.size() + d];
    if (p->shape[d] != 1 && p->shape[d] != want)
      throw ctx.error(std::string(what) + " of shape " + shape_str(p->shape) +
                      " does not broadcast to the input " + shape_str(xs));
  }
}

std::vector<te::Tensor> lower_layer_norm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), scale = ctx.required(1), bias = ctx.input(2);
  check_float(ctx, x);
  const Shape& xs = x->shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 1) throw ctx.error("input must have rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", -1), rank);
  double eps = ctx.node().attr_float("epsilon", 1e-5);
  int64_t stash = ctx.node().attr_int("stash_type", 1);
  std::optional<DType> st = dtype_from_onnx(static_cast<int32_t>(stash));
  if (!st || !is_float(*st)) throw ctx.error("stash_type must be a floating-point type");
  DType ct = compute_type(*st);
  check_trailing_broadcast(ctx, scale, xs, axis, "Scale");
  if (bias) check_trailing_broadcast(ctx, bias, xs, axis, "B");
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t d = axis; d < rank; ++d) reduced[d] = true;
  Moments m = moments(ctx, x, reduced, ct);
  te::Tensor inv = ctx.compute("inv_std", m.var->shape, ct, [&](const std::vector<Expr>& i) {
    return te::call(te::CallFn::Rsqrt, {te::read(m.var, i) + te::imm(ct, eps)});
  });
  te::Tensor y = ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    Expr v = (te::cast(ct, te::read(x, i)) - read_stat(m.mean, i)) * read_stat(inv, i);
    // The affine part runs in the input's type, as the ONNX function body does.
    DType xt = compute_type(x->dtype);
    v = te::cast(xt, v) * te::cast(xt, read_broadcast(scale, i));
    if (bias) v = v + te::cast(xt, read_broadcast(bias, i));
    return v;
  });
  std::vector<te::Tensor> outs{y};
  // Mean and InvStdDev keep the normalized dims as 1s, in the stash type.
  auto stash_out = [&](const te::Tensor& t) {
    if (t->dtype == *st) return t;
    return ctx.compute("stash", t->shape, *st,
                       [&](const std::vector<Expr>& i) { return te::read(t, i); });
  };
  if (ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty()) outs.push_back(stash_out(m.mean));
  if (ctx.num_outputs() > 2 && !ctx.node().outputs[2].empty()) {
    outs.resize(2);
    outs.push_back(stash_out(inv));
  }
  return outs;
}

std::vector<te::Tensor> lower_group_norm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), scale = ctx.required(1), bias = ctx.required(2);
  check_float(ctx, x);
  const Shape& xs = x->shape;
  if (xs.size() < 2) throw ctx.error("input must have rank >= 2 (N, C, ...)");
  if (!ctx.node().has_attr("num_groups")) throw ctx.error("num_groups is required");
  int64_t g = ctx.node().attr_int("num_groups", 1);
  int64_t c = xs[1];
  if (g < 1 || c % g != 0)
    throw ctx.error("num_groups " + std::to_string(g) + " does not divide the channels " +
                    std::to_string(c));
  int64_t cg = c / g;
  double eps = ctx.node().attr_float("epsilon", 1e-5);
  int64_t stash = ctx.node().attr_int("stash_type", 1);
  std::optional<DType> st = dtype_from_onnx(static_cast<int32_t>(stash));
  if (!st || !is_float(*st)) throw ctx.error("stash_type must be a floating-point type");
  DType ct = compute_type(*st);
  // Opset 18 has one scale/bias per group, opset 21 one per channel; the shape tells which.
  bool per_channel = false;
  if (scale->shape == Shape{c} && bias->shape == Shape{c})
    per_channel = true;
  else if (!(scale->shape == Shape{g} && bias->shape == Shape{g}))
    throw ctx.error("scale and bias must have shape [C] or [num_groups]");
  Shape spatial(xs.begin() + 2, xs.end());
  Shape red{cg};
  red.insert(red.end(), spatial.begin(), spatial.end());
  Expr inv_n = te::imm(ct, 1.0 / static_cast<double>(shape_numel(red)));
  auto x_at = [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
    std::vector<Expr> idx{i[0], i[1] * te::int_imm(cg) + r[0]};
    idx.insert(idx.end(), r.begin() + 1, r.end());
    return te::cast(ct, te::read(x, std::move(idx)));
  };
  te::Tensor mean = ctx.reduce(
      "mean", {xs[0], g}, ct, te::ReduceKind::Sum, red,
      [&](const std::vector<Expr>& i, const std::vector<Expr>& r) { return x_at(i, r) * inv_n; });
  te::Tensor var = ctx.reduce("var", {xs[0], g}, ct, te::ReduceKind::Sum, red,
                              [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                Expr d = x_at(i, r) - te::read(mean, i);
                                return d * d * inv_n;
                              });
  return {ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> gi{i[0], te::floordiv(i[1], te::int_imm(cg))};
    Expr inv = te::call(te::CallFn::Rsqrt, {te::read(var, gi) + te::imm(ct, eps)});
    Expr v = (te::cast(ct, te::read(x, i)) - te::read(mean, gi)) * inv;
    Expr pc = per_channel ? i[1] : gi[1];
    return v * te::cast(ct, te::read(scale, {pc})) + te::cast(ct, te::read(bias, {pc}));
  })};
}

std::vector<te::Tensor> lower_lp_norm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  check_float(ctx, x);
  const Shape& xs = x->shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", -1), rank);
  int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) throw ctx.error("p must be 1 or 2");
  DType ct = compute_type(x->dtype);
  std::vector<bool> reduced(xs.size(), false);
  reduced[axis] = true;
  te::Tensor norm = stat_reduce(ctx, "norm", xs, reduced, ct, [&](const std::vector<Expr>& i) {
    Expr v = te::cast(ct, te::read(x, i));
    return p == 1 ? te::abs(v) : v * v;
  });
  return {ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    Expr n = read_stat(norm, i);
    return te::cast(ct, te::read(x, i)) / (p == 1 ? n : te::sqrt(n));
  })};
}

std::vector<te::Tensor> lower_mvn(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  check_float(ctx, x);
  const Shape& xs = x->shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<int64_t> axes = ctx.node().attr_ints("axes", {0, 2, 3});
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t a : axes) {
    int64_t d = normalize_axis(ctx, a, rank);
    if (reduced[d]) throw ctx.error("axes contains a dim twice");
    reduced[d] = true;
  }
  DType ct = compute_type(x->dtype);
  Moments m = moments(ctx, x, reduced, ct);
  // The ONNX function body divides by sqrt(var) + 1e-9, which keeps constant slices finite.
  return {ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    return (te::cast(ct, te::read(x, i)) - read_stat(m.mean, i)) /
           (te::sqrt(read_stat(m.var, i)) + te::imm(ct, 1e-9));
  })};
}

/// LRN: x / (bias + alpha / size * sum of x^2 over a window of channels)^beta; the square sum is
/// a reduce TE whose channel read is guarded at the ends.
std::vector<te::Tensor> lower_lrn(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  check_float(ctx, x);
  const Shape& xs = x->shape;
  if (xs.size() < 3) throw ctx.error("input must have rank >= 3 (N, C, spatial...)");
  if (!ctx.node().has_attr("size")) throw ctx.error("size is required");
  int64_t size = ctx.node().attr_int("size", 1);
  if (size < 1) throw ctx.error("size must be positive");
  double alpha = ctx.node().attr_float("alpha", 1e-4);
  double beta = ctx.node().attr_float("beta", 0.75);
  double bias = ctx.node().attr_float("bias", 1.0);
  int64_t before = (size - 1) / 2;
  DType ct = compute_type(x->dtype);
  te::Tensor sq = ctx.reduce("square_sum", xs, ct, te::ReduceKind::Sum, {size},
                             [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                               std::vector<Expr> idx = i;
                               idx[1] = i[1] + r[0] - te::int_imm(before);
                               Expr ok = te::logical_and(te::ge(idx[1], te::int_imm(0)),
                                                         te::lt(idx[1], te::int_imm(xs[1])));
                               Expr v = te::cast(ct, te::read(x, std::move(idx)));
                               return te::select(ok, v * v, te::imm(ct, 0));
                             });
  return {ctx.compute("normalize", xs, x->dtype, [&](const std::vector<Expr>& i) {
    Expr d = te::imm(ct, bias) + te::imm(ct, alpha / static_cast<double>(size)) * te::read(sq, i);
    return te::cast(ct, te::read(x, i)) / te::pow(d, te::imm(ct, beta));
  })};
}

}  // namespace

void register_norm(Registry& r) {
  r.add("BatchNormalization", lower_batch_norm);
  r.add("InstanceNormalization", lower_instance_norm);
  r.add("LayerNormalization", lower_layer_norm);
  r.add("GroupNormalization", lower_group_norm);
  r.add("LpNormalization", lower_lp_norm);
  r.add("MeanVarianceNormalization", lower_mvn);
  r.add("LRN", lower_lrn);
}

}  // namespace souffle::lower
