// Lowering of the loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Both are reductions: a per-element loss -w[t] * x[n, t, d...] picked by the target, then a
// sum (and, for "mean", a second sum of the picked weights to divide by). SoftmaxCrossEntropyLoss
// first computes log-softmax over the class axis as three TEs (max, sum of exp, log-ratio).
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

struct LossInputs {
  te::Tensor target, weight;
  int64_t classes = 0;
  Shape target_shape;  ///< [N, d1, ...]
  bool has_ignore = false;
  int64_t ignore_index = 0;
  std::string reduction;
};

LossInputs loss_inputs(LowerCtx& ctx, const te::Tensor& x) {
  LossInputs in;
  const graph::Node& n = ctx.node();
  if (x->shape.size() < 2)
    throw ctx.error("input must have shape [N, C, d1, ...], got " + shape_str(x->shape));
  if (!is_float(x->dtype))
    throw ctx.error(std::string("expects a floating-point input, got ") + dtype_name(x->dtype));
  in.target = ctx.required(1);
  in.weight = ctx.input(2);
  in.classes = x->shape[1];
  in.target_shape = x->shape;
  in.target_shape.erase(in.target_shape.begin() + 1);
  if (!is_int(in.target->dtype))
    throw ctx.error(std::string("target must be an integer tensor, got ") +
                    dtype_name(in.target->dtype));
  if (in.target->shape != in.target_shape)
    throw ctx.error("target has shape " + shape_str(in.target->shape) + ", the input needs " +
                    shape_str(in.target_shape));
  if (in.weight && in.weight->shape != Shape{in.classes})
    throw ctx.error("weight must have shape [" + std::to_string(in.classes) + "], got " +
                    shape_str(in.weight->shape));
  in.has_ignore = n.has_attr("ignore_index");
  in.ignore_index = n.attr_int("ignore_index", 0);
  in.reduction = n.attr_string("reduction", "mean");
  if (in.reduction != "none" && in.reduction != "sum" && in.reduction != "mean")
    throw ctx.error("reduction must be none, sum or mean, got '" + in.reduction + "'");
  return in;
}

/// The loss from `logp(n, c, d...)` (the log-probability, or the input for NLL): per element
/// -w[t] * logp[n, t, d], 0 where t is ignore_index; then none, sum, or sum / sum of weights.
te::Tensor lower_nll(LowerCtx& ctx, const LossInputs& in, DType out_dtype, DType calc,
                     const std::function<Expr(const Idx&)>& logp) {
  auto target_at = [&](const Idx& i) { return te::cast(DType::Int64, te::read(in.target, i)); };
  auto ignored = [&](const Expr& t) {
    return in.has_ignore ? te::eq(t, te::int_imm(in.ignore_index)) : Expr();
  };
  // The class read, clamped so an ignored (possibly out-of-range) target reads in bounds.
  auto clamp_class = [&](const Expr& t) {
    return te::min(te::max(t, te::int_imm(0)), te::int_imm(in.classes - 1));
  };
  auto weight_of = [&](const Idx& i) {
    Expr t = target_at(i);
    Expr w = in.weight ? te::cast(calc, te::read(in.weight, {clamp_class(t)})) : te::imm(calc, 1);
    Expr ig = ignored(t);
    return ig.defined() ? te::select(ig, te::imm(calc, 0), w) : w;
  };
  auto loss_at = [&](const Idx& i) {
    Expr t = target_at(i);
    Idx xi{i[0], clamp_class(t)};
    for (size_t d = 1; d < i.size(); ++d) xi.push_back(i[d]);
    return -(weight_of(i) * logp(xi));
  };
  if (in.reduction == "none")
    return ctx.compute("", in.target_shape, out_dtype,
                       [&](const Idx& i) { return te::cast(out_dtype, loss_at(i)); });
  te::Tensor sum = ctx.reduce("sum", {}, calc, te::ReduceKind::Sum, in.target_shape,
                              [&](const Idx&, const Idx& k) { return loss_at(k); });
  if (in.reduction == "sum")
    return ctx.compute("", {}, out_dtype,
                       [&](const Idx&) { return te::cast(out_dtype, te::read(sum, {})); });
  te::Tensor wsum = ctx.reduce("weight_sum", {}, calc, te::ReduceKind::Sum, in.target_shape,
                               [&](const Idx&, const Idx& k) { return weight_of(k); });
  return ctx.compute("", {}, out_dtype, [&](const Idx&) {
    return te::cast(out_dtype, te::read(sum, {}) / te::read(wsum, {}));
  });
}

std::vector<te::Tensor> lower_nll_loss(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  LossInputs in = loss_inputs(ctx, x);
  DType calc = compute_type(x->dtype);
  return {lower_nll(ctx, in, x->dtype, calc,
                    [&](const Idx& i) { return te::cast(calc, te::read(x, i)); })};
}

std::vector<te::Tensor> lower_softmax_cross_entropy(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  LossInputs in = loss_inputs(ctx, x);
  DType calc = math_type(x->dtype);
  // log_softmax over axis 1: m = max_c x, s = sum_c exp(x - m), logp = x - m - log s.
  Shape row = x->shape;
  row[1] = 1;
  auto at_class = [](const Idx& i, const Expr& c) {
    Idx j = i;
    j[1] = c;
    return j;
  };
  auto xin = [&](const Idx& j) { return te::cast(calc, te::read(x, j)); };
  te::Tensor m = ctx.reduce("max", row, calc, te::ReduceKind::Max, {in.classes},
                            [&](const Idx& i, const Idx& k) { return xin(at_class(i, k[0])); });
  te::Tensor s = ctx.reduce(
      "sum", row, calc, te::ReduceKind::Sum, {in.classes},
      [&](const Idx& i, const Idx& k) { return te::exp(xin(at_class(i, k[0])) - te::read(m, i)); });
  te::Tensor logp = ctx.compute("log_prob", x->shape, calc, [&](const Idx& j) {
    Idx r = at_class(j, te::int_imm(0));
    return xin(j) - te::read(m, r) - te::log(te::read(s, r));
  });
  te::Tensor loss =
      lower_nll(ctx, in, x->dtype, calc, [&](const Idx& i) { return te::read(logp, i); });
  std::vector<te::Tensor> outs{loss};
  if (ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty())
    outs.push_back(calc == x->dtype
                       ? logp
                       : ctx.compute("log_prob_out", x->shape, x->dtype, [&](const Idx& j) {
                           return te::cast(x->dtype, te::read(logp, j));
                         }));
  return outs;
}

}  // namespace

void register_loss(Registry& r) {
  r.add("NegativeLogLikelihoodLoss", lower_nll_loss);
  r.add("SoftmaxCrossEntropyLoss", lower_softmax_cross_entropy);
}

}  // namespace souffle::lower
