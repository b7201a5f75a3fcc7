// Lowering of the com.microsoft contrib ops that ONNX Runtime's exporters, quantizer and graph
// optimizers write most often, as ONNX Runtime's ContribOperators documentation defines them:
// FusedMatMul, FusedConv, Gelu / FastGelu / BiasGelu / QuickGelu, BiasAdd / BiasSplitGelu,
// EmbedLayerNormalization, SkipLayerNormalization, LayerNormalization,
// (Skip)SimplifiedLayerNormalization (RMS norm; the plain one lives in the ONNX domain, where
// ONNX Runtime registers it), Attention and MultiHeadAttention (static shapes, no past state),
// the QLinear element-wise ops, pool, concat and QGemm of its quantizer, its
// DynamicQuantizeLSTM, and the MatMulIntegerToFloat / DynamicQuantizeMatMul its optimizer makes
// of dynamically quantized matmuls. Any other contrib op (GroupQueryAttention, ...) is not
// registered, so the model is refused naming the op, its domain and its nodes; a documented input
// or attribute we do not lower (a past key/value cache, rotary embeddings, packed QKV) is refused
// naming it.
//
// Everything is built from the same shapes as the ONNX ops they fuse: matmuls as one reduce,
// statistics as reduces followed by an element-wise normalize, softmax as max / exp / sum /
// divide, so the global analysis sees the patterns it already fuses.
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <set>
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

void require_float(const LowerCtx& ctx, const te::Tensor& t, const char* what) {
  if (!is_float(t->dtype))
    throw ctx.error(std::string(what) + " must be a floating-point tensor, got " +
                    dtype_name(t->dtype));
}

/// A one-element tensor (scalar or [1]) read as a value of type `calc`.
Expr read_scalar(const LowerCtx& ctx, const te::Tensor& t, DType calc, const char* what) {
  if (shape_numel(t->shape) != 1)
    throw ctx.error(std::string(what) + " must be a single value, got shape " +
                    shape_str(t->shape));
  return te::cast(calc, te::read(t, Idx(t->shape.size(), te::int_imm(0))));
}

/// A [n] vector (a bias, gamma, beta) that must match the last dim `n` of the input.
void require_vector(const LowerCtx& ctx, const te::Tensor& t, int64_t n, const char* what) {
  if (t->shape != Shape{n})
    throw ctx.error(std::string(what) + " must have shape [" + std::to_string(n) + "], got " +
                    shape_str(t->shape));
}

/// The output name of output `i`, or "" when the node does not ask for it.
bool wants_output(const LowerCtx& ctx, size_t i) {
  return i < ctx.num_outputs() && !ctx.node().outputs[i].empty();
}

void refuse_input(const LowerCtx& ctx, size_t i, const char* name, const char* why) {
  if (ctx.has_input(i))
    throw ctx.error(std::string("input ") + std::to_string(i) + " '" + name +
                    "' is not supported: " + why);
}

// ---- FusedMatMul ----

/// One operand of FusedMatMul as the matmul sees it: with transBatch the first dim moves to
/// the place before the last (perm [1..n-2, 0, n-1]); with trans the last two dims swap.
struct MatOperand {
  te::Tensor t;
  bool trans = false, trans_batch = false;
  Shape batch;       ///< the logical batch dims
  int64_t rows = 0;  ///< of the logical matrix
  int64_t cols = 0;

  static MatOperand make(const LowerCtx& ctx, te::Tensor t, bool trans, bool trans_batch,
                         const char* what) {
    MatOperand o;
    o.t = t;
    const Shape& s = t->shape;
    if (s.size() < 2)
      throw ctx.error(std::string(what) + " of shape " + shape_str(s) +
                      " must have rank >= 2 (rank-1 operands are not supported)");
    o.trans = trans;
    o.trans_batch = trans_batch && s.size() >= 3;
    Shape logical = s;
    if (o.trans_batch) {
      logical.assign(s.begin() + 1, s.end() - 1);
      logical.push_back(s.front());
      logical.push_back(s.back());
    }
    o.batch.assign(logical.begin(), logical.end() - 2);
    int64_t p = logical[logical.size() - 2], q = logical.back();
    o.rows = trans ? q : p;
    o.cols = trans ? p : q;
    return o;
  }

  /// The element at logical (batch..., row, col); `out_batch` is the broadcast batch index.
  Expr at(const Idx& out_batch, const Expr& row, const Expr& col) const {
    Idx b;
    size_t off = out_batch.size() - batch.size();
    for (size_t d = 0; d < batch.size(); ++d)
      b.push_back(batch[d] == 1 ? te::int_imm(0) : out_batch[off + d]);
    Expr p = trans ? col : row, q = trans ? row : col;
    Idx idx;
    if (trans_batch) {
      idx.push_back(p);
      idx.insert(idx.end(), b.begin(), b.end());
    } else {
      idx = b;
      idx.push_back(p);
    }
    idx.push_back(q);
    return te::read(t, std::move(idx));
  }
};

std::vector<te::Tensor> lower_fused_matmul(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), b = ctx.required(1);
  require_float(ctx, a, "A");
  if (a->dtype != b->dtype) throw ctx.error("A and B have different types");
  const graph::Node& n = ctx.node();
  double alpha = n.attr_float("alpha", 1.0);
  MatOperand x = MatOperand::make(ctx, a, n.attr_int("transA", 0) != 0,
                                  n.attr_int("transBatchA", 0) != 0, "A");
  MatOperand y = MatOperand::make(ctx, b, n.attr_int("transB", 0) != 0,
                                  n.attr_int("transBatchB", 0) != 0, "B");
  if (x.cols != y.rows)
    throw ctx.error("inner dimensions differ: " + shape_str(a->shape) + " x " +
                    shape_str(b->shape) + " (after the transposes) have " + std::to_string(x.cols) +
                    " and " + std::to_string(y.rows));
  Shape batch = broadcast_shapes(ctx, x.batch, y.batch);
  Shape out = batch;
  out.push_back(x.rows);
  out.push_back(y.cols);
  const size_t nb = batch.size();
  DType dt = a->dtype, ct = compute_type(dt);
  te::Tensor acc =
      ctx.reduce("matmul", out, ct, te::ReduceKind::Sum, {x.cols}, [&](const Idx& i, const Idx& r) {
        Idx bi(i.begin(), i.begin() + static_cast<long>(nb));
        return te::cast(ct, x.at(bi, i[nb], r[0])) * te::cast(ct, y.at(bi, r[0], i[nb + 1]));
      });
  if (alpha == 1.0 && ct == dt) return {acc};
  return {ctx.compute("scale", out, dt, [&](const Idx& i) {
    Expr v = te::read(acc, i);
    if (alpha != 1.0) v = v * alpha;
    return te::cast(dt, v);
  })};
}

// ---- Gelu family ----

Expr gelu_erf(const Expr& x) {
  return x * 0.5 * (te::erf(x * (1.0 / std::numbers::sqrt2)) + 1.0);
}

Expr gelu_tanh(const Expr& x) {
  Expr inner = (x + x * x * x * 0.044715) * std::sqrt(2.0 / std::numbers::pi);
  return x * 0.5 * (te::tanh(inner) + 1.0);
}

/// f(x + bias) element-wise, bias (optional input 1) broadcast along the last dims.
std::vector<te::Tensor> biased_unary(LowerCtx& ctx, bool bias_required,
                                     const std::function<Expr(const Expr&)>& f) {
  te::Tensor x = ctx.required(0);
  te::Tensor bias = bias_required ? ctx.required(1) : ctx.input(1);
  require_float(ctx, x, "input");
  Shape s = x->shape;
  if (bias) {
    if (bias->dtype != x->dtype) throw ctx.error("bias must have the input's type");
    if (broadcast_shapes(ctx, s, bias->shape) != s)
      throw ctx.error("bias of shape " + shape_str(bias->shape) +
                      " does not broadcast to the input " + shape_str(s));
  }
  DType dt = x->dtype, ct = compute_type(dt);
  return {ctx.compute("", s, dt, [&](const Idx& i) {
    Expr v = te::cast(ct, te::read(x, i));
    if (bias) v = v + te::cast(ct, read_broadcast(bias, i));
    return te::cast(dt, f(v));
  })};
}

std::vector<te::Tensor> lower_quick_gelu(LowerCtx& ctx) {
  double alpha = ctx.node().attr_float("alpha", 1.702);
  return biased_unary(ctx, false, [&](const Expr& x) { return x * te::sigmoid(x * alpha); });
}

std::vector<te::Tensor> lower_bias_add(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), bias = ctx.required(1), skip = ctx.required(2);
  require_float(ctx, x, "X");
  if (x->shape.size() != 3) throw ctx.error("X must have rank 3 [N, S, C]");
  require_vector(ctx, bias, x->shape[2], "bias");
  if (skip->shape != x->shape) throw ctx.error("skip must have X's shape");
  DType dt = x->dtype, ct = compute_type(dt);
  return {ctx.compute("", x->shape, dt, [&](const Idx& i) {
    return te::cast(dt, te::cast(ct, te::read(x, i)) + te::cast(ct, te::read(bias, {i[2]})) +
                            te::cast(ct, te::read(skip, i)));
  })};
}

std::vector<te::Tensor> lower_bias_split_gelu(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), bias = ctx.required(1);
  require_float(ctx, x, "X");
  if (x->shape.size() != 3) throw ctx.error("X must have rank 3 [N, S, D]");
  int64_t d = x->shape[2];
  if (d % 2 != 0) throw ctx.error("the last dim of X must be even");
  require_vector(ctx, bias, d, "bias");
  DType dt = x->dtype, ct = compute_type(dt);
  auto at = [&](const Idx& i, const Expr& c) {
    return te::cast(ct, te::read(x, {i[0], i[1], c})) + te::cast(ct, te::read(bias, {c}));
  };
  // Y = left * Gelu(right), the halves of X + bias along the last dim.
  return {ctx.compute("", {x->shape[0], x->shape[1], d / 2}, dt, [&](const Idx& i) {
    return te::cast(dt, at(i, i[2]) * gelu_erf(at(i, i[2] + te::int_imm(d / 2))));
  })};
}

// ---- Layer norms with a skip input, RMS norm ----

/// x + skip (+ bias) over the input's shape, in the compute type; skip is the input's shape or
/// broadcast along the leading dims ([S, D] or [1, S, D] for a [B, S, D] input).
te::Tensor skip_sum(LowerCtx& ctx, const te::Tensor& x, const te::Tensor& skip,
                    const te::Tensor& bias, DType ct) {
  const Shape& s = x->shape;
  if (skip->dtype != x->dtype) throw ctx.error("skip must have the input's type");
  if (broadcast_shapes(ctx, s, skip->shape) != s)
    throw ctx.error("skip of shape " + shape_str(skip->shape) +
                    " does not broadcast to the input " + shape_str(s));
  if (bias) require_vector(ctx, bias, s.back(), "bias");
  return ctx.compute("skip_sum", s, ct, [&](const Idx& i) {
    Expr v = te::cast(ct, te::read(x, i)) + te::cast(ct, read_broadcast(skip, i));
    if (bias) v = v + te::cast(ct, te::read(bias, {i.back()}));
    return v;
  });
}

/// A keep-dims sum over the last dim of f(i) for every row.
te::Tensor row_sum(LowerCtx& ctx, const std::string& suffix, const Shape& s, DType ct,
                   const std::function<Expr(const Idx&)>& f) {
  Shape out = s;
  out.back() = 1;
  return ctx.reduce(suffix, out, ct, te::ReduceKind::Sum, {s.back()},
                    [&](const Idx& i, const Idx& r) {
                      Idx full = i;
                      full.back() = r[0];
                      return f(full);
                    });
}

Expr stat(const te::Tensor& t, const Idx& i) {
  Idx j = i;
  j.back() = te::int_imm(0);
  return te::read(t, std::move(j));
}

/// SkipLayerNormalization (simplified: SkipSimplifiedLayerNormalization, an RMS norm).
std::vector<te::Tensor> lower_skip_layer_norm(LowerCtx& ctx, bool simplified) {
  te::Tensor x = ctx.required(0), skip = ctx.required(1), gamma = ctx.required(2);
  te::Tensor beta = simplified ? nullptr : ctx.input(3);
  te::Tensor bias = ctx.input(simplified ? 3 : 4);
  require_float(ctx, x, "input");
  const Shape& s = x->shape;
  if (s.size() < 2 || s.size() > 3) throw ctx.error("input must have rank 2 or 3");
  int64_t d = s.back();
  require_vector(ctx, gamma, d, "gamma");
  if (beta) require_vector(ctx, beta, d, "beta");
  double eps = ctx.node().attr_float("epsilon", 1e-12);
  DType dt = x->dtype, ct = compute_type(dt);
  te::Tensor sum = skip_sum(ctx, x, skip, bias, ct);
  Expr inv_d = te::imm(ct, 1.0 / static_cast<double>(d));
  te::Tensor mean;
  if (!simplified)
    mean = row_sum(ctx, "mean", s, ct, [&](const Idx& i) { return te::read(sum, i) * inv_d; });
  te::Tensor var = row_sum(ctx, simplified ? "mean_square" : "var", s, ct, [&](const Idx& i) {
    Expr c = te::read(sum, i);
    if (mean) c = c - stat(mean, i);
    return c * c * inv_d;
  });
  te::Tensor inv = ctx.compute("inv_std", var->shape, ct, [&](const Idx& i) {
    return te::call(te::CallFn::Rsqrt, {te::read(var, i) + te::imm(ct, eps)});
  });
  te::Tensor y = ctx.compute("normalize", s, dt, [&](const Idx& i) {
    Expr v = te::read(sum, i);
    if (mean) v = v - stat(mean, i);
    v = v * stat(inv, i) * te::cast(ct, te::read(gamma, {i.back()}));
    if (beta) v = v + te::cast(ct, te::read(beta, {i.back()}));
    return te::cast(dt, v);
  });
  std::vector<te::Tensor> outs{y, nullptr, nullptr, nullptr};
  // The statistics are float for float and half inputs alike (ONNX Runtime's U type).
  auto as_f32 = [&](const te::Tensor& t, const char* suffix) {
    return ctx.compute(suffix, t->shape, DType::Float32,
                       [&](const Idx& i) { return te::cast(DType::Float32, te::read(t, i)); });
  };
  if (wants_output(ctx, 1)) {
    if (simplified) throw ctx.error("output 1 'mean' is not defined for the simplified form");
    outs[1] = as_f32(mean, "mean_out");
  }
  if (wants_output(ctx, 2)) outs[2] = as_f32(inv, "inv_std_out");
  if (wants_output(ctx, 3))
    outs[3] = ctx.compute("input_skip_bias_sum", s, dt,
                          [&](const Idx& i) { return te::cast(dt, te::read(sum, i)); });
  outs.resize(std::max<size_t>(1, ctx.num_outputs()));
  return outs;
}

/// EmbedLayerNormalization: word + position (+ segment) embeddings gathered by id, then a
/// layer norm over the hidden dim; mask_index is the number of 1s of each row of the mask (0s
/// without a mask), embedding_sum the sum before the norm. An id out of its table's range is
/// clamped into it (ONNX Runtime stops with an error there).
std::vector<te::Tensor> lower_embed_layer_norm(LowerCtx& ctx) {
  te::Tensor ids = ctx.required(0), seg = ctx.input(1), word = ctx.required(2),
             pos = ctx.required(3), seg_table = ctx.input(4), gamma = ctx.required(5),
             beta = ctx.required(6), mask = ctx.input(7), pos_ids = ctx.input(8);
  if (ids->shape.size() != 2) throw ctx.error("input_ids must have rank 2 [batch, sequence]");
  int64_t b = ids->shape[0], s = ids->shape[1];
  require_float(ctx, word, "word_embedding");
  if (word->shape.size() != 2) throw ctx.error("word_embedding must be a matrix");
  int64_t hid = word->shape[1];
  for (const te::Tensor& t : {pos, seg_table})
    if (t && (t->shape.size() != 2 || t->shape[1] != hid || t->dtype != word->dtype))
      throw ctx.error("embedding tables must be [rows, " + std::to_string(hid) +
                      "] of word_embedding's type");
  if ((seg == nullptr) != (seg_table == nullptr))
    throw ctx.error("segment_ids and segment_embedding come together");
  for (const te::Tensor& t : {ids, seg, mask})
    if (t && (t->shape != ids->shape || t->dtype != DType::Int32))
      throw ctx.error("input_ids, segment_ids and mask must be int32 [batch, sequence]");
  if (pos_ids && (pos_ids->dtype != DType::Int32 || pos_ids->shape.size() != 2 ||
                  (pos_ids->shape[0] != 1 && pos_ids->shape[0] != b) || pos_ids->shape[1] != s))
    throw ctx.error("position_ids must be int32 [batch or 1, sequence]");
  if (!pos_ids && pos->shape[0] < s)
    throw ctx.error("position_embedding has " + std::to_string(pos->shape[0]) +
                    " rows for a sequence of " + std::to_string(s));
  require_vector(ctx, gamma, hid, "gamma");
  require_vector(ctx, beta, hid, "beta");
  double eps = ctx.node().attr_float("epsilon", 1e-12);
  DType dt = word->dtype, ct = compute_type(dt);
  auto row = [](const te::Tensor& table, const Expr& id) {
    Expr i = te::cast(DType::Int64, id);
    return te::min(te::max(i, te::int_imm(0)), te::int_imm(table->shape[0] - 1));
  };
  te::Tensor sum = ctx.compute("embedding_sum", {b, s, hid}, ct, [&](const Idx& i) {
    Expr p =
        pos_ids ? te::read(pos_ids, {pos_ids->shape[0] == 1 ? te::int_imm(0) : i[0], i[1]}) : i[1];
    Expr v = te::cast(ct, te::read(word, {row(word, te::read(ids, {i[0], i[1]})), i[2]})) +
             te::cast(ct, te::read(pos, {row(pos, p), i[2]}));
    if (seg)
      v = v +
          te::cast(ct, te::read(seg_table, {row(seg_table, te::read(seg, {i[0], i[1]})), i[2]}));
    return v;
  });
  Shape shape{b, s, hid};
  Expr inv_d = te::imm(ct, 1.0 / static_cast<double>(hid));
  te::Tensor mean =
      row_sum(ctx, "mean", shape, ct, [&](const Idx& i) { return te::read(sum, i) * inv_d; });
  te::Tensor var = row_sum(ctx, "var", shape, ct, [&](const Idx& i) {
    Expr c = te::read(sum, i) - stat(mean, i);
    return c * c * inv_d;
  });
  te::Tensor y = ctx.compute("normalize", shape, dt, [&](const Idx& i) {
    Expr v = (te::read(sum, i) - stat(mean, i)) *
             te::call(te::CallFn::Rsqrt, {stat(var, i) + te::imm(ct, eps)});
    return te::cast(
        dt, v * te::cast(ct, te::read(gamma, {i[2]})) + te::cast(ct, te::read(beta, {i[2]})));
  });
  std::vector<te::Tensor> outs{y, nullptr, nullptr};
  if (wants_output(ctx, 1)) {
    if (mask)
      outs[1] = ctx.reduce("mask_index", {b}, DType::Int32, te::ReduceKind::Sum, {s},
                           [&](const Idx& i, const Idx& r) {
                             return te::read(mask, {i[0], r[0]});
                           });
    else
      outs[1] = ctx.compute("mask_index", {b}, DType::Int32,
                            [](const Idx&) { return te::int_imm(0, DType::Int32); });
  }
  if (wants_output(ctx, 2))
    outs[2] = ctx.compute("embedding_sum_out", shape, dt,
                          [&](const Idx& i) { return te::cast(dt, te::read(sum, i)); });
  return outs;
}

/// SimplifiedLayerNormalization: x / sqrt(mean(x^2) + epsilon) * scale over the dims from
/// `axis` on; output 1 is 1 / sqrt(mean(x^2) + epsilon) with the normalized dims kept as 1s.
std::vector<te::Tensor> lower_simplified_layer_norm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), scale = ctx.required(1);
  require_float(ctx, x, "X");
  const Shape& s = x->shape;
  int64_t rank = static_cast<int64_t>(s.size());
  if (rank < 1) throw ctx.error("X must have rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", -1), rank);
  double eps = ctx.node().attr_float("epsilon", 1e-5);
  std::optional<DType> st =
      dtype_from_onnx(static_cast<int32_t>(ctx.node().attr_int("stash_type", 1)));
  if (!st || !is_float(*st)) throw ctx.error("stash_type must be a floating-point type");
  DType dt = x->dtype, ct = compute_type(*st);
  Shape norm(s.begin() + axis, s.end());
  if (broadcast_shapes(ctx, norm, scale->shape) != norm)
    throw ctx.error("scale of shape " + shape_str(scale->shape) +
                    " does not broadcast to the normalized shape " + shape_str(norm));
  Shape out = s;
  for (int64_t d = axis; d < rank; ++d) out[static_cast<size_t>(d)] = 1;
  auto full_index = [&](const Idx& i, const Idx& r) {
    Idx f(i.begin(), i.begin() + axis);
    f.insert(f.end(), r.begin(), r.end());
    return f;
  };
  Expr inv_n = te::imm(ct, 1.0 / static_cast<double>(shape_numel(norm)));
  te::Tensor ms = ctx.reduce("mean_square", out, ct, te::ReduceKind::Sum, norm,
                             [&](const Idx& i, const Idx& r) {
                               Expr v = te::cast(ct, te::read(x, full_index(i, r)));
                               return v * v * inv_n;
                             });
  te::Tensor inv = ctx.compute("inv_std", out, ct, [&](const Idx& i) {
    return te::call(te::CallFn::Rsqrt, {te::read(ms, i) + te::imm(ct, eps)});
  });
  te::Tensor y = ctx.compute("normalize", s, dt, [&](const Idx& i) {
    Expr v = te::cast(ct, te::read(x, i)) * read_broadcast(inv, i);
    return te::cast(dt, v * te::cast(ct, read_broadcast(scale, i)));
  });
  std::vector<te::Tensor> outs{y};
  if (wants_output(ctx, 1))
    outs.push_back(ctx.compute("inv_std_out", out, *st,
                               [&](const Idx& i) { return te::cast(*st, te::read(inv, i)); }));
  return outs;
}

// ---- Attention ----

/// Scaled dot-product attention over heads: out[b, s, n * hv + h] =
/// sum_t softmax_t(scale * q.k + additive(b, n, s, t)) * v[b, n, t, h].
struct AttentionShape {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_qk = 0, head_v = 0;
};
using HeadRead = std::function<Expr(const Expr& b, const Expr& n, const Expr& pos, const Expr& h)>;
using Additive = std::function<Expr(const Idx& bnst)>;

te::Tensor attention_core(LowerCtx& ctx, const AttentionShape& a, DType dt, double scale,
                          const HeadRead& q, const HeadRead& k, const HeadRead& v,
                          const Additive& additive) {
  const DType ct = DType::Float32;
  Shape scores{a.batch, a.heads, a.q_len, a.kv_len};
  te::Tensor qk = ctx.reduce(
      "qk", scores, ct, te::ReduceKind::Sum, {a.head_qk}, [&](const Idx& i, const Idx& r) {
        return te::cast(ct, q(i[0], i[1], i[2], r[0])) * te::cast(ct, k(i[0], i[1], i[3], r[0]));
      });
  te::Tensor logits = ctx.compute("logits", scores, ct, [&](const Idx& i) {
    Expr l = te::read(qk, i) * scale;
    if (additive) l = l + additive(i);
    return l;
  });
  Shape row{a.batch, a.heads, a.q_len, 1};
  auto over_t = [](const Idx& i, const Expr& t) { return Idx{i[0], i[1], i[2], t}; };
  te::Tensor mx =
      ctx.reduce("max", row, ct, te::ReduceKind::Max, {a.kv_len},
                 [&](const Idx& i, const Idx& r) { return te::read(logits, over_t(i, r[0])); });
  te::Tensor e = ctx.compute("exp", scores, ct, [&](const Idx& i) {
    return te::exp(te::read(logits, i) - te::read(mx, over_t(i, te::int_imm(0))));
  });
  te::Tensor sum =
      ctx.reduce("sum", row, ct, te::ReduceKind::Sum, {a.kv_len},
                 [&](const Idx& i, const Idx& r) { return te::read(e, over_t(i, r[0])); });
  te::Tensor p = ctx.compute("softmax", scores, ct, [&](const Idx& i) {
    return te::read(e, i) / te::read(sum, over_t(i, te::int_imm(0)));
  });
  Expr hv = te::int_imm(a.head_v);
  te::Tensor acc =
      ctx.reduce("pv", {a.batch, a.q_len, a.heads * a.head_v}, ct, te::ReduceKind::Sum, {a.kv_len},
                 [&](const Idx& i, const Idx& r) {
                   Expr n = te::floordiv(i[2], hv), h = te::floormod(i[2], hv);
                   return te::read(p, {i[0], n, i[1], r[0]}) * te::cast(ct, v(i[0], n, r[0], h));
                 });
  if (dt == ct) return acc;
  return ctx.compute("", acc->shape, dt,
                     [&](const Idx& i) { return te::cast(dt, te::read(acc, i)); });
}

/// The key mask of Attention's mask_index or MultiHeadAttention's key_padding_mask: [B] end
/// positions (keys at and after it are masked), [B, T] or [B, S, T] with 1 for keys to keep.
/// Returns the additive term (0 or mask_filter_value) at (b, n, s, t), or nothing.
Additive key_mask(const LowerCtx& ctx, const te::Tensor& m, const AttentionShape& a, double filter,
                  const char* what) {
  if (!m) return {};
  if (m->dtype != DType::Int32) throw ctx.error(std::string(what) + " must be int32");
  const Shape& s = m->shape;
  Expr masked_value = te::imm(DType::Float32, filter), zero = te::imm(DType::Float32, 0);
  if (s == Shape{a.batch})
    return [=](const Idx& i) {
      return te::select(te::lt(i[3], te::cast(DType::Int64, te::read(m, {i[0]}))), zero,
                        masked_value);
    };
  if (s == Shape{a.batch, a.kv_len})
    return [=](const Idx& i) {
      return te::select(te::gt(te::read(m, {i[0], i[3]}), te::int_imm(0, DType::Int32)), zero,
                        masked_value);
    };
  if (s == Shape{a.batch, a.q_len, a.kv_len})
    return [=](const Idx& i) {
      return te::select(te::gt(te::read(m, {i[0], i[2], i[3]}), te::int_imm(0, DType::Int32)), zero,
                        masked_value);
    };
  throw ctx.error(std::string(what) + " of shape " + shape_str(s) + " is not supported (only [" +
                  std::to_string(a.batch) + "] end positions, [batch, kv_length] and [batch, " +
                  "sequence, kv_length] key masks)");
}

/// attention_bias [B or 1, N or 1, S, T], added to the scaled scores.
Additive attention_bias(const LowerCtx& ctx, const te::Tensor& t, const AttentionShape& a) {
  if (!t) return {};
  const Shape& s = t->shape;
  if (s.size() != 4 || (s[0] != 1 && s[0] != a.batch) || (s[1] != 1 && s[1] != a.heads) ||
      s[2] != a.q_len || s[3] != a.kv_len)
    throw ctx.error("attention_bias of shape " + shape_str(s) + " does not fit [batch or 1, " +
                    "heads or 1, " + std::to_string(a.q_len) + ", " + std::to_string(a.kv_len) +
                    "]");
  return [=](const Idx& i) { return te::cast(DType::Float32, read_broadcast(t, i)); };
}

Additive sum_of(std::vector<Additive> terms) {
  std::vector<Additive> present;
  for (Additive& f : terms)
    if (f) present.push_back(std::move(f));
  if (present.empty()) return {};
  return [present](const Idx& i) {
    Expr e = present[0](i);
    for (size_t k = 1; k < present.size(); ++k) e = e + present[k](i);
    return e;
  };
}

Additive causal(bool on, double filter) {
  if (!on) return {};
  return [filter](const Idx& i) {
    return te::select(te::gt(i[3], i[2]), te::imm(DType::Float32, filter),
                      te::imm(DType::Float32, 0));
  };
}

int64_t num_heads(const LowerCtx& ctx) {
  int64_t n = ctx.node().attr_int("num_heads", 0);
  if (n <= 0) throw ctx.error("num_heads must be given and positive");
  return n;
}

int64_t divide_heads(const LowerCtx& ctx, int64_t width, int64_t heads, const char* what) {
  if (width % heads != 0)
    throw ctx.error(std::string(what) + " width " + std::to_string(width) +
                    " is not divisible by num_heads " + std::to_string(heads));
  return width / heads;
}

/// Attention: input [B, S, Din] times the packed weights [Din, Dq + Dk + Dv] (+ bias) gives Q,
/// K and V; the attention of each head over the whole sequence.
std::vector<te::Tensor> lower_attention(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), w = ctx.required(1), bias = ctx.input(2);
  refuse_input(ctx, 4, "past", "a key/value cache (past state) is not lowered");
  refuse_input(ctx, 6, "past_sequence_length", "a key/value cache (past state) is not lowered");
  const graph::Node& n = ctx.node();
  if (n.attr_int("do_rotary", 0) != 0)
    throw ctx.error("attribute do_rotary = 1 (rotary embeddings) is not supported");
  require_float(ctx, x, "input");
  if (w->dtype != x->dtype || (bias && bias->dtype != x->dtype))
    throw ctx.error("weights and bias must have the input's type");
  if (x->shape.size() != 3) throw ctx.error("input must have rank 3 [batch, sequence, hidden]");
  if (w->shape.size() != 2 || w->shape[0] != x->shape[2])
    throw ctx.error("weights of shape " + shape_str(w->shape) + " do not fit the input " +
                    shape_str(x->shape));
  AttentionShape a;
  a.batch = x->shape[0];
  a.q_len = a.kv_len = x->shape[1];
  a.heads = num_heads(ctx);
  int64_t width = w->shape[1];
  std::vector<int64_t> sizes = n.attr_ints("qkv_hidden_sizes", {});
  if (sizes.empty()) {
    if (width % 3 != 0) throw ctx.error("weights width must be 3 x hidden size");
    sizes = {width / 3, width / 3, width / 3};
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != width)
    throw ctx.error(
        "qkv_hidden_sizes must be 3 sizes, Q's equal to K's, summing to the "
        "weights' width " +
        std::to_string(width));
  if (bias) require_vector(ctx, bias, width, "bias");
  a.head_qk = divide_heads(ctx, sizes[0], a.heads, "Q");
  a.head_v = divide_heads(ctx, sizes[2], a.heads, "V");
  DType dt = x->dtype, ct = DType::Float32;
  te::Tensor acc = ctx.reduce("qkv", {a.batch, a.q_len, width}, ct, te::ReduceKind::Sum,
                              {x->shape[2]}, [&](const Idx& i, const Idx& r) {
                                return te::cast(ct, te::read(x, {i[0], i[1], r[0]})) *
                                       te::cast(ct, te::read(w, {r[0], i[2]}));
                              });
  te::Tensor qkv = acc;
  if (bias)
    qkv = ctx.compute("qkv_bias", acc->shape, ct, [&](const Idx& i) {
      return te::read(acc, i) + te::cast(ct, te::read(bias, {i[2]}));
    });
  auto part = [&](int64_t offset, int64_t head) -> HeadRead {
    return [=](const Expr& b, const Expr& hn, const Expr& pos, const Expr& h) {
      return te::read(qkv, {b, pos, hn * te::int_imm(head) + h + te::int_imm(offset)});
    };
  };
  double scale = n.attr_float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(a.head_qk));
  double filter = n.attr_float("mask_filter_value", -10000.0);
  Additive add = sum_of({key_mask(ctx, ctx.input(3), a, filter, "mask_index"),
                         causal(n.attr_int("unidirectional", 0) != 0, filter),
                         attention_bias(ctx, ctx.input(5), a)});
  te::Tensor y = attention_core(ctx, a, dt, scale, part(0, a.head_qk), part(sizes[0], a.head_qk),
                                part(sizes[0] + sizes[1], a.head_v), add);
  std::vector<te::Tensor> outs{y};
  if (wants_output(ctx, 1)) {
    // present [2, B, N, S, H]: this call's keys and values (there is no past to prepend).
    if (a.head_qk != a.head_v) throw ctx.error("output 'present' needs equal K and V head sizes");
    outs.push_back(
        ctx.compute("present", {2, a.batch, a.heads, a.kv_len, a.head_qk}, dt, [&](const Idx& i) {
          Expr off = te::select(te::eq(i[0], te::int_imm(0)), te::int_imm(sizes[0]),
                                te::int_imm(sizes[0] + sizes[1]));
          return te::cast(dt,
                          te::read(qkv, {i[1], i[3], i[2] * te::int_imm(a.head_qk) + i[4] + off}));
        }));
  }
  return outs;
}

/// MultiHeadAttention with separate query [B, S, D], key [B, L, D] and value [B, L, Dv] (or
/// key and value already split into heads, [B, N, L, H]), an optional packed bias.
std::vector<te::Tensor> lower_multi_head_attention(LowerCtx& ctx) {
  te::Tensor q = ctx.required(0), k = ctx.input(1), v = ctx.input(2), bias = ctx.input(3);
  refuse_input(ctx, 6, "past_key", "a key/value cache (past state) is not lowered");
  refuse_input(ctx, 7, "past_value", "a key/value cache (past state) is not lowered");
  refuse_input(ctx, 8, "past_sequence_length", "a key/value cache (past state) is not lowered");
  refuse_input(ctx, 9, "cache_indirection", "beam-search cache indirection is not lowered");
  if (wants_output(ctx, 3)) throw ctx.error("output 3 'qk' is not supported");
  if (!k || !v)
    throw ctx.error(
        "packed QKV or KV (query holding keys and values) is not supported: give "
        "key and value inputs");
  require_float(ctx, q, "query");
  if (k->dtype != q->dtype || v->dtype != q->dtype || (bias && bias->dtype != q->dtype))
    throw ctx.error("key, value and bias must have the query's type");
  if (q->shape.size() != 3) throw ctx.error("query must have rank 3 [batch, sequence, hidden]");
  const graph::Node& n = ctx.node();
  AttentionShape a;
  a.batch = q->shape[0];
  a.q_len = q->shape[1];
  a.heads = num_heads(ctx);
  int64_t dq = q->shape[2];
  a.head_qk = divide_heads(ctx, dq, a.heads, "query");
  bool split = k->shape.size() == 4;
  int64_t dv = 0;
  if (k->shape.size() == 3 && v->shape.size() == 3) {
    if (k->shape[0] != a.batch || k->shape[2] != dq || v->shape[0] != a.batch ||
        v->shape[1] != k->shape[1])
      throw ctx.error("key " + shape_str(k->shape) + " and value " + shape_str(v->shape) +
                      " do not fit the query " + shape_str(q->shape));
    a.kv_len = k->shape[1];
    dv = v->shape[2];
    a.head_v = divide_heads(ctx, dv, a.heads, "value");
  } else if (split && v->shape.size() == 4) {
    if (k->shape[0] != a.batch || k->shape[1] != a.heads || k->shape[3] != a.head_qk ||
        v->shape[0] != a.batch || v->shape[1] != a.heads || v->shape[2] != k->shape[2])
      throw ctx.error("key " + shape_str(k->shape) + " and value " + shape_str(v->shape) +
                      " do not fit [batch, heads, kv_length, head_size]");
    if (bias) throw ctx.error("a bias with keys and values already split into heads");
    a.kv_len = k->shape[2];
    a.head_v = v->shape[3];
    dv = a.heads * a.head_v;
  } else {
    throw ctx.error("key " + shape_str(k->shape) + " and value " + shape_str(v->shape) +
                    " are not supported (rank 3 [batch, kv_length, hidden], or rank 4 [batch, "
                    "heads, kv_length, head_size]; packed KV is not supported)");
  }
  if (bias) require_vector(ctx, bias, 2 * dq + dv, "bias");
  DType ct = DType::Float32;
  auto with_bias = [&](const Expr& value, const Expr& col) {
    Expr e = te::cast(ct, value);
    return bias ? e + te::cast(ct, te::read(bias, {col})) : e;
  };
  HeadRead qr = [&](const Expr& b, const Expr& hn, const Expr& pos, const Expr& h) {
    Expr c = hn * te::int_imm(a.head_qk) + h;
    return with_bias(te::read(q, {b, pos, c}), c);
  };
  auto kv_read = [&](const te::Tensor& t, int64_t head, int64_t offset) -> HeadRead {
    return [&, t, head, offset](const Expr& b, const Expr& hn, const Expr& pos, const Expr& h) {
      if (split) return te::cast(ct, te::read(t, {b, hn, pos, h}));
      Expr c = hn * te::int_imm(head) + h;
      return with_bias(te::read(t, {b, pos, c}), c + te::int_imm(offset));
    };
  };
  HeadRead kr = kv_read(k, a.head_qk, dq), vr = kv_read(v, a.head_v, 2 * dq);
  double scale = n.attr_float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(a.head_qk));
  double filter = n.attr_float("mask_filter_value", -10000.0);
  Additive add = sum_of({key_mask(ctx, ctx.input(4), a, filter, "key_padding_mask"),
                         causal(n.attr_int("unidirectional", 0) != 0, filter),
                         attention_bias(ctx, ctx.input(5), a)});
  DType dt = q->dtype;
  std::vector<te::Tensor> outs{attention_core(ctx, a, dt, scale, qr, kr, vr, add)};
  // present_key / present_value [B, N, L, H]: the (biased) keys and values split into heads.
  auto present = [&](const char* suffix, const HeadRead& r, int64_t head) {
    return ctx.compute(suffix, {a.batch, a.heads, a.kv_len, head}, dt,
                       [&](const Idx& i) { return te::cast(dt, r(i[0], i[1], i[2], i[3])); });
  };
  if (wants_output(ctx, 1) || wants_output(ctx, 2)) {
    outs.push_back(wants_output(ctx, 1) ? present("present_key", kr, a.head_qk) : nullptr);
    if (wants_output(ctx, 2)) outs.push_back(present("present_value", vr, a.head_v));
  }
  return outs;
}

// ---- QLinear ops (ONNX Runtime's quantizer, QOperator format) ----

/// A quantized operand: the tensor, its scale and zero point (absent: 0), read in f32.
struct QOperand {
  te::Tensor x;
  Expr scale, zero;
  Expr value(const Idx& i, bool broadcast) const {  ///< x - zero_point, in f32
    Expr q = broadcast ? read_broadcast(x, i) : te::read(x, i);
    return te::cast(DType::Float32, te::cast(DType::Int32, q) - te::cast(DType::Int32, zero));
  }
};

void require_quantized(const LowerCtx& ctx, const te::Tensor& t, const char* what) {
  if (t->dtype != DType::Int8 && t->dtype != DType::UInt8)
    throw ctx.error(std::string(what) + " must be int8 or uint8, got " + dtype_name(t->dtype));
}

QOperand q_operand(const LowerCtx& ctx, size_t x, size_t scale, size_t zero, const char* what) {
  QOperand o;
  o.x = ctx.required(x);
  require_quantized(ctx, o.x, what);
  o.scale =
      read_scalar(ctx, ctx.required(scale), DType::Float32, (std::string(what) + " scale").c_str());
  if (te::Tensor z = ctx.input(zero)) {
    if (z->dtype != o.x->dtype)
      throw ctx.error(std::string(what) + " zero point must have its tensor's type");
    o.zero = read_scalar(ctx, z, DType::Int32, (std::string(what) + " zero point").c_str());
  } else {
    o.zero = te::int_imm(0, DType::Int32);
  }
  return o;
}

/// round-half-even(v) + zero_point saturated to `t`; v is first narrowed to f32 so that the
/// interpreter (which carries doubles) rounds the value a GPU or ONNX Runtime rounds.
Expr requantize(const Expr& v, const Expr& zero, DType t) {
  const DType f = DType::Float32;
  double lo = t == DType::UInt8 ? 0 : -128, hi = t == DType::UInt8 ? 255 : 127;
  Expr r = te::call(te::CallFn::Round, {round_to_own_type(te::cast(f, v))}) + te::cast(f, zero);
  return te::cast(t, te::min(te::max(r, te::imm(f, lo)), te::imm(f, hi)));
}

/// An f32 product as f32 arithmetic rounds it (see requantize).
Expr f32_mul(const Expr& a, const Expr& b) {
  return round_to_own_type(a * b);
}

std::vector<te::Tensor> lower_qlinear_binary(LowerCtx& ctx, bool mul) {
  QOperand a = q_operand(ctx, 0, 1, 2, "A"), b = q_operand(ctx, 3, 4, 5, "B");
  Expr c_scale = read_scalar(ctx, ctx.required(6), DType::Float32, "C scale");
  Expr c_zero = te::int_imm(0, DType::Int32);
  if (te::Tensor z = ctx.input(7)) {
    if (z->dtype != a.x->dtype) throw ctx.error("C zero point must have A's type");
    c_zero = read_scalar(ctx, z, DType::Int32, "C zero point");
  }
  if (a.x->dtype != b.x->dtype) throw ctx.error("A and B have different types");
  Shape s = broadcast_shapes(ctx, a.x->shape, b.x->shape);
  DType t = a.x->dtype;
  return {ctx.compute("", s, t, [&](const Idx& i) {
    Expr va = a.value(i, true), vb = b.value(i, true);
    Expr v;
    if (mul) {
      // (A - za)(B - zb) * (sa * sb / sc), as ONNX Runtime's kernel scales it.
      v = f32_mul(round_to_own_type(va * vb), round_to_own_type(a.scale * b.scale / c_scale));
    } else {
      v = round_to_own_type(f32_mul(va, round_to_own_type(a.scale / c_scale)) +
                            f32_mul(vb, round_to_own_type(b.scale / c_scale)));
    }
    return requantize(v, c_zero, t);
  })};
}

/// Y = quantize(f(dequantize(X))), as ONNX Runtime's table-driven kernels compute it.
std::vector<te::Tensor> lower_qlinear_lookup(LowerCtx& ctx,
                                             const std::function<Expr(const Expr&)>& f) {
  QOperand x = q_operand(ctx, 0, 1, 2, "X");
  Expr y_scale = read_scalar(ctx, ctx.required(3), DType::Float32, "Y scale");
  Expr y_zero = te::int_imm(0, DType::Int32);
  if (te::Tensor z = ctx.input(4)) {
    if (z->dtype != x.x->dtype) throw ctx.error("Y zero point must have X's type");
    y_zero = read_scalar(ctx, z, DType::Int32, "Y zero point");
  }
  DType t = x.x->dtype;
  return {ctx.compute("", x.x->shape, t, [&](const Idx& i) {
    Expr real = f32_mul(x.value(i, false), x.scale);
    return requantize(round_to_own_type(f(real)) / y_scale, y_zero, t);
  })};
}

std::vector<te::Tensor> lower_qlinear_global_avg_pool(LowerCtx& ctx) {
  QOperand x = q_operand(ctx, 0, 1, 2, "X");
  Expr y_scale = read_scalar(ctx, ctx.required(3), DType::Float32, "y_scale");
  te::Tensor yz = ctx.required(4);
  if (yz->dtype != x.x->dtype) throw ctx.error("y_zero_point must have X's type");
  Expr y_zero = read_scalar(ctx, yz, DType::Int32, "y_zero_point");
  const Shape& s = x.x->shape;
  if (s.size() < 3) throw ctx.error("X must have rank >= 3");
  bool last = ctx.node().attr_int("channels_last", 0) != 0;
  size_t c_dim = last ? s.size() - 1 : 1;
  Shape spatial, out = s;
  for (size_t d = 1; d < s.size(); ++d)
    if (d != c_dim) {
      spatial.push_back(s[d]);
      out[d] = 1;
    }
  int64_t image = shape_numel(spatial);
  DType t = x.x->dtype;
  // The integer sum of (x - zero_point), requantized once with x_scale / (y_scale * size).
  te::Tensor sum = ctx.reduce(
      "sum", out, DType::Int32, te::ReduceKind::Sum, spatial, [&](const Idx& i, const Idx& r) {
        Idx full;
        size_t k = 0;
        for (size_t d = 0; d < s.size(); ++d) full.push_back(d == 0 || d == c_dim ? i[d] : r[k++]);
        return te::cast(DType::Int32, te::read(x.x, full)) - te::cast(DType::Int32, x.zero);
      });
  return {ctx.compute("", out, t, [&](const Idx& i) {
    Expr scale =
        round_to_own_type(x.scale / round_to_own_type(y_scale * static_cast<double>(image)));
    return requantize(f32_mul(te::cast(DType::Float32, te::read(sum, i)), scale), y_zero, t);
  })};
}

std::vector<te::Tensor> lower_qlinear_concat(LowerCtx& ctx) {
  Expr y_scale = read_scalar(ctx, ctx.required(0), DType::Float32, "Y_scale");
  te::Tensor yz = ctx.required(1);
  require_quantized(ctx, yz, "Y_zero_point");
  Expr y_zero = read_scalar(ctx, yz, DType::Int32, "Y_zero_point");
  if (ctx.num_inputs() < 5 || (ctx.num_inputs() - 2) % 3 != 0)
    throw ctx.error("inputs must be Y_scale, Y_zero_point, then (X, scale, zero point) triples");
  std::vector<QOperand> ins;
  for (size_t j = 2; j < ctx.num_inputs(); j += 3) {
    if (!ctx.has_input(j + 2)) throw ctx.error("every input needs its zero point");
    ins.push_back(q_operand(ctx, j, j + 1, j + 2, "X"));
    if (ins.back().x->dtype != yz->dtype) throw ctx.error("inputs must have Y_zero_point's type");
  }
  const Shape& first = ins[0].x->shape;
  int64_t rank = static_cast<int64_t>(first.size());
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  Shape out = first;
  out[static_cast<size_t>(axis)] = 0;
  std::vector<int64_t> starts;
  for (const QOperand& o : ins) {
    const Shape& s = o.x->shape;
    for (int64_t d = 0; d < rank; ++d)
      if (s.size() != first.size() ||
          (d != axis && s[static_cast<size_t>(d)] != first[static_cast<size_t>(d)]))
        throw ctx.error("input shapes " + shape_str(first) + " and " + shape_str(s) +
                        " differ outside the axis");
    starts.push_back(out[static_cast<size_t>(axis)]);
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  DType t = yz->dtype;
  return {ctx.compute("", out, t, [&](const Idx& i) {
    Expr pos = i[static_cast<size_t>(axis)];
    Expr v;
    for (size_t j = 0; j < ins.size(); ++j) {
      Idx at = i;
      // Clamped: a select reads both sides, so every input's read must stay in bounds.
      int64_t len = ins[j].x->shape[static_cast<size_t>(axis)];
      at[static_cast<size_t>(axis)] =
          te::min(te::max(pos - te::int_imm(starts[j]), te::int_imm(0)), te::int_imm(len - 1));
      Expr real = f32_mul(ins[j].value(at, false), ins[j].scale);
      Expr q = requantize(round_to_own_type(real / y_scale), y_zero, t);
      v = v.defined() ? te::select(te::ge(pos, te::int_imm(starts[j])), q, v) : q;
    }
    return v;
  })};
}

/// QGemm: Y = alpha * a_scale * b_scale * ((A - a_zero_point)(B - b_zero_point) + C), C an
/// int32 bias at that scale; quantized with y_scale / y_zero_point when given, else float.
/// b_scale and b_zero_point are per tensor or per column of Y.
std::vector<te::Tensor> lower_qgemm(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), b = ctx.required(3), c = ctx.input(6);
  te::Tensor as = ctx.required(1), azp = ctx.input(2), bs = ctx.required(4), bzp = ctx.input(5);
  te::Tensor ys = ctx.input(7), yzp = ctx.input(8);
  require_quantized(ctx, a, "A");
  require_quantized(ctx, b, "B");
  if (a->shape.size() != 2 || b->shape.size() != 2)
    throw ctx.error("A and B must be matrices, got " + shape_str(a->shape) + " and " +
                    shape_str(b->shape));
  const graph::Node& n = ctx.node();
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  double alpha = n.attr_float("alpha", 1.0);
  int64_t m = ta ? a->shape[1] : a->shape[0], k = ta ? a->shape[0] : a->shape[1];
  int64_t kb = tb ? b->shape[1] : b->shape[0], cols = tb ? b->shape[0] : b->shape[1];
  if (k != kb)
    throw ctx.error("inner dimensions differ: " + shape_str(a->shape) + " x " +
                    shape_str(b->shape));
  const DType f = DType::Float32, i32 = DType::Int32;
  Expr a_scale = read_scalar(ctx, as, f, "a_scale");
  Expr a_zero = azp ? read_scalar(ctx, azp, i32, "a_zero_point") : te::int_imm(0, i32);
  if (azp && azp->dtype != a->dtype) throw ctx.error("a_zero_point must have A's type");
  // Per tensor or per column: a one-element tensor or an [N] vector.
  auto per_column = [&](const te::Tensor& t, const char* what) {
    if (shape_numel(t->shape) == 1) return false;
    if (t->shape != Shape{cols})
      throw ctx.error(std::string(what) + " must be a single value or have shape [" +
                      std::to_string(cols) + "], got " + shape_str(t->shape));
    return true;
  };
  auto column_value = [&](const te::Tensor& t, bool by_column, const Expr& col, DType as_type) {
    return te::cast(as_type, by_column ? te::read(t, {col})
                                       : te::read(t, Idx(t->shape.size(), te::int_imm(0))));
  };
  bool bs_col = per_column(bs, "b_scale");
  bool bzp_col = bzp && per_column(bzp, "b_zero_point");
  if (bzp && bzp->dtype != b->dtype) throw ctx.error("b_zero_point must have B's type");
  if (c) {
    if (c->dtype != i32) throw ctx.error("C must be int32");
    if (broadcast_shapes(ctx, {m, cols}, c->shape) != Shape{m, cols})
      throw ctx.error("C of shape " + shape_str(c->shape) + " does not broadcast to [" +
                      std::to_string(m) + ", " + std::to_string(cols) + "]");
  }
  te::Tensor acc = ctx.reduce(
      "matmul", {m, cols}, i32, te::ReduceKind::Sum, {k}, [&](const Idx& i, const Idx& r) {
        Expr x = te::cast(i32, ta ? te::read(a, {r[0], i[0]}) : te::read(a, {i[0], r[0]}));
        Expr w = te::cast(i32, tb ? te::read(b, {i[1], r[0]}) : te::read(b, {r[0], i[1]}));
        Expr wz = bzp ? column_value(bzp, bzp_col, i[1], i32) : te::int_imm(0, i32);
        return (x - a_zero) * (w - wz);
      });
  DType out = f;
  if (ys) {
    out = yzp ? yzp->dtype : DType::UInt8;
    if (out != DType::UInt8 && out != DType::Int8)
      throw ctx.error("y_zero_point must be int8 or uint8");
  }
  return {ctx.compute("requantize", {m, cols}, out, [&](const Idx& i) {
    Expr total = te::read(acc, i);
    if (c) total = total + read_broadcast(c, i);
    Expr scale =
        round_to_own_type(round_to_own_type(a_scale * alpha) * column_value(bs, bs_col, i[1], f));
    if (!ys) return f32_mul(te::cast(f, total), scale);
    scale = round_to_own_type(scale / read_scalar(ctx, ys, f, "y_scale"));
    Expr zero = yzp ? read_scalar(ctx, yzp, i32, "y_zero_point") : te::int_imm(0, i32);
    return requantize(f32_mul(te::cast(f, total), scale), zero, out);
  })};
}

// ---- DynamicQuantizeLSTM ----

/// ONNX Runtime's dynamic quantization of a float tensor to uint8 (its GetQuantizationParameter):
/// the range [min(x, 0), max(x, 0)] over 255 steps (scale 1 for an all-zero range), the zero
/// point rounded half to even. Per row (of dim 0) when `per_row`, else one for the tensor.
struct DynamicQuant {
  te::Tensor scale, zero;  ///< f32 and uint8: [] or [rows]
  bool per_row = false;
  /// x quantized with the parameters of `row`, minus the zero point, as int32.
  Expr centred(const Expr& x, const Expr& row) const {
    const DType f = DType::Float32;
    Idx at = per_row ? Idx{row} : Idx{};
    Expr q = te::call(te::CallFn::Round, {round_to_own_type(x / te::read(scale, at))}) +
             te::cast(f, te::read(zero, at));
    q = te::min(te::max(q, te::imm(f, 0)), te::imm(f, 255));
    return te::cast(DType::Int32, q) - te::cast(DType::Int32, te::read(zero, at));
  }
};

DynamicQuant dynamic_quant(LowerCtx& ctx, const std::string& suffix, const te::Tensor& x,
                           bool per_row) {
  const DType f = DType::Float32;
  Shape out, red = x->shape;
  if (per_row) {
    out = {x->shape[0]};
    red.erase(red.begin());
  }
  auto xin = [&](const Idx& i, const Idx& k) {
    Idx at = i;
    at.insert(at.end(), k.begin(), k.end());
    return te::read(x, at);
  };
  te::Tensor mx = ctx.reduce(suffix + "_max", out, f, te::ReduceKind::Max, red, xin, te::imm(f, 0));
  te::Tensor mn = ctx.reduce(suffix + "_min", out, f, te::ReduceKind::Min, red, xin, te::imm(f, 0));
  DynamicQuant q;
  q.per_row = per_row;
  q.scale = ctx.compute(suffix + "_scale", out, f, [&](const Idx& i) {
    Expr hi = te::read(mx, i), lo = te::read(mn, i);
    return te::select(te::eq(hi, lo), te::imm(f, 1), round_to_own_type((hi - lo) / 255.0));
  });
  q.zero = ctx.compute(suffix + "_zero_point", out, DType::UInt8, [&](const Idx& i) {
    Expr z = round_to_own_type(te::imm(f, 0) -
                               round_to_own_type(te::read(mn, i) / te::read(q.scale, i)));
    z = te::min(te::max(z, te::imm(f, 0)), te::imm(f, 255));
    return te::cast(DType::UInt8, te::call(te::CallFn::Round, {z}));
  });
  return q;
}

/// DynamicQuantizeLSTM: an LSTM (gates i, o, f, c; sigmoid, tanh, tanh) whose weights W
/// [dirs, input, 4H] and R [dirs, H, 4H] are int8/uint8 with a scale and zero point per
/// direction or per gate column, and whose products take X (the whole sequence at once) and
/// each step's H quantized to uint8 on the fly, as ONNX Runtime computes it: the int32 product
/// times input scale x weight scale, the X part and the H part added, then the biases. H is
/// quantized per batch row, as ONNX Runtime does when it runs the rows in parallel (on one
/// thread it quantizes the batch together: the two differ within the quantization error).
std::vector<te::Tensor> lower_dynamic_quantize_lstm(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), w = ctx.required(1), r = ctx.required(2), bias = ctx.input(3);
  refuse_input(ctx, 4, "sequence_lens", "sequences of different lengths are not lowered");
  refuse_input(ctx, 7, "P", "peephole weights are not lowered");
  te::Tensor ws = ctx.required(8), wz = ctx.required(9), rs = ctx.required(10),
             rz = ctx.required(11);
  const graph::Node& n = ctx.node();
  for (const char* a : {"activations", "activation_alpha", "activation_beta", "clip"})
    if (n.has_attr(a))
      throw ctx.error(std::string("attribute ") + a + " is not supported (the default sigmoid, " +
                      "tanh, tanh without clipping are)");
  if (n.attr_int("input_forget", 0) != 0) throw ctx.error("input_forget = 1 is not supported");
  std::string dir = n.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    throw ctx.error("direction '" + dir + "' is not forward, reverse or bidirectional");
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  if (x->dtype != DType::Float32) throw ctx.error("X must be f32");
  if (x->shape.size() != 3) throw ctx.error("X must have rank 3 [sequence, batch, input]");
  int64_t seq = x->shape[0], batch = x->shape[1], in = x->shape[2];
  int64_t hs = n.attr_int("hidden_size", 0);
  if (hs <= 0) throw ctx.error("hidden_size must be given and positive");
  int64_t g4 = 4 * hs;
  require_quantized(ctx, w, "W");
  require_quantized(ctx, r, "R");
  if (w->shape != Shape{dirs, in, g4} || r->shape != Shape{dirs, hs, g4})
    throw ctx.error("W " + shape_str(w->shape) + " and R " + shape_str(r->shape) + " must be [" +
                    std::to_string(dirs) + ", input, 4 x hidden] and [" + std::to_string(dirs) +
                    ", hidden, 4 x hidden]");
  if (bias && bias->shape != Shape{dirs, 2 * g4})
    throw ctx.error("B must have shape [" + std::to_string(dirs) + ", 8 x hidden]");
  // A weight scale or zero point: per direction [dirs], or per gate column [dirs, 4H].
  auto param = [&](const te::Tensor& t, const char* what, const Expr& d, const Expr& col) {
    if (t->shape == Shape{dirs}) return te::read(t, {d});
    if (t->shape == Shape{dirs, g4}) return te::read(t, {d, col});
    throw ctx.error(std::string(what) + " must have shape [" + std::to_string(dirs) + "] or [" +
                    std::to_string(dirs) + ", " + std::to_string(g4) + "], got " +
                    shape_str(t->shape));
  };
  param(ws, "W_scale", te::int_imm(0), te::int_imm(0));
  param(wz, "W_zero_point", te::int_imm(0), te::int_imm(0));
  param(rs, "R_scale", te::int_imm(0), te::int_imm(0));
  param(rz, "R_zero_point", te::int_imm(0), te::int_imm(0));
  if (wz->dtype != w->dtype || rz->dtype != r->dtype)
    throw ctx.error("zero points must have their weights' type");
  te::Tensor h0 = ctx.input(5), c0 = ctx.input(6);
  for (const te::Tensor& t : {h0, c0})
    if (t && t->shape != Shape{dirs, batch, hs})
      throw ctx.error("initial_h and initial_c must have shape [" + std::to_string(dirs) + ", " +
                      std::to_string(batch) + ", " + std::to_string(hs) + "]");
  // An absent or all-zero initial state contributes nothing to the first step's product.
  auto all_zero = [&](size_t i) {
    if (!ctx.has_input(i)) return true;
    ConstTensorPtr c = ctx.constant(i);
    if (!c) return false;
    for (int64_t k = 0; k < c->numel(); ++k)
      if (c->get_f64(k) != 0) return false;
    return true;
  };
  const DType f = DType::Float32, i32 = DType::Int32;
  DynamicQuant xq = dynamic_quant(ctx, "x", x, false);
  std::vector<std::vector<te::Tensor>> hs_of(static_cast<size_t>(dirs));
  std::vector<te::Tensor> h_last, c_last;
  for (int64_t d = 0; d < dirs; ++d) {
    const std::string dn = "dir" + std::to_string(d);
    Expr de = te::int_imm(d);
    bool rev = dir == "reverse" || d == 1;
    // The X part of every step at once: [S, B, 4H].
    te::Tensor xw_acc = ctx.reduce(dn + "_xw", {seq, batch, g4}, i32, te::ReduceKind::Sum, {in},
                                   [&](const Idx& i, const Idx& k) {
                                     return xq.centred(te::read(x, {i[0], i[1], k[0]}), {}) *
                                            (te::cast(i32, te::read(w, {de, k[0], i[2]})) -
                                             te::cast(i32, param(wz, "", de, i[2])));
                                   });
    te::Tensor xw = ctx.compute(dn + "_xw_float", xw_acc->shape, f, [&](const Idx& i) {
      Expr scale = round_to_own_type(te::read(xq.scale, {}) * te::cast(f, param(ws, "", de, i[2])));
      return f32_mul(te::cast(f, te::read(xw_acc, i)), scale);
    });
    te::Tensor h_prev, c_prev;
    bool h_zero = all_zero(5), c_zero = all_zero(6);
    if (!h_zero)
      h_prev = ctx.compute(dn + "_h0", {batch, hs}, f, [&](const Idx& i) {
        return te::read(h0, {de, i[0], i[1]});
      });
    if (!c_zero)
      c_prev = ctx.compute(dn + "_c0", {batch, hs}, f, [&](const Idx& i) {
        return te::read(c0, {de, i[0], i[1]});
      });
    std::vector<te::Tensor> steps(static_cast<size_t>(seq));
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = rev ? seq - 1 - s : s;
      const std::string sn = dn + "_t" + std::to_string(t);
      te::Tensor hr_acc;
      DynamicQuant hq;
      if (h_prev) {
        hq = dynamic_quant(ctx, sn + "_h", h_prev, true);
        hr_acc = ctx.reduce(sn + "_hr", {batch, g4}, i32, te::ReduceKind::Sum, {hs},
                            [&](const Idx& i, const Idx& k) {
                              return hq.centred(te::read(h_prev, {i[0], k[0]}), i[0]) *
                                     (te::cast(i32, te::read(r, {de, k[0], i[1]})) -
                                      te::cast(i32, param(rz, "", de, i[1])));
                            });
      }
      // The pre-activation of gate `g` (0 i, 1 o, 2 f, 3 c) of unit h.
      auto pre = [&](const Idx& i, int64_t g) {
        Expr col = i[1] + te::int_imm(g * hs);
        Expr v = te::read(xw, {te::int_imm(t), i[0], col});
        if (hr_acc) {
          Expr scale =
              round_to_own_type(te::read(hq.scale, {i[0]}) * te::cast(f, param(rs, "", de, col)));
          v = round_to_own_type(v + f32_mul(te::cast(f, te::read(hr_acc, {i[0], col})), scale));
        }
        if (bias)
          v = v + round_to_own_type(te::read(bias, {de, col}) +
                                    te::read(bias, {de, col + te::int_imm(g4)}));
        return v;
      };
      te::Tensor c = ctx.compute(sn + "_c", {batch, hs}, f, [&](const Idx& i) {
        Expr v = te::sigmoid(pre(i, 0)) * te::tanh(pre(i, 3));
        if (c_prev) v = v + te::sigmoid(pre(i, 2)) * te::read(c_prev, i);
        return v;
      });
      te::Tensor h = ctx.compute(sn + "_h", {batch, hs}, f, [&](const Idx& i) {
        return te::sigmoid(pre(i, 1)) * te::tanh(te::read(c, i));
      });
      steps[static_cast<size_t>(t)] = h;
      h_prev = h;
      c_prev = c;
    }
    hs_of[static_cast<size_t>(d)] = steps;
    h_last.push_back(h_prev);
    c_last.push_back(c_prev);
  }
  // Y [S, dirs, B, H], Y_h and Y_c [dirs, B, H]: each a select over the per-step tensors.
  auto pick = [](const std::vector<te::Tensor>& ts, const Expr& which, const Idx& at) {
    Expr v = te::read(ts[0], at);
    for (size_t k = 1; k < ts.size(); ++k)
      v = te::select(te::eq(which, te::int_imm(static_cast<int64_t>(k))), te::read(ts[k], at), v);
    return v;
  };
  std::vector<te::Tensor> outs(3);
  if (wants_output(ctx, 0)) {
    std::vector<te::Tensor> flat;  // index s * dirs + d
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t d = 0; d < dirs; ++d)
        flat.push_back(hs_of[static_cast<size_t>(d)][static_cast<size_t>(s)]);
    outs[0] = ctx.compute("Y", {seq, dirs, batch, hs}, f, [&](const Idx& i) {
      return pick(flat, i[0] * te::int_imm(dirs) + i[1], {i[2], i[3]});
    });
  }
  if (wants_output(ctx, 1))
    outs[1] = ctx.compute("Y_h", {dirs, batch, hs}, f, [&](const Idx& i) {
      return pick(h_last, i[0], {i[1], i[2]});
    });
  if (wants_output(ctx, 2))
    outs[2] = ctx.compute("Y_c", {dirs, batch, hs}, f, [&](const Idx& i) {
      return pick(c_last, i[0], {i[1], i[2]});
    });
  return outs;
}

// ---- MatMulIntegerToFloat, DynamicQuantizeMatMul ----

/// float(sum_k (A - a_zero_point)(B - b_zero_point)) * (a_scale * b_scale) + bias, B a matrix
/// [K, N] with its scale and zero point per tensor or per column, A [..., M, K] quantized (its
/// value minus zero point given by `a_at` as int32), as ONNX Runtime's kernels compute it.
std::vector<te::Tensor> int_matmul_to_float(LowerCtx& ctx, const Shape& a_shape,
                                            const std::function<Expr(const Idx&)>& a_at,
                                            const std::function<Expr()>& a_scale,
                                            const te::Tensor& b, const te::Tensor& bs,
                                            const te::Tensor& bzp, const te::Tensor& bias) {
  require_quantized(ctx, b, "B");
  if (b->shape.size() != 2) throw ctx.error("B must be a matrix, got " + shape_str(b->shape));
  if (a_shape.size() < 2) throw ctx.error("A must have rank >= 2");
  int64_t k = a_shape.back(), cols = b->shape[1];
  if (b->shape[0] != k)
    throw ctx.error("inner dimensions differ: " + shape_str(a_shape) + " x " + shape_str(b->shape));
  auto per_column = [&](const te::Tensor& t, const char* what) {
    if (shape_numel(t->shape) == 1) return false;
    if (t->shape != Shape{cols})
      throw ctx.error(std::string(what) + " must be a single value or have shape [" +
                      std::to_string(cols) + "], got " + shape_str(t->shape));
    return true;
  };
  auto at_col = [](const te::Tensor& t, bool by_column, const Expr& col) {
    return by_column ? te::read(t, {col}) : te::read(t, Idx(t->shape.size(), te::int_imm(0)));
  };
  bool bs_col = per_column(bs, "b_scale");
  bool bzp_col = bzp && per_column(bzp, "b_zero_point");
  if (bzp && bzp->dtype != b->dtype) throw ctx.error("b_zero_point must have B's type");
  if (!is_float(bs->dtype)) throw ctx.error("b_scale must be float");
  if (bias && bias->shape != Shape{cols})
    throw ctx.error("bias must have shape [" + std::to_string(cols) + "]");
  const DType f = DType::Float32, i32 = DType::Int32;
  Shape out = a_shape;
  out.back() = cols;
  size_t last = out.size() - 1;
  te::Tensor acc =
      ctx.reduce("matmul", out, i32, te::ReduceKind::Sum, {k}, [&](const Idx& i, const Idx& r) {
        Idx ai = i;
        ai[last] = r[0];
        Expr w = te::cast(i32, te::read(b, {r[0], i[last]}));
        if (bzp) w = w - te::cast(i32, at_col(bzp, bzp_col, i[last]));
        return a_at(ai) * w;
      });
  return {ctx.compute("scale", out, f, [&](const Idx& i) {
    Expr scale = round_to_own_type(a_scale() * te::cast(f, at_col(bs, bs_col, i[last])));
    Expr v = f32_mul(te::cast(f, te::read(acc, i)), scale);
    if (bias) v = v + te::cast(f, te::read(bias, {i[last]}));
    return v;
  })};
}

std::vector<te::Tensor> lower_matmul_integer_to_float(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), b = ctx.required(1), as = ctx.required(2), bs = ctx.required(3),
             azp = ctx.input(4), bzp = ctx.input(5), bias = ctx.input(6);
  require_quantized(ctx, a, "A");
  if (azp && azp->dtype != a->dtype) throw ctx.error("a_zero_point must have A's type");
  const DType f = DType::Float32, i32 = DType::Int32;
  Expr a_scale = read_scalar(ctx, as, f, "a_scale");
  Expr a_zero = azp ? read_scalar(ctx, azp, i32, "a_zero_point") : te::int_imm(0, i32);
  return int_matmul_to_float(
      ctx, a->shape, [&](const Idx& i) { return te::cast(i32, te::read(a, i)) - a_zero; },
      [&] { return a_scale; }, b, bs, bzp, bias);
}

std::vector<te::Tensor> lower_dynamic_quantize_matmul(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), b = ctx.required(1), bs = ctx.required(2), bzp = ctx.input(3),
             bias = ctx.input(4);
  if (a->dtype != DType::Float32) throw ctx.error("A must be f32");
  DynamicQuant aq = dynamic_quant(ctx, "a", a, false);
  return int_matmul_to_float(
      ctx, a->shape, [&](const Idx& i) { return aq.centred(te::read(a, i), {}); },
      [&] { return te::read(aq.scale, {}); }, b, bs, bzp, bias);
}

// ---- FusedConv ----

/// FusedConv: activation(Conv(X, W, B) + Z), the Conv lowered by `conv` (the ONNX op's own
/// lowering, on this node's inputs and Conv attributes); the activation and its parameters as
/// ONNX Runtime's graph optimizer writes them.
std::vector<te::Tensor> lower_fused_conv(LowerCtx& ctx, const LowerFn& conv) {
  const graph::Node& n = ctx.node();
  std::string act = n.attr_string("activation", "");
  std::vector<double> p = n.attr_floats("activation_params", {});
  auto param = [&](size_t i, double def) { return i < p.size() ? p[i] : def; };
  static const std::set<std::string> known = {"",     "Relu",      "Tanh",       "Sigmoid",
                                              "Clip", "LeakyRelu", "HardSigmoid"};
  if (!known.count(act))
    throw ctx.error("activation '" + act +
                    "' is not supported (Relu, Tanh, Sigmoid, Clip, LeakyRelu, HardSigmoid)");
  if (act == "Clip" && p.size() < 2)
    throw ctx.error("activation Clip needs activation_params [min, max]");
  te::Tensor y = conv(ctx)[0];
  te::Tensor z = ctx.input(3);
  if (z && (z->shape != y->shape || z->dtype != y->dtype))
    throw ctx.error("Z of shape " + shape_str(z->shape) + " must have the output's shape " +
                    shape_str(y->shape) + " and type");
  if (act.empty() && !z) return {y};
  DType dt = y->dtype, ct = compute_type(dt);
  return {ctx.compute("activation", y->shape, dt, [&](const Idx& i) {
    Expr v = te::cast(ct, te::read(y, i));
    if (z) v = v + te::cast(ct, te::read(z, i));
    Expr zero = te::imm(ct, 0), one = te::imm(ct, 1);
    if (act == "Relu") v = te::max(v, zero);
    if (act == "Tanh") v = te::tanh(v);
    if (act == "Sigmoid") v = te::sigmoid(v);
    if (act == "LeakyRelu") v = te::select(te::ge(v, zero), v, v * param(0, 0.01));
    if (act == "Clip") v = te::min(te::max(v, te::imm(ct, param(0, 0))), te::imm(ct, param(1, 0)));
    if (act == "HardSigmoid") v = te::max(zero, te::min(one, v * param(0, 0.2) + param(1, 0.5)));
    return te::cast(dt, v);
  })};
}

/// Registers `key` as the lowering already registered under `existing` (the same semantics
/// under another domain's name).
void alias(Registry& r, const std::string& key, const std::string& existing) {
  const LowerFn* fn = r.find(existing);
  SOUFFLE_CHECK(fn != nullptr, "contrib alias of an op not registered yet: " + existing);
  r.add(key, *fn);
}

}  // namespace

void register_contrib(Registry& r) {
  const std::string ms = "com.microsoft.";
  r.add(ms + "FusedMatMul", lower_fused_matmul);
  // com.microsoft Gelu is the erf form, ONNX Gelu's default.
  alias(r, ms + "Gelu", "Gelu");
  r.add(ms + "FastGelu", [](LowerCtx& ctx) { return biased_unary(ctx, false, gelu_tanh); });
  r.add(ms + "BiasGelu", [](LowerCtx& ctx) { return biased_unary(ctx, true, gelu_erf); });
  r.add(ms + "QuickGelu", lower_quick_gelu);
  r.add(ms + "BiasAdd", lower_bias_add);
  r.add(ms + "BiasSplitGelu", lower_bias_split_gelu);
  alias(r, ms + "LayerNormalization", "LayerNormalization");
  r.add(ms + "EmbedLayerNormalization", lower_embed_layer_norm);
  r.add(ms + "SkipLayerNormalization",
        [](LowerCtx& ctx) { return lower_skip_layer_norm(ctx, false); });
  r.add(ms + "SkipSimplifiedLayerNormalization",
        [](LowerCtx& ctx) { return lower_skip_layer_norm(ctx, true); });
  // ONNX Runtime registers SimplifiedLayerNormalization in the ONNX domain.
  r.add("SimplifiedLayerNormalization", lower_simplified_layer_norm);
  alias(r, ms + "SimplifiedLayerNormalization", "SimplifiedLayerNormalization");
  r.add(ms + "Attention", lower_attention);
  r.add(ms + "MultiHeadAttention", lower_multi_head_attention);
  r.add(ms + "QLinearAdd", [](LowerCtx& ctx) { return lower_qlinear_binary(ctx, false); });
  r.add(ms + "QLinearMul", [](LowerCtx& ctx) { return lower_qlinear_binary(ctx, true); });
  r.add(ms + "QLinearSigmoid", [](LowerCtx& ctx) {
    return lower_qlinear_lookup(ctx, [](const Expr& x) { return te::sigmoid(x); });
  });
  r.add(ms + "QLinearLeakyRelu", [](LowerCtx& ctx) {
    double alpha = ctx.node().attr_float("alpha", 0.01);
    return lower_qlinear_lookup(ctx, [alpha](const Expr& x) {
      return te::select(te::ge(x, te::imm(x.dtype(), 0)), x, round_to_own_type(x * alpha));
    });
  });
  r.add(ms + "QLinearGlobalAveragePool", lower_qlinear_global_avg_pool);
  r.add(ms + "QLinearConcat", lower_qlinear_concat);
  r.add(ms + "QGemm", lower_qgemm);
  r.add(ms + "DynamicQuantizeLSTM", lower_dynamic_quantize_lstm);
  r.add(ms + "MatMulIntegerToFloat", lower_matmul_integer_to_float);
  r.add(ms + "DynamicQuantizeMatMul", lower_dynamic_quantize_matmul);
  const LowerFn* conv = r.find("Conv");
  SOUFFLE_CHECK(conv != nullptr, "FusedConv registered before Conv");
  r.add(ms + "FusedConv", [conv = *conv](LowerCtx& ctx) { return lower_fused_conv(ctx, conv); });
}

}  // namespace souffle::lower
