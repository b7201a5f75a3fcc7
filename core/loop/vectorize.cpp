#include "core/loop/vectorize.h"

#include "core/loop/mutator.h"
#include "core/loop/simplify.h"
#include "core/te/equal.h"
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

}  // namespace

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

namespace {

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

namespace {

class VectorLowering : public StmtMutator {
 protected:
  Stmt mutate_For(const For& n, const Stmt& s) override {
    if (n.for_kind != ForKind::Vectorized) {
      Stmt body = mutate(n.body);
      if (body.same_as(n.body)) return s;
      return make_for(n.var, n.min, n.extent, n.for_kind, body);
    }
    VectorCopy copy;
    const Store* st = n.body.as<Store>();
    if (!st || match_vector_copy(n, copy) || !vectorizable(n)) return s;
    const int64_t lanes = n.extent.as<te::IntImm>()->value;
    const Expr& v = n.var;
    auto fresh = [&] { return te::var(v.as<te::Var>()->name); };
    // One register array per distinct vector read, in order of first appearance.
    std::vector<std::pair<Expr, Tensor>> regs;  // (the read with v, its array)
    std::vector<Stmt> loads;
    Expr value =
        te::rewrite_reads(st->value, [&](const te::Read& r, const std::vector<Expr>& idx) -> Expr {
          bool vec = false;
          for (const Expr& i : idx) vec |= uses(i, v);
          if (!vec) return Expr();
          Expr whole = te::read(r.tensor, idx);
          for (const auto& [read, arr] : regs)
            if (te::equal(read, whole)) return te::read(arr, {v});
          Tensor arr = make_buffer(r.tensor->name + "_vec", {lanes}, r.tensor->dtype);
          Expr w = fresh();
          loads.push_back(make_for(w, lanes, ForKind::Vectorized,
                                   store(arr, {w}, te::substitute(whole, {{v.get(), w}}))));
          regs.emplace_back(whole, arr);
          return te::read(arr, {v});
        });
    Tensor out = make_buffer(st->buffer->name + "_vec", {lanes}, st->buffer->dtype);
    Expr wc = fresh(), ws = fresh();
    std::vector<Stmt> body = std::move(loads);
    body.push_back(make_for(wc, lanes, ForKind::Unrolled,
                            store(out, {wc}, te::substitute(value, {{v.get(), wc}}))));
    std::vector<Expr> idx;
    for (const Expr& i : st->indices) idx.push_back(te::substitute(i, {{v.get(), ws}}));
    body.push_back(
        make_for(ws, lanes, ForKind::Vectorized, store(st->buffer, idx, te::read(out, {ws}))));
    Stmt result = allocate(out, MemScope::Local, seq(std::move(body)));
    for (size_t i = regs.size(); i-- > 0;)
      result = allocate(regs[i].second, MemScope::Local, result);
    return result;
  }
};

}  // namespace

Stmt lower_vector_accesses(const Stmt& s) {
  VectorLowering l;
  return l.mutate(s);
}

bool match_vector_copy(const For& f, VectorCopy& out) {
  const te::IntImm* mn = f.min.as<te::IntImm>();
  const te::IntImm* ext = f.extent.as<te::IntImm>();
  const Store* st = f.body.as<Store>();
  if (f.for_kind != ForKind::Vectorized || !mn || mn->value != 0 || !ext || !st) return false;
  const te::Read* r = st->value.as<te::Read>();
  const int64_t e = ext->value;
  if (!r || r->tensor->dtype != st->buffer->dtype || e * dtype_size(st->buffer->dtype) != 16)
    return false;
  if (!vector_access(st->buffer, st->indices, f.var, e) ||
      !vector_access(r->tensor, r->indices, f.var, e))
    return false;
  auto first = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> o;
    for (const Expr& i : idx)
      o.push_back(simplify(te::substitute(i, {{f.var.get(), te::int_imm(0)}})));
    return o;
  };
  out.dst = st->buffer;
  out.src = r->tensor;
  out.dst_first = first(st->indices);
  out.src_first = first(r->indices);
  out.lanes = e;
  return true;
}

}  // namespace souffle::loop
