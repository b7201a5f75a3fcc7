#include "core/te/builder.h"

#include <limits>

namespace souffle::te {
namespace {
std::vector<IterVar> make_axes(const Shape& extents, const char* prefix) {
  std::vector<IterVar> axes;
  axes.reserve(extents.size());
  for (size_t d = 0; d < extents.size(); ++d)
    axes.push_back({var(prefix + std::to_string(d)), extents[d]});
  return axes;
}
std::vector<Expr> vars_of(const std::vector<IterVar>& axes) {
  std::vector<Expr> v;
  v.reserve(axes.size());
  for (const IterVar& a : axes) v.push_back(a.var);
  return v;
}
}  // namespace

Op compute(const std::string& name, const Shape& shape, DType dtype, const IndexFn& fn,
           Origin origin) {
  auto op = std::make_shared<ComputeOp>();
  op->name = name;
  op->output = make_compute_tensor(name, shape, dtype);
  op->axes = make_axes(shape, "i");
  op->body = cast(dtype, fn(vars_of(op->axes)));
  op->origin = std::move(origin);
  return op;
}

Op reduce(const std::string& name, const Shape& shape, DType dtype, ReduceKind kind,
          const Shape& reduce_extents, const ReduceFn& fn, Expr init, Origin origin) {
  SOUFFLE_CHECK(kind != ReduceKind::None, "reduce: kind None");
  auto op = std::make_shared<ComputeOp>();
  op->name = name;
  op->output = make_compute_tensor(name, shape, dtype);
  op->axes = make_axes(shape, "i");
  op->reduce = kind;
  op->reduce_axes = make_axes(reduce_extents, "k");
  op->body = cast(dtype, fn(vars_of(op->axes), vars_of(op->reduce_axes)));
  op->init = init.defined() ? cast(dtype, init) : reduce_identity(kind, dtype);
  op->origin = std::move(origin);
  return op;
}

Expr reduce_identity(ReduceKind kind, DType dtype) {
  switch (kind) {
    case ReduceKind::Sum:
      return imm(dtype, 0);
    case ReduceKind::Prod:
      return imm(dtype, 1);
    case ReduceKind::Max:
      if (is_float(dtype)) return float_imm(-std::numeric_limits<double>::infinity(), dtype);
      if (dtype == DType::Bool) return int_imm(0, dtype);
      return int_imm(is_signed_int(dtype) ? std::numeric_limits<int64_t>::min() : 0, dtype);
    case ReduceKind::Min:
      if (is_float(dtype)) return float_imm(std::numeric_limits<double>::infinity(), dtype);
      if (dtype == DType::Bool) return int_imm(1, dtype);
      return int_imm(std::numeric_limits<int64_t>::max(), dtype);
    case ReduceKind::None:
      break;
  }
  SOUFFLE_CHECK(false, "reduce_identity: kind None");
  return {};
}

}  // namespace souffle::te
