/// \file Visitor and mutator over TE expressions, generated from SOUFFLE_TE_EXPR_NODES.
/// The mutator keeps sharing: a node whose children did not change is returned as is; results
/// are memoized per node so DAG-shaped expressions are rewritten once per shared node.
#pragma once

#include <functional>
#include <unordered_map>

#include "core/te/expr.h"

namespace souffle::te {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual void visit(const Expr& e);

 protected:
#define SOUFFLE_X(N) virtual void visit_##N(const N& node, const Expr& e);
  SOUFFLE_TE_EXPR_NODES(SOUFFLE_X)
#undef SOUFFLE_X
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  /// Memoized dispatch to the per-kind hooks.
  virtual Expr mutate(const Expr& e);

 protected:
#define SOUFFLE_X(N) virtual Expr mutate_##N(const N& node, const Expr& e);
  SOUFFLE_TE_EXPR_NODES(SOUFFLE_X)
#undef SOUFFLE_X

 private:
  std::unordered_map<const ExprNode*, Expr> m_memo;
};

/// Replaces Vars (by identity) with expressions.
Expr substitute(const Expr& e, const std::unordered_map<const ExprNode*, Expr>& vars);
/// Replaces every Read of a tensor for which `fn` returns a defined Expr (given the read's
/// already-rewritten indices); other reads are kept.
Expr rewrite_reads(
    const Expr& e,
    const std::function<Expr(const Read& read, const std::vector<Expr>& indices)>& fn);
/// Calls fn on every node of e (pre-order, shared nodes once).
void for_each_node(const Expr& e, const std::function<void(const Expr&)>& fn);

}  // namespace souffle::te
