// Lowering of the optimizer update rules of the ai.onnx.preview.training domain: Adagrad,
// Momentum (standard and Nesterov) and Adam.
//
// They are not inference operators, but each is a deterministic element-wise update of a few
// tensors (weights, gradients, accumulators) given a scalar learning rate R and step T, so each
// output is one element-wise TE; a node updating n tensors lists them in groups (X..., G..., ...).
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

struct Groups {
  size_t n = 0;  ///< tensors updated by the node
  Expr r, t;     ///< learning rate, step count (as f64)
};

Groups groups(LowerCtx& ctx, size_t per_tensor) {
  Groups g;
  size_t rest = ctx.num_inputs() < 2 ? 0 : ctx.num_inputs() - 2;
  if (rest == 0 || rest % per_tensor != 0)
    throw ctx.error("expects R, T and " + std::to_string(per_tensor) +
                    " groups of equally many tensors, got " + std::to_string(ctx.num_inputs()) +
                    " inputs");
  g.n = rest / per_tensor;
  for (size_t i : {size_t{0}, size_t{1}})
    if (shape_numel(ctx.required(i)->shape) != 1)
      throw ctx.error(std::string(i == 0 ? "R" : "T") + " must be a scalar");
  auto scalar = [&](size_t i) {
    te::Tensor s = ctx.required(i);
    return te::cast(DType::Float64, te::read(s, Idx(s->shape.size(), te::int_imm(0))));
  };
  g.r = scalar(0);
  g.t = scalar(1);
  return g;
}

/// The inputs of group `k` (0-based) for tensor `i`, checked to share the first group's shape.
te::Tensor member(LowerCtx& ctx, const Groups& g, size_t k, size_t i) {
  te::Tensor t = ctx.required(2 + k * g.n + i);
  te::Tensor first = ctx.required(2 + i);
  if (t->shape != first->shape || !is_float(t->dtype))
    throw ctx.error("input " + std::to_string(2 + k * g.n + i) + " must be a float tensor of " +
                    "shape " + shape_str(first->shape));
  return t;
}

Expr at(const te::Tensor& t, const Idx& i) {
  return te::cast(DType::Float64, te::read(t, i));
}

double attr(LowerCtx& ctx, const char* name, double def) {
  return ctx.node().attr_float(name, def);
}

void check_outputs(LowerCtx& ctx, const Groups& g, size_t per_tensor) {
  if (ctx.num_outputs() != g.n * per_tensor)
    throw ctx.error("expects " + std::to_string(g.n * per_tensor) + " outputs, got " +
                    std::to_string(ctx.num_outputs()));
}

std::vector<te::Tensor> lower_adagrad(LowerCtx& ctx) {
  Groups g = groups(ctx, 3);
  check_outputs(ctx, g, 2);
  double decay = attr(ctx, "decay_factor", 0), eps = attr(ctx, "epsilon", 0),
         norm = attr(ctx, "norm_coefficient", 0);
  std::vector<te::Tensor> xs, hs;
  for (size_t i = 0; i < g.n; ++i) {
    te::Tensor x = member(ctx, g, 0, i), grad = member(ctx, g, 1, i), h = member(ctx, g, 2, i);
    auto reg = [&](const Idx& j) { return te::imm(DType::Float64, norm) * at(x, j) + at(grad, j); };
    auto h_new = [&](const Idx& j) {
      Expr gr = reg(j);
      return at(h, j) + gr * gr;
    };
    xs.push_back(ctx.compute("x_new", x->shape, x->dtype, [&](const Idx& j) {
      Expr rate = g.r / (te::imm(DType::Float64, 1) + g.t * te::imm(DType::Float64, decay));
      Expr denom = te::sqrt(h_new(j)) + te::imm(DType::Float64, eps);
      return te::cast(x->dtype, at(x, j) - rate * reg(j) / denom);
    }));
    hs.push_back(ctx.compute("h_new", h->shape, h->dtype,
                             [&](const Idx& j) { return te::cast(h->dtype, h_new(j)); }));
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<te::Tensor> lower_momentum(LowerCtx& ctx) {
  Groups g = groups(ctx, 3);
  check_outputs(ctx, g, 2);
  double alpha = attr(ctx, "alpha", 0), beta = attr(ctx, "beta", 0),
         norm = attr(ctx, "norm_coefficient", 0);
  std::string mode = ctx.node().attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    throw ctx.error("mode must be standard or nesterov, got '" + mode + "'");
  const DType d = DType::Float64;
  std::vector<te::Tensor> xs, vs;
  for (size_t i = 0; i < g.n; ++i) {
    te::Tensor x = member(ctx, g, 0, i), grad = member(ctx, g, 1, i), v = member(ctx, g, 2, i);
    auto reg = [&](const Idx& j) { return te::imm(d, norm) * at(x, j) + at(grad, j); };
    // The first step (T = 0) takes the gradient whole.
    auto v_new = [&](const Idx& j) {
      Expr b = te::select(te::gt(g.t, te::imm(d, 0)), te::imm(d, beta), te::imm(d, 1));
      return te::imm(d, alpha) * at(v, j) + b * reg(j);
    };
    xs.push_back(ctx.compute("x_new", x->shape, x->dtype, [&](const Idx& j) {
      Expr step = mode == "standard" ? v_new(j) : reg(j) + te::imm(d, alpha) * v_new(j);
      return te::cast(x->dtype, at(x, j) - g.r * step);
    }));
    vs.push_back(ctx.compute("v_new", v->shape, v->dtype,
                             [&](const Idx& j) { return te::cast(v->dtype, v_new(j)); }));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

std::vector<te::Tensor> lower_adam(LowerCtx& ctx) {
  Groups g = groups(ctx, 4);
  check_outputs(ctx, g, 3);
  double alpha = attr(ctx, "alpha", 0.9), beta = attr(ctx, "beta", 0.999),
         eps = attr(ctx, "epsilon", 0), norm = attr(ctx, "norm_coefficient", 0),
         post = attr(ctx, "norm_coefficient_post", 0);
  const DType d = DType::Float64;
  std::vector<te::Tensor> xs, vs, hs;
  for (size_t i = 0; i < g.n; ++i) {
    te::Tensor x = member(ctx, g, 0, i), grad = member(ctx, g, 1, i), v = member(ctx, g, 2, i),
               h = member(ctx, g, 3, i);
    auto reg = [&](const Idx& j) { return te::imm(d, norm) * at(x, j) + at(grad, j); };
    auto v_new = [&](const Idx& j) {
      return te::imm(d, alpha) * at(v, j) + te::imm(d, 1 - alpha) * reg(j);
    };
    auto h_new = [&](const Idx& j) {
      Expr gr = reg(j);
      return te::imm(d, beta) * at(h, j) + te::imm(d, 1 - beta) * gr * gr;
    };
    xs.push_back(ctx.compute("x_new", x->shape, x->dtype, [&](const Idx& j) {
      // Bias correction from the second step on: R sqrt(1 - beta^T) / (1 - alpha^T).
      Expr corrected = g.r * te::sqrt(te::imm(d, 1) - te::pow(te::imm(d, beta), g.t)) /
                       (te::imm(d, 1) - te::pow(te::imm(d, alpha), g.t));
      Expr rate = te::select(te::gt(g.t, te::imm(d, 0)), corrected, g.r);
      Expr updated = at(x, j) - rate * (v_new(j) / (te::sqrt(h_new(j)) + te::imm(d, eps)));
      return te::cast(x->dtype, te::imm(d, 1 - post) * updated);
    }));
    vs.push_back(ctx.compute("v_new", v->shape, v->dtype,
                             [&](const Idx& j) { return te::cast(v->dtype, v_new(j)); }));
    hs.push_back(ctx.compute("h_new", h->shape, h->dtype,
                             [&](const Idx& j) { return te::cast(h->dtype, h_new(j)); }));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

void register_optimizer(Registry& r) {
  const std::string domain = "ai.onnx.preview.training.";
  r.add(domain + "Adagrad", lower_adagrad);
  r.add(domain + "Momentum", lower_momentum);
  r.add(domain + "Adam", lower_adam);
}

}  // namespace souffle::lower
