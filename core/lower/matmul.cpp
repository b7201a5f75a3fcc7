// Lowering of the matrix-product family: MatMul, Gemm, MatMulInteger, Einsum.
//
// Every product becomes one reduce TE over the contracted extent(s) whose body is the product of
// the operand reads; broadcasting, transposition and diagonals live in the read indices, so the
// global analysis sees a plain GEMM-like reduction.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;

void check_same_dtype(const LowerCtx& ctx, const te::Tensor& a, const te::Tensor& b) {
  if (a->dtype != b->dtype)
    throw ctx.error(std::string("operand types differ (") + dtype_name(a->dtype) + " vs " +
                    dtype_name(b->dtype) + ")");
}

/// Casts the accumulator tensor down to `dtype` when the math ran in a wider type.
te::Tensor cast_result(LowerCtx& ctx, const te::Tensor& acc, DType dtype) {
  if (acc->dtype == dtype) return acc;
  return ctx.compute("cast", acc->shape, dtype,
                     [&](const std::vector<Expr>& i) { return te::cast(dtype, te::read(acc, i)); });
}

/// Reads a batch-broadcast operand: `batch` are the output's batch indices (right-aligned against
/// the operand's own batch dims, size-1 dims read 0), then the operand's two matrix indices.
Expr read_batched(const te::Tensor& t, size_t t_batch_rank, const Shape& t_shape,
                  const std::vector<Expr>& batch, std::vector<Expr> tail) {
  std::vector<Expr> idx;
  size_t off = batch.size() - t_batch_rank;
  for (size_t d = 0; d < t_batch_rank; ++d)
    idx.push_back(t_shape[d] == 1 ? te::int_imm(0) : batch[off + d]);
  for (Expr& e : tail) idx.push_back(std::move(e));
  return te::read(t, std::move(idx));
}

/// Shared by MatMul and MatMulInteger: numpy matmul shapes; `elem(a, b)` combines two reads.
te::Tensor lower_matmul_like(LowerCtx& ctx, const te::Tensor& a, const te::Tensor& b,
                             DType acc_type, const std::function<Expr(Expr, Expr)>& elem) {
  const Shape& as = a->shape;
  const Shape& bs = b->shape;
  if (as.empty() || bs.empty()) throw ctx.error("operands must have rank >= 1");
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  int64_t m = a_vec ? 1 : as[as.size() - 2];
  int64_t k = as.back();
  int64_t kb = b_vec ? bs[0] : bs[bs.size() - 2];
  int64_t n = b_vec ? 1 : bs.back();
  if (k != kb) throw ctx.error("inner dimensions differ: " + shape_str(as) + " x " + shape_str(bs));
  size_t a_br = a_vec ? 0 : as.size() - 2;
  size_t b_br = b_vec ? 0 : bs.size() - 2;
  Shape a_batch(as.begin(), as.begin() + a_br), b_batch(bs.begin(), bs.begin() + b_br);
  Shape batch = broadcast_shapes(ctx, a_batch, b_batch);
  Shape out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  size_t nb = batch.size();
  return ctx.reduce("matmul", out, acc_type, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      std::vector<Expr> bi(i.begin(), i.begin() + nb);
                      size_t p = nb;
                      std::vector<Expr> a_tail, b_tail;
                      if (!a_vec) a_tail.push_back(i[p++]);
                      a_tail.push_back(r[0]);
                      b_tail.push_back(r[0]);
                      if (!b_vec) b_tail.push_back(i[p++]);
                      return elem(read_batched(a, a_br, as, bi, std::move(a_tail)),
                                  read_batched(b, b_br, bs, bi, std::move(b_tail)));
                    });
}

std::vector<te::Tensor> lower_matmul(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), b = ctx.required(1);
  check_same_dtype(ctx, a, b);
  if (a->dtype == DType::Bool) throw ctx.error("bool operands are not supported");
  DType ct = compute_type(a->dtype);
  te::Tensor acc = lower_matmul_like(ctx, a, b, ct, [&](Expr x, Expr y) {
    return te::cast(ct, std::move(x)) * te::cast(ct, std::move(y));
  });
  return {cast_result(ctx, acc, a->dtype)};
}

/// A zero point read for MatMulInteger: scalar (per tensor), or per row of A / per column of B.
/// `row_or_col` is the output index of the row (A) or column (B); `matrix_dim` says which of the
/// operand's last two dims the zero point varies along.
Expr read_zero_point(const LowerCtx& ctx, const te::Tensor& zp, const Shape& operand,
                     const std::vector<Expr>& batch, const Expr& row_or_col, bool is_a) {
  if (shape_numel(zp->shape) == 1)
    return te::read(zp, std::vector<Expr>(zp->shape.size(), te::int_imm(0)));
  if (zp->shape.size() == 1) return te::read(zp, {row_or_col});
  if (zp->shape.size() != operand.size())
    throw ctx.error("zero point shape " + shape_str(zp->shape) + " does not fit operand " +
                    shape_str(operand));
  std::vector<Expr> idx;
  size_t br = zp->shape.size() - 2;
  size_t off = batch.size() - br;
  for (size_t d = 0; d < br; ++d)
    idx.push_back(zp->shape[d] == 1 ? te::int_imm(0) : batch[off + d]);
  Expr z = te::int_imm(0);
  if (is_a) {
    idx.push_back(zp->shape[br] == 1 ? z : row_or_col);
    idx.push_back(z);
  } else {
    idx.push_back(z);
    idx.push_back(zp->shape[br + 1] == 1 ? z : row_or_col);
  }
  return te::read(zp, std::move(idx));
}

/// sum_k (A - a_zp)(B - b_zp) in int32: MatMulInteger, and the accumulator of QLinearMatMul.
te::Tensor matmul_integer_core(LowerCtx& ctx, const te::Tensor& a, const te::Tensor& b,
                               const te::Tensor& azp, const te::Tensor& bzp) {
  for (const te::Tensor& t : {a, b})
    if (t->dtype != DType::Int8 && t->dtype != DType::UInt8)
      throw ctx.error("operands must be int8 or uint8");
  if (a->shape.size() < 2 || b->shape.size() < 2) {
    if (azp && shape_numel(azp->shape) != 1) throw ctx.error("per-row zero point needs rank >= 2");
    if (bzp && shape_numel(bzp->shape) != 1)
      throw ctx.error("per-column zero point needs rank >= 2");
  }
  const Shape& as = a->shape;
  const Shape& bs = b->shape;
  // The zero points depend on the output row/column, so the body is built from the full index.
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  int64_t k = as.back();
  int64_t kb = b_vec ? bs[0] : bs[bs.size() - 2];
  if (k != kb) throw ctx.error("inner dimensions differ: " + shape_str(as) + " x " + shape_str(bs));
  size_t a_br = a_vec ? 0 : as.size() - 2;
  size_t b_br = b_vec ? 0 : bs.size() - 2;
  Shape batch = broadcast_shapes(ctx, Shape(as.begin(), as.begin() + a_br),
                                 Shape(bs.begin(), bs.begin() + b_br));
  Shape out = batch;
  if (!a_vec) out.push_back(as[as.size() - 2]);
  if (!b_vec) out.push_back(bs.back());
  size_t nb = batch.size();
  te::Tensor y = ctx.reduce(
      "matmul", out, DType::Int32, te::ReduceKind::Sum, {k},
      [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        std::vector<Expr> bi(i.begin(), i.begin() + nb);
        size_t p = nb;
        std::vector<Expr> a_tail, b_tail;
        Expr row = a_vec ? te::int_imm(0) : i[p++];
        Expr col = b_vec ? te::int_imm(0) : i[p];
        if (!a_vec) a_tail.push_back(row);
        a_tail.push_back(r[0]);
        b_tail.push_back(r[0]);
        if (!b_vec) b_tail.push_back(col);
        Expr x = te::cast(DType::Int32, read_batched(a, a_br, as, bi, std::move(a_tail)));
        Expr w = te::cast(DType::Int32, read_batched(b, b_br, bs, bi, std::move(b_tail)));
        if (azp) x = x - te::cast(DType::Int32, read_zero_point(ctx, azp, as, bi, row, true));
        if (bzp) w = w - te::cast(DType::Int32, read_zero_point(ctx, bzp, bs, bi, col, false));
        return x * w;
      });
  return y;
}

std::vector<te::Tensor> lower_matmul_integer(LowerCtx& ctx) {
  return {matmul_integer_core(ctx, ctx.required(0), ctx.required(1), ctx.input(2), ctx.input(3))};
}

Expr read_scalar(const LowerCtx& ctx, const te::Tensor& t, const char* what) {
  if (shape_numel(t->shape) != 1) throw ctx.error(std::string(what) + " must be a scalar");
  return te::read(t, std::vector<Expr>(t->shape.size(), te::int_imm(0)));
}

std::vector<te::Tensor> lower_qlinear_matmul(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), as = ctx.required(1), azp = ctx.required(2);
  te::Tensor b = ctx.required(3), bs = ctx.required(4), bzp = ctx.required(5);
  te::Tensor ys = ctx.required(6), yzp = ctx.required(7);
  if (azp->dtype != a->dtype || bzp->dtype != b->dtype)
    throw ctx.error("zero points must have their operand's type");
  Expr a_scale = read_scalar(ctx, as, "a_scale"), b_scale = read_scalar(ctx, bs, "b_scale");
  Expr y_scale = read_scalar(ctx, ys, "y_scale"), y_zero = read_scalar(ctx, yzp, "y_zero_point");
  if (yzp->dtype != DType::Int8 && yzp->dtype != DType::UInt8)
    throw ctx.error("y_zero_point must be int8 or uint8");
  te::Tensor acc = matmul_integer_core(ctx, a, b, azp, bzp);
  DType yt = yzp->dtype;
  double lo = yt == DType::UInt8 ? 0 : -128, hi = yt == DType::UInt8 ? 255 : 127;
  const DType f = DType::Float32;
  // Requantize: round-half-even(acc * a_scale * b_scale / y_scale) + y_zero_point, saturated.
  return {ctx.compute("requantize", acc->shape, yt, [&](const std::vector<Expr>& i) {
    Expr scale = te::cast(f, a_scale) * te::cast(f, b_scale) / te::cast(f, y_scale);
    Expr v =
        te::call(te::CallFn::Round, {te::cast(f, te::read(acc, i)) * scale}) + te::cast(f, y_zero);
    return te::min(te::max(v, te::imm(f, lo)), te::imm(f, hi));
  })};
}

std::vector<te::Tensor> lower_gemm(LowerCtx& ctx) {
  te::Tensor a = ctx.required(0), b = ctx.required(1);
  te::Tensor c = ctx.input(2);
  check_same_dtype(ctx, a, b);
  if (c) check_same_dtype(ctx, a, c);
  if (a->shape.size() != 2 || b->shape.size() != 2)
    throw ctx.error("A and B must be matrices, got " + shape_str(a->shape) + " and " +
                    shape_str(b->shape));
  bool ta = ctx.node().attr_int("transA", 0) != 0;
  bool tb = ctx.node().attr_int("transB", 0) != 0;
  double alpha = ctx.node().attr_float("alpha", 1.0);
  double beta = ctx.node().attr_float("beta", 1.0);
  int64_t m = ta ? a->shape[1] : a->shape[0];
  int64_t k = ta ? a->shape[0] : a->shape[1];
  int64_t kb = tb ? b->shape[1] : b->shape[0];
  int64_t n = tb ? b->shape[0] : b->shape[1];
  if (k != kb)
    throw ctx.error("inner dimensions differ: " + shape_str(a->shape) + " x " +
                    shape_str(b->shape));
  Shape out{m, n};
  if (c) {
    if (c->shape.size() > 2) throw ctx.error("C must have rank <= 2");
    // Unidirectional broadcast: C must broadcast to [M, N] without growing the result.
    for (size_t d = 0; d < c->shape.size(); ++d) {
      int64_t want = out[2 - c->shape.size() + d];
      if (c->shape[d] != 1 && c->shape[d] != want)
        throw ctx.error("C of shape " + shape_str(c->shape) + " does not broadcast to " +
                        shape_str(out));
    }
  }
  DType dt = a->dtype;
  DType ct = compute_type(dt);
  bool epilogue = alpha != 1.0 || (c && beta != 0.0);
  DType acc_type = epilogue ? ct : dt;
  // Half-precision outputs without an epilogue still accumulate wide, then cast down.
  if (!epilogue && ct != dt) acc_type = ct;
  te::Tensor acc = ctx.reduce("matmul", out, acc_type, te::ReduceKind::Sum, {k},
                              [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                Expr x = ta ? te::read(a, {r[0], i[0]}) : te::read(a, {i[0], r[0]});
                                Expr y = tb ? te::read(b, {i[1], r[0]}) : te::read(b, {r[0], i[1]});
                                return te::cast(ct, x) * te::cast(ct, y);
                              });
  if (!epilogue) return {cast_result(ctx, acc, dt)};
  te::Tensor y = ctx.compute("epilogue", out, dt, [&](const std::vector<Expr>& i) {
    Expr v = te::read(acc, i);
    if (alpha != 1.0) v = v * te::imm(ct, alpha);
    if (c && beta != 0.0) {
      Expr cv = te::cast(ct, read_broadcast(c, i));
      if (beta != 1.0) cv = cv * te::imm(ct, beta);
      v = v + cv;
    }
    return v;
  });
  return {y};
}

// ---- Einsum ----

/// One operand's subscripts: letters, with `ellipsis_at` the position of "..." (or -1).
struct Term {
  std::vector<char> letters;
  int ellipsis_at = -1;
};

Term parse_term(const LowerCtx& ctx, const std::string& s) {
  Term t;
  for (size_t p = 0; p < s.size(); ++p) {
    char ch = s[p];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (s.compare(p, 3, "...") != 0 || t.ellipsis_at >= 0)
        throw ctx.error("malformed ellipsis in equation term '" + s + "'");
      t.ellipsis_at = static_cast<int>(t.letters.size());
      p += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(ch)))
      throw ctx.error(std::string("invalid character '") + ch + "' in equation");
    t.letters.push_back(ch);
  }
  return t;
}

std::vector<te::Tensor> lower_einsum(LowerCtx& ctx) {
  std::string eq = ctx.node().attr_string("equation", "");
  if (eq.empty()) throw ctx.error("equation attribute is required");
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    explicit_out = true;
  }
  std::vector<Term> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  size_t n_in = terms.size();
  if (n_in != ctx.num_inputs())
    throw ctx.error("equation has " + std::to_string(n_in) + " operands but the node has " +
                    std::to_string(ctx.num_inputs()) + " inputs");
  std::vector<te::Tensor> ins;
  for (size_t j = 0; j < n_in; ++j) {
    ins.push_back(ctx.required(j));
    check_same_dtype(ctx, ins[0], ins[j]);
  }
  DType dt = ins[0]->dtype;
  if (dt == DType::Bool) throw ctx.error("bool operands are not supported");
  DType ct = compute_type(dt);

  // Letter extents, and the broadcast shape of the ellipsis dims (right-aligned).
  std::map<char, int64_t> extent;
  std::map<char, int> count;
  Shape ell;
  std::vector<size_t> ell_rank(n_in, 0);
  for (size_t j = 0; j < n_in; ++j) {
    const Term& t = terms[j];
    const Shape& s = ins[j]->shape;
    if (t.ellipsis_at < 0 && s.size() != t.letters.size())
      throw ctx.error("operand " + std::to_string(j) + " of shape " + shape_str(s) +
                      " does not match its subscripts");
    if (t.ellipsis_at >= 0 && s.size() < t.letters.size())
      throw ctx.error("operand " + std::to_string(j) + " has fewer dims than subscripts");
    size_t er = s.size() - t.letters.size();
    ell_rank[j] = t.ellipsis_at >= 0 ? er : 0;
    Shape mine;
    for (size_t p = 0; p < t.letters.size(); ++p) {
      size_t dim = p + (t.ellipsis_at >= 0 && static_cast<int>(p) >= t.ellipsis_at ? er : 0);
      char l = t.letters[p];
      auto it = extent.find(l);
      if (it != extent.end() && it->second != s[dim])
        throw ctx.error(std::string("subscript '") + l + "' has inconsistent sizes " +
                        std::to_string(it->second) + " and " + std::to_string(s[dim]));
      extent[l] = s[dim];
      ++count[l];
    }
    if (t.ellipsis_at >= 0) {
      Shape es(s.begin() + t.ellipsis_at, s.begin() + t.ellipsis_at + er);
      ell = broadcast_shapes(ctx, ell, es);
    }
  }
  bool any_ellipsis =
      std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.ellipsis_at >= 0; });

  Term out_term;
  if (explicit_out) {
    out_term = parse_term(ctx, rhs);
    std::set<char> seen;
    for (char l : out_term.letters) {
      if (!extent.count(l))
        throw ctx.error(std::string("output subscript '") + l + "' is not in any operand");
      if (!seen.insert(l).second)
        throw ctx.error(std::string("output subscript '") + l + "' is repeated");
    }
  } else {
    // Implicit output: the ellipsis dims, then letters used exactly once, in ASCII order.
    if (any_ellipsis) out_term.ellipsis_at = 0;
    for (const auto& [l, c] : count)
      if (c == 1) out_term.letters.push_back(l);
  }
  // The ellipsis dims not kept in the output are summed, like the dropped letters.
  bool ell_out = out_term.ellipsis_at >= 0;
  std::vector<char> summed;
  for (const auto& [l, c] : extent)
    if (std::find(out_term.letters.begin(), out_term.letters.end(), l) == out_term.letters.end())
      summed.push_back(l);

  Shape out_shape;
  for (size_t p = 0; p <= out_term.letters.size(); ++p) {
    if (ell_out && static_cast<int>(p) == out_term.ellipsis_at)
      out_shape.insert(out_shape.end(), ell.begin(), ell.end());
    if (p < out_term.letters.size()) out_shape.push_back(extent[out_term.letters[p]]);
  }
  Shape red_ext;
  for (char l : summed) red_ext.push_back(extent[l]);
  if (!ell_out) red_ext.insert(red_ext.end(), ell.begin(), ell.end());

  auto body = [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
    std::map<char, Expr> v;
    std::vector<Expr> ell_idx;
    size_t p = 0;
    for (size_t q = 0; q <= out_term.letters.size(); ++q) {
      if (ell_out && static_cast<int>(q) == out_term.ellipsis_at)
        for (size_t e = 0; e < ell.size(); ++e) ell_idx.push_back(i[p++]);
      if (q < out_term.letters.size()) v[out_term.letters[q]] = i[p++];
    }
    for (size_t s = 0; s < summed.size(); ++s) v[summed[s]] = r[s];
    if (!ell_out)
      for (size_t e = 0; e < ell.size(); ++e) ell_idx.push_back(r[summed.size() + e]);
    Expr prod;
    for (size_t j = 0; j < n_in; ++j) {
      const Term& t = terms[j];
      const Shape& s = ins[j]->shape;
      std::vector<Expr> idx;
      for (size_t q = 0; q <= t.letters.size(); ++q) {
        if (t.ellipsis_at >= 0 && static_cast<int>(q) == t.ellipsis_at) {
          size_t er = ell_rank[j];
          size_t base = idx.size();
          for (size_t e = 0; e < er; ++e)
            idx.push_back(s[base + e] == 1 ? te::int_imm(0) : ell_idx[ell.size() - er + e]);
        }
        if (q < t.letters.size()) idx.push_back(v.at(t.letters[q]));
      }
      Expr x = te::cast(ct, te::read(ins[j], std::move(idx)));
      prod = prod.defined() ? prod * x : x;
    }
    return prod;
  };
  te::Tensor acc;
  if (red_ext.empty())
    acc = ctx.compute("einsum", out_shape, dt,
                      [&](const std::vector<Expr>& i) { return body(i, {}); });
  else
    acc = ctx.reduce("einsum", out_shape, ct, te::ReduceKind::Sum, red_ext, body);
  return {cast_result(ctx, acc, dt)};
}

}  // namespace

void register_matmul(Registry& r) {
  r.add("MatMul", lower_matmul);
  r.add("Gemm", lower_gemm);
  r.add("MatMulInteger", lower_matmul_integer);
  r.add("QLinearMatMul", lower_qlinear_matmul);
  r.add("Einsum", lower_einsum);
}

}  // namespace souffle::lower
