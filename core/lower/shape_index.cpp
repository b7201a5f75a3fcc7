// Lowering of shape, indexing and data-movement ops. Every pure index map (reshape, transpose,
// slice, pad, expand, tile, depth/space) is one compute op whose body is a Read with remapped
// indices, so later stages see it as an injective stage they can fuse or inline freely.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "core/lower/lower.h"

namespace souffle::lower {

void register_resize(Registry& r);  // core/lower/resize.cpp

namespace {

using te::Expr;
using te::Tensor;

Expr ci(int64_t v) {
  return te::int_imm(v);
}

/// e * c, leaving out the multiplication by one so printed index maps stay readable.
Expr mul_c(const Expr& e, int64_t c) {
  return c == 1 ? e : e * ci(c);
}
Expr add_c(const Expr& e, int64_t c) {
  if (c == 0) return e;
  return c > 0 ? e + ci(c) : e - ci(-c);
}

Expr as_index(const Expr& e) {
  return te::cast(DType::Int64, e);
}

/// A scalar immediate of dtype t holding element i of d (ints kept exact beyond 2^53).
Expr element_imm(DType t, const TensorData& d, int64_t i) {
  if (is_float(t)) return te::float_imm(d.get_f64(i), t);
  if (t == DType::Bool) return te::int_imm(d.get_i64(i) != 0 ? 1 : 0, t);
  return te::int_imm(d.get_i64(i), t);
}

/// Row-major offset of idx within shape.
Expr linearize(const std::vector<Expr>& idx, const Shape& shape) {
  Expr lin;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) lin = lin.defined() ? mul_c(idx[d], stride) + lin : mul_c(idx[d], stride);
    stride *= shape[d];
  }
  return lin.defined() ? lin : ci(0);
}

/// The index within shape of row-major offset lin (lin < numel(shape)).
std::vector<Expr> delinearize(const Expr& lin, const Shape& shape) {
  std::vector<Expr> idx(shape.size());
  size_t first = shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) {
      first = d;
      break;
    }
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      idx[d] = ci(0);
    } else {
      Expr q = stride == 1 ? lin : te::floordiv(lin, ci(stride));
      // The outermost non-unit dimension needs no modulo: lin is in range.
      idx[d] = d == first ? q : te::floormod(q, ci(shape[d]));
    }
    stride *= shape[d];
  }
  return idx;
}

/// Input index of a reshape from `in` to `out`. Dimensions are grouped into the shortest runs
/// whose sizes agree on both sides, so [N, C, H, W] -> [N, C*H*W] keeps n as is and remaps only
/// the merged run.
std::vector<Expr> reshape_index(const std::vector<Expr>& out_idx, const Shape& out,
                                const Shape& in) {
  if (shape_numel(in) == 0) return delinearize(linearize(out_idx, out), in);
  std::vector<Expr> in_idx;
  in_idx.reserve(in.size());
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    size_t i0 = i, j0 = j;
    int64_t pi = 1, pj = 1;
    if (i < in.size()) pi *= in[i++];
    if (j < out.size()) pj *= out[j++];
    while (pi != pj) {
      if (pi < pj) {
        SOUFFLE_CHECK(i < in.size(), "reshape_index: element counts differ");
        pi *= in[i++];
      } else {
        SOUFFLE_CHECK(j < out.size(), "reshape_index: element counts differ");
        pj *= out[j++];
      }
    }
    Shape si(in.begin() + i0, in.begin() + i), so(out.begin() + j0, out.begin() + j);
    std::vector<Expr> sub_out(out_idx.begin() + j0, out_idx.begin() + j);
    if (si == so) {
      for (const Expr& e : sub_out) in_idx.push_back(e);
    } else {
      for (const Expr& e : delinearize(linearize(sub_out, so), si)) in_idx.push_back(e);
    }
  }
  return in_idx;
}

/// x viewed with shape `out` (same element count). Constants are reshaped right away, since
/// shape-computing chains in exported models are made of exactly these.
Tensor reshape_tensor(LowerCtx& ctx, const Tensor& x, const Shape& out) {
  if (out == x->shape) return x;
  if (x->data) return ctx.constant_tensor("", std::make_shared<TensorData>(x->data->reshaped(out)));
  return ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    return te::read(x, reshape_index(i, out, x->shape));
  });
}

/// Axes given by an attribute in early opsets and by an input later; nullopt when neither.
std::optional<std::vector<int64_t>> attr_or_input_ints(const LowerCtx& ctx, const char* attr,
                                                       size_t input, const char* what) {
  if (ctx.has_input(input)) return ctx.constant_ints(input, what);
  if (ctx.node().has_attr(attr)) return ctx.node().attr_ints(attr);
  return std::nullopt;
}

/// Reads a constant scalar (or one-element tensor) input as an integer.
int64_t constant_scalar_int(const LowerCtx& ctx, size_t input, const char* what) {
  std::vector<int64_t> v = ctx.constant_ints(input, what);
  if (v.size() != 1) throw ctx.error(std::string(what) + " must hold exactly one value");
  return v[0];
}

/// Index expression read from an index tensor: negative values count from the end of a dimension
/// of size dim, and out-of-range values are clamped so a bad runtime index can never read past
/// the data (ONNX leaves that case undefined).
Expr wrap_index(const Expr& raw, int64_t dim) {
  Expr g = as_index(raw);
  g = te::select(te::lt(g, ci(0)), g + ci(dim), g);
  return te::min(te::max(g, ci(0)), ci(std::max<int64_t>(dim - 1, 0)));
}

/// For constant index tensors, the indices checked and made non-negative at lowering time (the
/// body then reads them directly); dim_of(flat position) is the size the index addresses.
Tensor checked_indices(LowerCtx& ctx, const Tensor& ind,
                       const std::function<int64_t(int64_t)>& dim_of) {
  if (is_float(ind->dtype)) throw ctx.error("indices must be an integer tensor");
  if (!ind->data) return nullptr;
  std::vector<int64_t> v = ind->data->to_i64();
  for (size_t p = 0; p < v.size(); ++p) {
    int64_t dim = dim_of(static_cast<int64_t>(p));
    int64_t g = v[p] < 0 ? v[p] + dim : v[p];
    if (g < 0 || g >= dim)
      throw ctx.error("index " + std::to_string(v[p]) +
                      " is out of range for a dimension of size " + std::to_string(dim));
    v[p] = g;
  }
  return ctx.constant_tensor("indices", TensorData::from_i64(DType::Int64, ind->shape, v));
}

/// The index at position `pos` of an index tensor, either pre-checked (`checked`) or wrapped.
Expr index_at(const Tensor& checked, const Tensor& raw, const std::vector<Expr>& pos, int64_t dim) {
  if (checked) return te::read(checked, pos);
  return wrap_index(te::read(raw, pos), dim);
}

// ---------------------------------------------------------------- constants and shapes

std::vector<Tensor> lower_constant(LowerCtx& ctx) {
  const graph::Node& n = ctx.node();
  ConstTensorPtr data;
  if (n.has_attr("value")) {
    data = n.attr_tensor("value");
  } else if (n.has_attr("value_float")) {
    data = TensorData::from_f64(DType::Float32, {}, {n.attr_float("value_float", 0)});
  } else if (n.has_attr("value_floats")) {
    std::vector<double> v = n.attr_floats("value_floats");
    data = TensorData::from_f64(DType::Float32, {static_cast<int64_t>(v.size())}, v);
  } else if (n.has_attr("value_int")) {
    data = TensorData::from_i64(DType::Int64, {}, {n.attr_int("value_int", 0)});
  } else if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = n.attr_ints("value_ints");
    data = TensorData::from_i64(DType::Int64, {static_cast<int64_t>(v.size())}, v);
  } else if (n.has_attr("sparse_value")) {
    throw ctx.error("sparse constants are not supported");
  } else if (n.has_attr("value_string") || n.has_attr("value_strings")) {
    throw ctx.error("string constants are not supported");
  }
  if (!data) throw ctx.error("Constant has no value attribute");
  return {ctx.constant_tensor("", data)};
}

std::vector<Tensor> lower_shape(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  auto clamp_pos = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clamp_pos(ctx.node().attr_int("start", 0));
  int64_t end = clamp_pos(ctx.node().attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x->shape[static_cast<size_t>(d)]);
  return {ctx.constant_tensor(
      "", TensorData::from_i64(DType::Int64, {static_cast<int64_t>(dims.size())}, dims))};
}

std::vector<Tensor> lower_size(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  return {ctx.constant_tensor("", TensorData::from_i64(DType::Int64, {}, {shape_numel(x->shape)}))};
}

/// A shape given as a constant 1-D tensor; negative dimensions are refused.
Shape shape_input(const LowerCtx& ctx, size_t input, const char* what) {
  Shape s = ctx.constant_ints(input, what);
  for (int64_t d : s)
    if (d < 0) throw ctx.error(std::string(what) + " has a negative dimension " + shape_str(s));
  return s;
}

std::vector<Tensor> lower_constant_of_shape(LowerCtx& ctx) {
  Shape shape = shape_input(ctx, 0, "ConstantOfShape's shape");
  ConstTensorPtr value = ctx.node().attr_tensor("value");
  if (value && value->numel() != 1) throw ctx.error("value must hold exactly one element");
  DType dt = value ? value->dtype() : DType::Float32;
  Expr v = value ? element_imm(dt, *value, 0) : te::float_imm(0.0);
  return {ctx.compute("", shape, dt, [&](const std::vector<Expr>&) { return v; })};
}

std::vector<Tensor> lower_range(LowerCtx& ctx) {
  ConstTensorPtr s = ctx.constant(0), l = ctx.constant(1), d = ctx.constant(2);
  if (!s || !l || !d)
    throw ctx.error("start, limit and delta must be constants (the output size depends on them)");
  if (s->numel() != 1 || l->numel() != 1 || d->numel() != 1)
    throw ctx.error("start, limit and delta must be scalars");
  DType dt = s->dtype();
  if (l->dtype() != dt || d->dtype() != dt) throw ctx.error("start, limit and delta types differ");
  int64_t n = 0;
  if (is_float(dt)) {
    double start = s->get_f64(0), limit = l->get_f64(0), delta = d->get_f64(0);
    if (delta == 0) throw ctx.error("delta must not be zero");
    n = std::max<int64_t>(static_cast<int64_t>(std::ceil((limit - start) / delta)), 0);
    return {ctx.compute("", {n}, dt, [&](const std::vector<Expr>& i) {
      Expr v = te::float_imm(start, DType::Float64) +
               te::cast(DType::Float64, i[0]) * te::float_imm(delta, DType::Float64);
      return te::cast(dt, v);
    })};
  }
  int64_t start = s->get_i64(0), limit = l->get_i64(0), delta = d->get_i64(0);
  if (delta == 0) throw ctx.error("delta must not be zero");
  int64_t span = limit - start;
  n = delta > 0 ? (span + delta - 1) / delta : (span + delta + 1) / delta;
  n = std::max<int64_t>(n, 0);
  return {ctx.compute("", {n}, dt, [&](const std::vector<Expr>& i) {
    return te::int_imm(start, dt) + te::cast(dt, i[0]) * te::int_imm(delta, dt);
  })};
}

// ---------------------------------------------------------------- views

std::vector<Tensor> lower_reshape(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  std::vector<int64_t> spec = ctx.opset() < 5 || !ctx.has_input(1)
                                  ? ctx.node().attr_ints("shape")
                                  : ctx.constant_ints(1, "Reshape's shape");
  bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  Shape out;
  int64_t infer = -1, known = 1;
  for (size_t d = 0; d < spec.size(); ++d) {
    int64_t v = spec[d];
    if (v == -1) {
      if (infer >= 0) throw ctx.error("more than one -1 in the target shape");
      infer = static_cast<int64_t>(d);
      out.push_back(1);
      continue;
    }
    if (v == 0 && !allowzero) {
      if (d >= x->shape.size())
        throw ctx.error("target shape copies dimension " + std::to_string(d) +
                        " that the input does not have");
      v = x->shape[d];
    }
    if (v < 0) throw ctx.error("invalid dimension " + std::to_string(v) + " in the target shape");
    out.push_back(v);
    known *= v;
  }
  int64_t numel = shape_numel(x->shape);
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      throw ctx.error("cannot infer the -1 dimension reshaping " + shape_str(x->shape));
    out[static_cast<size_t>(infer)] = numel / known;
  }
  if (shape_numel(out) != numel)
    throw ctx.error("cannot reshape " + shape_str(x->shape) + " to " + shape_str(out));
  return {reshape_tensor(ctx, x, out)};
}

std::vector<Tensor> lower_flatten(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) throw ctx.error("axis is out of range");
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= x->shape[static_cast<size_t>(d)];
  return {reshape_tensor(ctx, x, {a, b})};
}

std::vector<Tensor> lower_squeeze(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<bool> drop(x->shape.size(), false);
  auto axes = attr_or_input_ints(ctx, "axes", 1, "Squeeze's axes");
  if (axes) {
    for (int64_t a : *axes) {
      size_t d = static_cast<size_t>(normalize_axis(ctx, a, rank));
      if (x->shape[d] != 1)
        throw ctx.error("cannot squeeze axis " + std::to_string(a) + " of size " +
                        std::to_string(x->shape[d]));
      drop[d] = true;
    }
  } else {
    for (size_t d = 0; d < x->shape.size(); ++d) drop[d] = x->shape[d] == 1;
  }
  Shape out;
  for (size_t d = 0; d < x->shape.size(); ++d)
    if (!drop[d]) out.push_back(x->shape[d]);
  return {reshape_tensor(ctx, x, out)};
}

std::vector<Tensor> lower_unsqueeze(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  auto axes = attr_or_input_ints(ctx, "axes", 1, "Unsqueeze's axes");
  if (!axes) throw ctx.error("axes are required");
  int64_t out_rank = static_cast<int64_t>(x->shape.size() + axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) {
    size_t d = static_cast<size_t>(normalize_axis(ctx, a, out_rank));
    if (inserted[d]) throw ctx.error("axis " + std::to_string(a) + " is repeated");
    inserted[d] = true;
  }
  Shape out;
  size_t k = 0;
  for (size_t d = 0; d < inserted.size(); ++d) out.push_back(inserted[d] ? 1 : x->shape[k++]);
  return {reshape_tensor(ctx, x, out)};
}

std::vector<Tensor> lower_transpose(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  size_t rank = x->shape.size();
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(rank - 1 - d));
  if (perm.size() != rank) throw ctx.error("perm has the wrong length");
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = normalize_axis(ctx, p, static_cast<int64_t>(rank));
    if (seen[static_cast<size_t>(p)]) throw ctx.error("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  bool identity = true;
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = x->shape[static_cast<size_t>(perm[d])];
    identity = identity && perm[d] == static_cast<int64_t>(d);
  }
  if (identity) return {x};
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx(rank);
    for (size_t d = 0; d < rank; ++d) idx[static_cast<size_t>(perm[d])] = i[d];
    return te::read(x, idx);
  })};
}

// ---------------------------------------------------------------- concat / split / slice

std::vector<Tensor> lower_concat(LowerCtx& ctx) {
  std::vector<Tensor> parts;
  for (size_t k = 0; k < ctx.num_inputs(); ++k)
    if (ctx.input(k)) parts.push_back(ctx.input(k));
  if (parts.empty()) throw ctx.error("Concat needs at least one input");
  if (ctx.opset() >= 4 && !ctx.node().has_attr("axis")) throw ctx.error("axis is required");
  const Shape& s0 = parts[0]->shape;
  int64_t rank = static_cast<int64_t>(s0.size());
  if (rank == 0) throw ctx.error("cannot concatenate scalars");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 1), rank));
  Shape out = s0;
  out[axis] = 0;
  std::vector<int64_t> begin;
  for (const Tensor& p : parts) {
    if (p->dtype != parts[0]->dtype) throw ctx.error("inputs have different element types");
    if (p->shape.size() != s0.size()) throw ctx.error("inputs have different ranks");
    for (size_t d = 0; d < s0.size(); ++d)
      if (d != axis && p->shape[d] != s0[d])
        throw ctx.error("input shapes " + shape_str(s0) + " and " + shape_str(p->shape) +
                        " differ outside the concat axis");
    begin.push_back(out[axis]);
    out[axis] += p->shape[axis];
  }
  if (parts.size() == 1) return {parts[0]};
  DType dt = parts[0]->dtype;
  return {ctx.compute("", out, dt, [&](const std::vector<Expr>& i) {
    Expr body;
    for (size_t k = parts.size(); k-- > 0;) {
      if (parts[k]->shape[axis] == 0) continue;
      std::vector<Expr> idx = i;
      idx[axis] = add_c(i[axis], -begin[k]);
      Expr r = te::read(parts[k], idx);
      body = body.defined()
                 ? te::select(te::lt(i[axis], ci(begin[k] + parts[k]->shape[axis])), r, body)
                 : r;
    }
    return body.defined() ? body : te::imm(dt, 0);
  })};
}

std::vector<Tensor> lower_split(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank));
  int64_t dim = x->shape[axis];
  int64_t n = static_cast<int64_t>(ctx.num_outputs());
  std::vector<int64_t> sizes;
  if (auto s = attr_or_input_ints(ctx, "split", 1, "Split's split")) {
    sizes = *s;
  } else if (ctx.node().has_attr("num_outputs")) {
    int64_t k = ctx.node().attr_int("num_outputs", n);
    if (k <= 0 || k != n) throw ctx.error("num_outputs does not match the number of outputs");
    int64_t chunk = (dim + k - 1) / k;
    for (int64_t j = 0; j < k; ++j)
      sizes.push_back(std::max<int64_t>(std::min(chunk, dim - chunk * j), 0));
    if (chunk * (k - 1) >= dim && dim > 0 && k > 1)
      throw ctx.error("cannot split a dimension of " + std::to_string(dim) + " into " +
                      std::to_string(k) + " non-empty parts");
  } else {
    if (n <= 0 || dim % n != 0)
      throw ctx.error("dimension " + std::to_string(dim) + " does not split evenly into " +
                      std::to_string(n) + " outputs");
    sizes.assign(static_cast<size_t>(n), dim / n);
  }
  if (static_cast<int64_t>(sizes.size()) != n)
    throw ctx.error("split has " + std::to_string(sizes.size()) + " sizes for " +
                    std::to_string(n) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw ctx.error("negative split size");
    total += s;
  }
  if (total != dim) throw ctx.error("split sizes do not add up to " + std::to_string(dim));
  std::vector<Tensor> outs;
  int64_t begin = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape out = x->shape;
    out[axis] = sizes[k];
    if (sizes[k] == dim) {
      outs.push_back(x);
    } else {
      outs.push_back(ctx.compute(std::to_string(k), out, x->dtype, [&](const std::vector<Expr>& i) {
        std::vector<Expr> idx = i;
        idx[axis] = add_c(i[axis], begin);
        return te::read(x, idx);
      }));
    }
    begin += sizes[k];
  }
  return outs;
}

std::vector<Tensor> lower_slice(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.node().attr_ints("starts");
    ends = ctx.node().attr_ints("ends");
    axes = ctx.node().attr_ints("axes");
  } else {
    starts = ctx.constant_ints(1, "Slice's starts");
    ends = ctx.constant_ints(2, "Slice's ends");
    if (ctx.has_input(3)) axes = ctx.constant_ints(3, "Slice's axes");
    if (ctx.has_input(4)) steps = ctx.constant_ints(4, "Slice's steps");
  }
  if (starts.size() != ends.size()) throw ctx.error("starts and ends have different lengths");
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    throw ctx.error("starts, ends, axes and steps have different lengths");
  Shape out = x->shape;
  std::vector<int64_t> first(x->shape.size(), 0), step(x->shape.size(), 1);
  std::vector<bool> seen(x->shape.size(), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t a = static_cast<size_t>(normalize_axis(ctx, axes[k], rank));
    if (seen[a]) throw ctx.error("axis " + std::to_string(axes[k]) + " is repeated");
    seen[a] = true;
    int64_t s = steps[k], dim = x->shape[a];
    if (s == 0) throw ctx.error("step must not be zero");
    int64_t st = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t en = ends[k] < 0 ? ends[k] + dim : ends[k];
    int64_t len;
    if (s > 0) {
      st = std::clamp<int64_t>(st, 0, dim);
      en = std::clamp<int64_t>(en, 0, dim);
      len = en > st ? (en - st + s - 1) / s : 0;
    } else {
      st = std::clamp<int64_t>(st, 0, dim - 1);
      en = std::clamp<int64_t>(en, -1, dim - 1);
      len = st > en ? (st - en + (-s) - 1) / (-s) : 0;
    }
    out[a] = len;
    first[a] = st;
    step[a] = s;
  }
  if (out == x->shape && std::all_of(step.begin(), step.end(), [](int64_t s) { return s == 1; }))
    return {x};
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx(i.size());
    for (size_t d = 0; d < i.size(); ++d) idx[d] = add_c(mul_c(i[d], step[d]), first[d]);
    return te::read(x, idx);
  })};
}

// ---------------------------------------------------------------- gathers

std::vector<Tensor> lower_gather(LowerCtx& ctx) {
  Tensor x = ctx.required(0), ind = ctx.required(1);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (rank == 0) throw ctx.error("cannot gather from a scalar");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank));
  int64_t dim = x->shape[axis];
  Tensor checked = checked_indices(ctx, ind, [&](int64_t) { return dim; });
  size_t q = ind->shape.size();
  Shape out(x->shape.begin(), x->shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), ind->shape.begin(), ind->shape.end());
  out.insert(out.end(), x->shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x->shape.end());
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> pos(i.begin() + static_cast<std::ptrdiff_t>(axis),
                          i.begin() + static_cast<std::ptrdiff_t>(axis + q));
    std::vector<Expr> idx(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(axis));
    idx.push_back(index_at(checked, ind, pos, dim));
    idx.insert(idx.end(), i.begin() + static_cast<std::ptrdiff_t>(axis + q), i.end());
    return te::read(x, idx);
  })};
}

std::vector<Tensor> lower_gather_elements(LowerCtx& ctx) {
  Tensor x = ctx.required(0), ind = ctx.required(1);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (ind->shape.size() != x->shape.size()) throw ctx.error("data and indices ranks differ");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank));
  int64_t dim = x->shape[axis];
  Tensor checked = checked_indices(ctx, ind, [&](int64_t) { return dim; });
  return {ctx.compute("", ind->shape, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx = i;
    idx[axis] = index_at(checked, ind, i, dim);
    return te::read(x, idx);
  })};
}

std::vector<Tensor> lower_gather_nd(LowerCtx& ctx) {
  Tensor x = ctx.required(0), ind = ctx.required(1);
  size_t r = x->shape.size(), q = ind->shape.size();
  int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (r < 1 || q < 1) throw ctx.error("data and indices must have rank >= 1");
  if (b < 0 || static_cast<size_t>(b) >= std::min(r, q))
    throw ctx.error("batch_dims is out of range");
  size_t bd = static_cast<size_t>(b);
  int64_t m = ind->shape[q - 1];
  if (m < 1 || static_cast<size_t>(m) > r - bd)
    throw ctx.error("the last dimension of indices must be in [1, rank(data) - batch_dims]");
  for (size_t d = 0; d < bd; ++d)
    if (x->shape[d] != ind->shape[d])
      throw ctx.error("batch dimensions of data and indices differ");
  size_t mm = static_cast<size_t>(m);
  Tensor checked = checked_indices(
      ctx, ind, [&](int64_t p) { return x->shape[bd + static_cast<size_t>(p % m)]; });
  Shape out(ind->shape.begin(), ind->shape.end() - 1);
  out.insert(out.end(), x->shape.begin() + static_cast<std::ptrdiff_t>(bd + mm), x->shape.end());
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(bd));
    for (size_t k = 0; k < mm; ++k) {
      std::vector<Expr> pos(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(q - 1));
      pos.push_back(ci(static_cast<int64_t>(k)));
      idx.push_back(index_at(checked, ind, pos, x->shape[bd + k]));
    }
    idx.insert(idx.end(), i.begin() + static_cast<std::ptrdiff_t>(q - 1), i.end());
    return te::read(x, idx);
  })};
}

// ---------------------------------------------------------------- scatters

enum class ScatterReduce { None, Add, Mul, Max, Min };

ScatterReduce scatter_reduction(const LowerCtx& ctx) {
  std::string s = ctx.node().attr_string("reduction", "none");
  if (s == "none") return ScatterReduce::None;
  if (s == "add") return ScatterReduce::Add;
  if (s == "mul") return ScatterReduce::Mul;
  if (s == "max") return ScatterReduce::Max;
  if (s == "min") return ScatterReduce::Min;
  throw ctx.error("unknown reduction '" + s + "'");
}

te::ReduceKind reduce_kind(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::Add:
      return te::ReduceKind::Sum;
    case ScatterReduce::Mul:
      return te::ReduceKind::Prod;
    case ScatterReduce::Max:
      return te::ReduceKind::Max;
    case ScatterReduce::Min:
      return te::ReduceKind::Min;
    case ScatterReduce::None:
      break;
  }
  return te::ReduceKind::None;
}

Expr combine(ScatterReduce r, const Expr& a, const Expr& b) {
  switch (r) {
    case ScatterReduce::Add:
      return a + b;
    case ScatterReduce::Mul:
      return a * b;
    case ScatterReduce::Max:
      return te::max(a, b);
    case ScatterReduce::Min:
      return te::min(a, b);
    case ScatterReduce::None:
      break;
  }
  return b;
}

/// Shared tail of both scatters. `match(i, k)` says whether update k targets output element i;
/// `update(i, k)` reads that update. Without a reduction a first op finds the last matching update
/// (a max-reduction over k, -1 when none), and the output selects it; with one, the matching
/// updates are folded with the reduction and combined with the data. `key_shape`/`key_of` say
/// which output dimensions the match depends on, so the search runs once per key, not per element.
Tensor scatter_body(LowerCtx& ctx, const Tensor& data, int64_t num_updates, ScatterReduce red,
                    const Shape& key_shape,
                    const std::function<std::vector<Expr>(const std::vector<Expr>&)>& key_of,
                    const std::function<Expr(const std::vector<Expr>&, const Expr&)>& match,
                    const std::function<Expr(const std::vector<Expr>&, const Expr&)>& update) {
  if (num_updates == 0) return data;
  DType dt = data->dtype;
  if (red == ScatterReduce::None) {
    Tensor last = ctx.reduce(
        "last", key_shape, DType::Int64, te::ReduceKind::Max, {num_updates},
        [&](const std::vector<Expr>& key, const std::vector<Expr>& k) {
          return te::select(match(key, k[0]), k[0], ci(-1));
        },
        ci(-1));
    return ctx.compute("", data->shape, dt, [&](const std::vector<Expr>& i) {
      Expr l = te::read(last, key_of(i));
      return te::select(te::ge(l, ci(0)), update(i, l), te::read(data, i));
    });
  }
  DType acc_dt = dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
  te::ReduceKind kind = reduce_kind(red);
  Expr ident = te::reduce_identity(kind, acc_dt);
  Tensor acc = ctx.reduce("acc", data->shape, acc_dt, kind, {num_updates},
                          [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                            return te::select(match(key_of(i), k[0]),
                                              te::cast(acc_dt, update(i, k[0])), ident);
                          });
  return ctx.compute("", data->shape, dt, [&](const std::vector<Expr>& i) {
    return te::cast(dt, combine(red, te::cast(acc_dt, te::read(data, i)), te::read(acc, i)));
  });
}

/// ScatterND with constant indices: the updates that land on each key (the first k output
/// dimensions) are found at lowering time and stored in a table, [keys] for the last one, or
/// [keys, most hits] (-1 padded) for a reduction, so the op reads only the updates it needs.
Tensor scatter_nd_table(LowerCtx& ctx, const Tensor& data, const TensorData& indices, size_t k,
                        ScatterReduce red, const Shape& key_shape,
                        const std::function<std::vector<Expr>(const std::vector<Expr>&)>& key_of,
                        const std::function<Expr(const std::vector<Expr>&, const Expr&)>& update) {
  int64_t keys = shape_numel(key_shape);
  int64_t num_rows = indices.numel() / static_cast<int64_t>(k);
  std::vector<std::vector<int64_t>> hits(static_cast<size_t>(keys));
  size_t most = 0;
  for (int64_t row = 0; row < num_rows; ++row) {
    int64_t key = 0;
    for (size_t j = 0; j < k; ++j)
      key = key * key_shape[j] +
            indices.get_i64(row * static_cast<int64_t>(k) + static_cast<int64_t>(j));
    std::vector<int64_t>& h = hits[static_cast<size_t>(key)];
    if (red == ScatterReduce::None) h.clear();
    h.push_back(row);
    most = std::max(most, h.size());
  }
  DType dt = data->dtype;
  Shape table_shape = key_shape;
  table_shape.push_back(static_cast<int64_t>(most));
  std::vector<int64_t> table(static_cast<size_t>(keys) * most, -1);
  for (size_t key = 0; key < hits.size(); ++key)
    for (size_t d = 0; d < hits[key].size(); ++d) table[key * most + d] = hits[key][d];
  Tensor t = ctx.constant_tensor("rows", TensorData::from_i64(DType::Int64, table_shape, table));
  DType acc = dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
  return ctx.compute("", data->shape, dt, [&](const std::vector<Expr>& i) {
    std::vector<Expr> pos = key_of(i);
    pos.push_back(ci(0));
    Expr v = te::cast(acc, te::read(data, i));
    for (size_t d = 0; d < most; ++d) {
      pos.back() = ci(static_cast<int64_t>(d));
      Expr row = te::read(t, pos);
      Expr u = te::cast(acc, update(i, row));
      v = te::select(te::ge(row, ci(0)), red == ScatterReduce::None ? u : combine(red, v, u), v);
    }
    return te::cast(dt, v);
  });
}

std::vector<Tensor> lower_scatter_nd(LowerCtx& ctx) {
  Tensor x = ctx.required(0), ind = ctx.required(1), upd = ctx.required(2);
  size_t r = x->shape.size(), q = ind->shape.size();
  if (r < 1 || q < 1) throw ctx.error("data and indices must have rank >= 1");
  int64_t k = ind->shape[q - 1];
  if (k < 1 || static_cast<size_t>(k) > r)
    throw ctx.error("the last dimension of indices is out of range");
  size_t kk = static_cast<size_t>(k);
  Shape rows(ind->shape.begin(), ind->shape.end() - 1);
  Shape want = rows;
  want.insert(want.end(), x->shape.begin() + static_cast<std::ptrdiff_t>(kk), x->shape.end());
  if (upd->shape != want)
    throw ctx.error("updates have shape " + shape_str(upd->shape) + ", expected " +
                    shape_str(want));
  if (upd->dtype != x->dtype) throw ctx.error("data and updates types differ");
  Tensor checked =
      checked_indices(ctx, ind, [&](int64_t p) { return x->shape[static_cast<size_t>(p % k)]; });
  Shape key_shape(x->shape.begin(), x->shape.begin() + static_cast<std::ptrdiff_t>(kk));
  auto key_of = [&](const std::vector<Expr>& i) {
    return std::vector<Expr>(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(kk));
  };
  auto match = [&](const std::vector<Expr>& key, const Expr& row) {
    std::vector<Expr> pos = delinearize(row, rows);
    pos.push_back(ci(0));
    Expr m;
    for (size_t j = 0; j < kk; ++j) {
      pos.back() = ci(static_cast<int64_t>(j));
      Expr e = te::eq(index_at(checked, ind, pos, x->shape[j]), key[j]);
      m = m.defined() ? te::logical_and(m, e) : e;
    }
    return m;
  };
  auto update = [&](const std::vector<Expr>& i, const Expr& row) {
    std::vector<Expr> idx = delinearize(row, rows);
    idx.insert(idx.end(), i.begin() + static_cast<std::ptrdiff_t>(kk), i.end());
    return te::read(upd, idx);
  };
  ScatterReduce red = scatter_reduction(ctx);
  if (checked && shape_numel(rows) > 0)
    return {scatter_nd_table(ctx, x, *checked->data, kk, red, key_shape, key_of, update)};
  return {scatter_body(ctx, x, shape_numel(rows), red, key_shape, key_of, match, update)};
}

std::vector<Tensor> lower_scatter_elements(LowerCtx& ctx) {
  Tensor x = ctx.required(0), ind = ctx.required(1), upd = ctx.required(2);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (ind->shape.size() != x->shape.size() || upd->shape != ind->shape)
    throw ctx.error("indices and updates must have the shape of each other and the rank of data");
  if (upd->dtype != x->dtype) throw ctx.error("data and updates types differ");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank));
  for (size_t d = 0; d < x->shape.size(); ++d)
    if (d != axis && ind->shape[d] > x->shape[d])
      throw ctx.error("indices are larger than data outside the scatter axis");
  int64_t dim = x->shape[axis];
  Tensor checked = checked_indices(ctx, ind, [&](int64_t) { return dim; });
  ScatterReduce red =
      ctx.node().op_type == "Scatter" ? ScatterReduce::None : scatter_reduction(ctx);
  auto key_of = [](const std::vector<Expr>& i) { return i; };
  auto pos_of = [&](const std::vector<Expr>& i, const Expr& k) {
    std::vector<Expr> pos = i;
    pos[axis] = k;
    return pos;
  };
  auto match = [&](const std::vector<Expr>& i, const Expr& k) {
    Expr inside;
    for (size_t d = 0; d < i.size(); ++d) {
      if (d == axis || ind->shape[d] == x->shape[d]) continue;
      Expr e = te::lt(i[d], ci(ind->shape[d]));
      inside = inside.defined() ? te::logical_and(inside, e) : e;
    }
    Expr hit = te::eq(index_at(checked, ind, pos_of(i, k), dim), i[axis]);
    // The index read is guarded by a lazy select: outside the indices' extent it would be out
    // of bounds.
    return inside.defined() ? te::select(inside, hit, te::int_imm(0, DType::Bool)) : hit;
  };
  auto update = [&](const std::vector<Expr>& i, const Expr& k) {
    return te::read(upd, pos_of(i, k));
  };
  return {scatter_body(ctx, x, ind->shape[axis], red, x->shape, key_of, match, update)};
}

// ---------------------------------------------------------------- broadcast / tile / pad

std::vector<Tensor> lower_expand(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  Shape shape = shape_input(ctx, 1, "Expand's shape");
  Shape out = broadcast_shapes(ctx, x->shape, shape);
  if (out == x->shape) return {x};
  return {ctx.compute("", out, x->dtype,
                      [&](const std::vector<Expr>& i) { return read_broadcast(x, i); })};
}

std::vector<Tensor> lower_tile(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  std::vector<int64_t> reps = ctx.constant_ints(1, "Tile's repeats");
  if (reps.size() != x->shape.size()) throw ctx.error("repeats must have one value per dimension");
  Shape out = x->shape;
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0) throw ctx.error("repeats must not be negative");
    out[d] *= reps[d];
  }
  if (out == x->shape) return {x};
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx(i.size());
    for (size_t d = 0; d < i.size(); ++d)
      idx[d] = reps[d] == 1 || x->shape[d] == 1 ? (x->shape[d] == 1 ? ci(0) : i[d])
                                                : te::floormod(i[d], ci(x->shape[d]));
    return te::read(x, idx);
  })};
}

std::vector<Tensor> lower_pad(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    throw ctx.error("unknown pad mode '" + mode + "'");
  std::vector<int64_t> pads, axes;
  Expr value;
  if (ctx.opset() < 11) {
    pads = ctx.node().has_attr("pads") ? ctx.node().attr_ints("pads")
                                       : ctx.node().attr_ints("paddings");
    value = te::imm(x->dtype, ctx.node().attr_float("value", 0));
  } else {
    pads = ctx.constant_ints(1, "Pad's pads");
    if (ctx.has_input(2)) {
      Tensor cv = ctx.input(2);
      if (shape_numel(cv->shape) != 1) throw ctx.error("constant_value must be a scalar");
      if (cv->data)
        value = te::cast(x->dtype, element_imm(cv->dtype, *cv->data, 0));
      else
        value = te::cast(x->dtype, te::read(cv, std::vector<Expr>(cv->shape.size(), ci(0))));
    }
    if (ctx.has_input(3)) axes = ctx.constant_ints(3, "Pad's axes");
  }
  if (!value.defined()) value = te::imm(x->dtype, 0);
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size()) throw ctx.error("pads must have two values per padded axis");
  std::vector<int64_t> before(x->shape.size(), 0), after(x->shape.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t a = static_cast<size_t>(normalize_axis(ctx, axes[k], rank));
    before[a] = pads[k];
    after[a] = pads[k + axes.size()];
  }
  Shape out = x->shape;
  for (size_t d = 0; d < out.size(); ++d) {
    out[d] += before[d] + after[d];
    if (out[d] < 0) throw ctx.error("pads remove more than the whole dimension");
    if (mode != "constant" && x->shape[d] == 0 && out[d] > 0)
      throw ctx.error("cannot " + mode + "-pad an empty dimension");
  }
  if (out == x->shape &&
      std::all_of(before.begin(), before.end(), [](int64_t b) { return b == 0; }))
    return {x};
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx(i.size());
    Expr inside;
    for (size_t d = 0; d < i.size(); ++d) {
      int64_t n = x->shape[d];
      Expr j = add_c(i[d], -before[d]);
      if (before[d] <= 0 && after[d] <= 0) {
        idx[d] = j;  // only cropped: every read lies inside
        continue;
      }
      if (mode == "constant") {
        Expr e;
        if (before[d] > 0) e = te::ge(j, ci(0));
        if (after[d] > 0) e = e.defined() ? te::logical_and(e, te::lt(j, ci(n))) : te::lt(j, ci(n));
        inside = inside.defined() ? te::logical_and(inside, e) : e;
        idx[d] = j;
      } else if (mode == "edge") {
        idx[d] = te::min(te::max(j, ci(0)), ci(n - 1));
      } else if (mode == "wrap") {
        idx[d] = te::floormod(j, ci(n));
      } else if (n == 1) {
        idx[d] = ci(0);
      } else {
        // Reflection is periodic with period 2(n-1): fold the phase back onto [0, n).
        Expr m = te::floormod(j, ci(2 * (n - 1)));
        idx[d] = te::select(te::lt(m, ci(n)), m, ci(2 * (n - 1)) - m);
      }
    }
    Expr r = te::read(x, idx);
    return inside.defined() ? te::select(inside, r, value) : r;
  })};
}

// ---------------------------------------------------------------- depth <-> space

std::vector<Tensor> lower_depth_to_space(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  if (x->shape.size() != 4) throw ctx.error("input must have rank 4");
  int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0) throw ctx.error("blocksize must be positive");
  bool crd = ctx.node().attr_string("mode", "DCR") == "CRD";
  if (!crd && ctx.node().attr_string("mode", "DCR") != "DCR")
    throw ctx.error("mode must be DCR or CRD");
  int64_t c = x->shape[1];
  if (c % (b * b) != 0) throw ctx.error("channels are not divisible by blocksize^2");
  int64_t oc = c / (b * b);
  Shape out = {x->shape[0], oc, x->shape[2] * b, x->shape[3] * b};
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    Expr bh = te::floormod(i[2], ci(b)), bw = te::floormod(i[3], ci(b));
    Expr ch =
        crd ? mul_c(i[1], b * b) + mul_c(bh, b) + bw : mul_c(bh, b * oc) + mul_c(bw, oc) + i[1];
    return te::read(x, {i[0], ch, te::floordiv(i[2], ci(b)), te::floordiv(i[3], ci(b))});
  })};
}

std::vector<Tensor> lower_space_to_depth(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  if (x->shape.size() != 4) throw ctx.error("input must have rank 4");
  int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0) throw ctx.error("blocksize must be positive");
  int64_t c = x->shape[1];
  if (x->shape[2] % b != 0 || x->shape[3] % b != 0)
    throw ctx.error("spatial dimensions are not divisible by blocksize");
  Shape out = {x->shape[0], c * b * b, x->shape[2] / b, x->shape[3] / b};
  return {ctx.compute("", out, x->dtype, [&](const std::vector<Expr>& i) {
    Expr bh = te::floordiv(i[1], ci(b * c));
    Expr bw = te::floormod(te::floordiv(i[1], ci(c)), ci(b));
    Expr ch = te::floormod(i[1], ci(c));
    return te::read(x, {i[0], ch, mul_c(i[2], b) + bh, mul_c(i[3], b) + bw});
  })};
}

// ---------------------------------------------------------------- masks and scans

std::vector<Tensor> lower_trilu(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  size_t r = x->shape.size();
  if (r < 2) throw ctx.error("input must have rank >= 2");
  Expr k = ci(0);
  if (ctx.has_input(1)) {
    Tensor kt = ctx.input(1);
    if (shape_numel(kt->shape) != 1) throw ctx.error("k must be a scalar");
    k = kt->data ? ci(kt->data->get_i64(0))
                 : as_index(te::read(kt, std::vector<Expr>(kt->shape.size(), ci(0))));
  }
  bool upper = ctx.node().attr_int("upper", 1) != 0;
  return {ctx.compute("", x->shape, x->dtype, [&](const std::vector<Expr>& i) {
    Expr diff = i[r - 1] - i[r - 2];
    Expr keep = upper ? te::ge(diff, k) : te::le(diff, k);
    return te::select(keep, te::read(x, i), te::imm(x->dtype, 0));
  })};
}

std::vector<Tensor> lower_cumsum(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  size_t axis =
      static_cast<size_t>(normalize_axis(ctx, constant_scalar_int(ctx, 1, "CumSum's axis"), rank));
  bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  int64_t n = x->shape[axis];
  DType dt = x->dtype;
  DType acc = dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
  Tensor sum =
      ctx.reduce(acc == dt ? "" : "acc", x->shape, acc, te::ReduceKind::Sum, {n},
                 [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                   std::vector<Expr> idx = i;
                   idx[axis] = k[0];
                   Expr in = reverse ? (exclusive ? te::gt(k[0], i[axis]) : te::ge(k[0], i[axis]))
                                     : (exclusive ? te::lt(k[0], i[axis]) : te::le(k[0], i[axis]));
                   return te::select(in, te::cast(acc, te::read(x, idx)), te::imm(acc, 0));
                 });
  if (acc == dt) return {sum};
  return {ctx.compute("", x->shape, dt,
                      [&](const std::vector<Expr>& i) { return te::cast(dt, te::read(sum, i)); })};
}

std::vector<Tensor> lower_one_hot(LowerCtx& ctx) {
  Tensor ind = ctx.required(0), values = ctx.required(2);
  int64_t depth = 0;
  {
    ConstTensorPtr d = ctx.constant(1);
    if (!d) throw ctx.error("depth must be a constant (the output size depends on it)");
    if (d->numel() != 1) throw ctx.error("depth must be a scalar");
    depth = static_cast<int64_t>(d->get_f64(0));
  }
  if (depth <= 0) throw ctx.error("depth must be positive");
  if (shape_numel(values->shape) != 2 || values->shape.size() != 1)
    throw ctx.error("values must be a tensor of two elements");
  int64_t out_rank = static_cast<int64_t>(ind->shape.size()) + 1;
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", -1), out_rank));
  Shape out = ind->shape;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  return {ctx.compute("", out, values->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> pos = i;
    pos.erase(pos.begin() + static_cast<std::ptrdiff_t>(axis));
    Expr g = as_index(te::read(ind, pos));
    g = te::select(te::lt(g, ci(0)), g + ci(depth), g);
    return te::select(te::eq(g, i[axis]), te::read(values, {ci(1)}), te::read(values, {ci(0)}));
  })};
}

std::vector<Tensor> lower_eye_like(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  if (x->shape.size() != 2) throw ctx.error("input must have rank 2");
  DType dt = x->dtype;
  if (ctx.node().has_attr("dtype")) {
    auto t = dtype_from_onnx(static_cast<int32_t>(ctx.node().attr_int("dtype", 1)));
    if (!t) throw ctx.error("unsupported dtype");
    dt = *t;
  }
  int64_t k = ctx.node().attr_int("k", 0);
  return {ctx.compute("", x->shape, dt, [&](const std::vector<Expr>& i) {
    return te::select(te::eq(i[1] - i[0], ci(k)), te::imm(dt, 1), te::imm(dt, 0));
  })};
}

// ---------------------------------------------------------------- data-dependent sizes

std::vector<Tensor> lower_compress(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  ConstTensorPtr cond = ctx.constant(1);
  if (!cond)
    throw ctx.error("condition must be a constant (the output size depends on its values)");
  if (cond->shape().size() != 1) throw ctx.error("condition must be 1-D");
  bool flat = !ctx.node().has_attr("axis");
  Tensor src = x;
  size_t axis = 0;
  if (flat) {
    src = reshape_tensor(ctx, x, {shape_numel(x->shape)});
  } else {
    axis = static_cast<size_t>(
        normalize_axis(ctx, ctx.node().attr_int("axis", 0), static_cast<int64_t>(x->shape.size())));
  }
  int64_t dim = src->shape[axis];
  if (cond->numel() > dim) throw ctx.error("condition is longer than the compressed axis");
  std::vector<int64_t> sel;
  for (int64_t p = 0; p < cond->numel(); ++p)
    if (cond->get_f64(p) != 0) sel.push_back(p);
  Tensor table = ctx.constant_tensor(
      "positions", TensorData::from_i64(DType::Int64, {static_cast<int64_t>(sel.size())}, sel));
  Shape out = src->shape;
  out[axis] = static_cast<int64_t>(sel.size());
  return {ctx.compute(flat ? "select" : "", out, x->dtype, [&](const std::vector<Expr>& i) {
    std::vector<Expr> idx = i;
    idx[axis] = te::read(table, {i[axis]});
    return te::read(src, idx);
  })};
}

std::vector<Tensor> lower_non_zero(LowerCtx& ctx) {
  Tensor x = ctx.required(0);
  if (!x->data)
    throw ctx.error(
        "not supported: the output size depends on the input's values (the number of nonzero "
        "elements); only static shapes are compiled (a constant input is folded)");
  const TensorData& d = *x->data;
  int64_t r = static_cast<int64_t>(d.shape().size());
  std::vector<int64_t> hits;
  for (int64_t p = 0; p < d.numel(); ++p)
    if (d.get_f64(p) != 0) hits.push_back(p);
  int64_t n = static_cast<int64_t>(hits.size());
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(r, 1) * n));
  for (int64_t h = 0; h < n; ++h) {
    int64_t p = hits[static_cast<size_t>(h)];
    for (int64_t a = r; a-- > 0;) {
      int64_t dim = d.shape()[static_cast<size_t>(a)];
      v[static_cast<size_t>(a * n + h)] = p % dim;
      p /= dim;
    }
  }
  // A scalar counts as rank 1 here, as the reference implementation does.
  if (r == 0) std::fill(v.begin(), v.end(), 0);
  return {
      ctx.constant_tensor("", TensorData::from_i64(DType::Int64, {std::max<int64_t>(r, 1), n}, v))};
}

}  // namespace

void register_shape_index(Registry& r) {
  r.add("Constant", lower_constant);
  r.add("Shape", lower_shape);
  r.add("Size", lower_size);
  r.add("ConstantOfShape", lower_constant_of_shape);
  r.add("Range", lower_range);
  r.add("Reshape", lower_reshape);
  r.add("Flatten", lower_flatten);
  r.add("Squeeze", lower_squeeze);
  r.add("Unsqueeze", lower_unsqueeze);
  r.add("Transpose", lower_transpose);
  r.add("Concat", lower_concat);
  r.add("Split", lower_split);
  r.add("Slice", lower_slice);
  r.add("Gather", lower_gather);
  r.add("GatherElements", lower_gather_elements);
  r.add("GatherND", lower_gather_nd);
  r.add("ScatterND", lower_scatter_nd);
  r.add("ScatterElements", lower_scatter_elements);
  r.add("Scatter", lower_scatter_elements);
  r.add("Expand", lower_expand);
  r.add("Tile", lower_tile);
  r.add("Pad", lower_pad);
  r.add("DepthToSpace", lower_depth_to_space);
  r.add("SpaceToDepth", lower_space_to_depth);
  r.add("Trilu", lower_trilu);
  r.add("CumSum", lower_cumsum);
  r.add("OneHot", lower_one_hot);
  r.add("EyeLike", lower_eye_like);
  r.add("Compress", lower_compress);
  r.add("NonZero", lower_non_zero);
  register_resize(r);
}

}  // namespace souffle::lower
