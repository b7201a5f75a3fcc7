// Lowering of selection and order: TopK, ReverseSequence, and the ops whose output size depends
// on the data (Unique, NonMaxSuppression), which are refused with that reason.
//
// TopK with a constant k has a static shape. It becomes three TEs: each element's rank in the
// order (a count over its row: elements that come before it), the index holding each rank
// 0..k-1 (a reduction that finds the one element of that rank), and a gather of the values.
// This is O(n^2) per row, which suits the short rows of classification heads and beam search;
// a sort network would be the next step for long rows.
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

std::vector<te::Tensor> lower_top_k(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  const graph::Node& node = ctx.node();
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (rank == 0) throw ctx.error("input must have rank >= 1");
  int64_t k;
  if (ctx.opset() >= 10) {
    std::vector<int64_t> kv = ctx.constant_ints(1, "k");
    if (kv.size() != 1) throw ctx.error("k must hold one value");
    k = kv[0];
  } else {
    k = node.attr_int("k", -1);
  }
  size_t axis = static_cast<size_t>(normalize_axis(ctx, node.attr_int("axis", -1), rank));
  bool largest = node.attr_int("largest", 1) != 0;
  int64_t n = x->shape[axis];
  if (k < 0 || k > n)
    throw ctx.error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]");
  DType calc = compute_type(x->dtype);
  auto at = [&](const Idx& i, const Expr& pos) {
    Idx j = i;
    j[axis] = pos;
    return te::cast(calc, te::read(x, j));
  };
  // m comes before j: a larger (smaller) value, or an equal one at a lower index (ONNX keeps
  // equal values in index order).
  te::Tensor order = ctx.reduce(
      "rank", x->shape, DType::Int64, te::ReduceKind::Sum, {n}, [&](const Idx& i, const Idx& r) {
        Expr xm = at(i, r[0]), xj = at(i, i[axis]);
        Expr before = te::logical_or(largest ? te::gt(xm, xj) : te::lt(xm, xj),
                                     te::logical_and(te::eq(xm, xj), te::lt(r[0], i[axis])));
        return te::cast(DType::Int64, before);
      });
  Shape out = x->shape;
  out[axis] = k;
  // Exactly one element has each rank; the sum picks its index.
  te::Tensor indices = ctx.reduce(
      "indices", out, DType::Int64, te::ReduceKind::Sum, {n}, [&](const Idx& i, const Idx& r) {
        Idx j = i;
        j[axis] = r[0];
        return te::select(te::eq(te::read(order, j), i[axis]), r[0], te::int_imm(0));
      });
  te::Tensor vals = ctx.compute("values", out, x->dtype, [&](const Idx& i) {
    Idx j = i;
    j[axis] = te::read(indices, i);
    return te::read(x, j);
  });
  return {vals, indices};
}

/// y[.., t, .., b, ..] = x[.., len[b] - 1 - t, .., b, ..] for t < len[b], else x unchanged.
std::vector<te::Tensor> lower_reverse_sequence(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0), lens = ctx.required(1);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (rank < 2) throw ctx.error("input must have rank >= 2");
  size_t batch =
      static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("batch_axis", 1), rank));
  size_t time = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("time_axis", 0), rank));
  if (batch == time || batch > 1 || time > 1)
    throw ctx.error("batch_axis and time_axis must be 0 and 1 in some order");
  if (lens->shape != Shape{x->shape[batch]} || !is_int(lens->dtype))
    throw ctx.error("sequence_lens must be an integer tensor of shape [" +
                    std::to_string(x->shape[batch]) + "]");
  int64_t steps = x->shape[time];
  return {ctx.compute("", x->shape, x->dtype, [&](const Idx& i) {
    // Lengths are clamped to the time axis so that every read stays in bounds.
    Expr len = te::min(te::max(te::cast(DType::Int64, te::read(lens, {i[batch]})), te::int_imm(0)),
                       te::int_imm(steps));
    Idx j = i;
    j[time] = te::select(te::lt(i[time], len), len - te::int_imm(1) - i[time], i[time]);
    return te::read(x, j);
  })};
}

/// Ops whose output length is a property of the data, not of the shapes.
[[noreturn]] void refuse_data_dependent(LowerCtx& ctx, const std::string& what) {
  throw ctx.error("not supported: the output size depends on the input's values (" + what +
                  "); only static shapes are compiled");
}

}  // namespace

void register_sort_select(Registry& r) {
  r.add("TopK", lower_top_k);
  r.add("ReverseSequence", lower_reverse_sequence);
  r.add("Unique", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    refuse_data_dependent(ctx, "the number of distinct values");
  });
  r.add("NonMaxSuppression", [](LowerCtx& ctx) -> std::vector<te::Tensor> {
    refuse_data_dependent(ctx, "the number of boxes kept");
  });
}

}  // namespace souffle::lower
