// Lowering of dense linear algebra: Det.
//
// The determinant of each [M, M] matrix is computed by Gaussian elimination with partial
// pivoting, unrolled over the M columns at compile time: per column, a reduction finds the
// pivot row (largest magnitude, first on ties), and one TE swaps it in and eliminates below it.
// The determinant is the product of the pivots times the sign of the row swaps.
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

std::vector<te::Tensor> lower_det(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  size_t rank = x->shape.size();
  if (rank < 2 || x->shape[rank - 1] != x->shape[rank - 2])
    throw ctx.error("input must have shape [..., M, M], got " + shape_str(x->shape));
  if (!is_float(x->dtype))
    throw ctx.error(std::string("expects a floating-point input, got ") + dtype_name(x->dtype));
  int64_t m = x->shape.back();
  Shape batch(x->shape.begin(), x->shape.end() - 2);
  DType calc = compute_type(x->dtype);
  size_t nb = batch.size();
  auto cell = [&](const te::Tensor& a, const Idx& b, const Expr& r, const Expr& c) {
    Idx i = b;
    i.push_back(r);
    i.push_back(c);
    return te::cast(calc, te::read(a, i));
  };
  auto batch_of = [&](const Idx& i) { return Idx(i.begin(), i.begin() + static_cast<long>(nb)); };

  te::Tensor a = x;
  std::vector<te::Tensor> pivots;  // the pivot row chosen for each column
  for (int64_t k = 0; k + 1 < m; ++k) {
    Expr kk = te::int_imm(k);
    std::string col = std::to_string(k);
    // The pivot: the row r >= k with the largest |a[r, k]|, the first of equals.
    te::Tensor big =
        ctx.reduce("pivot_abs" + col, batch, calc, te::ReduceKind::Max, {m - k},
                   [&](const Idx& i, const Idx& r) { return te::abs(cell(a, i, r[0] + kk, kk)); });
    te::Tensor piv =
        ctx.reduce("pivot" + col, batch, DType::Int64, te::ReduceKind::Min, {m - k},
                   [&](const Idx& i, const Idx& r) {
                     Expr row = r[0] + kk;
                     return te::select(te::eq(te::abs(cell(a, i, row, kk)), te::read(big, i)), row,
                                       te::int_imm(m));
                   });
    pivots.push_back(piv);
    // Rows k and p swapped; rows below k eliminated with the pivot row.
    te::Tensor prev = a;
    Shape full = x->shape;
    a = ctx.compute("eliminate" + col, full, calc, [&](const Idx& i) {
      Idx b = batch_of(i);
      Expr r = i[nb], c = i[nb + 1];
      Expr p = te::read(piv, b);
      Expr src = te::select(te::eq(r, kk), p, te::select(te::eq(r, p), kk, r));
      Expr v = cell(prev, b, src, c);
      Expr pivot = cell(prev, b, p, kk);
      Expr factor = te::select(te::eq(pivot, te::imm(calc, 0)), te::imm(calc, 0),
                               cell(prev, b, src, kk) / pivot);
      Expr eliminated = v - factor * cell(prev, b, p, c);
      return te::select(te::gt(r, kk), eliminated, v);
    });
  }
  te::Tensor diag = ctx.reduce("diagonal_product", batch, calc, te::ReduceKind::Prod, {m},
                               [&](const Idx& i, const Idx& r) { return cell(a, i, r[0], r[0]); });
  return {ctx.compute("", batch, x->dtype, [&](const Idx& i) {
    Expr v = te::read(diag, i);
    for (size_t k = 0; k < pivots.size(); ++k)
      v = te::select(te::ne(te::read(pivots[k], i), te::int_imm(static_cast<int64_t>(k))), -v, v);
    return te::cast(x->dtype, v);
  })};
}

}  // namespace

void register_linalg(Registry& r) {
  r.add("Det", lower_det);
}

}  // namespace souffle::lower
