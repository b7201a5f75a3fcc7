/// \file Visitor and mutator over loop-IR statements, generated from SOUFFLE_LOOP_STMT_NODES.
/// The mutator keeps sharing: a statement whose children did not change is returned as is.
#pragma once

#include <functional>
#include <unordered_map>

#include "core/loop/stmt.h"

namespace souffle::loop {

class StmtVisitor {
 public:
  virtual ~StmtVisitor() = default;
  virtual void visit(const Stmt& s);
  /// Called for every expression held directly by a statement (not for sub-expressions).
  virtual void visit_expr(const Expr& e) {}

 protected:
#define SOUFFLE_X(N) virtual void visit_##N(const N& node, const Stmt& s);
  SOUFFLE_LOOP_STMT_NODES(SOUFFLE_X)
#undef SOUFFLE_X
};

class StmtMutator {
 public:
  virtual ~StmtMutator() = default;
  virtual Stmt mutate(const Stmt& s);
  /// Rewrites an expression held directly by a statement; the default keeps it.
  virtual Expr mutate_expr(const Expr& e) { return e; }

 protected:
#define SOUFFLE_X(N) virtual Stmt mutate_##N(const N& node, const Stmt& s);
  SOUFFLE_LOOP_STMT_NODES(SOUFFLE_X)
#undef SOUFFLE_X
};

/// Replaces Vars (by identity) in every expression of s.
Stmt substitute(const Stmt& s, const std::unordered_map<const te::ExprNode*, Expr>& vars);
/// Calls fn on every statement of s (pre-order).
void for_each_stmt(const Stmt& s, const std::function<void(const Stmt&)>& fn);
/// Calls fn on every expression held directly by a statement of s.
void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& fn);

}  // namespace souffle::loop
