// Lowering of element-wise ops: arithmetic, activations, comparisons, logic, casts.
//
// Every op here becomes one injective ComputeOp whose body reads its inputs at broadcast indices,
// so the fusion planner sees a plain element-wise stage. Half-precision math is done in f32.
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

Expr read_as(const te::Tensor& t, const Idx& i, DType calc) {
  return te::cast(calc, read_broadcast(t, i));
}

/// Reads a one-element tensor (a scalar or shape [1]) as a value of type `calc`.
Expr read_scalar(LowerCtx& ctx, const te::Tensor& t, DType calc, const char* what) {
  if (shape_numel(t->shape) != 1)
    throw ctx.error(std::string(what) + " must be a single value, got shape " +
                    shape_str(t->shape));
  return te::cast(calc, te::read(t, Idx(t->shape.size(), te::int_imm(0))));
}

void require_float(LowerCtx& ctx, const te::Tensor& t) {
  if (!is_float(t->dtype))
    throw ctx.error(std::string("expects a floating-point input, got ") + dtype_name(t->dtype));
}

void require_same_dtype(LowerCtx& ctx, const std::vector<te::Tensor>& ts) {
  for (const te::Tensor& t : ts)
    if (t->dtype != ts[0]->dtype)
      throw ctx.error(std::string("input types differ (") + dtype_name(ts[0]->dtype) + " vs " +
                      dtype_name(t->dtype) + ")");
}

Shape broadcast_all(LowerCtx& ctx, const std::vector<te::Tensor>& ts) {
  Shape s = ts[0]->shape;
  for (size_t i = 1; i < ts.size(); ++i) s = broadcast_shapes(ctx, s, ts[i]->shape);
  return s;
}

/// x -> f(x) in the math type of x, stored in x's dtype.
using UnaryFn = std::function<Expr(const Expr& x, LowerCtx& ctx)>;

void add_unary(Registry& r, const std::string& op, bool float_only, UnaryFn f,
               bool transcendental = true, std::optional<DType> out = {}) {
  r.add(op, [f, float_only, transcendental, out](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor x = ctx.required(0);
    if (float_only) require_float(ctx, x);
    DType calc = transcendental ? math_type(x->dtype) : compute_type(x->dtype);
    DType od = out ? *out : x->dtype;
    return {ctx.compute("", x->shape, od,
                        [&](const Idx& i) { return te::cast(od, f(read_as(x, i, calc), ctx)); })};
  });
}

using BinaryFn = std::function<Expr(const Expr& a, const Expr& b)>;

/// Two inputs of one dtype, broadcast; f works in the arithmetic type; result of dtype out (or
/// the input dtype when out is nullopt).
void add_binary(Registry& r, const std::string& op, BinaryFn f, std::optional<DType> out = {}) {
  r.add(op, [f, out](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor a = ctx.required(0), b = ctx.required(1);
    require_same_dtype(ctx, {a, b});
    Shape s = broadcast_shapes(ctx, a->shape, b->shape);
    DType calc = compute_type(a->dtype);
    DType od = out ? *out : a->dtype;
    return {ctx.compute("", s, od, [&](const Idx& i) {
      return te::cast(od, f(read_as(a, i, calc), read_as(b, i, calc)));
    })};
  });
}

/// Min/Max/Sum/Mean: any number of inputs, all broadcast together.
void add_variadic(Registry& r, const std::string& op, te::BinaryOp combine, bool mean) {
  r.add(op, [combine, mean](LowerCtx& ctx) -> std::vector<te::Tensor> {
    std::vector<te::Tensor> ins;
    for (size_t k = 0; k < ctx.num_inputs(); ++k)
      if (ctx.has_input(k)) ins.push_back(ctx.input(k));
    if (ins.empty()) throw ctx.error("needs at least one input");
    require_same_dtype(ctx, ins);
    Shape s = broadcast_all(ctx, ins);
    DType dt = ins[0]->dtype;
    DType calc = compute_type(dt);
    return {ctx.compute("", s, dt, [&](const Idx& i) {
      Expr acc = read_as(ins[0], i, calc);
      for (size_t k = 1; k < ins.size(); ++k)
        acc = te::binary(combine, acc, read_as(ins[k], i, calc));
      if (mean) acc = acc / te::imm(calc, static_cast<double>(ins.size()));
      return te::cast(dt, acc);
    })};
  });
}

Expr zero(const Expr& x) {
  return te::imm(x.dtype(), 0);
}
Expr one(const Expr& x) {
  return te::imm(x.dtype(), 1);
}
Expr relu(const Expr& x) {
  return te::max(x, zero(x));
}
/// log(1 + exp(x)) without overflow for large x.
Expr softplus(const Expr& x) {
  return relu(x) + te::log(one(x) + te::exp(-te::abs(x)));
}

void register_arith(Registry& r) {
  add_binary(r, "Add", [](const Expr& a, const Expr& b) { return a + b; });
  add_binary(r, "Sub", [](const Expr& a, const Expr& b) { return a - b; });
  add_binary(r, "Mul", [](const Expr& a, const Expr& b) { return a * b; });
  // Integer division truncates toward zero (C semantics of BinaryOp::Div).
  add_binary(r, "Div", [](const Expr& a, const Expr& b) { return a / b; });

  // Pow: the exponent may have another type than the base; the result has the base's type.
  r.add("Pow", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor a = ctx.required(0), b = ctx.required(1);
    Shape s = broadcast_shapes(ctx, a->shape, b->shape);
    // An integer base goes through f64, which is exact for the integer powers that fit.
    DType calc = is_float(a->dtype) ? compute_type(a->dtype) : DType::Float64;
    return {ctx.compute("", s, a->dtype, [&](const Idx& i) {
      return te::cast(a->dtype, te::pow(read_as(a, i, calc), read_as(b, i, calc)));
    })};
  });

  // Mod: fmod=0 takes the divisor's sign (Python %), fmod=1 the dividend's (C fmod).
  r.add("Mod", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor a = ctx.required(0), b = ctx.required(1);
    require_same_dtype(ctx, {a, b});
    bool fmod = ctx.node().attr_int("fmod", 0) != 0;
    if (a->dtype == DType::Bool) throw ctx.error("Mod does not take bool tensors");
    Shape s = broadcast_shapes(ctx, a->shape, b->shape);
    DType calc = compute_type(a->dtype);
    return {ctx.compute("", s, a->dtype, [&](const Idx& i) {
      Expr x = read_as(a, i, calc), y = read_as(b, i, calc);
      Expr v;
      if (is_float(calc)) {
        Expr f = te::call(te::CallFn::Fmod, {x, y});
        // floor-mod from fmod: shift by y when the remainder's sign differs from y's.
        v = fmod ? f
                 : te::select(te::logical_and(te::ne(f, zero(f)),
                                              te::ne(te::lt(f, zero(f)), te::lt(y, zero(y)))),
                              f + y, f);
      } else {
        v = fmod ? x % y : te::floormod(x, y);
      }
      return te::cast(a->dtype, v);
    })};
  });

  add_unary(
      r, "Neg", false, [](const Expr& x, LowerCtx&) { return -x; }, false);
  add_unary(
      r, "Abs", false, [](const Expr& x, LowerCtx&) { return te::abs(x); }, false);
  add_unary(
      r, "Sign", false, [](const Expr& x, LowerCtx&) { return te::call(te::CallFn::Sign, {x}); },
      false);
  add_unary(r, "Reciprocal", false, [](const Expr& x, LowerCtx&) { return one(x) / x; });
  add_unary(r, "Sqrt", false, [](const Expr& x, LowerCtx&) { return te::sqrt(x); });
  add_unary(r, "Exp", false, [](const Expr& x, LowerCtx&) { return te::exp(x); });
  add_unary(r, "Log", false, [](const Expr& x, LowerCtx&) { return te::log(x); });
  add_unary(r, "Erf", false, [](const Expr& x, LowerCtx&) { return te::erf(x); });
  add_unary(r, "Tanh", false, [](const Expr& x, LowerCtx&) { return te::tanh(x); });
  add_unary(r, "Sigmoid", false, [](const Expr& x, LowerCtx&) { return te::sigmoid(x); });
  // Rounding of an integer is the identity; the call is harmless there.
  add_unary(r, "Floor", false,
            [](const Expr& x, LowerCtx&) { return te::call(te::CallFn::Floor, {x}); });
  add_unary(r, "Ceil", false,
            [](const Expr& x, LowerCtx&) { return te::call(te::CallFn::Ceil, {x}); });
  add_unary(r, "Round", false,
            [](const Expr& x, LowerCtx&) { return te::call(te::CallFn::Round, {x}); });

  struct Trig {
    const char* op;
    te::CallFn fn;
  };
  static const Trig kTrig[] = {
      {"Sin", te::CallFn::Sin},     {"Cos", te::CallFn::Cos},     {"Tan", te::CallFn::Tan},
      {"Asin", te::CallFn::Asin},   {"Acos", te::CallFn::Acos},   {"Atan", te::CallFn::Atan},
      {"Sinh", te::CallFn::Sinh},   {"Cosh", te::CallFn::Cosh},   {"Asinh", te::CallFn::Asinh},
      {"Acosh", te::CallFn::Acosh}, {"Atanh", te::CallFn::Atanh},
  };
  for (const Trig& t : kTrig) {
    te::CallFn fn = t.fn;
    add_unary(r, t.op, true, [fn](const Expr& x, LowerCtx&) { return te::call(fn, {x}); });
  }

  add_variadic(r, "Min", te::BinaryOp::Min, false);
  add_variadic(r, "Max", te::BinaryOp::Max, false);
  add_variadic(r, "Sum", te::BinaryOp::Add, false);
  add_variadic(r, "Mean", te::BinaryOp::Add, true);
}

void register_activations(Registry& r) {
  add_unary(
      r, "Relu", false, [](const Expr& x, LowerCtx&) { return relu(x); }, false);
  add_unary(r, "LeakyRelu", true, [](const Expr& x, LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 0.01);
    return te::select(te::lt(x, zero(x)), x * alpha, x);
  });
  add_unary(r, "Elu", true, [](const Expr& x, LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 1.0);
    return te::select(te::lt(x, zero(x)), (te::exp(x) - 1.0) * alpha, x);
  });
  add_unary(r, "Selu", true, [](const Expr& x, LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 1.67326319217681884765625);
    double gamma = ctx.node().attr_float("gamma", 1.05070102214813232421875);
    return te::select(te::le(x, zero(x)), (te::exp(x) * alpha - alpha) * gamma, x * gamma);
  });
  add_unary(r, "Celu", true, [](const Expr& x, LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 1.0);
    if (alpha == 0.0) throw ctx.error("alpha must not be 0");
    return relu(x) + te::min(zero(x), (te::exp(x / alpha) - 1.0) * alpha);
  });
  add_unary(r, "Gelu", true, [](const Expr& x, LowerCtx& ctx) {
    std::string approx = ctx.node().attr_string("approximate", "none");
    if (approx == "none") return x * 0.5 * (te::erf(x * (1.0 / std::sqrt(2.0))) + 1.0);
    if (approx == "tanh") {
      Expr inner = (x + x * x * x * 0.044715) * std::sqrt(2.0 / std::numbers::pi);
      return x * 0.5 * (te::tanh(inner) + 1.0);
    }
    throw ctx.error("unknown approximate mode '" + approx + "'");
  });
  add_unary(r, "HardSigmoid", true, [](const Expr& x, LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 0.2);
    double beta = ctx.node().attr_float("beta", 0.5);
    return te::max(zero(x), te::min(one(x), x * alpha + beta));
  });
  add_unary(r, "HardSwish", true, [](const Expr& x, LowerCtx&) {
    return x * te::max(zero(x), te::min(one(x), x * (1.0 / 6.0) + 0.5));
  });
  add_unary(r, "Softplus", true, [](const Expr& x, LowerCtx&) { return softplus(x); });
  add_unary(r, "Softsign", true, [](const Expr& x, LowerCtx&) { return x / (te::abs(x) + 1.0); });
  add_unary(r, "Mish", true, [](const Expr& x, LowerCtx&) { return x * te::tanh(softplus(x)); });
  add_unary(r, "ThresholdedRelu", true, [](const Expr& x, LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 1.0);
    return te::select(te::gt(x, te::imm(x.dtype(), alpha)), x, zero(x));
  });
  // Shrink also takes integer tensors; its math stays in the input's own type.
  add_unary(
      r, "Shrink", false,
      [](const Expr& x, LowerCtx& ctx) {
        double lambd = ctx.node().attr_float("lambd", 0.5);
        double bias = ctx.node().attr_float("bias", 0.0);
        DType t = x.dtype();
        return te::select(te::lt(x, te::imm(t, -lambd)), x + te::imm(t, bias),
                          te::select(te::gt(x, te::imm(t, lambd)), x - te::imm(t, bias), zero(x)));
      },
      false);

  // PRelu: the slope broadcasts unidirectionally to X. Before opset 7 a 1-D slope of size C
  // holds one value per channel (axis 1), which old exporters rely on.
  r.add("PRelu", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor x = ctx.required(0), slope = ctx.required(1);
    require_same_dtype(ctx, {x, slope});
    bool per_channel = ctx.opset() < 7 && slope->shape.size() == 1 && x->shape.size() >= 2 &&
                       slope->shape[0] == x->shape[1] && slope->shape[0] != 1;
    if (!per_channel && broadcast_shapes(ctx, x->shape, slope->shape) != x->shape)
      throw ctx.error("slope of shape " + shape_str(slope->shape) + " does not broadcast to " +
                      shape_str(x->shape));
    DType calc = compute_type(x->dtype);
    return {ctx.compute("", x->shape, x->dtype, [&](const Idx& i) {
      Expr v = read_as(x, i, calc);
      Expr a = per_channel ? te::cast(calc, te::read(slope, {i[1]})) : read_as(slope, i, calc);
      return te::cast(x->dtype, te::select(te::lt(v, zero(v)), v * a, v));
    })};
  });

  // Clip: bounds are attributes before opset 11 and optional scalar inputs from 11 on.
  r.add("Clip", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor x = ctx.required(0);
    DType calc = compute_type(x->dtype);
    bool from_attrs = ctx.opset() < 11;
    te::Tensor lo_t = from_attrs ? nullptr : ctx.input(1);
    te::Tensor hi_t = from_attrs ? nullptr : ctx.input(2);
    if (lo_t && lo_t->dtype != x->dtype) throw ctx.error("min has another type than the input");
    if (hi_t && hi_t->dtype != x->dtype) throw ctx.error("max has another type than the input");
    bool has_lo = lo_t || (from_attrs && ctx.node().has_attr("min"));
    bool has_hi = hi_t || (from_attrs && ctx.node().has_attr("max"));
    return {ctx.compute("", x->shape, x->dtype, [&](const Idx& i) {
      Expr v = read_as(x, i, calc);
      if (has_lo) {
        Expr lo = lo_t ? read_scalar(ctx, lo_t, calc, "min")
                       : te::imm(calc, ctx.node().attr_float("min", 0));
        v = te::max(v, lo);
      }
      if (has_hi) {
        Expr hi = hi_t ? read_scalar(ctx, hi_t, calc, "max")
                       : te::imm(calc, ctx.node().attr_float("max", 0));
        v = te::min(v, hi);
      }
      return te::cast(x->dtype, v);
    })};
  });
}

void register_logic(Registry& r) {
  add_binary(
      r, "Equal", [](const Expr& a, const Expr& b) { return te::eq(a, b); }, DType::Bool);
  add_binary(
      r, "Less", [](const Expr& a, const Expr& b) { return te::lt(a, b); }, DType::Bool);
  add_binary(
      r, "Greater", [](const Expr& a, const Expr& b) { return te::gt(a, b); }, DType::Bool);
  add_binary(
      r, "LessOrEqual", [](const Expr& a, const Expr& b) { return te::le(a, b); }, DType::Bool);
  add_binary(
      r, "GreaterOrEqual", [](const Expr& a, const Expr& b) { return te::ge(a, b); }, DType::Bool);
  add_binary(r, "And", [](const Expr& a, const Expr& b) { return te::logical_and(a, b); });
  add_binary(r, "Or", [](const Expr& a, const Expr& b) { return te::logical_or(a, b); });
  add_binary(r, "Xor",
             [](const Expr& a, const Expr& b) { return te::binary(te::BinaryOp::Xor, a, b); });
  add_unary(
      r, "Not", false, [](const Expr& x, LowerCtx&) { return te::logical_not(x); }, false);

  add_binary(r, "BitwiseAnd",
             [](const Expr& a, const Expr& b) { return te::binary(te::BinaryOp::BitAnd, a, b); });
  add_binary(r, "BitwiseOr",
             [](const Expr& a, const Expr& b) { return te::binary(te::BinaryOp::BitOr, a, b); });
  add_binary(r, "BitwiseXor",
             [](const Expr& a, const Expr& b) { return te::binary(te::BinaryOp::BitXor, a, b); });
  // ~x == x ^ (all ones); the stored value wraps to the element width.
  add_unary(
      r, "BitwiseNot", false,
      [](const Expr& x, LowerCtx& ctx) {
        if (!is_int(x.dtype())) throw ctx.error("BitwiseNot takes integer tensors");
        return te::binary(te::BinaryOp::BitXor, x, te::int_imm(-1, x.dtype()));
      },
      false);

  r.add("BitShift", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor a = ctx.required(0), b = ctx.required(1);
    require_same_dtype(ctx, {a, b});
    if (!is_int(a->dtype)) throw ctx.error("BitShift takes integer tensors");
    std::string dir = ctx.node().attr_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT")
      throw ctx.error("direction must be LEFT or RIGHT, got '" + dir + "'");
    te::BinaryOp op = dir == "LEFT" ? te::BinaryOp::Shl : te::BinaryOp::Shr;
    Shape s = broadcast_shapes(ctx, a->shape, b->shape);
    return {ctx.compute("", s, a->dtype, [&](const Idx& i) {
      return te::binary(op, read_broadcast(a, i), read_broadcast(b, i));
    })};
  });

  r.add("Where", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor c = ctx.required(0), x = ctx.required(1), y = ctx.required(2);
    if (c->dtype != DType::Bool) throw ctx.error("condition must be a bool tensor");
    require_same_dtype(ctx, {x, y});
    Shape s = broadcast_all(ctx, {c, x, y});
    return {ctx.compute("", s, x->dtype, [&](const Idx& i) {
      return te::select(read_broadcast(c, i), read_broadcast(x, i), read_broadcast(y, i));
    })};
  });

  add_unary(
      r, "IsNaN", true, [](const Expr& x, LowerCtx&) { return te::call(te::CallFn::IsNaN, {x}); },
      false, DType::Bool);
  add_unary(
      r, "IsInf", true,
      [](const Expr& x, LowerCtx& ctx) {
        bool pos = ctx.node().attr_int("detect_positive", 1) != 0;
        bool neg = ctx.node().attr_int("detect_negative", 1) != 0;
        if (pos && neg) return te::call(te::CallFn::IsInf, {x});
        if (pos) return te::call(te::CallFn::IsPosInf, {x});
        if (neg) return te::call(te::CallFn::IsNegInf, {x});
        return te::imm(DType::Bool, 0);
      },
      false, DType::Bool);
}

te::Tensor cast_to(LowerCtx& ctx, const te::Tensor& x, DType to) {
  if (x->dtype == to) return x;
  return ctx.compute("", x->shape, to, [&](const Idx& i) { return te::cast(to, te::read(x, i)); });
}

void register_casts(Registry& r) {
  r.add("Cast", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor x = ctx.required(0);
    if (!ctx.node().has_attr("to")) throw ctx.error("attribute 'to' is required");
    int64_t code = ctx.node().attr_int("to", 0);
    std::optional<DType> to = dtype_from_onnx(static_cast<int32_t>(code));
    if (!to) throw ctx.error("unsupported target type " + std::to_string(code));
    return {cast_to(ctx, x, *to)};
  });
  r.add("CastLike", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    return {cast_to(ctx, ctx.required(0), ctx.required(1)->dtype)};
  });
  r.add("Identity", [](LowerCtx& ctx) -> std::vector<te::Tensor> { return {ctx.required(0)}; });

  // Dropout at inference is the identity; its mask is all true. Training mode with a non-zero
  // ratio is random and has no static meaning, so it is refused.
  r.add("Dropout", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    te::Tensor x = ctx.required(0);
    bool training = false;
    double ratio = ctx.node().attr_float("ratio", 0.5);
    if (ctx.opset() >= 12) {
      if (ctx.has_input(2)) {
        ConstTensorPtr c = ctx.constant(2);
        if (!c) throw ctx.error("training_mode must be a constant");
        training = c->get_i64(0) != 0;
      }
      // The ratio only matters in training mode; at inference it may be any tensor.
      if (training && ctx.has_input(1)) {
        ConstTensorPtr c = ctx.constant(1);
        if (!c) throw ctx.error("ratio must be a constant in training mode");
        ratio = c->get_f64(0);
      }
    } else if (ctx.opset() < 7) {
      training = ctx.node().attr_int("is_test", 0) == 0;
    }
    if (training && ratio != 0.0)
      throw ctx.error("training-mode dropout (random) is not supported");
    std::vector<te::Tensor> outs{x};
    if (ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty()) {
      // Before opset 10 the mask had the input's element type.
      DType md = ctx.opset() < 10 ? x->dtype : DType::Bool;
      outs.push_back(ctx.compute("mask", x->shape, md, [&](const Idx&) { return te::imm(md, 1); }));
    }
    return outs;
  });
}

}  // namespace

void register_elementwise(Registry& r) {
  register_arith(r);
  register_activations(r);
  register_logic(r);
  register_casts(r);
}

}  // namespace souffle::lower
