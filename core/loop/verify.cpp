#include "core/loop/verify.h"

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
  }

  void run() {
    SOUFFLE_CHECK(m_kernel.body.defined(), "kernel " + m_kernel.name + ": no body");
    stmt(m_kernel.body, Variance::Uniform);
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
        // A loaded value may differ per thread: treat it as divergent.
        v = Variance::Thread;
      }
    });
    return v;
  }

  void check_buffer(const Tensor& t, const char* what) {
    if (t->source == te::TensorNode::Source::Constant) return;
    if (!m_buffers.count(t.get()))
      fail(std::string(what) + " of " + t->name + ", which is neither a param nor allocated");
  }

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
      stmt(a->body, control);
      m_buffers.erase(a->buffer.get());
    } else if (const Store* st = s.as<Store>()) {
      check_buffer(st->buffer, "store");
      for (const Expr& i : st->indices) expr(i);
      expr(st->value);
    } else if (const AtomicAdd* at = s.as<AtomicAdd>()) {
      check_buffer(at->buffer, "atomic_add");
      for (const Expr& i : at->indices) expr(i);
      expr(at->value);
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
    } else if (const Stage* g = s.as<Stage>()) {
      if (g->index >= static_cast<int>(m_kernel.stages.size()))
        fail("stage " + std::to_string(g->index) + " has no StageInfo");
      stmt(g->body, control);
    } else if (const Evaluate* e = s.as<Evaluate>()) {
      expr(e->value);
    }
  }

  const Kernel& m_kernel;
  std::unordered_map<const te::Var*, Variance> m_vars;
  std::unordered_set<const te::TensorNode*> m_buffers;
  bool m_in_block = false, m_in_thread = false;
};

}  // namespace

void verify(const Kernel& k) {
  Verifier(k).run();
}

}  // namespace souffle::loop
