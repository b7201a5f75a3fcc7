#include "core/te/mutator.h"

#include <unordered_set>

namespace souffle::te {

// ---- visitor: plain recursion (for_each_node dedups shared nodes) ----

void ExprVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define SOUFFLE_X(N)          \
  case ExprKind::N:           \
    visit_##N(*e.as<N>(), e); \
    return;
    SOUFFLE_TE_EXPR_NODES(SOUFFLE_X)
#undef SOUFFLE_X
  }
}

void ExprVisitor::visit_IntImm(const IntImm&, const Expr&) {}
void ExprVisitor::visit_FloatImm(const FloatImm&, const Expr&) {}
void ExprVisitor::visit_Var(const Var&, const Expr&) {}
void ExprVisitor::visit_Unary(const Unary& n, const Expr&) {
  visit(n.a);
}
void ExprVisitor::visit_Binary(const Binary& n, const Expr&) {
  visit(n.a);
  visit(n.b);
}
void ExprVisitor::visit_Call(const Call& n, const Expr&) {
  for (const Expr& a : n.args) visit(a);
}
void ExprVisitor::visit_Select(const Select& n, const Expr&) {
  visit(n.cond);
  visit(n.t);
  visit(n.f);
}
void ExprVisitor::visit_Cast(const Cast& n, const Expr&) {
  visit(n.a);
}
void ExprVisitor::visit_Read(const Read& n, const Expr&) {
  for (const Expr& i : n.indices) visit(i);
}

// ---- mutator: memoized, keeps sharing ----

Expr ExprMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  auto it = m_memo.find(e.get());
  if (it != m_memo.end()) return it->second;
  Expr r;
  switch (e.kind()) {
#define SOUFFLE_X(N)               \
  case ExprKind::N:                \
    r = mutate_##N(*e.as<N>(), e); \
    break;
    SOUFFLE_TE_EXPR_NODES(SOUFFLE_X)
#undef SOUFFLE_X
  }
  m_memo.emplace(e.get(), r);
  return r;
}

namespace {
/// Mutates each element; `changed` tells whether any element is a different node.
std::vector<Expr> mutate_all(ExprMutator& m, const std::vector<Expr>& xs, bool& changed,
                             const std::function<Expr(const Expr&)>& fn) {
  std::vector<Expr> out;
  out.reserve(xs.size());
  for (const Expr& x : xs) {
    out.push_back(fn(x));
    if (!out.back().same_as(x)) changed = true;
  }
  return out;
}
}  // namespace

Expr ExprMutator::mutate_IntImm(const IntImm&, const Expr& e) {
  return e;
}
Expr ExprMutator::mutate_FloatImm(const FloatImm&, const Expr& e) {
  return e;
}
Expr ExprMutator::mutate_Var(const Var&, const Expr& e) {
  return e;
}

Expr ExprMutator::mutate_Unary(const Unary& n, const Expr& e) {
  Expr a = mutate(n.a);
  return a.same_as(n.a) ? e : unary(n.op, std::move(a));
}

Expr ExprMutator::mutate_Binary(const Binary& n, const Expr& e) {
  Expr a = mutate(n.a), b = mutate(n.b);
  return a.same_as(n.a) && b.same_as(n.b) ? e : binary(n.op, std::move(a), std::move(b));
}

Expr ExprMutator::mutate_Call(const Call& n, const Expr& e) {
  bool changed = false;
  auto args = mutate_all(*this, n.args, changed, [this](const Expr& x) { return mutate(x); });
  return changed ? call(n.fn, std::move(args)) : e;
}

Expr ExprMutator::mutate_Select(const Select& n, const Expr& e) {
  Expr c = mutate(n.cond), t = mutate(n.t), f = mutate(n.f);
  if (c.same_as(n.cond) && t.same_as(n.t) && f.same_as(n.f)) return e;
  return select(std::move(c), std::move(t), std::move(f));
}

Expr ExprMutator::mutate_Cast(const Cast& n, const Expr& e) {
  Expr a = mutate(n.a);
  return a.same_as(n.a) ? e : cast(n.dtype, std::move(a));
}

Expr ExprMutator::mutate_Read(const Read& n, const Expr& e) {
  bool changed = false;
  auto idx = mutate_all(*this, n.indices, changed, [this](const Expr& x) { return mutate(x); });
  return changed ? read(n.tensor, std::move(idx)) : e;
}

// ---- passes ----

namespace {

class Substituter : public ExprMutator {
 public:
  explicit Substituter(const std::unordered_map<const ExprNode*, Expr>& vars) : m_vars(vars) {}

 protected:
  Expr mutate_Var(const Var&, const Expr& e) override {
    auto it = m_vars.find(e.get());
    return it != m_vars.end() ? it->second : e;
  }

 private:
  const std::unordered_map<const ExprNode*, Expr>& m_vars;
};

class ReadRewriter : public ExprMutator {
 public:
  using Fn = std::function<Expr(const Read& read, const std::vector<Expr>& indices)>;
  explicit ReadRewriter(const Fn& fn) : m_fn(fn) {}

 protected:
  Expr mutate_Read(const Read& n, const Expr& e) override {
    std::vector<Expr> idx;
    idx.reserve(n.indices.size());
    bool changed = false;
    for (const Expr& i : n.indices) {
      idx.push_back(mutate(i));
      if (!idx.back().same_as(i)) changed = true;
    }
    Expr r = m_fn(n, idx);
    if (r.defined()) return r;
    return changed ? read(n.tensor, std::move(idx)) : e;
  }

 private:
  const Fn& m_fn;
};

void walk(const Expr& e, std::unordered_set<const ExprNode*>& seen,
          const std::function<void(const Expr&)>& fn) {
  if (!e.defined()) return;
  // Only a node that other handles may hold can be met again: the others are not remembered.
  if (e.shared() && !seen.insert(e.get()).second) return;
  fn(e);
  switch (e.kind()) {
    case ExprKind::Unary:
      walk(e.as<Unary>()->a, seen, fn);
      return;
    case ExprKind::Binary:
      walk(e.as<Binary>()->a, seen, fn);
      walk(e.as<Binary>()->b, seen, fn);
      return;
    case ExprKind::Call:
      for (const Expr& a : e.as<Call>()->args) walk(a, seen, fn);
      return;
    case ExprKind::Select:
      walk(e.as<Select>()->cond, seen, fn);
      walk(e.as<Select>()->t, seen, fn);
      walk(e.as<Select>()->f, seen, fn);
      return;
    case ExprKind::Cast:
      walk(e.as<Cast>()->a, seen, fn);
      return;
    case ExprKind::Read:
      for (const Expr& a : e.as<Read>()->indices) walk(a, seen, fn);
      return;
    default:
      return;
  }
}

}  // namespace

Expr substitute(const Expr& e, const std::unordered_map<const ExprNode*, Expr>& vars) {
  if (vars.empty()) return e;
  return Substituter(vars).mutate(e);
}

Expr rewrite_reads(
    const Expr& e,
    const std::function<Expr(const Read& read, const std::vector<Expr>& indices)>& fn) {
  return ReadRewriter(fn).mutate(e);
}

void for_each_node(const Expr& e, const std::function<void(const Expr&)>& fn) {
  std::unordered_set<const ExprNode*> seen;
  walk(e, seen, fn);
}

}  // namespace souffle::te
