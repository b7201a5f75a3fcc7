#include "core/lower/lower.h"

namespace souffle::lower {

Shape broadcast_shapes(const LowerCtx& ctx, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ctx.error("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

te::Expr read_broadcast(const te::Tensor& t, const std::vector<te::Expr>& out) {
  size_t rank = t->shape.size();
  SOUFFLE_CHECK(rank <= out.size(), "read_broadcast: tensor rank exceeds output rank");
  std::vector<te::Expr> idx;
  idx.reserve(rank);
  size_t off = out.size() - rank;
  for (size_t d = 0; d < rank; ++d) idx.push_back(t->shape[d] == 1 ? te::int_imm(0) : out[off + d]);
  return te::read(t, std::move(idx));
}

DType compute_type(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
}

DType math_type(DType t) {
  return is_float(t) ? compute_type(t) : DType::Float64;
}

te::Expr round_to_own_type(const te::Expr& e) {
  if (!is_float(e.dtype()) || e.dtype() == DType::Float64) return e;
  return te::cast(e.dtype(), te::cast(DType::Float64, e));
}

int64_t normalize_axis(const LowerCtx& ctx, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    throw ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                    std::to_string(rank));
  return a;
}

}  // namespace souffle::lower
