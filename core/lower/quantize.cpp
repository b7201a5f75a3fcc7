// Lowering of linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
//
// Each is element-wise over its input with the scale and zero point read per tensor, per axis or
// per block; DynamicQuantizeLinear first reduces the input to its range (two reductions), then
// derives the scale and zero point as one-element TEs. (QLinearMatMul, QLinearConv and the
// *Integer ops live with their float counterparts in matmul.cpp and conv_pool.cpp.)
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

/// How a scale or zero point is indexed from an element index of the quantized tensor.
struct QuantParams {
  int64_t axis = -1;       ///< -1: one value for the whole tensor
  int64_t block_size = 0;  ///< > 0: blocked along `axis`
  Expr read(const te::Tensor& t, const Idx& i) const {
    if (axis < 0) return te::read(t, Idx(t->shape.size(), te::int_imm(0)));
    if (block_size <= 0) return te::read(t, {i[static_cast<size_t>(axis)]});
    // Blocked: the parameter has the input's shape with `axis` divided into blocks.
    Idx j = i;
    j[static_cast<size_t>(axis)] =
        te::floordiv(i[static_cast<size_t>(axis)], te::int_imm(block_size));
    return te::read(t, j);
  }
};

QuantParams quant_params(LowerCtx& ctx, const Shape& x, const te::Tensor& scale,
                         const te::Tensor& zp) {
  QuantParams q;
  const graph::Node& n = ctx.node();
  int64_t rank = static_cast<int64_t>(x.size());
  // One value for the whole tensor, as a scalar or a one-element vector: ONNX Runtime's
  // quantizer writes a bias's scale as [1] beside a scalar zero point.
  auto single = [](const Shape& s) { return shape_numel(s) == 1 && s.size() <= 1; };
  if (zp && zp->shape != scale->shape && !(single(scale->shape) && single(zp->shape)))
    throw ctx.error("zero point shape " + shape_str(zp->shape) + " differs from the scale's " +
                    shape_str(scale->shape));
  if (single(scale->shape)) return q;
  q.axis = normalize_axis(ctx, n.attr_int("axis", 1), rank);
  q.block_size = n.attr_int("block_size", 0);
  if (q.block_size > 0) {
    Shape want = x;
    want[static_cast<size_t>(q.axis)] =
        (x[static_cast<size_t>(q.axis)] + q.block_size - 1) / q.block_size;
    if (scale->shape != want)
      throw ctx.error("blocked scale must have shape " + shape_str(want) + ", got " +
                      shape_str(scale->shape));
    return q;
  }
  if (scale->shape != Shape{x[static_cast<size_t>(q.axis)]})
    throw ctx.error("per-axis scale must have shape [" +
                    std::to_string(x[static_cast<size_t>(q.axis)]) + "] (axis " +
                    std::to_string(q.axis) + "), got " + shape_str(scale->shape));
  return q;
}

/// The saturation range of an integer quantized type; UserError for other types.
std::pair<double, double> quant_range(LowerCtx& ctx, DType t) {
  switch (t) {
    case DType::UInt8:
      return {0, 255};
    case DType::Int8:
      return {-128, 127};
    case DType::UInt16:
      return {0, 65535};
    case DType::Int16:
      return {-32768, 32767};
    case DType::Int32:
      return {-2147483648.0, 2147483647.0};
    default:
      throw ctx.error(std::string("quantized type ") + dtype_name(t) +
                      " is not supported (int8, uint8, int16, uint16, int32)");
  }
}

/// saturate(round_half_even(v) + zero_point) in f64 (exact for every quantized type), as `t`.
Expr quantize_value(LowerCtx& ctx, const Expr& v, const Expr& zero_point, DType t) {
  auto [lo, hi] = quant_range(ctx, t);
  const DType d = DType::Float64;
  Expr q = te::call(te::CallFn::Round, {te::cast(d, v)}) + te::cast(d, zero_point);
  return te::cast(t, te::min(te::max(q, te::imm(d, lo)), te::imm(d, hi)));
}

std::vector<te::Tensor> lower_quantize(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), scale = ctx.required(1), zp = ctx.input(2);
  if (!is_float(x->dtype) && x->dtype != DType::Int32)
    throw ctx.error(std::string("input must be float or int32, got ") + dtype_name(x->dtype));
  DType out = zp ? zp->dtype : DType::UInt8;
  if (ctx.node().has_attr("output_dtype")) {
    auto od = dtype_from_onnx(static_cast<int32_t>(ctx.node().attr_int("output_dtype", 0)));
    if (!od) throw ctx.error("output_dtype is not a type we take");
    if (zp && *od != zp->dtype) throw ctx.error("output_dtype differs from the zero point's type");
    out = *od;
  }
  QuantParams q = quant_params(ctx, x->shape, scale, zp);
  // x / scale in the scale's arithmetic type (f32 for f32/f16/bf16 scales), as the reference.
  DType calc = compute_type(is_float(x->dtype) ? x->dtype : scale->dtype);
  calc = scale->dtype == DType::Float64 ? DType::Float64 : calc;
  quant_range(ctx, out);
  return {ctx.compute("", x->shape, out, [&](const Idx& i) {
    Expr v = round_to_own_type(te::cast(calc, te::read(x, i)) / te::cast(calc, q.read(scale, i)));
    Expr z = zp ? q.read(zp, i) : te::int_imm(0);
    return quantize_value(ctx, v, z, out);
  })};
}

std::vector<te::Tensor> lower_dequantize(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), scale = ctx.required(1), zp = ctx.input(2);
  if (!is_int(x->dtype))
    throw ctx.error(std::string("input must be an integer type, got ") + dtype_name(x->dtype));
  if (zp && zp->dtype != x->dtype) throw ctx.error("zero point must have the input's type");
  if (!is_float(scale->dtype)) throw ctx.error("scale must be a floating-point tensor");
  QuantParams q = quant_params(ctx, x->shape, scale, zp);
  DType out = scale->dtype;
  DType calc = compute_type(out);
  return {ctx.compute("", x->shape, out, [&](const Idx& i) {
    // (x - zero_point) is exact in int64 for every quantized type; then times the scale.
    Expr d = te::cast(DType::Int64, te::read(x, i));
    if (zp) d = d - te::cast(DType::Int64, q.read(zp, i));
    return te::cast(out, te::cast(calc, d) * te::cast(calc, q.read(scale, i)));
  })};
}

std::vector<te::Tensor> lower_dynamic_quantize(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  if (x->dtype != DType::Float32)
    throw ctx.error(std::string("input must be f32, got ") + dtype_name(x->dtype));
  const DType f = DType::Float32;
  Shape all = x->shape;
  auto xin = [&](const Idx&, const Idx& k) { return te::read(x, k); };
  // The range always includes 0, so that 0 is exactly representable.
  te::Tensor mx = ctx.reduce("max", {}, f, te::ReduceKind::Max, all, xin, te::imm(f, 0));
  te::Tensor mn = ctx.reduce("min", {}, f, te::ReduceKind::Min, all, xin, te::imm(f, 0));
  te::Tensor scale = ctx.compute("scale", {}, f, [&](const Idx&) {
    Expr hi = te::read(mx, {}), lo = te::read(mn, {});
    return te::select(te::eq(hi, lo), te::imm(f, 1), hi - lo) / te::imm(f, 255);
  });
  te::Tensor zero = ctx.compute("zero_point", {}, DType::UInt8, [&](const Idx&) {
    Expr z = round_to_own_type(te::imm(f, 0) - te::read(mn, {}) / te::read(scale, {}));
    return quantize_value(ctx, te::min(te::max(z, te::imm(f, 0)), te::imm(f, 255)), te::int_imm(0),
                          DType::UInt8);
  });
  te::Tensor y = ctx.compute("", x->shape, DType::UInt8, [&](const Idx& i) {
    return quantize_value(ctx, round_to_own_type(te::read(x, i) / te::read(scale, {})),
                          te::read(zero, {}), DType::UInt8);
  });
  return {y, scale, zero};
}

}  // namespace

void register_quantize(Registry& r) {
  r.add("QuantizeLinear", lower_quantize);
  r.add("DequantizeLinear", lower_dequantize);
  r.add("DynamicQuantizeLinear", lower_dynamic_quantize);
}

}  // namespace souffle::lower
