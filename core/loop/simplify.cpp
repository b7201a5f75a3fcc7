#include "core/loop/simplify.h"

#include <optional>
#include <unordered_map>

#include "core/loop/mutator.h"
#include "core/te/bounds.h"
#include "core/te/mutator.h"

namespace souffle::loop {

namespace {

using te::BinaryOp;

const te::IntImm* int_const(const Expr& e) {
  const te::IntImm* i = e.as<te::IntImm>();
  return i && (e.dtype() == DType::Int64 || e.dtype() == DType::Bool) ? i : nullptr;
}

class ExprSimplifier : public te::ExprMutator {
 protected:
  Expr mutate_Binary(const te::Binary& n, const Expr& e) override {
    Expr a = mutate(n.a), b = mutate(n.b);
    const te::IntImm* ca = int_const(a);
    const te::IntImm* cb = int_const(b);
    if (ca && cb) {
      if (std::optional<int64_t> r = te::fold_int(n.op, ca->value, cb->value))
        return te::int_imm(*r, e.dtype());
    }
    bool index = a.dtype() == DType::Int64;
    bool boolean = a.dtype() == DType::Bool;
    if (index) {
      switch (n.op) {
        case BinaryOp::Add:
          if (ca && ca->value == 0) return b;
          if (cb && cb->value == 0) return a;
          break;
        case BinaryOp::Sub:
          if (cb && cb->value == 0) return a;
          break;
        case BinaryOp::Mul:
          if (ca && ca->value == 1) return b;
          if (cb && cb->value == 1) return a;
          if ((ca && ca->value == 0) || (cb && cb->value == 0)) return te::int_imm(0);
          break;
        case BinaryOp::Div:
        case BinaryOp::FloorDiv:
          if (cb && cb->value == 1) return a;
          break;
        case BinaryOp::Mod:
        case BinaryOp::FloorMod:
          if (cb && cb->value == 1) return te::int_imm(0);
          break;
        default:
          break;
      }
    } else if (boolean && (n.op == BinaryOp::And || n.op == BinaryOp::Or)) {
      bool is_and = n.op == BinaryOp::And;
      if (ca) return (ca->value != 0) == is_and ? b : a;
      if (cb) return (cb->value != 0) == is_and ? a : b;
    }
    if (a.same_as(n.a) && b.same_as(n.b)) return e;
    return te::binary(n.op, a, b);
  }

  Expr mutate_Select(const te::Select& n, const Expr& e) override {
    Expr c = mutate(n.cond);
    if (const te::IntImm* k = int_const(c)) return mutate(k->value ? n.t : n.f);
    Expr t = mutate(n.t), f = mutate(n.f);
    if (c.same_as(n.cond) && t.same_as(n.t) && f.same_as(n.f)) return e;
    return te::select(c, t, f);
  }
};

class StmtSimplifier : public StmtMutator {
 public:
  Expr mutate_expr(const Expr& e) override {
    // A fresh memo per expression: substitutions change what a shared node means.
    ExprSimplifier s;
    return s.mutate(m_bound.empty() ? e : te::substitute(e, m_bound));
  }

 protected:
  Stmt mutate_For(const For& n, const Stmt& s) override {
    Expr mn = mutate_expr(n.min), ext = mutate_expr(n.extent);
    if (!is_thread_binding(n.for_kind)) {
      if (const te::IntImm* k = int_const(ext)) {
        if (k->value <= 0) return seq({});
        if (k->value == 1) return with_bound(n.var, mn, n.body);
      }
    }
    Stmt body = mutate(n.body);
    if (mn.same_as(n.min) && ext.same_as(n.extent) && body.same_as(n.body)) return s;
    return make_for(n.var, mn, ext, n.for_kind, body);
  }
  Stmt mutate_LetStmt(const LetStmt& n, const Stmt& s) override {
    Expr v = mutate_expr(n.value);
    if (int_const(v) || v.as<te::Var>()) return with_bound(n.var, v, n.body);
    Stmt body = mutate(n.body);
    if (v.same_as(n.value) && body.same_as(n.body)) return s;
    return let_stmt(n.var, v, body);
  }
  Stmt mutate_IfThenElse(const IfThenElse& n, const Stmt& s) override {
    Expr c = mutate_expr(n.cond);
    if (const te::IntImm* k = int_const(c)) {
      if (k->value) return mutate(n.then_case);
      return n.else_case.defined() ? mutate(n.else_case) : seq({});
    }
    Stmt t = mutate(n.then_case), e = mutate(n.else_case);
    if (c.same_as(n.cond) && t.same_as(n.then_case) && e.same_as(n.else_case)) return s;
    return if_then_else(c, t, e);
  }

 private:
  /// `body` simplified with `var` replaced by `value` (simplified already, so free of every
  /// variable bound around it): what simplifying the body substituted would give, in one walk
  /// over it instead of one substitution of the whole body per such binding.
  Stmt with_bound(const Expr& var, const Expr& value, const Stmt& body) {
    // A variable bound again inside its own scope (not made by the schedules): substituted
    // in the body first, as before.
    if (!m_bound.emplace(var.get(), value).second)
      return mutate(loop::substitute(body, {{var.get(), value}}));
    Stmt out = mutate(body);
    m_bound.erase(var.get());
    return out;
  }

  /// The variables of the lets and one-trip loops around the statement being simplified, and
  /// what replaces each.
  std::unordered_map<const te::ExprNode*, Expr> m_bound;
};

}  // namespace

Expr simplify(const Expr& e) {
  ExprSimplifier s;
  return s.mutate(e);
}

Stmt simplify(const Stmt& s) {
  StmtSimplifier m;
  return m.mutate(s);
}

}  // namespace souffle::loop
