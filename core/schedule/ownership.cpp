#include "core/schedule/ownership.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/loop/mutator.h"
#include "core/te/bounds.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using loop::Stmt;
using loop::StmtKind;
using te::Expr;

const char* ownership_name(Ownership o) {
  switch (o) {
    case Ownership::None:
      return "none";
    case Ownership::Block:
      return "block";
    case Ownership::Thread:
      return "thread";
  }
  return "?";
}

namespace {

/// Thrown inside the walk when the proof cannot go on; caught by prove_ownership.
struct Unproven {
  std::string why;
};

/// The blocks and threads a statement can do anything in: merge_stages guards a stage that
/// needs fewer blocks or threads than its kernel by `bx < G` (and `tx < T`); the others skip
/// it, so a proof need not walk them. The statement inside the guard is `body`.
struct Active {
  int64_t blocks = 0, threads = 0;
  Stmt body;
};

Active active_part(const Stmt& s, const OwnershipQuery& q) {
  Active a{q.grid, q.block, s};
  const loop::IfThenElse* i = s.as<loop::IfThenElse>();
  if (!i || i->else_case.defined()) return a;
  std::vector<Expr> conjuncts, todo = {i->cond};
  while (!todo.empty()) {
    Expr c = todo.back();
    todo.pop_back();
    const te::Binary* b = c.as<te::Binary>();
    if (b && b->op == te::BinaryOp::And) {
      todo.push_back(b->a);
      todo.push_back(b->b);
    } else {
      conjuncts.push_back(c);
    }
  }
  int64_t blocks = q.grid, threads = q.block;
  for (const Expr& c : conjuncts) {
    const te::Binary* b = c.as<te::Binary>();
    const te::IntImm* n = b && b->op == te::BinaryOp::LT ? b->b.as<te::IntImm>() : nullptr;
    if (!n) return a;
    if (b->a.same_as(q.bx))
      blocks = std::min(blocks, std::max<int64_t>(0, n->value));
    else if (b->a.same_as(q.tx))
      threads = std::min(threads, std::max<int64_t>(0, n->value));
    else
      return a;
  }
  return {blocks, threads, i->then_case};
}

class Prover {
 public:
  explicit Prover(const OwnershipQuery& q) : m_q(q), m_t(q.tensor.get()) {
    const int64_t n = shape_numel(m_t->shape);
    m_block_owner.assign(static_cast<size_t>(n), -1);
    m_thread_owner.assign(static_cast<size_t>(n), -1);
    m_certain.assign(static_cast<size_t>(n), 0);
    m_lo.assign(static_cast<size_t>(q.grid), std::numeric_limits<int64_t>::max());
    m_hi.assign(static_cast<size_t>(q.grid), -1);
    if (q.collect_producers) {
      m_writer_code.assign(static_cast<size_t>(n), -1);
      m_producers.resize(static_cast<size_t>(q.grid));
    }
  }

  OwnershipProof run() {
    OwnershipProof p;
    struct Count {
      OwnershipProof& p;
      const int64_t& steps;
      ~Count() { p.steps = steps; }
    } count{p, m_steps};
    try {
      m_mode = Mode::Write;
      for (size_t w = 0; w < m_q.writers.size(); ++w) {
        m_writer = static_cast<int64_t>(w);
        each_thread(m_q.writers[w]);
      }
      m_mode = Mode::Read;
      each_thread(m_q.reader);
    } catch (const Unproven& u) {
      p.reason = u.why;
      return p;
    }
    if (m_q.collect_producers) {
      p.producers.resize(m_producers.size());
      for (size_t b = 0; b < m_producers.size(); ++b)
        for (int64_t code : m_producers[b])
          p.producers[b].push_back(
              {static_cast<int32_t>(code / m_q.grid), static_cast<int32_t>(code % m_q.grid)});
      p.lo = m_lo;
      p.hi = m_hi;
    }
    if (!m_block_ok) {
      p.reason = m_why;
      return p;
    }
    p.level = m_thread_ok ? Ownership::Thread : Ownership::Block;
    p.writers_read = m_writer_reads;
    p.lo = std::move(m_lo);
    p.hi = std::move(m_hi);
    return p;
  }

 private:
  enum class Mode { Write, Read };
  const OwnershipQuery& m_q;
  const te::TensorNode* m_t;
  Mode m_mode = Mode::Write;
  int64_t m_b = 0, m_lane = 0, m_steps = 0;
  std::unordered_map<const te::ExprNode*, int64_t> m_env;
  std::unordered_map<const loop::StmtNode*, bool> m_touches;
  /// Per element: the one block (thread) that may write it, -1 none, -2 several.
  std::vector<int64_t> m_block_owner, m_thread_owner;
  std::vector<uint8_t> m_certain;  ///< written on a path whose conditions all held
  std::vector<int64_t> m_lo, m_hi;
  /// collect_producers: per element the first writer's code (writer * grid + block), others
  /// beside it; per reading block the codes it read.
  int64_t m_writer = 0;
  std::vector<int64_t> m_writer_code;
  std::unordered_map<int64_t, std::vector<int64_t>> m_more_writers;
  std::vector<std::vector<int64_t>> m_producers;
  bool m_block_ok = true, m_thread_ok = true, m_writer_reads = false;
  std::string m_why;

  void step() {
    if (++m_steps > m_q.max_steps) throw Unproven{"too many accesses to enumerate"};
  }

  void each_thread(const Stmt& s) {
    if (!touches(s)) return;
    const Active a = active_part(s, m_q);
    for (int64_t b = 0; b < a.blocks; ++b)
      for (int64_t t = 0; t < a.threads; ++t) {
        m_b = b;
        m_lane = b * m_q.block + t;
        m_env.clear();
        m_env[m_q.bx.get()] = b;
        m_env[m_q.tx.get()] = t;
        walk(a.body, true);
      }
  }

  bool expr_touches(const Expr& e) const {
    bool found = false;
    if (e.defined())
      te::for_each_node(e, [&](const Expr& n) {
        if (const te::Read* r = n.as<te::Read>()) found |= r->tensor.get() == m_t;
      });
    return found;
  }

  /// Whether s accesses the tensor anywhere (memoized: stage bodies share subtrees).
  bool touches(const Stmt& s) {
    if (!s.defined()) return false;
    auto it = m_touches.find(s.get());
    if (it != m_touches.end()) return it->second;
    bool found = false;
    loop::for_each_stmt(s, [&](const Stmt& x) {
      if (found) return;
      if (const loop::Store* st = x.as<loop::Store>()) found |= st->buffer.get() == m_t;
      if (const loop::AtomicAdd* a = x.as<loop::AtomicAdd>()) found |= a->buffer.get() == m_t;
      if (const loop::FragmentLoad* fl = x.as<loop::FragmentLoad>())
        found |= fl->source.get() == m_t;
      if (const loop::FragmentStore* fs = x.as<loop::FragmentStore>())
        found |= fs->dest.get() == m_t;
    });
    if (!found) loop::for_each_expr(s, [&](const Expr& e) { found |= expr_touches(e); });
    m_touches[s.get()] = found;
    return found;
  }

  std::optional<int64_t> eval(const Expr& e) {
    if (const te::IntImm* i = e.as<te::IntImm>()) return i->value;
    if (const te::Var* v = e.as<te::Var>()) {
      (void)v;
      auto it = m_env.find(e.get());
      if (it == m_env.end()) return std::nullopt;
      return it->second;
    }
    if (const te::Cast* c = e.as<te::Cast>()) {
      if (is_float(c->a.dtype()) || is_float(e.dtype())) return std::nullopt;
      return eval(c->a);
    }
    if (const te::Unary* u = e.as<te::Unary>()) {
      std::optional<int64_t> a = eval(u->a);
      if (!a) return std::nullopt;
      return u->op == te::UnaryOp::Neg ? -*a : static_cast<int64_t>(*a == 0);
    }
    if (const te::Select* s = e.as<te::Select>()) {
      std::optional<int64_t> c = eval(s->cond);
      if (!c) return std::nullopt;
      return eval(*c ? s->t : s->f);
    }
    const te::Binary* b = e.as<te::Binary>();
    if (!b || is_float(b->a.dtype()) || is_float(b->b.dtype())) return std::nullopt;
    std::optional<int64_t> x = eval(b->a);
    // Logic short-circuits on a known operand, so a guard over an unknown still decides.
    if (b->op == te::BinaryOp::And && x && *x == 0) return 0;
    if (b->op == te::BinaryOp::Or && x && *x != 0) return 1;
    std::optional<int64_t> y = eval(b->b);
    if (b->op == te::BinaryOp::And && y && *y == 0) return 0;
    if (b->op == te::BinaryOp::Or && y && *y != 0) return 1;
    if (!x || !y) return std::nullopt;
    return te::fold_int(b->op, *x, *y);
  }

  int64_t flat_index(const std::vector<Expr>& indices) {
    int64_t flat = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      std::optional<int64_t> v = eval(indices[d]);
      if (!v) throw Unproven{"an index of " + m_t->name + " depends on data"};
      if (*v < 0 || *v >= m_t->shape[d])
        throw Unproven{"an index of " + m_t->name + " is out of bounds"};
      flat = flat * m_t->shape[d] + *v;
    }
    return flat;
  }

  void note_range(int64_t flat) {
    auto b = static_cast<size_t>(m_b);
    m_lo[b] = std::min(m_lo[b], flat);
    m_hi[b] = std::max(m_hi[b], flat);
  }

  void record_write(const std::vector<Expr>& indices, bool certain) {
    step();
    if (m_mode == Mode::Read) throw Unproven{"the reading stage also writes " + m_t->name};
    const int64_t flat = flat_index(indices);
    note_range(flat);
    auto e = static_cast<size_t>(flat);
    int64_t& bo = m_block_owner[e];
    bo = (bo == -1 || bo == m_b) ? m_b : -2;
    int64_t& to = m_thread_owner[e];
    to = (to == -1 || to == m_lane) ? m_lane : -2;
    if (certain) m_certain[e] = 1;
    if (m_q.collect_producers) {
      const int64_t code = m_writer * m_q.grid + m_b;
      int64_t& first = m_writer_code[e];
      if (first == -1) {
        first = code;
      } else if (first != code) {
        std::vector<int64_t>& more = m_more_writers[flat];
        if (std::find(more.begin(), more.end(), code) == more.end()) more.push_back(code);
      }
    }
  }

  void record_read(const std::vector<Expr>& indices) {
    step();
    const int64_t flat = flat_index(indices);
    note_range(flat);
    if (m_mode == Mode::Write) {
      // A writer reading its own output orders that itself; kept apart for residency.
      m_writer_reads = true;
      return;
    }
    auto e = static_cast<size_t>(flat);
    if (m_q.collect_producers) {
      // Every block that may have written the element, exactly; the walk goes on.
      std::vector<int64_t>& mine = m_producers[static_cast<size_t>(m_b)];
      if (m_writer_code[e] >= 0) mine.push_back(m_writer_code[e]);
      auto more = m_more_writers.find(flat);
      if (more != m_more_writers.end())
        mine.insert(mine.end(), more->second.begin(), more->second.end());
      if (m_block_owner[e] != m_b && m_block_owner[e] != -1 && m_block_ok) {
        m_why = "block " + std::to_string(m_b) + " reads " + m_t->name + " element " +
                std::to_string(flat) + ", which block " +
                std::to_string(m_block_owner[e] == -2 ? m_writer_code[e] % m_q.grid
                                                      : m_block_owner[e]) +
                " writes";
        m_block_ok = false;
      }
      if (m_block_ok && !m_certain[e]) {
        m_why = "block " + std::to_string(m_b) + " reads " + m_t->name + " element " +
                std::to_string(flat) + ", which no earlier stage of the kernel surely wrote";
        m_block_ok = false;
      }
      if (m_thread_owner[e] != m_lane) m_thread_ok = false;
      return;
    }
    if (!m_certain[e] || m_block_owner[e] != m_b) {
      if (m_block_ok)
        m_why = "block " + std::to_string(m_b) + " reads " + m_t->name + " element " +
                std::to_string(flat) +
                (m_block_owner[e] == -1 ? ", which no earlier stage of the kernel surely wrote"
                 : m_block_owner[e] == -2
                     ? ", which several blocks write"
                     : ", which block " + std::to_string(m_block_owner[e]) + " writes");
      m_block_ok = false;
      // Nothing weaker than a grid barrier helps now; stop early.
      throw Unproven{m_why};
    }
    if (m_thread_owner[e] != m_lane) m_thread_ok = false;
  }

  /// Visits the reads of the tensor in e; a select whose condition is known visits only the
  /// branch taken (the other's indices may be out of range, as in padded tiles).
  void reads_in(const Expr& e) {
    if (!e.defined()) return;
    if (const te::Read* r = e.as<te::Read>()) {
      for (const Expr& i : r->indices) reads_in(i);
      if (r->tensor.get() == m_t) record_read(r->indices);
      return;
    }
    if (const te::Select* s = e.as<te::Select>()) {
      reads_in(s->cond);
      std::optional<int64_t> c = eval(s->cond);
      if (!c || *c) reads_in(s->t);
      if (!c || !*c) reads_in(s->f);
      return;
    }
    if (const te::Unary* u = e.as<te::Unary>()) return reads_in(u->a);
    if (const te::Cast* c = e.as<te::Cast>()) return reads_in(c->a);
    if (const te::Binary* b = e.as<te::Binary>()) {
      reads_in(b->a);
      reads_in(b->b);
      return;
    }
    if (const te::Call* c = e.as<te::Call>())
      for (const Expr& a : c->args) reads_in(a);
  }

  void walk(const Stmt& s, bool certain) {
    if (!s.defined() || !touches(s)) return;
    step();
    switch (s.kind()) {
      case StmtKind::For: {
        const loop::For* f = s.as<loop::For>();
        reads_in(f->min);
        reads_in(f->extent);
        std::optional<int64_t> mn = eval(f->min), ext = eval(f->extent);
        if (!mn || !ext) throw Unproven{"a loop bound depends on data"};
        if (loop::is_thread_binding(f->for_kind)) throw Unproven{"a nested block or thread loop"};
        auto saved = m_env.find(f->var.get()) != m_env.end() ? m_env[f->var.get()] : 0;
        bool had = m_env.count(f->var.get()) > 0;
        for (int64_t i = *mn; i < *mn + *ext; ++i) {
          m_env[f->var.get()] = i;
          walk(f->body, certain);
        }
        if (had)
          m_env[f->var.get()] = saved;
        else
          m_env.erase(f->var.get());
        return;
      }
      case StmtKind::LetStmt: {
        const loop::LetStmt* l = s.as<loop::LetStmt>();
        reads_in(l->value);
        std::optional<int64_t> v = is_float(l->value.dtype()) ? std::nullopt : eval(l->value);
        bool had = m_env.count(l->var.get()) > 0;
        int64_t saved = had ? m_env[l->var.get()] : 0;
        if (v)
          m_env[l->var.get()] = *v;
        else
          m_env.erase(l->var.get());
        walk(l->body, certain);
        if (had)
          m_env[l->var.get()] = saved;
        else
          m_env.erase(l->var.get());
        return;
      }
      case StmtKind::Allocate:
        return walk(s.as<loop::Allocate>()->body, certain);
      case StmtKind::Store: {
        const loop::Store* st = s.as<loop::Store>();
        for (const Expr& i : st->indices) reads_in(i);
        reads_in(st->value);
        if (st->buffer.get() == m_t) record_write(st->indices, certain);
        return;
      }
      case StmtKind::AtomicAdd: {
        const loop::AtomicAdd* a = s.as<loop::AtomicAdd>();
        for (const Expr& i : a->indices) reads_in(i);
        reads_in(a->value);
        if (a->buffer.get() == m_t) record_write(a->indices, certain);
        return;
      }
      case StmtKind::Shuffle: {
        const loop::Shuffle* sh = s.as<loop::Shuffle>();
        for (const Expr& i : sh->indices) reads_in(i);
        reads_in(sh->value);
        reads_in(sh->arg);
        if (sh->buffer.get() == m_t) throw Unproven{"a shuffle writes " + m_t->name};
        return;
      }
      case StmtKind::IfThenElse: {
        const loop::IfThenElse* i = s.as<loop::IfThenElse>();
        reads_in(i->cond);
        std::optional<int64_t> c = eval(i->cond);
        if (!c) {
          walk(i->then_case, false);
          walk(i->else_case, false);
        } else {
          walk(*c ? i->then_case : i->else_case, certain);
        }
        return;
      }
      case StmtKind::Seq:
        for (const Stmt& x : s.as<loop::Seq>()->stmts) walk(x, certain);
        return;
      case StmtKind::Stage:
        return walk(s.as<loop::Stage>()->body, certain);
      case StmtKind::Evaluate:
        return reads_in(s.as<loop::Evaluate>()->value);
      case StmtKind::FragmentAlloc:
        return walk(s.as<loop::FragmentAlloc>()->body, certain);
      case StmtKind::FragmentFill:
        return reads_in(s.as<loop::FragmentFill>()->value);
      case StmtKind::FragmentLoad:
      case StmtKind::FragmentStore:
      case StmtKind::FragmentMma:
        throw Unproven{"a warp fragment accesses " + m_t->name};
      case StmtKind::AsyncCopy: {
        const loop::AsyncCopy* ac = s.as<loop::AsyncCopy>();
        if (ac->dst.get() == m_t) throw Unproven{"an asynchronous copy writes " + m_t->name};
        if (ac->pred.defined()) reads_in(ac->pred);
        // A copy reads `elements` consecutive elements of the last dimension: one read each.
        for (int64_t k = 0; k < ac->elements(); ++k) {
          std::vector<Expr> idx = ac->src_index;
          idx.back() = idx.back() + te::int_imm(k);
          reads_in(te::read(ac->src, idx));
        }
        return;
      }
      case StmtKind::MatrixLoad:
        if (s.as<loop::MatrixLoad>()->src.get() == m_t)
          throw Unproven{"ldmatrix reads " + m_t->name};
        return;
      case StmtKind::WgmmaMma: {
        const loop::WgmmaMma* wg = s.as<loop::WgmmaMma>();
        if (wg->a.get() == m_t || wg->b.get() == m_t) throw Unproven{"wgmma reads " + m_t->name};
        return;
      }
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait:
      case StmtKind::MmaSync:
      case StmtKind::AsyncCommit:
      case StmtKind::AsyncWait:
        return;
      case StmtKind::BlockBarrier:
      case StmtKind::GridBarrier:
      case StmtKind::FlagRelease:  // counters are not tensors of the model
      case StmtKind::FlagWait:
      case StmtKind::Comment:
      case StmtKind::TimelineRecord:  // the timeline buffer is no tensor of the model
        return;
    }
  }
};

}  // namespace

namespace {

/// Trips of the statements of s that touch `t`, saturating at `cap`.
int64_t trips(const Stmt& s, const te::TensorNode* t, int64_t cap) {
  if (!s.defined()) return 0;
  bool found = false;
  loop::for_each_stmt(s, [&](const Stmt& x) {
    if (const loop::Store* st = x.as<loop::Store>()) found |= st->buffer.get() == t;
    if (const loop::AtomicAdd* a = x.as<loop::AtomicAdd>()) found |= a->buffer.get() == t;
  });
  if (!found)
    loop::for_each_expr(s, [&](const Expr& e) {
      te::for_each_node(e, [&](const Expr& n) {
        if (const te::Read* r = n.as<te::Read>()) found |= r->tensor.get() == t;
      });
    });
  if (!found) return 0;
  auto mul = [cap](int64_t a, int64_t b) { return (b != 0 && a > cap / b) ? cap : a * b; };
  switch (s.kind()) {
    case StmtKind::For: {
      const loop::For* f = s.as<loop::For>();
      const te::IntImm* ext = f->extent.as<te::IntImm>();
      // A trip count that is not a constant is left to the walk's own limit.
      return std::min(cap, 1 + mul(ext ? ext->value : 1, trips(f->body, t, cap)));
    }
    case StmtKind::Seq: {
      int64_t sum = 1;
      for (const Stmt& x : s.as<loop::Seq>()->stmts) sum = std::min(cap, sum + trips(x, t, cap));
      return sum;
    }
    case StmtKind::IfThenElse: {
      const loop::IfThenElse* i = s.as<loop::IfThenElse>();
      return std::min(cap, 1 + trips(i->then_case, t, cap) + trips(i->else_case, t, cap));
    }
    case StmtKind::LetStmt:
      return std::min(cap, 1 + trips(s.as<loop::LetStmt>()->body, t, cap));
    case StmtKind::Allocate:
      return std::min(cap, 1 + trips(s.as<loop::Allocate>()->body, t, cap));
    case StmtKind::Stage:
      return std::min(cap, 1 + trips(s.as<loop::Stage>()->body, t, cap));
    case StmtKind::FragmentAlloc:
      return std::min(cap, 1 + trips(s.as<loop::FragmentAlloc>()->body, t, cap));
    default:
      // One statement: itself plus its accesses (a few per element at most).
      return 4;
  }
}

}  // namespace

int64_t ownership_step_bound(const OwnershipQuery& q) {
  const int64_t cap = std::max<int64_t>(q.max_steps, 1);
  // Each statement over the blocks and threads its guard lets in.
  auto bound = [&](const Stmt& s) {
    const Active a = active_part(s, q);
    const int64_t per_thread = trips(a.body, q.tensor.get(), cap);
    const int64_t threads = a.blocks * a.threads;
    return per_thread != 0 && per_thread > cap / std::max<int64_t>(threads, 1)
               ? cap
               : per_thread * threads;
  };
  int64_t total = bound(q.reader);
  for (const Stmt& w : q.writers) total = std::min(cap, total + bound(w));
  return total;
}

OwnershipProof prove_ownership(const OwnershipQuery& q) {
  SOUFFLE_CHECK(q.tensor && q.bx.defined() && q.tx.defined(), "prove_ownership: incomplete query");
  // Refused up front when even the bound says the walk would run out: a failed enumeration of
  // a big tensor costs as much as a successful one.
  if (ownership_step_bound(q) >= q.max_steps) {
    OwnershipProof p;
    p.reason = "too many accesses to enumerate";
    return p;
  }
  return Prover(q).run();
}

}  // namespace souffle::schedule
