#include "core/codegen/outline.h"

#include <optional>
#include <set>
#include <unordered_set>

#include "core/codegen/codegen_cuda.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/te/mutator.h"

namespace souffle::codegen {

namespace {

/// The stages of a kernel body with the block/thread bindings around each.
class StageFinder : public loop::StmtVisitor {
 public:
  struct Found {
    const loop::Stage* stage;
    std::vector<const loop::For*> bindings;  ///< outermost first
  };
  std::vector<Found> found;

 protected:
  void visit_For(const loop::For& f, const loop::Stmt& s) override {
    const bool binding = loop::is_thread_binding(f.for_kind);
    if (binding) m_bindings.push_back(&f);
    loop::StmtVisitor::visit_For(f, s);
    if (binding) m_bindings.pop_back();
  }
  void visit_Stage(const loop::Stage& st, const loop::Stmt&) override {
    found.push_back({&st, m_bindings});
  }

 private:
  std::vector<const loop::For*> m_bindings;
};

/// What a stage's body uses from around it: the variables it reads without binding them, and
/// the buffers it touches without allocating them on chip (global ones: kernel parameters).
struct Footprint {
  std::unordered_set<const te::ExprNode*> free_vars;
  std::vector<te::Tensor> buffers;  ///< in first-use order
  std::unordered_set<const te::TensorNode*> written;
  std::unordered_set<const te::TensorNode*> on_chip;  ///< shared/local/fragment allocations
};

Footprint footprint(const loop::Stmt& body) {
  Footprint fp;
  std::unordered_set<const te::ExprNode*> bound, used;
  std::unordered_set<const te::TensorNode*> seen;
  auto touch = [&](const te::Tensor& t, bool write) {
    if (seen.insert(t.get()).second) fp.buffers.push_back(t);
    if (write) fp.written.insert(t.get());
  };
  loop::for_each_stmt(body, [&](const loop::Stmt& s) {
    if (const loop::For* f = s.as<loop::For>()) {
      bound.insert(f->var.get());
    } else if (const loop::LetStmt* l = s.as<loop::LetStmt>()) {
      bound.insert(l->var.get());
    } else if (const loop::Allocate* a = s.as<loop::Allocate>()) {
      if (a->scope == loop::MemScope::Global)
        touch(a->buffer, true);
      else
        fp.on_chip.insert(a->buffer.get());
    } else if (const loop::FragmentAlloc* fa = s.as<loop::FragmentAlloc>()) {
      fp.on_chip.insert(fa->buffer.get());
    } else if (const loop::Store* st = s.as<loop::Store>()) {
      touch(st->buffer, true);
    } else if (const loop::AtomicAdd* at = s.as<loop::AtomicAdd>()) {
      touch(at->buffer, true);
    } else if (const loop::Shuffle* sh = s.as<loop::Shuffle>()) {
      touch(sh->buffer, true);
    } else if (const loop::FragmentLoad* fl = s.as<loop::FragmentLoad>()) {
      touch(fl->source, false);
      touch(fl->fragment, true);
    } else if (const loop::FragmentStore* fs = s.as<loop::FragmentStore>()) {
      touch(fs->dest, true);
      touch(fs->fragment, false);
    } else if (const loop::FragmentFill* ff = s.as<loop::FragmentFill>()) {
      touch(ff->fragment, true);
    } else if (const loop::AsyncCopy* ac = s.as<loop::AsyncCopy>()) {
      touch(ac->src, false);
      touch(ac->dst, true);
    } else if (const loop::MatrixLoad* ml = s.as<loop::MatrixLoad>()) {
      touch(ml->src, false);
      touch(ml->dst, true);
    } else if (const loop::WgmmaMma* wg = s.as<loop::WgmmaMma>()) {
      touch(wg->a, false);
      touch(wg->b, false);
      touch(wg->d, false);
      touch(wg->d, true);
    } else if (const loop::MmaSync* ms = s.as<loop::MmaSync>()) {
      touch(ms->a, false);
      touch(ms->b, false);
      touch(ms->c, false);
      touch(ms->d, true);
    } else if (const loop::FragmentMma* fm = s.as<loop::FragmentMma>()) {
      touch(fm->a, false);
      touch(fm->b, false);
      touch(fm->c, false);
      touch(fm->d, true);
    }
  });
  loop::for_each_expr(body, [&](const te::Expr& e) {
    te::for_each_node(e, [&](const te::Expr& n) {
      if (n.as<te::Var>()) used.insert(n.get());
      if (const te::Read* r = n.as<te::Read>()) touch(r->tensor, false);
    });
  });
  for (const te::ExprNode* v : used)
    if (!bound.count(v)) fp.free_vars.insert(v);
  return fp;
}

/// The global tensors of a stage (`candidates`, of rank 2 or more) that every access reads or
/// writes at one constant leading index, with that index: the stage touches one slice of them
/// (an LSTM step's row of the input sequence).
std::map<const te::TensorNode*, int64_t> constant_leading_index(
    const loop::Stmt& body, const std::unordered_set<const te::TensorNode*>& candidates) {
  std::map<const te::TensorNode*, std::optional<int64_t>> seen;
  auto access = [&](const te::Tensor& t, const std::vector<te::Expr>& idx) {
    if (!candidates.count(t.get())) return;
    std::optional<int64_t> c;
    if (!idx.empty())
      if (const te::IntImm* i = idx[0].as<te::IntImm>()) c = i->value;
    auto [it, fresh] = seen.emplace(t.get(), c);
    if (!fresh && it->second != c) it->second.reset();
  };
  loop::for_each_stmt(body, [&](const loop::Stmt& s) {
    if (const loop::Store* st = s.as<loop::Store>()) access(st->buffer, st->indices);
    if (const loop::AtomicAdd* at = s.as<loop::AtomicAdd>()) access(at->buffer, at->indices);
    if (const loop::FragmentLoad* fl = s.as<loop::FragmentLoad>()) access(fl->source, fl->origin);
    if (const loop::FragmentStore* fs = s.as<loop::FragmentStore>()) access(fs->dest, fs->origin);
    if (const loop::AsyncCopy* ac = s.as<loop::AsyncCopy>()) access(ac->src, ac->src_index);
  });
  loop::for_each_expr(body, [&](const te::Expr& e) {
    te::for_each_node(e, [&](const te::Expr& n) {
      if (const te::Read* r = n.as<te::Read>()) access(r->tensor, r->indices);
    });
  });
  std::map<const te::TensorNode*, int64_t> out;
  for (const auto& [t, c] : seen)
    if (c && *c >= 0 && *c < t->shape[0]) out[t] = *c;
  return out;
}

/// Every access of a key tensor redirected to its slice (the value: leading extent 1) at
/// leading index 0.
class SliceAccesses : public loop::StmtMutator {
 public:
  explicit SliceAccesses(std::map<const te::TensorNode*, te::Tensor> slices)
      : m_slices(std::move(slices)) {}
  te::Expr mutate_expr(const te::Expr& e) override {
    return te::rewrite_reads(
        e, [&](const te::Read& r, const std::vector<te::Expr>& idx) -> te::Expr {
          auto it = m_slices.find(r.tensor.get());
          return it == m_slices.end() ? te::Expr() : te::read(it->second, leading_zero(idx));
        });
  }

 protected:
  loop::Stmt mutate_Store(const loop::Store& n, const loop::Stmt& s) override {
    auto it = m_slices.find(n.buffer.get());
    if (it == m_slices.end()) return loop::StmtMutator::mutate_Store(n, s);
    return loop::store(it->second, leading_zero(mutated(n.indices)), mutate_expr(n.value));
  }
  loop::Stmt mutate_AtomicAdd(const loop::AtomicAdd& n, const loop::Stmt& s) override {
    auto it = m_slices.find(n.buffer.get());
    if (it == m_slices.end()) return loop::StmtMutator::mutate_AtomicAdd(n, s);
    return loop::atomic_add(it->second, leading_zero(mutated(n.indices)), mutate_expr(n.value));
  }
  loop::Stmt mutate_FragmentLoad(const loop::FragmentLoad& n, const loop::Stmt& s) override {
    auto it = m_slices.find(n.source.get());
    if (it == m_slices.end()) return loop::StmtMutator::mutate_FragmentLoad(n, s);
    return loop::fragment_load(n.fragment, mutate_expr(n.index), it->second,
                               leading_zero(mutated(n.origin)));
  }
  loop::Stmt mutate_AsyncCopy(const loop::AsyncCopy& n, const loop::Stmt& s) override {
    auto it = m_slices.find(n.src.get());
    if (it == m_slices.end()) return loop::StmtMutator::mutate_AsyncCopy(n, s);
    return loop::async_copy(n.dst, mutated(n.dst_index), it->second,
                            leading_zero(mutated(n.src_index)), n.bytes,
                            n.pred.defined() ? mutate_expr(n.pred) : n.pred);
  }
  loop::Stmt mutate_FragmentStore(const loop::FragmentStore& n, const loop::Stmt& s) override {
    auto it = m_slices.find(n.dest.get());
    if (it == m_slices.end()) return loop::StmtMutator::mutate_FragmentStore(n, s);
    return loop::fragment_store(it->second, leading_zero(mutated(n.origin)), n.fragment,
                                mutate_expr(n.index));
  }

 private:
  std::vector<te::Expr> mutated(const std::vector<te::Expr>& idx) {
    std::vector<te::Expr> out;
    for (const te::Expr& i : idx) out.push_back(mutate_expr(i));
    return out;
  }
  static std::vector<te::Expr> leading_zero(std::vector<te::Expr> idx) {
    idx[0] = te::int_imm(0);
    return idx;
  }
  std::map<const te::TensorNode*, te::Tensor> m_slices;
};

}  // namespace

bool has_fragments(const loop::Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s, [&](const loop::Stmt& x) {
    found |= x.as<loop::FragmentAlloc>() != nullptr || x.as<loop::MatrixLoad>() != nullptr ||
             x.as<loop::AsyncCopy>() != nullptr;
  });
  return found;
}

bool wants_outlining(const loop::Kernel& k, StageOutlining mode) {
  switch (mode) {
    case StageOutlining::Never:
      return false;
    case StageOutlining::Always:
      return k.stages.size() >= 2;
    case StageOutlining::Auto:
      break;
  }
  return k.stages.size() >= static_cast<size_t>(kOutlineMinStages);
}

OutlinePlan plan_outlining(const loop::Kernel& k, const std::string& name, StageOutlining mode,
                           const std::function<bool(const std::string&)>& taken) {
  // Auto below kOutlineMinStages: outlined when at least half of the stage calls would call a
  // function an earlier stage already has (so the program compiles about half the code).
  if (mode == StageOutlining::Auto && !wants_outlining(k, mode) &&
      k.stages.size() >= static_cast<size_t>(kOutlineRepeatMinStages)) {
    OutlinePlan shared = plan_outlining(k, name, StageOutlining::Always, taken);
    const size_t repeats = shared.calls.size() - shared.functions.size();
    return 2 * repeats >= shared.calls.size() ? shared : OutlinePlan{};
  }
  OutlinePlan plan;
  if (!wants_outlining(k, mode)) return plan;
  std::set<std::string> mine;  // the names given here
  std::unordered_set<const te::TensorNode*> globals;
  for (const KernelParam& p : kernel_params(k)) globals.insert(p.tensor.get());
  const bool fragments = has_fragments(k.body);
  // Shared buffers of the arena: those a stage does not allocate itself live across stages
  // and are handed to its function as (generic) pointers.
  std::unordered_set<const te::TensorNode*> resident;
  for (const loop::SharedSlot& slot : k.shared) resident.insert(slot.buffer.get());
  StageFinder finder;
  finder.visit(k.body);
  // Functions emitted for this kernel, by a key of what must match for one to serve another
  // stage (parameter shapes and roles, the arena offsets of its shared buffers): a stage that
  // runs the same code on other tensors (a BERT layer and the next, an LSTM step and the next)
  // calls the first one's function instead of adding its own.
  struct Emitted {
    loop::Stmt body;
    std::vector<te::Tensor> params;
    std::string function;
  };
  std::map<std::string, std::vector<Emitted>> emitted;
  for (const StageFinder::Found& f : finder.found) {
    const Footprint fp = footprint(f.stage->body);
    // Only what a function can be handed: the kernel's global tensors and the shared buffers
    // kept across stages (an intermediate resident in shared memory) by pointer, and the
    // block/thread indices, which it reads again. A tensor kept in registers across stages
    // keeps its stage inline.
    bool fits = true;
    for (const te::Tensor& t : fp.buffers)
      fits &= globals.count(t.get()) > 0 || fp.on_chip.count(t.get()) > 0 ||
              resident.count(t.get()) > 0;
    for (const te::ExprNode* v : fp.free_vars) {
      bool bound = false;
      for (const loop::For* b : f.bindings) bound |= b->var.get() == v;
      fits &= bound;
    }
    // Stage functions do not take the flag epoch argument: a stage that releases or waits on
    // per-tile flags itself stays in the kernel (merge_stages puts them between stages).
    loop::for_each_stmt(f.stage->body, [&](const loop::Stmt& x) {
      fits &= !x.as<loop::FlagRelease>() && !x.as<loop::FlagWait>();
    });
    if (!fits) continue;
    loop::Kernel fk;
    fk.launch = k.launch;
    for (const loop::SharedSlot& slot : k.shared)
      if (fp.on_chip.count(slot.buffer.get())) fk.shared.push_back(slot);
    // A global tensor the stage touches at one constant leading index only is handed over as
    // that slice (a pointer past the rows before), so stages that differ only in which slice
    // they touch (one LSTM step and the next) share their function.
    std::unordered_set<const te::TensorNode*> sliceable;
    for (const te::Tensor& t : fp.buffers)
      if (globals.count(t.get()) && t->shape.size() >= 2) sliceable.insert(t.get());
    std::map<const te::TensorNode*, te::Tensor> slices;
    std::map<const te::TensorNode*, std::pair<te::Tensor, int64_t>> sliced_from;
    for (const auto& [t, c] : constant_leading_index(f.stage->body, sliceable)) {
      Shape shape = t->shape;
      const int64_t row = shape_numel(shape) / shape[0];
      shape[0] = 1;
      te::Tensor whole;
      for (const te::Tensor& b : fp.buffers)
        if (b.get() == t) whole = b;
      te::Tensor slice = loop::make_buffer(t->name, shape, t->dtype);
      slices[t] = slice;
      sliced_from[slice.get()] = {whole, c * row};
    }
    for (const te::Tensor& t : fp.buffers) {
      if (fp.on_chip.count(t.get()) || (!globals.count(t.get()) && !resident.count(t.get())))
        continue;
      auto sl = slices.find(t.get());
      (fp.written.count(t.get()) ? fk.outputs : fk.inputs)
          .push_back(sl == slices.end() ? t : sl->second);
    }
    loop::Stmt stage_body =
        slices.empty() ? f.stage->body : SliceAccesses(slices).mutate(f.stage->body);
    loop::Stmt body = loop::stage(f.stage->index, stage_body);
    for (auto b = f.bindings.rbegin(); b != f.bindings.rend(); ++b)
      body = loop::make_for((*b)->var, (*b)->min, (*b)->extent, (*b)->for_kind, body);
    fk.body = body;
    StageCall o;
    std::string key;
    std::vector<te::Tensor> fparams;
    for (const KernelParam& p : kernel_params(fk)) {
      fparams.push_back(p.tensor);
      auto from = sliced_from.find(p.tensor.get());
      o.args.push_back(from == sliced_from.end() ? p.tensor : from->second.first);
      o.offsets.push_back(from == sliced_from.end() ? 0 : from->second.second);
      key += std::string(param_role_name(p.role)) + " " + dtype_name(p.tensor->dtype);
      for (int64_t d : p.tensor->shape) key += " " + std::to_string(d);
      key += ";";
    }
    loop::for_each_stmt(fk.body, [&](const loop::Stmt& s) {
      const loop::Allocate* a = s.as<loop::Allocate>();
      if (!a || a->scope != loop::MemScope::Shared) return;
      for (const loop::SharedSlot& slot : fk.shared)
        if (slot.buffer == a->buffer) key += " @" + std::to_string(slot.offset);
    });
    std::vector<Emitted>& same_key = emitted[key];
    for (const Emitted& e : same_key)
      if (loop::equal_up_to_params(e.body, fk.body, e.params, fparams)) {
        o.function = e.function;
        break;
      }
    if (o.function.empty()) {
      std::string fname = name + "_stage" + std::to_string(f.stage->index);
      while (taken(fname) || mine.count(fname)) fname += "_fn";
      fk.name = fname;
      mine.insert(fname);
      o.function = fname;
      same_key.push_back({fk.body, fparams, fname});
      plan.functions.push_back({std::move(fk), fragments});
    }
    plan.calls[f.stage] = std::move(o);
  }
  return plan;
}

}  // namespace souffle::codegen
