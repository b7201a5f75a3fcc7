#include "core/loop/equal.h"

#include "core/loop/mutator.h"
#include "core/te/mutator.h"

#include <bit>
#include <unordered_map>
#include <unordered_set>

namespace souffle::loop {

namespace {

class Comparer {
 public:
  Comparer() = default;
  /// Stage indices and comments ignored, `a_params[i]` matched to `b_params[i]`.
  Comparer(const std::vector<Tensor>& a_params, const std::vector<Tensor>& b_params)
      : m_loose(true) {
    for (size_t i = 0; i < a_params.size(); ++i) m_buffers[a_params[i].get()] = b_params[i].get();
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined()) return true;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case StmtKind::For: {
        const For &x = *a.as<For>(), &y = *b.as<For>();
        if (x.for_kind != y.for_kind || !expr(x.min, y.min) || !expr(x.extent, y.extent))
          return false;
        m_vars[x.var.get()] = y.var.get();
        return stmt(x.body, y.body);
      }
      case StmtKind::LetStmt: {
        const LetStmt &x = *a.as<LetStmt>(), &y = *b.as<LetStmt>();
        if (!expr(x.value, y.value)) return false;
        m_vars[x.var.get()] = y.var.get();
        return stmt(x.body, y.body);
      }
      case StmtKind::Allocate: {
        const Allocate &x = *a.as<Allocate>(), &y = *b.as<Allocate>();
        if (x.scope != y.scope || x.buffer->shape != y.buffer->shape ||
            x.buffer->dtype != y.buffer->dtype)
          return false;
        m_buffers[x.buffer.get()] = y.buffer.get();
        return stmt(x.body, y.body);
      }
      case StmtKind::Store: {
        const Store &x = *a.as<Store>(), &y = *b.as<Store>();
        return buffer(x.buffer, y.buffer) && exprs(x.indices, y.indices) && expr(x.value, y.value);
      }
      case StmtKind::AtomicAdd: {
        const AtomicAdd &x = *a.as<AtomicAdd>(), &y = *b.as<AtomicAdd>();
        return buffer(x.buffer, y.buffer) && exprs(x.indices, y.indices) && expr(x.value, y.value);
      }
      case StmtKind::Shuffle: {
        const Shuffle &x = *a.as<Shuffle>(), &y = *b.as<Shuffle>();
        return x.shuffle == y.shuffle && buffer(x.buffer, y.buffer) &&
               exprs(x.indices, y.indices) && expr(x.value, y.value) && expr(x.arg, y.arg);
      }
      case StmtKind::IfThenElse: {
        const IfThenElse &x = *a.as<IfThenElse>(), &y = *b.as<IfThenElse>();
        return expr(x.cond, y.cond) && stmt(x.then_case, y.then_case) &&
               stmt(x.else_case, y.else_case);
      }
      case StmtKind::Seq: {
        const Seq &x = *a.as<Seq>(), &y = *b.as<Seq>();
        if (x.stmts.size() != y.stmts.size()) return false;
        for (size_t i = 0; i < x.stmts.size(); ++i)
          if (!stmt(x.stmts[i], y.stmts[i])) return false;
        return true;
      }
      case StmtKind::BlockBarrier:
      case StmtKind::GridBarrier:
        return true;
      case StmtKind::FlagRelease: {
        const FlagRelease &x = *a.as<FlagRelease>(), &y = *b.as<FlagRelease>();
        return buffer(x.flags, y.flags) && expr(x.index, y.index) &&
               (m_loose || x.stage == y.stage);
      }
      case StmtKind::FlagWait: {
        const FlagWait &x = *a.as<FlagWait>(), &y = *b.as<FlagWait>();
        return buffer(x.flags, y.flags) && expr(x.first, y.first) && expr(x.count, y.count) &&
               x.per_run == y.per_run;
      }
      case StmtKind::Stage:
        return (m_loose || a.as<Stage>()->index == b.as<Stage>()->index) &&
               stmt(a.as<Stage>()->body, b.as<Stage>()->body);
      case StmtKind::Evaluate:
        return expr(a.as<Evaluate>()->value, b.as<Evaluate>()->value);
      case StmtKind::Comment:
        return m_loose || a.as<Comment>()->text == b.as<Comment>()->text;
      case StmtKind::TimelineRecord: {
        const TimelineRecord &x = *a.as<TimelineRecord>(), &y = *b.as<TimelineRecord>();
        return buffer(x.buffer, y.buffer) && x.event == y.event && x.wait == y.wait &&
               (m_loose || (x.stage == y.stage && x.slot == y.slot)) && x.stride == y.stride;
      }
      case StmtKind::FragmentAlloc: {
        const FragmentAlloc &x = *a.as<FragmentAlloc>(), &y = *b.as<FragmentAlloc>();
        if (x.role != y.role || x.type != y.type || x.m != y.m || x.n != y.n || x.k != y.k ||
            x.buffer->shape != y.buffer->shape)
          return false;
        m_buffers[x.buffer.get()] = y.buffer.get();
        return stmt(x.body, y.body);
      }
      case StmtKind::FragmentFill: {
        const FragmentFill &x = *a.as<FragmentFill>(), &y = *b.as<FragmentFill>();
        return buffer(x.fragment, y.fragment) && expr(x.index, y.index) && expr(x.value, y.value);
      }
      case StmtKind::FragmentLoad: {
        const FragmentLoad &x = *a.as<FragmentLoad>(), &y = *b.as<FragmentLoad>();
        return buffer(x.fragment, y.fragment) && expr(x.index, y.index) &&
               buffer(x.source, y.source) && exprs(x.origin, y.origin);
      }
      case StmtKind::FragmentMma: {
        const FragmentMma &x = *a.as<FragmentMma>(), &y = *b.as<FragmentMma>();
        return buffer(x.d, y.d) && expr(x.di, y.di) && buffer(x.a, y.a) && expr(x.ai, y.ai) &&
               buffer(x.b, y.b) && expr(x.bi, y.bi) && buffer(x.c, y.c) && expr(x.ci, y.ci);
      }
      case StmtKind::FragmentStore: {
        const FragmentStore &x = *a.as<FragmentStore>(), &y = *b.as<FragmentStore>();
        return buffer(x.dest, y.dest) && exprs(x.origin, y.origin) &&
               buffer(x.fragment, y.fragment) && expr(x.index, y.index);
      }
      case StmtKind::AsyncCopy: {
        const AsyncCopy &x = *a.as<AsyncCopy>(), &y = *b.as<AsyncCopy>();
        if (x.bytes != y.bytes || x.pred.defined() != y.pred.defined()) return false;
        return buffer(x.dst, y.dst) && exprs(x.dst_index, y.dst_index) && buffer(x.src, y.src) &&
               exprs(x.src_index, y.src_index) && (!x.pred.defined() || expr(x.pred, y.pred));
      }
      case StmtKind::AsyncCommit:
        return true;
      case StmtKind::AsyncWait:
        return a.as<AsyncWait>()->pending == b.as<AsyncWait>()->pending;
      case StmtKind::MatrixLoad: {
        const MatrixLoad &x = *a.as<MatrixLoad>(), &y = *b.as<MatrixLoad>();
        return x.count == y.count && x.trans == y.trans && buffer(x.dst, y.dst) &&
               expr(x.dst_offset, y.dst_offset) && buffer(x.src, y.src) &&
               exprs(x.src_index, y.src_index);
      }
      case StmtKind::MmaSync: {
        const MmaSync &x = *a.as<MmaSync>(), &y = *b.as<MmaSync>();
        return x.type == y.type && buffer(x.d, y.d) && expr(x.d_offset, y.d_offset) &&
               buffer(x.a, y.a) && expr(x.a_offset, y.a_offset) && buffer(x.b, y.b) &&
               expr(x.b_offset, y.b_offset) && buffer(x.c, y.c) && expr(x.c_offset, y.c_offset);
      }
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
        return true;
      case StmtKind::WgmmaWait:
        return a.as<WgmmaWait>()->pending == b.as<WgmmaWait>()->pending;
      case StmtKind::WgmmaMma: {
        const WgmmaMma &x = *a.as<WgmmaMma>(), &y = *b.as<WgmmaMma>();
        return x.type == y.type && x.n == y.n && x.accumulate == y.accumulate &&
               x.a_lbo == y.a_lbo && x.a_sbo == y.a_sbo && x.b_lbo == y.b_lbo &&
               x.b_sbo == y.b_sbo && buffer(x.d, y.d) && expr(x.d_offset, y.d_offset) &&
               buffer(x.a, y.a) && exprs(x.a_index, y.a_index) && buffer(x.b, y.b) &&
               exprs(x.b_index, y.b_index);
      }
    }
    return false;
  }

 private:
  bool buffer(const Tensor& a, const Tensor& b) {
    auto it = m_buffers.find(a.get());
    return it != m_buffers.end() ? it->second == b.get() : a == b;
  }
  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }
  bool expr(const Expr& a, const Expr& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined()) return true;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    switch (a.kind()) {
      case te::ExprKind::IntImm:
        return a.as<te::IntImm>()->value == b.as<te::IntImm>()->value;
      case te::ExprKind::FloatImm:
        return a.as<te::FloatImm>()->value == b.as<te::FloatImm>()->value;
      case te::ExprKind::Var: {
        auto it = m_vars.find(a.get());
        return it != m_vars.end() ? it->second == b.get() : a.same_as(b);
      }
      case te::ExprKind::Unary:
        return a.as<te::Unary>()->op == b.as<te::Unary>()->op &&
               expr(a.as<te::Unary>()->a, b.as<te::Unary>()->a);
      case te::ExprKind::Binary: {
        const te::Binary &x = *a.as<te::Binary>(), &y = *b.as<te::Binary>();
        return x.op == y.op && expr(x.a, y.a) && expr(x.b, y.b);
      }
      case te::ExprKind::Call:
        return a.as<te::Call>()->fn == b.as<te::Call>()->fn &&
               exprs(a.as<te::Call>()->args, b.as<te::Call>()->args);
      case te::ExprKind::Select: {
        const te::Select &x = *a.as<te::Select>(), &y = *b.as<te::Select>();
        return expr(x.cond, y.cond) && expr(x.t, y.t) && expr(x.f, y.f);
      }
      case te::ExprKind::Cast:
        return expr(a.as<te::Cast>()->a, b.as<te::Cast>()->a);
      case te::ExprKind::Read:
        return buffer(a.as<te::Read>()->tensor, b.as<te::Read>()->tensor) &&
               exprs(a.as<te::Read>()->indices, b.as<te::Read>()->indices);
    }
    return false;
  }

  bool m_loose = false;
  std::unordered_map<const te::ExprNode*, const te::ExprNode*> m_vars;
  std::unordered_map<const te::TensorNode*, const te::TensorNode*> m_buffers;
};

}  // namespace

bool equal(const Stmt& a, const Stmt& b) {
  return Comparer().stmt(a, b);
}

bool equal_up_to_params(const Stmt& a, const Stmt& b, const std::vector<Tensor>& a_params,
                        const std::vector<Tensor>& b_params) {
  if (a_params.size() != b_params.size()) return false;
  std::unordered_set<const te::TensorNode*> a_seen, b_seen;
  for (size_t i = 0; i < a_params.size(); ++i) {
    const Tensor &x = a_params[i], &y = b_params[i];
    if (x->shape != y->shape || x->dtype != y->dtype) return false;
    if (!a_seen.insert(x.get()).second || !b_seen.insert(y.get()).second) return false;
  }
  return Comparer(a_params, b_params).stmt(a, b);
}

namespace {

class ShapeWalk : public StmtVisitor {
 public:
  StmtShape result() const {
    StmtShape out;
    out.hash = m_hash;
    std::unordered_map<const te::TensorNode*, uint64_t> number;
    std::unordered_set<const te::TensorNode*> seen;
    for (const Tensor& t : m_accesses) {
      const uint64_t n = number.emplace(t.get(), number.size()).first->second;
      out.hash = (out.hash ^ (n + 1)) * kPrime;
      if (!m_allocated.count(t.get()) && seen.insert(t.get()).second) out.touched.push_back(t);
    }
    return out;
  }
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    mix(0x100 + static_cast<uint64_t>(s.kind()));
    if (const Allocate* a = s.as<Allocate>()) m_allocated.insert(a->buffer.get());
    if (const FragmentAlloc* a = s.as<FragmentAlloc>()) m_allocated.insert(a->buffer.get());
    if (const Store* st = s.as<Store>()) m_accesses.push_back(st->buffer);
    if (const AtomicAdd* at = s.as<AtomicAdd>()) m_accesses.push_back(at->buffer);
    if (const FragmentLoad* fl = s.as<FragmentLoad>()) m_accesses.push_back(fl->source);
    if (const FragmentStore* fs = s.as<FragmentStore>()) m_accesses.push_back(fs->dest);
    StmtVisitor::visit(s);
  }
  void visit_expr(const Expr& e) override {
    te::for_each_node(e, [&](const Expr& n) {
      mix(static_cast<uint64_t>(n.kind()) << 8 | static_cast<uint64_t>(n.dtype()));
      if (const te::IntImm* i = n.as<te::IntImm>()) mix(static_cast<uint64_t>(i->value));
      // +0.0 and -0.0 compare equal, so they hash alike.
      if (const te::FloatImm* f = n.as<te::FloatImm>())
        mix(f->value == 0 ? 0 : std::bit_cast<uint64_t>(f->value));
      if (const te::Read* r = n.as<te::Read>()) m_accesses.push_back(r->tensor);
    });
  }

 private:
  static constexpr uint64_t kPrime = 1099511628211ull;
  void mix(uint64_t x) { m_hash = (m_hash ^ x) * kPrime; }
  uint64_t m_hash = 1469598103934665603ull;
  std::vector<Tensor> m_accesses;
  std::unordered_set<const te::TensorNode*> m_allocated;
};

}  // namespace

StmtShape shape_of(const Stmt& s) {
  ShapeWalk walk;
  walk.visit(s);
  return walk.result();
}

}  // namespace souffle::loop
