#include "core/loop/vectorize.h"

#include "core/loop/mutator.h"
#include "core/te/mutator.h"

namespace souffle::loop {

namespace {

bool uses(const Expr& e, const Expr& v) {
  bool found = false;
  te::for_each_node(e, [&](const Expr& n) { found |= n.same_as(v); });
  return found;
}

/// e is provably a multiple of k.
bool multiple_of(const Expr& e, int64_t k) {
  if (const te::IntImm* i = e.as<te::IntImm>()) return i->value % k == 0;
  if (const te::Binary* b = e.as<te::Binary>()) {
    if (b->op == te::BinaryOp::Mul) return multiple_of(b->a, k) || multiple_of(b->b, k);
    if (b->op == te::BinaryOp::Add || b->op == te::BinaryOp::Sub)
      return multiple_of(b->a, k) && multiple_of(b->b, k);
  }
  return false;
}

/// The last index is v or base + v / v + base with base a multiple of e and free of v.
bool contiguous(const Expr& idx, const Expr& v, int64_t e) {
  if (idx.same_as(v)) return true;
  const te::Binary* b = idx.as<te::Binary>();
  if (!b || b->op != te::BinaryOp::Add) return false;
  if (b->b.same_as(v)) return !uses(b->a, v) && multiple_of(b->a, e);
  if (b->a.same_as(v)) return !uses(b->b, v) && multiple_of(b->b, e);
  return false;
}

bool vector_access(const Tensor& buf, const std::vector<Expr>& idx, const Expr& v, int64_t e) {
  if (idx.empty() || buf->shape.back() % e != 0) return false;
  for (size_t d = 0; d + 1 < idx.size(); ++d)
    if (uses(idx[d], v)) return false;
  return contiguous(idx.back(), v, e);
}

bool vectorizable(const For& f) {
  const te::IntImm* mn = f.min.as<te::IntImm>();
  const te::IntImm* ext = f.extent.as<te::IntImm>();
  const Store* st = f.body.as<Store>();
  if (!mn || mn->value != 0 || !ext || !st) return false;
  int64_t e = ext->value;
  if (e < 2 || e * dtype_size(st->buffer->dtype) != 16) return false;
  if (!vector_access(st->buffer, st->indices, f.var, e)) return false;
  bool ok = true;
  te::for_each_node(st->value, [&](const Expr& n) {
    if (const te::Read* r = n.as<te::Read>()) {
      bool in_index = false;
      for (const Expr& i : r->indices) in_index |= uses(i, f.var);
      if (in_index)
        ok &= dtype_size(r->tensor->dtype) == dtype_size(st->buffer->dtype) &&
              vector_access(r->tensor, r->indices, f.var, e);
    } else if (n.as<te::Select>()) {
      // A per-lane choice would need masked vector accesses.
      ok &= !uses(n, f.var);
    }
  });
  return ok;
}

class Vectorizer : public StmtMutator {
 protected:
  Stmt mutate_For(const For& n, const Stmt& s) override {
    Stmt body = mutate(n.body);
    bool mark = (n.for_kind == ForKind::Serial || n.for_kind == ForKind::Unrolled) &&
                body.same_as(n.body) && vectorizable(n);
    if (mark) return make_for(n.var, n.min, n.extent, ForKind::Vectorized, body);
    if (body.same_as(n.body)) return s;
    return make_for(n.var, n.min, n.extent, n.for_kind, body);
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) {
  Vectorizer v;
  return v.mutate(s);
}

}  // namespace souffle::loop
