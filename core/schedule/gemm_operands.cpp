// Operand classification shared by the tensor-core mainloops (gemm_operands.h).
#include "core/schedule/gemm_operands.h"

#include <unordered_set>

#include "core/schedule/template_util.h"

namespace souffle::schedule::detail {

using loop::MmaType;
using te::Expr;

MmaType mma_type_of(gpu::Precision p) {
  switch (p) {
    case gpu::Precision::TF32:
      return MmaType::TF32;
    case gpu::Precision::BF16:
      return MmaType::BF16;
    case gpu::Precision::FP16:
    case gpu::Precision::FP32:
      break;
  }
  return MmaType::F16;
}

namespace {

/// Whether `e` is exactly the var of `iv`.
bool is_var_of(const Expr& e, const te::IterVar& iv) {
  return e.same_as(iv.var);
}

}  // namespace

const te::Read* plain_read(const Expr& value, DType ct) {
  Expr v = value;
  if (const te::Cast* c = v.as<te::Cast>()) v = c->a;
  const te::Read* r = v.as<te::Read>();
  return r && r->tensor->dtype == ct ? r : nullptr;
}

int64_t direct_copy_bytes(const Expr& value, DType ct, const std::vector<te::IterVar>& outer,
                          const std::vector<te::IterVar>& inner, int64_t inner_tile) {
  const te::Read* r = plain_read(value, ct);
  if (!r) return 0;
  const size_t n = outer.size() + inner.size();
  if (r->indices.size() < n) return 0;
  const size_t lead = r->indices.size() - n;
  for (size_t d = 0; d < outer.size(); ++d)
    if (!is_var_of(r->indices[lead + d], outer[d]) || r->tensor->shape[lead + d] != outer[d].extent)
      return 0;
  for (size_t d = 0; d < inner.size(); ++d)
    if (!is_var_of(r->indices[lead + outer.size() + d], inner[d]) ||
        r->tensor->shape[lead + outer.size() + d] != inner[d].extent)
      return 0;
  std::unordered_set<const te::ExprNode*> axes;
  for (const auto* list : {&outer, &inner})
    for (const te::IterVar& iv : *list) axes.insert(iv.var.get());
  for (size_t d = 0; d < lead; ++d)
    for (const te::ExprNode* v : vars_of(r->indices[d]))
      if (axes.count(v)) return 0;
  const int64_t inner_ext = extent_product(inner), es = dtype_size(ct);
  for (int64_t bytes : {16, 8, 4}) {
    const int64_t e = bytes / es;
    if (e >= 1 && bytes % es == 0 && inner_ext % e == 0 && inner_tile % e == 0) return bytes;
  }
  return 0;
}

}  // namespace souffle::schedule::detail
