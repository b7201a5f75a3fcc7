#include <algorithm>
#include <set>

#include "core/loop/arena.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"

namespace souffle::schedule {

using namespace detail;
using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

/// Splits a scheduled kernel body into its block var, thread var and the statements inside.
void unwrap(const Kernel& k, Expr& bx, Expr& tx, Stmt& inner) {
  const loop::For* fb = k.body.as<loop::For>();
  SOUFFLE_CHECK(fb && fb->for_kind == ForKind::BlockIdxX,
                "merge: " + k.name + " has no block loop");
  const loop::For* ft = fb->body.as<loop::For>();
  SOUFFLE_CHECK(ft && ft->for_kind == ForKind::ThreadIdxX,
                "merge: " + k.name + " has no thread loop");
  bx = fb->var;
  tx = ft->var;
  inner = ft->body;
}

class StageRenumber : public loop::StmtMutator {
 public:
  explicit StageRenumber(int offset) : m_offset(offset) {}

 protected:
  Stmt mutate_Stage(const loop::Stage& n, const Stmt&) override {
    return loop::stage(n.index + m_offset, mutate(n.body));
  }

 private:
  int m_offset;
};

bool has_block_barrier(const Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s, [&](const Stmt& x) { found |= x.as<loop::BlockBarrier>() != nullptr; });
  return found;
}

/// Guards a stage's statements; a stage of several phases (a cross-block reduction: Stage
/// nodes with grid barriers between) is guarded phase by phase, so every thread of the grid
/// still reaches its barriers.
Stmt guard_phases(const Stmt& inner, const Expr& guard) {
  const loop::Seq* q = inner.as<loop::Seq>();
  bool phased = false;
  if (q)
    for (const Stmt& s : q->stmts) phased |= s.as<loop::GridBarrier>() != nullptr;
  if (!phased) return loop::if_then_else(guard, inner);
  std::vector<Stmt> out;
  for (const Stmt& s : q->stmts)
    out.push_back(s.as<loop::GridBarrier>() ? s : loop::if_then_else(guard, s));
  return loop::seq(std::move(out));
}

}  // namespace

Kernel merge_stages(std::vector<Kernel> stages, const std::string& name) {
  SOUFFLE_CHECK(!stages.empty(), "merge: no stages");
  Kernel k;
  k.name = name;
  for (const Kernel& s : stages) {
    k.launch.grid_x = std::max(k.launch.grid_x, s.launch.grid_x);
    k.launch.block_x = std::max(k.launch.block_x, s.launch.block_x);
  }
  Frame f;
  std::set<const te::TensorNode*> produced, dirty;
  std::vector<Stmt> body;
  for (Kernel& s : stages) {
    Expr bx, tx;
    Stmt inner;
    unwrap(s, bx, tx, inner);
    inner = loop::substitute(inner, {{bx.get(), f.bx}, {tx.get(), f.tx}});
    inner = StageRenumber(static_cast<int>(k.stages.size())).mutate(inner);
    Expr guard;
    auto conj = [&](Expr c) { guard = guard.defined() ? te::logical_and(guard, c) : c; };
    if (s.launch.grid_x < k.launch.grid_x) conj(te::lt(f.bx, ic(s.launch.grid_x)));
    if (s.launch.block_x < k.launch.block_x) {
      SOUFFLE_CHECK(!has_block_barrier(inner),
                    "merge: stage " + s.name + " has block barriers and a smaller block");
      conj(te::lt(f.tx, ic(s.launch.block_x)));
    }
    if (guard.defined()) inner = guard_phases(inner, guard);
    k.launch.cooperative |= s.launch.cooperative;
    bool depends = false;
    for (const Tensor& t : s.inputs) depends |= dirty.count(t.get()) > 0;
    for (const Tensor& t : s.outputs) depends |= dirty.count(t.get()) > 0;
    if (depends) {
      body.push_back(loop::grid_barrier());
      k.launch.cooperative = true;
      dirty.clear();
    }
    body.push_back(inner);
    for (const Tensor& t : s.inputs)
      if (!produced.count(t.get()) &&
          std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end())
        k.inputs.push_back(t);
    for (const Tensor& t : s.outputs) {
      if (produced.insert(t.get()).second) k.outputs.push_back(t);
      dirty.insert(t.get());
    }
    for (const loop::StageInfo& si : s.stages) k.stages.push_back(si);
  }
  k.body = loop::make_for(
      f.bx, k.launch.grid_x, ForKind::BlockIdxX,
      loop::make_for(f.tx, k.launch.block_x, ForKind::ThreadIdxX, loop::seq(std::move(body))));
  loop::verify(k);
  return loop::plan_shared_arena(k);
}

}  // namespace souffle::schedule
