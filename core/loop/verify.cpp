#include "core/loop/verify.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/te/mutator.h"
#include "core/te/printer.h"

namespace souffle::loop {

namespace {

/// How far a value can differ between the threads of a launch.
enum class Variance : uint8_t { Uniform = 0, Block = 1, Thread = 2 };

class Verifier {
 public:
  explicit Verifier(const Kernel& k) : m_kernel(k) {
    for (const Tensor& t : k.inputs) m_buffers.insert(t.get());
    for (const Tensor& t : k.outputs) m_buffers.insert(t.get());
    for (const Tensor& t : k.flags) m_flags.insert(t.get());
  }

  void run() {
    SOUFFLE_CHECK(m_kernel.body.defined(), "kernel " + m_kernel.name + ": no body");
    stmt(m_kernel.body, Variance::Uniform);
    // Every counter a stage waits on is released by earlier stages only: then no wait depends
    // on a later one, and waits form no cycle.
    for (const auto& [flags, stage] : m_waits) {
      auto it = m_release_stages.find(flags);
      if (it == m_release_stages.end())
        fail("stage " + std::to_string(stage) + " waits on " + flags->name +
             ", which nothing releases");
      if (*it->second.rbegin() >= stage)
        fail("stage " + std::to_string(stage) + " waits on " + flags->name + ", which stage " +
             std::to_string(*it->second.rbegin()) + " releases: a wait must be on earlier stages");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw InternalError("loop verify: kernel " + m_kernel.name + ": " + what);
  }

  Variance expr(const Expr& e) {
    Variance v = Variance::Uniform;
    te::for_each_node(e, [&](const Expr& n) {
      if (const te::Var* var = n.as<te::Var>()) {
        auto it = m_vars.find(var);
        if (it == m_vars.end()) fail("unbound var " + var->name + " in " + te::print(e));
        v = std::max(v, it->second);
      } else if (const te::Read* r = n.as<te::Read>()) {
        check_buffer(r->tensor, "read");
        // A loaded value may differ per thread: treat it as divergent. A constant's element is
        // as uniform as its indices (visited as nodes of their own).
        if (r->tensor->source != te::TensorNode::Source::Constant) v = Variance::Thread;
      }
    });
    return v;
  }

  void check_buffer(const Tensor& t, const char* what) {
    if (m_fragments.count(t.get()))
      fail(std::string(what) + " of fragment " + t->name + " outside the fragment statements");
    if (t->source == te::TensorNode::Source::Constant) return;
    if (!m_buffers.count(t.get()))
      fail(std::string(what) + " of " + t->name + ", which is neither a param nor allocated");
  }

  void check_flags(const Tensor& t, const char* what) {
    if (!m_flags.count(t.get()))
      fail(std::string(what) + " on " + t->name + ", which is not one of the kernel's flags");
  }

  const te::Var* m_thread_var = nullptr;  ///< the ThreadIdxX loop's var

  void bind(const Expr& var, Variance v) {
    const te::Var* node = var.as<te::Var>();
    if (m_vars.count(node)) fail("var " + node->name + " bound twice on one path");
    m_vars[node] = v;
  }
  void unbind(const Expr& var) { m_vars.erase(var.as<te::Var>()); }

  void stmt(const Stmt& s, Variance control) {
    if (!s.defined()) return;
    if (const For* f = s.as<For>()) {
      Variance bounds = std::max(expr(f->min), expr(f->extent));
      Variance v = std::max(control, bounds);
      if (f->for_kind == ForKind::BlockIdxX || f->for_kind == ForKind::ThreadIdxX) {
        bool block = f->for_kind == ForKind::BlockIdxX;
        const te::IntImm* mn = f->min.as<te::IntImm>();
        const te::IntImm* ext = f->extent.as<te::IntImm>();
        int64_t want = block ? m_kernel.launch.grid_x : m_kernel.launch.block_x;
        if (!mn || mn->value != 0 || !ext || ext->value != want)
          fail(std::string(for_kind_name(f->for_kind)) + " loop does not match the launch (" +
               std::to_string(want) + ")");
        if (control != Variance::Uniform || (block ? m_in_block : m_in_thread))
          fail(std::string(for_kind_name(f->for_kind)) + " bound under control flow or twice");
        (block ? m_in_block : m_in_thread) = true;
        if (!block) m_thread_var = f->var.as<te::Var>();
        bind(f->var, block ? Variance::Block : Variance::Thread);
        stmt(f->body, control);
        unbind(f->var);
        return;
      }
      bind(f->var, v);
      stmt(f->body, v);
      unbind(f->var);
    } else if (const LetStmt* l = s.as<LetStmt>()) {
      bind(l->var, std::max(control, expr(l->value)));
      stmt(l->body, control);
      unbind(l->var);
    } else if (const Allocate* a = s.as<Allocate>()) {
      if (m_buffers.count(a->buffer.get())) fail("buffer " + a->buffer->name + " allocated twice");
      m_buffers.insert(a->buffer.get());
      if (a->scope == MemScope::Local) m_local.insert(a->buffer.get());
      if (a->scope == MemScope::Shared) m_shared.insert(a->buffer.get());
      stmt(a->body, control);
      m_buffers.erase(a->buffer.get());
      m_local.erase(a->buffer.get());
      m_shared.erase(a->buffer.get());
    } else if (const Store* st = s.as<Store>()) {
      check_buffer(st->buffer, "store");
      for (const Expr& i : st->indices) expr(i);
      expr(st->value);
    } else if (const AtomicAdd* at = s.as<AtomicAdd>()) {
      check_buffer(at->buffer, "atomic_add");
      for (const Expr& i : at->indices) expr(i);
      expr(at->value);
    } else if (const Shuffle* sh = s.as<Shuffle>()) {
      // Whether every lane of a warp gets here together depends on values (tx / 32 is
      // warp-uniform, tx is not): the emulator checks that; here only what is static.
      check_buffer(sh->buffer, "shuffle");
      for (const Expr& i : sh->indices) expr(i);
      expr(sh->value);
      expr(sh->arg);
      if (m_kernel.launch.block_x % kWarpSize != 0)
        fail("warp shuffle in a block of " + std::to_string(m_kernel.launch.block_x) +
             " threads, not whole warps");
    } else if (const IfThenElse* i = s.as<IfThenElse>()) {
      Variance v = std::max(control, expr(i->cond));
      stmt(i->then_case, v);
      stmt(i->else_case, v);
    } else if (const Seq* q = s.as<Seq>()) {
      for (const Stmt& x : q->stmts) stmt(x, control);
    } else if (s.as<BlockBarrier>()) {
      if (control == Variance::Thread) fail("block barrier in thread-divergent code");
    } else if (s.as<GridBarrier>()) {
      if (control != Variance::Uniform) fail("grid barrier in divergent code");
      if (!m_kernel.launch.cooperative) fail("grid barrier without a cooperative launch");
    } else if (const FlagRelease* fr = s.as<FlagRelease>()) {
      check_flags(fr->flags, "flag_release");
      if (control == Variance::Thread) fail("flag_release in thread-divergent code");
      if (expr(fr->index) == Variance::Thread) fail("flag_release index differs per thread");
      if (fr->stage >= static_cast<int>(m_kernel.stages.size()))
        fail("flag_release of stage " + std::to_string(fr->stage) + ", which has no StageInfo");
      if (m_stage >= 0 && fr->stage != m_stage)
        fail("flag_release names stage " + std::to_string(fr->stage) + " inside stage " +
             std::to_string(m_stage));
      m_release_stages[fr->flags.get()].insert(fr->stage);
    } else if (const FlagWait* fw = s.as<FlagWait>()) {
      check_flags(fw->flags, "flag_wait");
      if (control == Variance::Thread) fail("flag_wait in thread-divergent code");
      if (std::max(expr(fw->first), expr(fw->count)) == Variance::Thread)
        fail("flag_wait tiles differ per thread");
      if (m_stage >= 0) m_waits.emplace_back(fw->flags.get(), m_stage);
    } else if (const Stage* g = s.as<Stage>()) {
      if (g->index >= static_cast<int>(m_kernel.stages.size()))
        fail("stage " + std::to_string(g->index) + " has no StageInfo");
      const int saved = m_stage;
      m_stage = g->index;
      stmt(g->body, control);
      m_stage = saved;
    } else if (const TimelineRecord* tr = s.as<TimelineRecord>()) {
      check_buffer(tr->buffer, "timeline record");
      if (m_stage >= 0)
        fail("timeline record inside stage " + std::to_string(m_stage) +
             " (records sit between stages, where a stage's function cannot hide them)");
      if (tr->stage >= static_cast<int>(m_kernel.stages.size()))
        fail("timeline record of stage " + std::to_string(tr->stage) + ", which has no StageInfo");
      if (tr->buffer->shape[0] * tr->stride < m_kernel.launch.grid_x)
        fail("timeline buffer " + tr->buffer->name + " has rows for " +
             std::to_string(tr->buffer->shape[0] * tr->stride) + " blocks of " +
             std::to_string(m_kernel.launch.grid_x));
    } else if (const Evaluate* e = s.as<Evaluate>()) {
      expr(e->value);
    } else if (const FragmentAlloc* fa = s.as<FragmentAlloc>()) {
      if (m_buffers.count(fa->buffer.get()) || m_fragments.count(fa->buffer.get()))
        fail("buffer " + fa->buffer->name + " allocated twice");
      if (m_kernel.launch.block_x % kWarpSize != 0)
        fail("fragments in a block of " + std::to_string(m_kernel.launch.block_x) +
             " threads, not whole warps");
      m_fragments[fa->buffer.get()] = fa;
      stmt(fa->body, control);
      m_fragments.erase(fa->buffer.get());
    } else if (const FragmentFill* ff = s.as<FragmentFill>()) {
      fragment(ff->fragment, ff->index, "fill_fragment");
      expr(ff->value);
    } else if (const FragmentLoad* fl = s.as<FragmentLoad>()) {
      const FragmentAlloc& f = fragment(fl->fragment, fl->index, "load_matrix_sync");
      if (f.role == FragmentRole::Accumulator)
        fail("load_matrix_sync into accumulator " + f.buffer->name + " (only operands load)");
      tile(fl->source, fl->origin, f, "load_matrix_sync");
    } else if (const FragmentMma* mm = s.as<FragmentMma>()) {
      const FragmentAlloc& d = fragment(mm->d, mm->di, "mma_sync");
      const FragmentAlloc& a = fragment(mm->a, mm->ai, "mma_sync");
      const FragmentAlloc& b = fragment(mm->b, mm->bi, "mma_sync");
      const FragmentAlloc& c = fragment(mm->c, mm->ci, "mma_sync");
      if (a.role != FragmentRole::MatrixA || b.role != FragmentRole::MatrixB ||
          c.role != FragmentRole::Accumulator || d.role != FragmentRole::Accumulator)
        fail("mma_sync " + d.buffer->name + " = " + a.buffer->name + " * " + b.buffer->name +
             " + " + c.buffer->name + ": operands are not matrix_a, matrix_b, accumulators");
      if (a.type != b.type)
        fail("mma_sync mixes " + std::string(mma_type_name(a.type)) + " and " +
             mma_type_name(b.type));
      for (const FragmentAlloc* x : {&b, &c, &d})
        if (x->m != a.m || x->n != a.n || x->k != a.k)
          fail("mma_sync: " + x->buffer->name + " has another MMA shape than " + a.buffer->name);
    } else if (const FragmentStore* fs = s.as<FragmentStore>()) {
      const FragmentAlloc& f = fragment(fs->fragment, fs->index, "store_matrix_sync");
      if (f.role != FragmentRole::Accumulator)
        fail("store_matrix_sync of operand " + f.buffer->name + " (only accumulators store)");
      tile(fs->dest, fs->origin, f, "store_matrix_sync");
    } else if (const AsyncCopy* ac = s.as<AsyncCopy>()) {
      check_buffer(ac->dst, "cp.async");
      check_buffer(ac->src, "cp.async");
      if (!m_shared.count(ac->dst.get()))
        fail("cp.async into " + ac->dst->name + ", which is not a shared allocation");
      if (m_local.count(ac->src.get()) || m_shared.count(ac->src.get()))
        fail("cp.async from " + ac->src->name + ", which is not in global memory");
      for (const Expr& i : ac->dst_index) expr(i);
      for (const Expr& i : ac->src_index) expr(i);
      if (ac->pred.defined()) expr(ac->pred);
    } else if (const MatrixLoad* ml = s.as<MatrixLoad>()) {
      check_buffer(ml->dst, "ldmatrix");
      check_buffer(ml->src, "ldmatrix");
      if (!m_local.count(ml->dst.get())) fail("ldmatrix into " + ml->dst->name + ", not registers");
      if (!m_shared.count(ml->src.get()))
        fail("ldmatrix from " + ml->src->name + ", which is not a shared allocation");
      if (control == Variance::Thread) fail("ldmatrix in thread-divergent code");
      if (expr(ml->dst_offset) == Variance::Thread)
        fail("ldmatrix register offset differs per thread");
      for (const Expr& i : ml->src_index) expr(i);
    } else if (const MmaSync* ms = s.as<MmaSync>()) {
      if (control == Variance::Thread) fail("mma.sync in thread-divergent code");
      const std::pair<const Tensor*, const Expr*> ops[] = {{&ms->d, &ms->d_offset},
                                                           {&ms->a, &ms->a_offset},
                                                           {&ms->b, &ms->b_offset},
                                                           {&ms->c, &ms->c_offset}};
      for (const auto& [t, o] : ops) {
        check_buffer(*t, "mma.sync");
        if (!m_local.count(t->get())) fail("mma.sync on " + (*t)->name + ", not registers");
        if (expr(*o) == Variance::Thread) fail("mma.sync register offset differs per thread");
      }
    } else if (const WgmmaMma* wg = s.as<WgmmaMma>()) {
      verify_wgmma(*wg, control);
    } else if (s.as<WgmmaFence>() || s.as<WgmmaCommit>() || s.as<WgmmaWait>()) {
      if (control == Variance::Thread) fail("wgmma fence/commit/wait in thread-divergent code");
    }
  }

  /// The variance of `e` across the threads of one warpgroup: the thread var divided by a
  /// multiple of 128 (the warpgroup's index, or a coarser one) is the same for the 128 threads
  /// of an aligned warpgroup, so it counts as block-uniform here.
  Variance warpgroup_variance(const Expr& e) {
    struct Groups : te::ExprMutator {
      const te::Var* tx = nullptr;
      Expr stand_in;
      Expr mutate_Binary(const te::Binary& b, const Expr& self) override {
        const te::IntImm* c = b.b.as<te::IntImm>();
        if (tx && b.op == te::BinaryOp::FloorDiv && c && c->value > 0 &&
            c->value % (4 * kWarpSize) == 0 && b.a.as<te::Var>() == tx)
          return stand_in;
        return ExprMutator::mutate_Binary(b, self);
      }
    } groups;
    groups.tx = m_thread_var;
    groups.stand_in = te::var("warpgroup");
    bind(groups.stand_in, Variance::Block);
    const Variance v = expr(groups.mutate(e));
    unbind(groups.stand_in);
    return v;
  }

  void verify_wgmma(const WgmmaMma& wg, Variance control) {
    if (control == Variance::Thread) fail("wgmma.mma_async in thread-divergent code");
    check_buffer(wg.d, "wgmma");
    if (!m_local.count(wg.d.get()))
      fail("wgmma accumulates into " + wg.d->name + ", not registers");
    if (expr(wg.d_offset) == Variance::Thread) fail("wgmma register offset differs per thread");
    for (const auto* op : {&wg.a, &wg.b}) {
      check_buffer(*op, "wgmma");
      if (!m_shared.count(op->get()))
        fail("wgmma reads " + (*op)->name + " by descriptor, which is not a shared allocation");
    }
    for (const auto* idx : {&wg.a_index, &wg.b_index})
      for (const Expr& i : *idx)
        if (warpgroup_variance(i) == Variance::Thread)
          fail("wgmma descriptor address differs per thread");
  }

  const FragmentAlloc& fragment(const Tensor& t, const Expr& index, const char* what) {
    auto it = m_fragments.find(t.get());
    if (it == m_fragments.end())
      fail(std::string(what) + " on " + t->name + ", which is not an allocated fragment");
    expr(index);
    return *it->second;
  }

  /// A tile in shared or global memory a fragment loads from or stores to: element types agree,
  /// the leading dimension is a multiple of 16 bytes (as wmma requires).
  void tile(const Tensor& t, const std::vector<Expr>& origin, const FragmentAlloc& f,
            const char* what) {
    check_buffer(t, what);
    if (m_local.count(t.get()))
      fail(std::string(what) + " with local buffer " + t->name + " (shared or global only)");
    for (const Expr& i : origin) expr(i);
    const int64_t ld = t->shape.back();
    if (ld * dtype_size(t->dtype) % 16 != 0)
      fail(std::string(what) + " of " + t->name + ": leading dimension " + std::to_string(ld) +
           " is not a multiple of 16 bytes");
    if (t->shape[t->shape.size() - 2] < f.rows() || ld < f.cols())
      fail(std::string(what) + " of " + t->name + ": a " + std::to_string(f.rows()) + "x" +
           std::to_string(f.cols()) + " tile does not fit " + shape_str(t->shape));
  }

  const Kernel& m_kernel;
  std::unordered_map<const te::Var*, Variance> m_vars;
  std::unordered_set<const te::TensorNode*> m_buffers;
  std::unordered_set<const te::TensorNode*> m_flags;
  /// The stages releasing each flags buffer, and (flags, stage) of each wait inside a stage.
  std::unordered_map<const te::TensorNode*, std::set<int>> m_release_stages;
  std::vector<std::pair<const te::TensorNode*, int>> m_waits;
  int m_stage = -1;  ///< the enclosing Stage's index, -1 outside stages
  std::unordered_set<const te::TensorNode*> m_local;   ///< Local-scope allocations
  std::unordered_set<const te::TensorNode*> m_shared;  ///< Shared-scope allocations
  std::unordered_map<const te::TensorNode*, const FragmentAlloc*> m_fragments;
  bool m_in_block = false, m_in_thread = false;
};

}  // namespace

void verify(const Kernel& k) {
  Verifier(k).run();
}

}  // namespace souffle::loop
