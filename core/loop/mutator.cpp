#include "core/loop/mutator.h"

#include "core/te/mutator.h"

namespace souffle::loop {

void StmtVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define SOUFFLE_X(N)          \
  case StmtKind::N:           \
    visit_##N(*s.as<N>(), s); \
    break;
    SOUFFLE_LOOP_STMT_NODES(SOUFFLE_X)
#undef SOUFFLE_X
  }
}

void StmtVisitor::visit_For(const For& n, const Stmt&) {
  visit_expr(n.min);
  visit_expr(n.extent);
  visit(n.body);
}
void StmtVisitor::visit_LetStmt(const LetStmt& n, const Stmt&) {
  visit_expr(n.value);
  visit(n.body);
}
void StmtVisitor::visit_Allocate(const Allocate& n, const Stmt&) {
  visit(n.body);
}
void StmtVisitor::visit_Store(const Store& n, const Stmt&) {
  for (const Expr& i : n.indices) visit_expr(i);
  visit_expr(n.value);
}
void StmtVisitor::visit_AtomicAdd(const AtomicAdd& n, const Stmt&) {
  for (const Expr& i : n.indices) visit_expr(i);
  visit_expr(n.value);
}
void StmtVisitor::visit_Shuffle(const Shuffle& n, const Stmt&) {
  for (const Expr& i : n.indices) visit_expr(i);
  visit_expr(n.value);
  visit_expr(n.arg);
}
void StmtVisitor::visit_IfThenElse(const IfThenElse& n, const Stmt&) {
  visit_expr(n.cond);
  visit(n.then_case);
  visit(n.else_case);
}
void StmtVisitor::visit_Seq(const Seq& n, const Stmt&) {
  for (const Stmt& s : n.stmts) visit(s);
}
void StmtVisitor::visit_BlockBarrier(const BlockBarrier&, const Stmt&) {}
void StmtVisitor::visit_GridBarrier(const GridBarrier&, const Stmt&) {}
void StmtVisitor::visit_FlagRelease(const FlagRelease& n, const Stmt&) {
  visit_expr(n.index);
}
void StmtVisitor::visit_FlagWait(const FlagWait& n, const Stmt&) {
  visit_expr(n.first);
  visit_expr(n.count);
}
void StmtVisitor::visit_Stage(const Stage& n, const Stmt&) {
  visit(n.body);
}
void StmtVisitor::visit_Evaluate(const Evaluate& n, const Stmt&) {
  visit_expr(n.value);
}
void StmtVisitor::visit_Comment(const Comment&, const Stmt&) {}
void StmtVisitor::visit_TimelineRecord(const TimelineRecord&, const Stmt&) {}
void StmtVisitor::visit_FragmentAlloc(const FragmentAlloc& n, const Stmt&) {
  visit(n.body);
}
void StmtVisitor::visit_FragmentFill(const FragmentFill& n, const Stmt&) {
  visit_expr(n.index);
  visit_expr(n.value);
}
void StmtVisitor::visit_FragmentLoad(const FragmentLoad& n, const Stmt&) {
  visit_expr(n.index);
  for (const Expr& i : n.origin) visit_expr(i);
}
void StmtVisitor::visit_FragmentMma(const FragmentMma& n, const Stmt&) {
  visit_expr(n.di);
  visit_expr(n.ai);
  visit_expr(n.bi);
  visit_expr(n.ci);
}
void StmtVisitor::visit_FragmentStore(const FragmentStore& n, const Stmt&) {
  for (const Expr& i : n.origin) visit_expr(i);
  visit_expr(n.index);
}
void StmtVisitor::visit_AsyncCopy(const AsyncCopy& n, const Stmt&) {
  for (const Expr& i : n.dst_index) visit_expr(i);
  for (const Expr& i : n.src_index) visit_expr(i);
  if (n.pred.defined()) visit_expr(n.pred);
}
void StmtVisitor::visit_AsyncCommit(const AsyncCommit&, const Stmt&) {}
void StmtVisitor::visit_AsyncWait(const AsyncWait&, const Stmt&) {}
void StmtVisitor::visit_MatrixLoad(const MatrixLoad& n, const Stmt&) {
  visit_expr(n.dst_offset);
  for (const Expr& i : n.src_index) visit_expr(i);
}
void StmtVisitor::visit_MmaSync(const MmaSync& n, const Stmt&) {
  visit_expr(n.d_offset);
  visit_expr(n.a_offset);
  visit_expr(n.b_offset);
  visit_expr(n.c_offset);
}
void StmtVisitor::visit_WgmmaFence(const WgmmaFence&, const Stmt&) {}
void StmtVisitor::visit_WgmmaMma(const WgmmaMma& n, const Stmt&) {
  visit_expr(n.d_offset);
  for (const Expr& i : n.a_index) visit_expr(i);
  for (const Expr& i : n.b_index) visit_expr(i);
}
void StmtVisitor::visit_WgmmaCommit(const WgmmaCommit&, const Stmt&) {}
void StmtVisitor::visit_WgmmaWait(const WgmmaWait&, const Stmt&) {}

Stmt StmtMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define SOUFFLE_X(N) \
  case StmtKind::N:  \
    return mutate_##N(*s.as<N>(), s);
    SOUFFLE_LOOP_STMT_NODES(SOUFFLE_X)
#undef SOUFFLE_X
  }
  return s;
}

namespace {

bool mutate_all(StmtMutator& m, const std::vector<Expr>& in, std::vector<Expr>& out) {
  bool changed = false;
  out.reserve(in.size());
  for (const Expr& e : in) {
    out.push_back(m.mutate_expr(e));
    changed |= !out.back().same_as(e);
  }
  return changed;
}

}  // namespace

Stmt StmtMutator::mutate_For(const For& n, const Stmt& s) {
  Expr mn = mutate_expr(n.min), ext = mutate_expr(n.extent);
  Stmt body = mutate(n.body);
  if (mn.same_as(n.min) && ext.same_as(n.extent) && body.same_as(n.body)) return s;
  return make_for(n.var, mn, ext, n.for_kind, body);
}
Stmt StmtMutator::mutate_LetStmt(const LetStmt& n, const Stmt& s) {
  Expr v = mutate_expr(n.value);
  Stmt body = mutate(n.body);
  if (v.same_as(n.value) && body.same_as(n.body)) return s;
  return let_stmt(n.var, v, body);
}
Stmt StmtMutator::mutate_Allocate(const Allocate& n, const Stmt& s) {
  Stmt body = mutate(n.body);
  if (body.same_as(n.body)) return s;
  return allocate(n.buffer, n.scope, body);
}
Stmt StmtMutator::mutate_Store(const Store& n, const Stmt& s) {
  std::vector<Expr> idx;
  bool changed = mutate_all(*this, n.indices, idx);
  Expr v = mutate_expr(n.value);
  if (!changed && v.same_as(n.value)) return s;
  return store(n.buffer, std::move(idx), v);
}
Stmt StmtMutator::mutate_AtomicAdd(const AtomicAdd& n, const Stmt& s) {
  std::vector<Expr> idx;
  bool changed = mutate_all(*this, n.indices, idx);
  Expr v = mutate_expr(n.value);
  if (!changed && v.same_as(n.value)) return s;
  return atomic_add(n.buffer, std::move(idx), v);
}
Stmt StmtMutator::mutate_Shuffle(const Shuffle& n, const Stmt& s) {
  std::vector<Expr> idx;
  bool changed = mutate_all(*this, n.indices, idx);
  Expr v = mutate_expr(n.value), a = mutate_expr(n.arg);
  if (!changed && v.same_as(n.value) && a.same_as(n.arg)) return s;
  return shuffle(n.buffer, std::move(idx), v, n.shuffle, a);
}
Stmt StmtMutator::mutate_IfThenElse(const IfThenElse& n, const Stmt& s) {
  Expr c = mutate_expr(n.cond);
  Stmt t = mutate(n.then_case), e = mutate(n.else_case);
  if (c.same_as(n.cond) && t.same_as(n.then_case) && e.same_as(n.else_case)) return s;
  return if_then_else(c, t, e);
}
Stmt StmtMutator::mutate_Seq(const Seq& n, const Stmt& s) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& x : n.stmts) {
    out.push_back(mutate(x));
    changed |= !out.back().same_as(x);
  }
  if (!changed) return s;
  return seq(std::move(out));
}
Stmt StmtMutator::mutate_BlockBarrier(const BlockBarrier&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_GridBarrier(const GridBarrier&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_FlagRelease(const FlagRelease& n, const Stmt& s) {
  Expr i = mutate_expr(n.index);
  if (i.same_as(n.index)) return s;
  return flag_release(n.flags, i, n.stage);
}
Stmt StmtMutator::mutate_FlagWait(const FlagWait& n, const Stmt& s) {
  Expr f = mutate_expr(n.first), c = mutate_expr(n.count);
  if (f.same_as(n.first) && c.same_as(n.count)) return s;
  return flag_wait(n.flags, f, c, n.per_run);
}
Stmt StmtMutator::mutate_Stage(const Stage& n, const Stmt& s) {
  Stmt body = mutate(n.body);
  if (body.same_as(n.body)) return s;
  return stage(n.index, body);
}
Stmt StmtMutator::mutate_Evaluate(const Evaluate& n, const Stmt& s) {
  Expr v = mutate_expr(n.value);
  if (v.same_as(n.value)) return s;
  return evaluate(v);
}
Stmt StmtMutator::mutate_Comment(const Comment&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_TimelineRecord(const TimelineRecord&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_FragmentAlloc(const FragmentAlloc& n, const Stmt& s) {
  Stmt body = mutate(n.body);
  if (body.same_as(n.body)) return s;
  return fragment_alloc(n.buffer, n.role, n.type, n.m, n.n, n.k, body);
}
Stmt StmtMutator::mutate_FragmentFill(const FragmentFill& n, const Stmt& s) {
  Expr i = mutate_expr(n.index), v = mutate_expr(n.value);
  if (i.same_as(n.index) && v.same_as(n.value)) return s;
  return fragment_fill(n.fragment, i, v);
}
Stmt StmtMutator::mutate_FragmentLoad(const FragmentLoad& n, const Stmt& s) {
  Expr i = mutate_expr(n.index);
  std::vector<Expr> origin;
  bool changed = mutate_all(*this, n.origin, origin);
  if (!changed && i.same_as(n.index)) return s;
  return fragment_load(n.fragment, i, n.source, std::move(origin));
}
Stmt StmtMutator::mutate_FragmentMma(const FragmentMma& n, const Stmt& s) {
  Expr di = mutate_expr(n.di), ai = mutate_expr(n.ai), bi = mutate_expr(n.bi),
       ci = mutate_expr(n.ci);
  if (di.same_as(n.di) && ai.same_as(n.ai) && bi.same_as(n.bi) && ci.same_as(n.ci)) return s;
  return fragment_mma(n.d, di, n.a, ai, n.b, bi, n.c, ci);
}
Stmt StmtMutator::mutate_FragmentStore(const FragmentStore& n, const Stmt& s) {
  std::vector<Expr> origin;
  bool changed = mutate_all(*this, n.origin, origin);
  Expr i = mutate_expr(n.index);
  if (!changed && i.same_as(n.index)) return s;
  return fragment_store(n.dest, std::move(origin), n.fragment, i);
}
Stmt StmtMutator::mutate_AsyncCopy(const AsyncCopy& n, const Stmt& s) {
  std::vector<Expr> di, si;
  bool changed = mutate_all(*this, n.dst_index, di);
  changed |= mutate_all(*this, n.src_index, si);
  Expr p = n.pred.defined() ? mutate_expr(n.pred) : n.pred;
  if (!changed && p.same_as(n.pred)) return s;
  return async_copy(n.dst, std::move(di), n.src, std::move(si), n.bytes, p);
}
Stmt StmtMutator::mutate_AsyncCommit(const AsyncCommit&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_AsyncWait(const AsyncWait&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_MatrixLoad(const MatrixLoad& n, const Stmt& s) {
  Expr o = mutate_expr(n.dst_offset);
  std::vector<Expr> si;
  bool changed = mutate_all(*this, n.src_index, si);
  if (!changed && o.same_as(n.dst_offset)) return s;
  return matrix_load(n.dst, o, n.count, n.trans, n.src, std::move(si));
}
Stmt StmtMutator::mutate_MmaSync(const MmaSync& n, const Stmt& s) {
  Expr d = mutate_expr(n.d_offset), a = mutate_expr(n.a_offset), b = mutate_expr(n.b_offset),
       c = mutate_expr(n.c_offset);
  if (d.same_as(n.d_offset) && a.same_as(n.a_offset) && b.same_as(n.b_offset) &&
      c.same_as(n.c_offset))
    return s;
  return mma_sync(n.type, n.d, d, n.a, a, n.b, b, n.c, c);
}

Stmt StmtMutator::mutate_WgmmaFence(const WgmmaFence&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_WgmmaMma(const WgmmaMma& n, const Stmt& s) {
  Expr o = mutate_expr(n.d_offset);
  std::vector<Expr> ai, bi;
  bool changed = mutate_all(*this, n.a_index, ai);
  changed |= mutate_all(*this, n.b_index, bi);
  if (!changed && o.same_as(n.d_offset)) return s;
  return wgmma_mma(n.type, n.n, n.d, o, n.a, std::move(ai), n.a_lbo, n.a_sbo, n.b, std::move(bi),
                   n.b_lbo, n.b_sbo, n.accumulate);
}
Stmt StmtMutator::mutate_WgmmaCommit(const WgmmaCommit&, const Stmt& s) {
  return s;
}
Stmt StmtMutator::mutate_WgmmaWait(const WgmmaWait&, const Stmt& s) {
  return s;
}

namespace {

class VarSubstituter : public StmtMutator {
 public:
  explicit VarSubstituter(const std::unordered_map<const te::ExprNode*, Expr>& vars)
      : m_vars(vars) {}
  Expr mutate_expr(const Expr& e) override { return te::substitute(e, m_vars); }

 private:
  const std::unordered_map<const te::ExprNode*, Expr>& m_vars;
};

class FnVisitor : public StmtVisitor {
 public:
  FnVisitor(const std::function<void(const Stmt&)>* s, const std::function<void(const Expr&)>* e)
      : m_s(s), m_e(e) {}
  void visit(const Stmt& s) override {
    if (s.defined() && m_s) (*m_s)(s);
    StmtVisitor::visit(s);
  }
  void visit_expr(const Expr& e) override {
    if (m_e && e.defined()) (*m_e)(e);
  }

 private:
  const std::function<void(const Stmt&)>* m_s;
  const std::function<void(const Expr&)>* m_e;
};

}  // namespace

Stmt substitute(const Stmt& s, const std::unordered_map<const te::ExprNode*, Expr>& vars) {
  VarSubstituter sub(vars);
  return sub.mutate(s);
}

void for_each_stmt(const Stmt& s, const std::function<void(const Stmt&)>& fn) {
  FnVisitor v(&fn, nullptr);
  v.visit(s);
}

void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& fn) {
  FnVisitor v(nullptr, &fn);
  v.visit(s);
}

}  // namespace souffle::loop
