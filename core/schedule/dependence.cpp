#include "core/schedule/dependence.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>

#include "core/loop/mutator.h"
#include "core/support/int_math.h"
#include "core/te/bounds.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using loop::Stmt;
using loop::StmtKind;
using te::Expr;

std::vector<ProducerBlock> DependenceProof::producers_of(int64_t b) const {
  if (b < 0 || b + 1 >= static_cast<int64_t>(offsets.size())) return {};
  return {producers.begin() + offsets[static_cast<size_t>(b)],
          producers.begin() + offsets[static_cast<size_t>(b) + 1]};
}

int64_t DependenceProof::max_producers() const {
  int64_t most = 0;
  for (size_t b = 0; b + 1 < offsets.size(); ++b)
    most = std::max(most, offsets[b + 1] - offsets[b]);
  return most;
}

OwnershipProof DependenceProof::as_ownership() const {
  OwnershipProof p;
  p.level = level;
  p.reason = reason;
  p.writers_read = writers_read;
  p.steps = steps;
  if (level != Ownership::None) {
    p.lo = lo;
    p.hi = hi;
  }
  return p;
}

namespace {

// ---- intervals: the bounds engine's (core/te/bounds.h) ----

using te::Interval;
constexpr int64_t kInf = te::kBoundInf;
constexpr Interval kFull = Interval::everything();

// ---- sums of atoms ----

/// (atom id, coefficient), sorted by atom id, no zero coefficients.
using Terms = std::vector<std::pair<int32_t, int64_t>>;

struct Lin {
  Terms t;
  int64_t c = 0;
  bool constant() const { return t.empty(); }
  bool operator==(const Lin& o) const { return c == o.c && t == o.t; }
};

Lin lin_const(int64_t c) {
  Lin l;
  l.c = c;
  return l;
}

/// a + k * b.
Lin lin_add(const Lin& a, const Lin& b, int64_t k = 1) {
  Lin out;
  out.c = te::saturate(static_cast<__int128>(a.c) + static_cast<__int128>(b.c) * k);
  size_t i = 0, j = 0;
  while (i < a.t.size() || j < b.t.size()) {
    if (j == b.t.size() || (i < a.t.size() && a.t[i].first < b.t[j].first)) {
      out.t.push_back(a.t[i++]);
    } else if (i == a.t.size() || b.t[j].first < a.t[i].first) {
      out.t.push_back({b.t[j].first, te::saturate(static_cast<__int128>(b.t[j].second) * k)});
      ++j;
    } else {
      int64_t c = te::saturate(static_cast<__int128>(a.t[i].second) +
                               static_cast<__int128>(b.t[j].second) * k);
      if (c != 0) out.t.push_back({a.t[i].first, c});
      ++i;
      ++j;
    }
  }
  return out;
}

Lin lin_scale(const Lin& a, int64_t k) {
  if (k == 0) return {};
  Lin out = a;
  out.c = te::saturate(static_cast<__int128>(a.c) * k);
  for (auto& [id, c] : out.t) c = te::saturate(static_cast<__int128>(c) * k);
  return out;
}

enum class AtomKind : uint8_t { Var, Div, Mod, Mul, Min, Max, Hull, Unknown };

/// A term of a sum: a variable, floor(a / d), a mod d (d > 0), a * b, min, max, either of two
/// values (a select), or something data-dependent with a known range.
struct Atom {
  AtomKind kind = AtomKind::Unknown;
  const te::ExprNode* var = nullptr;
  Lin a, b;
  int64_t d = 0;
  Interval range = kFull;  ///< over the variables' whole domains
};

void key_lin(std::string& k, const Lin& l) {
  auto put = [&k](int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<int64_t>(l.t.size()));
  for (const auto& [id, c] : l.t) {
    put(id);
    put(c);
  }
  put(l.c);
}

/// The atoms of one proof, interned so that equal sub-sums are one atom, with the algebra that
/// builds sums from index expressions.
class Algebra {
 public:
  std::vector<Atom> atoms;
  /// Symbolic domains of variables (loops, block, thread); others are unknown.
  std::unordered_map<const te::ExprNode*, Interval> domain;

  Interval range(const Lin& l) const {
    Interval r{l.c, l.c};
    for (const auto& [id, c] : l.t) r = r.plus(atoms[static_cast<size_t>(id)].range.times(c));
    return r;
  }

  /// A variable's domain; a var bound by several loops gets the hull of their ranges, and the
  /// atoms built on a narrower one are widened with it (their simplifications stay valid only
  /// for the expressions already built in the narrower loop, where they hold).
  void set_domain(const te::ExprNode* v, Interval r) {
    auto it = domain.find(v);
    if (it == domain.end()) {
      domain[v] = r;
      return;
    }
    const Interval wide = it->second.hull(r);
    if (wide == it->second) return;
    it->second = wide;
    bool touched = false;
    for (Atom& a : atoms) {
      if (a.kind == AtomKind::Var && a.var == v) {
        a.range = wide;
        touched = true;
      } else if (touched) {
        switch (a.kind) {
          case AtomKind::Div:
            a.range = range(a.a).floor_div(a.d);
            break;
          case AtomKind::Mod:
            a.range = range(a.a).floor_mod(a.d);
            break;
          case AtomKind::Mul:
            a.range = range(a.a).times(range(a.b));
            break;
          case AtomKind::Min:
            a.range = range(a.a).min_with(range(a.b));
            break;
          case AtomKind::Max:
            a.range = range(a.a).max_with(range(a.b));
            break;
          case AtomKind::Hull:
            a.range = range(a.a).hull(range(a.b));
            break;
          case AtomKind::Var:
          case AtomKind::Unknown:
            break;
        }
      }
    }
  }

  Lin atom_lin(int32_t id) const {
    Lin l;
    l.t.push_back({id, 1});
    return l;
  }

  Lin var(const te::ExprNode* v) {
    Atom a;
    a.kind = AtomKind::Var;
    a.var = v;
    auto it = domain.find(v);
    a.range = it == domain.end() ? kFull : it->second;
    return atom_lin(intern(std::move(a)));
  }

  Lin unknown(Interval r) {
    Atom a;
    a.kind = AtomKind::Unknown;
    a.range = r;
    atoms.push_back(std::move(a));
    return atom_lin(static_cast<int32_t>(atoms.size() - 1));
  }

  Lin div(const Lin& x, int64_t d) {
    if (d <= 0) return unknown(kFull);
    if (d == 1) return x;
    if (x.constant()) return lin_const(floor_div(x.c, d));
    bool exact = x.c % d == 0;
    for (const auto& [id, c] : x.t) exact &= c % d == 0;
    if (exact) {
      Lin q = x;
      q.c /= d;
      for (auto& [id, c] : q.t) c /= d;
      return q;
    }
    const Interval r = range(x);
    if (r.lo >= 0 && r.hi < d) return lin_const(0);
    // floor(floor(y / a) / d) = floor(y / (a * d)).
    if (x.c == 0 && x.t.size() == 1 && x.t[0].second == 1) {
      const Atom& in = atoms[static_cast<size_t>(x.t[0].first)];
      if (in.kind == AtomKind::Div && in.d <= kInf / d) return div(Lin(in.a), in.d * d);
    }
    Atom a;
    a.kind = AtomKind::Div;
    a.a = x;
    a.d = d;
    a.range = r.floor_div(d);
    return atom_lin(intern(std::move(a)));
  }

  Lin mod(const Lin& x, int64_t d) {
    if (d <= 0) return unknown(kFull);
    if (d == 1) return lin_const(0);
    if (x.constant()) return lin_const(floor_mod(x.c, d));
    const Interval r = range(x);
    if (r.lo >= 0 && r.hi < d) return x;
    Atom a;
    a.kind = AtomKind::Mod;
    a.a = x;
    a.d = d;
    a.range = r.floor_mod(d);
    return atom_lin(intern(std::move(a)));
  }

  Lin binary(AtomKind k, const Lin& x, const Lin& y) {
    if (k == AtomKind::Mul) {
      if (x.constant()) return lin_scale(y, x.c);
      if (y.constant()) return lin_scale(x, y.c);
    }
    if ((k == AtomKind::Min || k == AtomKind::Max || k == AtomKind::Hull) && x == y) return x;
    const Interval rx = range(x), ry = range(y);
    if (k == AtomKind::Min && x.constant() && y.constant()) return lin_const(std::min(x.c, y.c));
    if (k == AtomKind::Max && x.constant() && y.constant()) return lin_const(std::max(x.c, y.c));
    if (k == AtomKind::Min && rx.hi <= ry.lo) return x;
    if (k == AtomKind::Min && ry.hi <= rx.lo) return y;
    if (k == AtomKind::Max && rx.lo >= ry.hi) return x;
    if (k == AtomKind::Max && ry.lo >= rx.hi) return y;
    Atom a;
    a.kind = k;
    a.a = x;
    a.b = y;
    a.range = k == AtomKind::Mul   ? rx.times(ry)
              : k == AtomKind::Min ? rx.min_with(ry)
              : k == AtomKind::Max ? rx.max_with(ry)
                                   : rx.hull(ry);
    return atom_lin(intern(std::move(a)));
  }

  /// Recombines digits: k*c * floor(x / c) + k * (x mod c) = k * x, and k*c * (floor(x / c) mod
  /// m) + k * (x mod c) = k * (x mod (c * m)) — what unflattening an index into a tensor's
  /// dimensions and flattening it again leaves.
  Lin recombine(Lin l) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t i = 0; i < l.t.size() && !changed; ++i) {
        const Atom& lo = atoms[static_cast<size_t>(l.t[i].first)];
        if (lo.kind != AtomKind::Mod) continue;
        const int64_t k = l.t[i].second, c = lo.d;
        if (k > kInf / c || k < -kInf / c) continue;
        for (size_t j = 0; j < l.t.size() && !changed; ++j) {
          if (j == i || l.t[j].second != k * c) continue;
          const Atom& hi = atoms[static_cast<size_t>(l.t[j].first)];
          Lin merged;
          if (hi.kind == AtomKind::Div && hi.d == c && hi.a == lo.a) {
            merged = lo.a;
          } else if (hi.kind == AtomKind::Mod && hi.a.c == 0 && hi.a.t.size() == 1 &&
                     hi.a.t[0].second == 1 && hi.d <= kInf / c) {
            const Atom& in = atoms[static_cast<size_t>(hi.a.t[0].first)];
            if (in.kind != AtomKind::Div || in.d != c || !(in.a == lo.a)) continue;
            merged = mod(lo.a, c * hi.d);
          } else {
            continue;
          }
          Lin rest;
          rest.c = l.c;
          for (size_t x = 0; x < l.t.size(); ++x)
            if (x != i && x != j) rest.t.push_back(l.t[x]);
          l = lin_add(rest, merged, k);
          changed = true;
        }
      }
    }
    return l;
  }

 private:
  std::unordered_map<std::string, int32_t> m_index;

  int32_t intern(Atom a) {
    std::string k;
    k.push_back(static_cast<char>(a.kind));
    k.append(reinterpret_cast<const char*>(&a.var), sizeof a.var);
    key_lin(k, a.a);
    key_lin(k, a.b);
    k.append(reinterpret_cast<const char*>(&a.d), sizeof a.d);
    auto it = m_index.find(k);
    if (it != m_index.end()) return it->second;
    atoms.push_back(std::move(a));
    const auto id = static_cast<int32_t>(atoms.size() - 1);
    m_index.emplace(std::move(k), id);
    return id;
  }
};

// ---- the accesses of one tensor, collected by walking statements once ----

struct LoopRec {
  int32_t var = -1;  ///< the loop var's atom
  Lin min, extent;
  bool enumerate = false;  ///< deals work over blocks: enumerated per block, not an interval
};

/// A guard: the sum `terms` lies in `allow`.
struct Constraint {
  Terms terms;
  Interval allow;
};

struct Access {
  int32_t writer = -1;  ///< index of the writer statement; -1 for the reader
  bool write = false;
  std::vector<Lin> dims;
  Lin flat;
  int64_t rows = 1, cols = 1;  ///< a warp fragment's tile over the last two dimensions
  std::vector<int32_t> loops;  ///< enclosing loops, outermost first
  std::vector<int32_t> guards;
};

class Collector {
 public:
  Collector(Algebra& alg, const OwnershipQuery& q) : m_alg(alg), m_q(q), m_t(q.tensor.get()) {
    m_alg.set_domain(q.bx.get(), {0, q.grid - 1});
    m_alg.set_domain(q.tx.get(), {0, q.block - 1});
    m_bx = alg.var(q.bx.get()).t[0].first;
  }

  std::vector<LoopRec> loops;
  std::vector<Constraint> constraints;
  std::vector<Access> accesses;
  bool reader_writes = false, writer_reads = false;

  void collect(const Stmt& s, int32_t writer) {
    m_writer = writer;
    m_grid = m_q.grid;
    walk(s);
  }

  Lin lin(const Expr& e) {
    switch (e.kind()) {
      case te::ExprKind::IntImm:
        return lin_const(e.as<te::IntImm>()->value);
      case te::ExprKind::Var: {
        auto it = m_lets.find(e.get());
        if (it != m_lets.end()) return it->second;
        return m_alg.var(e.get());
      }
      case te::ExprKind::Cast: {
        const te::Cast* c = e.as<te::Cast>();
        if (is_float(c->a.dtype()) || is_float(e.dtype())) return m_alg.unknown(kFull);
        return lin(c->a);
      }
      case te::ExprKind::Unary: {
        const te::Unary* u = e.as<te::Unary>();
        if (u->op == te::UnaryOp::Neg && !is_float(e.dtype())) return lin_scale(lin(u->a), -1);
        return m_alg.unknown(u->op == te::UnaryOp::Not ? Interval{0, 1} : kFull);
      }
      case te::ExprKind::Select: {
        const te::Select* s = e.as<te::Select>();
        if (is_float(e.dtype())) return m_alg.unknown(kFull);
        return m_alg.binary(AtomKind::Hull, lin(s->t), lin(s->f));
      }
      case te::ExprKind::Binary: {
        const te::Binary* b = e.as<te::Binary>();
        if (te::is_comparison(b->op) || te::is_logical(b->op)) return m_alg.unknown({0, 1});
        if (is_float(b->a.dtype()) || is_float(b->b.dtype())) return m_alg.unknown(kFull);
        const Lin x = lin(b->a), y = lin(b->b);
        switch (b->op) {
          case te::BinaryOp::Add:
            return lin_add(x, y);
          case te::BinaryOp::Sub:
            return lin_add(x, y, -1);
          case te::BinaryOp::Mul:
            return m_alg.binary(AtomKind::Mul, x, y);
          case te::BinaryOp::FloorDiv:
          case te::BinaryOp::Div:
            // C division truncates: the same as floor over a non-negative dividend.
            if (!y.constant() || (b->op == te::BinaryOp::Div && m_alg.range(x).lo < 0))
              return m_alg.unknown(kFull);
            return m_alg.div(x, y.c);
          case te::BinaryOp::FloorMod:
          case te::BinaryOp::Mod:
            if (!y.constant() || (b->op == te::BinaryOp::Mod && m_alg.range(x).lo < 0))
              return m_alg.unknown(kFull);
            return m_alg.mod(x, y.c);
          case te::BinaryOp::Min:
            return m_alg.binary(AtomKind::Min, x, y);
          case te::BinaryOp::Max:
            return m_alg.binary(AtomKind::Max, x, y);
          default:
            return m_alg.unknown(kFull);
        }
      }
      case te::ExprKind::FloatImm:
      case te::ExprKind::Call:
      case te::ExprKind::Read:
        return m_alg.unknown(kFull);
    }
    return m_alg.unknown(kFull);
  }

 private:
  Algebra& m_alg;
  const OwnershipQuery& m_q;
  const te::TensorNode* m_t;
  int32_t m_bx = -1, m_writer = -1;
  int64_t m_grid = 1;
  std::unordered_map<const te::ExprNode*, Lin> m_lets;
  std::vector<int32_t> m_loop_stack, m_guard_stack;
  /// Fragment buffers in scope: rows and columns of one fragment.
  std::unordered_map<const te::TensorNode*, std::pair<int64_t, int64_t>> m_frags;

  /// A loop whose var is a multiple of the grid beside the block index in some index (a tile
  /// round `round * grid + bx`, a grid-stride `(it * grid + bx) * block + tx`) deals work over
  /// blocks: enumerated, or every block would seem to touch every round's data.
  void note_distributing(const Lin& l) {
    int64_t cb = 0;
    for (const auto& [id, c] : l.t)
      if (id == m_bx) cb = c;
    if (cb == 0) return;
    for (int32_t li : m_loop_stack) {
      LoopRec& lr = loops[static_cast<size_t>(li)];
      for (const auto& [id, c] : l.t)
        if (id == lr.var && (c >= m_grid * cb || c <= -m_grid * cb) && cb > 0) lr.enumerate = true;
    }
  }

  /// Guards from a condition's conjuncts (comparisons of integer sums); `negate` takes the
  /// else branch of a single comparison. Anything else guards nothing (an over-approximation).
  std::vector<int32_t> guards_of(const Expr& cond, bool negate) {
    std::vector<Expr> conj, todo = {cond};
    while (!todo.empty()) {
      Expr c = todo.back();
      todo.pop_back();
      const te::Binary* b = c.as<te::Binary>();
      if (!negate && b && b->op == te::BinaryOp::And) {
        todo.push_back(b->a);
        todo.push_back(b->b);
      } else {
        conj.push_back(c);
      }
    }
    if (negate && conj.size() != 1) return {};
    std::vector<int32_t> out;
    for (const Expr& c : conj) {
      const te::Binary* b = c.as<te::Binary>();
      if (!b || !te::is_comparison(b->op) || is_float(b->a.dtype()) || is_float(b->b.dtype()))
        continue;
      te::BinaryOp op = b->op;
      if (negate) {
        switch (op) {
          case te::BinaryOp::LT:
            op = te::BinaryOp::GE;
            break;
          case te::BinaryOp::LE:
            op = te::BinaryOp::GT;
            break;
          case te::BinaryOp::GT:
            op = te::BinaryOp::LE;
            break;
          case te::BinaryOp::GE:
            op = te::BinaryOp::LT;
            break;
          case te::BinaryOp::NE:
            op = te::BinaryOp::EQ;
            break;
          default:
            continue;
        }
      }
      const Lin d = lin_add(lin(b->a), lin(b->b), -1);          // a - b
      const std::optional<Interval> holds = te::holds_for(op);  // a - b in it
      if (!holds) continue;
      const Interval allow = {holds->lo <= -kInf ? -kInf : holds->lo - d.c,
                              holds->hi >= kInf ? kInf : holds->hi - d.c};
      constraints.push_back({d.t, allow});
      out.push_back(static_cast<int32_t>(constraints.size() - 1));
    }
    return out;
  }

  void add_access(bool write, const std::vector<Expr>& idx, int64_t rows = 1, int64_t cols = 1) {
    Access a;
    a.writer = m_writer;
    a.write = write;
    a.rows = rows;
    a.cols = cols;
    int64_t stride = 1;
    std::vector<int64_t> strides(m_t->shape.size(), 1);
    for (size_t d = m_t->shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride = te::saturate(static_cast<__int128>(stride) * m_t->shape[d]);
    }
    for (size_t d = 0; d < idx.size(); ++d) {
      a.dims.push_back(lin(idx[d]));
      note_distributing(a.dims.back());
      a.flat = lin_add(a.flat, a.dims.back(), strides[d]);
    }
    a.flat = m_alg.recombine(a.flat);
    a.loops = m_loop_stack;
    a.guards = m_guard_stack;
    accesses.push_back(std::move(a));
  }

  void reads_in(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case te::ExprKind::Read: {
        const te::Read* r = e.as<te::Read>();
        for (const Expr& i : r->indices) reads_in(i);
        if (r->tensor.get() != m_t) return;
        if (m_writer >= 0) {
          writer_reads = true;  // a writer reading its own output orders that itself
          return;
        }
        add_access(false, r->indices);
        return;
      }
      case te::ExprKind::Select: {
        const te::Select* s = e.as<te::Select>();
        reads_in(s->cond);
        const size_t depth = m_guard_stack.size();
        for (int32_t g : guards_of(s->cond, false)) m_guard_stack.push_back(g);
        reads_in(s->t);
        m_guard_stack.resize(depth);
        for (int32_t g : guards_of(s->cond, true)) m_guard_stack.push_back(g);
        reads_in(s->f);
        m_guard_stack.resize(depth);
        return;
      }
      case te::ExprKind::Unary:
        return reads_in(e.as<te::Unary>()->a);
      case te::ExprKind::Cast:
        return reads_in(e.as<te::Cast>()->a);
      case te::ExprKind::Binary:
        reads_in(e.as<te::Binary>()->a);
        reads_in(e.as<te::Binary>()->b);
        return;
      case te::ExprKind::Call:
        for (const Expr& a : e.as<te::Call>()->args) reads_in(a);
        return;
      default:
        return;
    }
  }

  void write(const te::Tensor& buf, const std::vector<Expr>& idx, int64_t rows = 1,
             int64_t cols = 1) {
    if (buf.get() != m_t) return;
    if (m_writer < 0) {
      reader_writes = true;
      return;
    }
    add_access(true, idx, rows, cols);
  }

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: {
        const loop::For* f = s.as<loop::For>();
        reads_in(f->min);
        reads_in(f->extent);
        LoopRec lr;
        lr.min = lin(f->min);
        lr.extent = lin(f->extent);
        const Interval mn = m_alg.range(lr.min), ext = m_alg.range(lr.extent);
        m_alg.set_domain(f->var.get(), te::loop_var_range(mn, ext));
        lr.var = m_alg.var(f->var.get()).t[0].first;
        loops.push_back(std::move(lr));
        m_loop_stack.push_back(static_cast<int32_t>(loops.size() - 1));
        walk(f->body);
        m_loop_stack.pop_back();
        return;
      }
      case StmtKind::LetStmt: {
        const loop::LetStmt* l = s.as<loop::LetStmt>();
        reads_in(l->value);
        auto prev = m_lets.find(l->var.get());
        std::optional<Lin> saved;
        if (prev != m_lets.end()) saved = prev->second;
        if (!is_float(l->value.dtype())) {
          Lin v = lin(l->value);
          note_distributing(v);
          m_lets[l->var.get()] = std::move(v);
        } else {
          m_lets.erase(l->var.get());
        }
        walk(l->body);
        if (saved)
          m_lets[l->var.get()] = *saved;
        else
          m_lets.erase(l->var.get());
        return;
      }
      case StmtKind::Allocate:
        return walk(s.as<loop::Allocate>()->body);
      case StmtKind::Store: {
        const loop::Store* st = s.as<loop::Store>();
        for (const Expr& i : st->indices) reads_in(i);
        reads_in(st->value);
        return write(st->buffer, st->indices);
      }
      case StmtKind::AtomicAdd: {
        const loop::AtomicAdd* a = s.as<loop::AtomicAdd>();
        for (const Expr& i : a->indices) reads_in(i);
        reads_in(a->value);
        return write(a->buffer, a->indices);
      }
      case StmtKind::Shuffle: {
        const loop::Shuffle* sh = s.as<loop::Shuffle>();
        for (const Expr& i : sh->indices) reads_in(i);
        reads_in(sh->value);
        reads_in(sh->arg);
        return write(sh->buffer, sh->indices);
      }
      case StmtKind::IfThenElse: {
        const loop::IfThenElse* i = s.as<loop::IfThenElse>();
        reads_in(i->cond);
        const size_t depth = m_guard_stack.size();
        const int64_t grid = m_grid;
        // A guard `bx < G` leaves G blocks to deal work over; `O <= bx < O + G` (a stage
        // packed beside others at block O) leaves G as well.
        int64_t lo = 0, hi = kInf;
        for (int32_t g : guards_of(i->cond, false)) {
          m_guard_stack.push_back(g);
          const Constraint& c = constraints[static_cast<size_t>(g)];
          if (c.terms.size() == 1 && c.terms[0].first == m_bx && c.terms[0].second == 1) {
            if (c.allow.hi < kInf) hi = std::min(hi, c.allow.hi);
            if (c.allow.lo > -kInf) lo = std::max(lo, c.allow.lo);
          }
        }
        if (hi < kInf) m_grid = std::max<int64_t>(1, std::min(m_grid, hi + 1 - lo));
        walk(i->then_case);
        m_grid = grid;
        m_guard_stack.resize(depth);
        for (int32_t g : guards_of(i->cond, true)) m_guard_stack.push_back(g);
        walk(i->else_case);
        m_guard_stack.resize(depth);
        return;
      }
      case StmtKind::Seq:
        for (const Stmt& x : s.as<loop::Seq>()->stmts) walk(x);
        return;
      case StmtKind::Stage:
        return walk(s.as<loop::Stage>()->body);
      case StmtKind::Evaluate:
        return reads_in(s.as<loop::Evaluate>()->value);
      case StmtKind::FragmentAlloc: {
        const loop::FragmentAlloc* fa = s.as<loop::FragmentAlloc>();
        m_frags[fa->buffer.get()] = {fa->rows(), fa->cols()};
        return walk(fa->body);
      }
      case StmtKind::FragmentFill:
        reads_in(s.as<loop::FragmentFill>()->index);
        return reads_in(s.as<loop::FragmentFill>()->value);
      case StmtKind::FragmentLoad: {
        const loop::FragmentLoad* fl = s.as<loop::FragmentLoad>();
        reads_in(fl->index);
        for (const Expr& o : fl->origin) reads_in(o);
        if (fl->source.get() != m_t) return;
        auto [rows, cols] = frag_shape(fl->fragment);
        if (m_writer >= 0) {
          writer_reads = true;
          return;
        }
        add_access(false, fl->origin, rows, cols);
        return;
      }
      case StmtKind::FragmentStore: {
        const loop::FragmentStore* fs = s.as<loop::FragmentStore>();
        reads_in(fs->index);
        for (const Expr& o : fs->origin) reads_in(o);
        auto [rows, cols] = frag_shape(fs->fragment);
        return write(fs->dest, fs->origin, rows, cols);
      }
      case StmtKind::FragmentMma:
        reads_in(s.as<loop::FragmentMma>()->di);
        reads_in(s.as<loop::FragmentMma>()->ai);
        reads_in(s.as<loop::FragmentMma>()->bi);
        reads_in(s.as<loop::FragmentMma>()->ci);
        return;
      case StmtKind::AsyncCopy: {
        const loop::AsyncCopy* ac = s.as<loop::AsyncCopy>();
        for (const Expr& i : ac->src_index) reads_in(i);
        for (const Expr& i : ac->dst_index) reads_in(i);
        if (ac->pred.defined()) reads_in(ac->pred);
        // One copy reads and writes `elements` consecutive elements of the last dimension.
        if (ac->src.get() == m_t) {
          if (m_writer >= 0) {
            writer_reads = true;
          } else {
            add_access(false, ac->src_index, 1, ac->elements());
          }
        }
        return write(ac->dst, ac->dst_index, 1, ac->elements());
      }
      case StmtKind::MatrixLoad: {
        const loop::MatrixLoad* ml = s.as<loop::MatrixLoad>();
        reads_in(ml->dst_offset);
        for (const Expr& i : ml->src_index) reads_in(i);
        if (ml->src.get() != m_t) return;
        if (m_writer >= 0) {
          writer_reads = true;
          return;
        }
        // Each lane's address is one 16-byte row of an 8x8 matrix.
        add_access(false, ml->src_index, 1, 16 / dtype_size(ml->src->dtype));
        return;
      }
      case StmtKind::MmaSync:
        reads_in(s.as<loop::MmaSync>()->d_offset);
        reads_in(s.as<loop::MmaSync>()->a_offset);
        reads_in(s.as<loop::MmaSync>()->b_offset);
        reads_in(s.as<loop::MmaSync>()->c_offset);
        return;
      case StmtKind::WgmmaMma: {
        // Operands are shared tiles (the verifier's rule), never model tensors: index reads only.
        const loop::WgmmaMma* wg = s.as<loop::WgmmaMma>();
        reads_in(wg->d_offset);
        for (const Expr& i : wg->a_index) reads_in(i);
        for (const Expr& i : wg->b_index) reads_in(i);
        return;
      }
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait:
      case StmtKind::AsyncCommit:
      case StmtKind::AsyncWait:
      case StmtKind::BlockBarrier:
      case StmtKind::GridBarrier:
      case StmtKind::FlagRelease:  // counters are not tensors of the model
      case StmtKind::FlagWait:
      case StmtKind::Comment:
      case StmtKind::TimelineRecord:  // the timeline buffer is no tensor of the model
        return;
    }
  }

  std::pair<int64_t, int64_t> frag_shape(const te::Tensor& f) const {
    auto it = m_frags.find(f.get());
    // Outside its allocation (not well-formed IR) the whole tensor is the safe answer.
    if (it == m_frags.end()) return {kInf, kInf};
    return it->second;
  }
};

// ---- evaluation per block ----

/// A region of the tensor a block may touch: a box (one interval per dimension) intersected
/// with an interval of row-major flat indices.
struct Region {
  int32_t writer = -1, block = 0;
  size_t box = 0;  ///< offset of the box's dims (lo, hi pairs) in the pool
  Interval flat;
};

class Evaluator {
 public:
  Evaluator(const Algebra& alg, const Collector& col, const te::TensorNode* t)
      : m_alg(alg), m_col(col), m_t(t) {
    m_env.resize(alg.atoms.size());
    for (size_t i = 0; i < alg.atoms.size(); ++i) m_env[i] = alg.atoms[i].range;
    m_memo.resize(alg.atoms.size());
    m_stamp.assign(alg.atoms.size(), 0);
    int64_t stride = 1;
    m_strides.assign(t->shape.size(), 1);
    for (size_t d = t->shape.size(); d-- > 0;) {
      m_strides[d] = stride;
      stride = te::saturate(static_cast<__int128>(stride) * t->shape[d]);
    }
    m_numel = stride;
  }

  std::vector<int64_t> pool;  ///< boxes: 2 entries (lo, hi) per dimension
  int64_t steps = 0;

  /// The regions access `a` may touch in block b; false when past `budget` steps.
  bool regions(const Access& a, int64_t b, int32_t bx, int64_t budget,
               const std::function<void(const Region&)>& out) {
    set_var(bx, {b, b});
    m_access = &a;
    return enumerate(a, 0, budget, out);
  }

  const std::vector<int64_t>& strides() const { return m_strides; }
  int64_t numel() const { return m_numel; }

 private:
  const Algebra& m_alg;
  const Collector& m_col;
  const te::TensorNode* m_t;
  std::vector<Interval> m_env, m_memo;
  std::vector<uint32_t> m_stamp;
  uint32_t m_now = 1;
  const Access* m_access = nullptr;
  std::vector<int64_t> m_strides;
  int64_t m_numel = 1;

  void set_var(int32_t id, Interval v) {
    m_env[static_cast<size_t>(id)] = v;
    ++m_now;  // every cached atom may depend on it
  }

  Interval atom(int32_t id) {
    const auto i = static_cast<size_t>(id);
    if (m_stamp[i] == m_now) return m_memo[i];
    const Atom& a = m_alg.atoms[i];
    Interval r;
    switch (a.kind) {
      case AtomKind::Var:
      case AtomKind::Unknown:
        r = m_env[i];
        break;
      case AtomKind::Div:
        r = sum(a.a).floor_div(a.d);
        break;
      case AtomKind::Mod:
        r = sum(a.a).floor_mod(a.d);
        break;
      case AtomKind::Mul:
        r = sum(a.a).times(sum(a.b));
        break;
      case AtomKind::Min:
        r = sum(a.a).min_with(sum(a.b));
        break;
      case AtomKind::Max:
        r = sum(a.a).max_with(sum(a.b));
        break;
      case AtomKind::Hull:
        r = sum(a.a).hull(sum(a.b));
        break;
    }
    m_memo[i] = r;
    m_stamp[i] = m_now;
    return r;
  }

  Interval terms(const Terms& t) {
    Interval r{0, 0};
    for (const auto& [id, c] : t) r = r.plus(atom(id).times(c));
    return r;
  }

  /// A sum's interval, narrowed by the guards in scope that bound the same terms.
  Interval sum(const Lin& l) {
    Interval r = terms(l.t);
    if (m_access)
      for (int32_t g : m_access->guards) {
        const Constraint& c = m_col.constraints[static_cast<size_t>(g)];
        if (c.terms == l.t) r = r.meet(c.allow);
      }
    return r.plus({l.c, l.c});
  }

  bool enumerate(const Access& a, size_t k, int64_t budget,
                 const std::function<void(const Region&)>& out) {
    if (k == a.loops.size()) return emit(a, budget, out);
    const LoopRec& lr = m_col.loops[static_cast<size_t>(a.loops[k])];
    const Interval mn = sum(lr.min), ext = sum(lr.extent);
    if (mn.empty() || ext.empty() || ext.hi <= 0) return true;  // the loop does not run
    if (lr.enumerate && mn.is_point() && ext.is_point()) {
      for (int64_t v = mn.lo; v < mn.lo + ext.lo; ++v) {
        set_var(lr.var, {v, v});
        if (!enumerate(a, k + 1, budget, out)) return false;
      }
    } else {
      set_var(lr.var, te::loop_var_range(mn, ext));
      if (!enumerate(a, k + 1, budget, out)) return false;
    }
    return true;
  }

  bool emit(const Access& a, int64_t budget, const std::function<void(const Region&)>& out) {
    if (++steps > budget) return false;
    for (int32_t g : a.guards) {
      const Constraint& c = m_col.constraints[static_cast<size_t>(g)];
      if (terms(c.terms).meet(c.allow).empty()) return true;  // guarded off here
    }
    const size_t r = m_t->shape.size();
    Region reg;
    reg.box = pool.size();
    int64_t flo = 0, fhi = 0;
    for (size_t d = 0; d < r; ++d) {
      Interval v = sum(a.dims[d]);
      if (d + 2 == r && a.rows > 1)
        v.hi = v.hi >= kInf ? kInf : te::saturate(static_cast<__int128>(v.hi) + a.rows - 1);
      if (d + 1 == r && a.cols > 1)
        v.hi = v.hi >= kInf ? kInf : te::saturate(static_cast<__int128>(v.hi) + a.cols - 1);
      v = v.meet({0, m_t->shape[d] - 1});
      if (v.empty()) {
        pool.resize(reg.box);
        return true;  // no element in bounds: a guarded-off padding access
      }
      pool.push_back(v.lo);
      pool.push_back(v.hi);
      flo += v.lo * m_strides[d];
      fhi += v.hi * m_strides[d];
    }
    Interval flat{flo, fhi};
    if (a.rows == 1 && a.cols == 1) flat = flat.meet(sum(a.flat));
    reg.flat = flat.meet({0, m_numel - 1});
    if (reg.flat.empty()) {
      pool.resize(reg.box);
      return true;
    }
    reg.writer = a.writer;
    out(reg);
    return true;
  }
};

/// A hash of a list of read regions (see prove_dependence).
struct RegionsHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

/// The smallest row-major flat index >= from of an element of the box (lo/hi per dimension),
/// or -1 when none.
int64_t first_at_or_after(const int64_t* box, const std::vector<int64_t>& strides, size_t rank,
                          int64_t from) {
  // Digits of `from` (already within the tensor); on the stack for the usual ranks.
  int64_t small[8];
  std::vector<int64_t> large(rank > 8 ? rank : 0);
  int64_t* digit = rank > 8 ? large.data() : small;
  int64_t rest = from;
  for (size_t d = 0; d < rank; ++d) {
    digit[d] = rest / strides[d];
    rest %= strides[d];
  }
  // Find the longest prefix of `from`'s digits inside the box, then the first position where
  // a digit can be raised within the box; everything after it takes the box's low corner.
  size_t keep = 0;
  while (keep < rank && digit[keep] >= box[2 * keep] && digit[keep] <= box[2 * keep + 1]) ++keep;
  auto low_from = [&](size_t d) {
    int64_t f = 0;
    for (size_t i = d; i < rank; ++i) f += box[2 * i] * strides[i];
    return f;
  };
  if (keep == rank) return from;
  // Position `keep` is outside: below the box -> take the box's low corner from there on.
  int64_t prefix = 0;
  for (size_t i = 0; i < keep; ++i) prefix += digit[i] * strides[i];
  if (digit[keep] < box[2 * keep]) return prefix + low_from(keep);
  // Above the box at `keep`: raise an earlier digit that still has room.
  for (size_t d = keep; d-- > 0;) {
    prefix -= digit[d] * strides[d];
    if (digit[d] + 1 <= box[2 * d + 1])
      return prefix + (digit[d] + 1) * strides[d] + low_from(d + 1);
  }
  return -1;
}

bool boxes_meet(const int64_t* a, const int64_t* b, size_t rank, std::vector<int64_t>& both) {
  both.resize(2 * rank);
  for (size_t d = 0; d < rank; ++d) {
    both[2 * d] = std::max(a[2 * d], b[2 * d]);
    both[2 * d + 1] = std::min(a[2 * d + 1], b[2 * d + 1]);
    if (both[2 * d] > both[2 * d + 1]) return false;
  }
  return true;
}

// ---- thread level: the reader reads what the same thread wrote ----

class Canon {
 public:
  Canon(const Algebra& alg, const Collector& col, int32_t bx, int32_t tx)
      : m_alg(alg), m_col(col), m_bx(bx), m_tx(tx) {}

  /// A key equal for two sums exactly when they are the same function of the block, the thread
  /// and the access's loops (matched by position and bounds); empty when a sum uses another
  /// variable or an unknown.
  std::string key(const Lin& l, const Access& a) {
    std::string k = std::to_string(l.c);
    for (const auto& [id, c] : l.t) {
      std::string ak = atom_key(id, a);
      if (ak.empty()) return {};
      k += "+" + std::to_string(c) + "*" + ak;
    }
    return k;
  }

 private:
  const Algebra& m_alg;
  const Collector& m_col;
  int32_t m_bx, m_tx;

  std::string atom_key(int32_t id, const Access& a) {
    const Atom& at = m_alg.atoms[static_cast<size_t>(id)];
    switch (at.kind) {
      case AtomKind::Var: {
        if (id == m_bx) return "B";
        if (id == m_tx) return "T";
        for (size_t p = 0; p < a.loops.size(); ++p) {
          const LoopRec& lr = m_col.loops[static_cast<size_t>(a.loops[p])];
          if (lr.var != id) continue;
          if (!lr.min.constant() || !lr.extent.constant()) return {};
          return "L" + std::to_string(p) + "[" + std::to_string(lr.min.c) + "," +
                 std::to_string(lr.extent.c) + "]";
        }
        return {};
      }
      case AtomKind::Div:
      case AtomKind::Mod: {
        std::string in = key(at.a, a);
        if (in.empty()) return {};
        return std::string(at.kind == AtomKind::Div ? "D(" : "M(") + in + "," +
               std::to_string(at.d) + ")";
      }
      case AtomKind::Mul:
      case AtomKind::Min:
      case AtomKind::Max:
      case AtomKind::Hull: {
        std::string x = key(at.a, a), y = key(at.b, a);
        if (x.empty() || y.empty()) return {};
        return "F" + std::to_string(static_cast<int>(at.kind)) + "(" + x + "," + y + ")";
      }
      case AtomKind::Unknown:
        return {};
    }
    return {};
  }
};

/// Whether the write's flat index is injective over the thread and its loops for any fixed
/// block: every term not of the block alone is the thread or a loop var, each once, and their
/// digits do not overlap (sorted by coefficient, each exceeds the span of those below).
bool injective_per_block(const Algebra& alg, const Collector& col, const Access& w, int32_t bx) {
  std::function<bool(const Lin&)> block_only = [&](const Lin& l) {
    for (const auto& [id, c] : l.t) {
      const Atom& at = alg.atoms[static_cast<size_t>(id)];
      if (at.kind == AtomKind::Var) {
        if (id != bx) return false;
      } else if (at.kind == AtomKind::Unknown || !block_only(at.a) ||
                 (!at.b.t.empty() && !block_only(at.b))) {
        return false;
      }
    }
    return true;
  };
  std::vector<std::pair<int64_t, int64_t>> digits;  // coefficient, span
  std::vector<int32_t> seen;
  for (const auto& [id, c] : w.flat.t) {
    Lin single;
    single.t.push_back({id, 1});
    if (block_only(single)) continue;
    const Atom& at = alg.atoms[static_cast<size_t>(id)];
    if (at.kind != AtomKind::Var || std::find(seen.begin(), seen.end(), id) != seen.end())
      return false;
    seen.push_back(id);
    // The var's range inside this access (its loop's bounds, or the thread's).
    Interval r = at.range;
    for (int32_t li : w.loops) {
      const LoopRec& lr = col.loops[static_cast<size_t>(li)];
      if (lr.var == id && lr.min.constant() && lr.extent.constant())
        r = {lr.min.c, lr.min.c + lr.extent.c - 1};
    }
    if (!r.bounded()) return false;
    digits.push_back({c, r.hi - r.lo});
  }
  return te::mixed_radix_injective(std::move(digits));
}

}  // namespace

DependenceProof prove_dependence(const OwnershipQuery& q) {
  SOUFFLE_CHECK(q.tensor && q.bx.defined() && q.tx.defined(), "prove_dependence: incomplete query");
  DependenceProof p;
  const te::TensorNode* t = q.tensor.get();
  Algebra alg;
  Collector col(alg, q);
  for (size_t w = 0; w < q.writers.size(); ++w) col.collect(q.writers[w], static_cast<int32_t>(w));
  col.collect(q.reader, -1);
  p.writers_read = col.writer_reads;
  if (col.reader_writes) {
    p.reason = "the reading stage also writes " + t->name;
    return p;
  }
  const int32_t bx = alg.var(q.bx.get()).t[0].first, tx = alg.var(q.tx.get()).t[0].first;
  Evaluator ev(alg, col, t);
  const size_t rank = t->shape.size();
  const int64_t budget = std::min<int64_t>(q.max_steps, int64_t{1} << 22);
  p.lo.assign(static_cast<size_t>(q.grid), kInf);
  p.hi.assign(static_cast<size_t>(q.grid), -1);
  auto note = [&](const Region& r, int64_t b) {
    auto i = static_cast<size_t>(b);
    p.lo[i] = std::min(p.lo[i], r.flat.lo);
    p.hi[i] = std::max(p.hi[i], r.flat.hi);
  };

  // What every producer block writes.
  std::vector<Region> written;
  for (int64_t b = 0; b < q.grid; ++b)
    for (const Access& a : col.accesses) {
      if (!a.write) continue;
      const bool ok = ev.regions(a, b, bx, budget, [&](const Region& r) {
        Region x = r;
        x.block = static_cast<int32_t>(b);
        note(x, b);
        written.push_back(x);
      });
      if (!ok) {
        p.steps = ev.steps;
        p.reason = "more than " + std::to_string(budget) + " index regions to evaluate";
        return p;
      }
    }
  std::sort(written.begin(), written.end(),
            [](const Region& a, const Region& b) { return a.flat.lo < b.flat.lo; });
  int64_t span = 0;
  for (const Region& r : written) span = std::max(span, r.flat.hi - r.flat.lo);
  std::vector<int64_t> starts;
  starts.reserve(written.size());
  for (const Region& r : written) starts.push_back(r.flat.lo);

  // What every consumer block reads, against it.
  p.offsets.assign(1, 0);
  bool owned = true;
  std::vector<int64_t> both;
  std::vector<ProducerBlock> mine;
  // The consumer block that last recorded each (writer, producer block): a pair recorded for
  // this block needs no second look (a cross-block one already set the reason).
  std::vector<int64_t> recorded(q.writers.size() * static_cast<size_t>(q.grid), -1);
  const size_t written_boxes = ev.pool.size();
  // One consumer block's read regions in the order they were evaluated, each as its box (lo, hi
  // per dimension) then its flat lo and hi. Blocks that read the same regions (the blocks of a
  // GEMM that share a row panel) read the same producer blocks: the first one's are taken,
  // where that sets no reason (a reason names the first cross-block read, of its own block).
  const size_t per_region = 2 * rank + 2;
  std::vector<int64_t> reads;
  std::unordered_map<std::vector<int64_t>, std::vector<ProducerBlock>, RegionsHash> same_reads;
  for (int64_t b = 0; b < q.grid; ++b) {
    reads.clear();
    for (const Access& a : col.accesses) {
      if (a.write) continue;
      const bool ok = ev.regions(a, b, bx, budget, [&](const Region& r) {
        note(r, b);
        reads.insert(reads.end(), ev.pool.begin() + static_cast<std::ptrdiff_t>(r.box),
                     ev.pool.begin() + static_cast<std::ptrdiff_t>(r.box + 2 * rank));
        reads.push_back(r.flat.lo);
        reads.push_back(r.flat.hi);
        ev.pool.resize(written_boxes);  // a read region's box is done with
      });
      if (!ok) {
        p.steps = ev.steps;
        p.offsets.clear();
        p.reason = "more than " + std::to_string(budget) + " index regions to evaluate";
        return p;
      }
    }
    auto known = same_reads.find(reads);
    if (known != same_reads.end() &&
        (!owned || std::all_of(known->second.begin(), known->second.end(),
                               [b](const ProducerBlock& w) { return w.block == b; }))) {
      p.producers.insert(p.producers.end(), known->second.begin(), known->second.end());
      p.offsets.push_back(static_cast<int64_t>(p.producers.size()));
      continue;
    }
    mine.clear();
    for (size_t at = 0; at < reads.size(); at += per_region) {
      const int64_t* rb = &reads[at];
      const int64_t lo = reads[at + 2 * rank], hi = reads[at + 2 * rank + 1];
      auto first = std::lower_bound(starts.begin(), starts.end(), lo - span);
      for (auto it = first; it != starts.end() && *it <= hi; ++it) {
        const Region& w = written[static_cast<size_t>(it - starts.begin())];
        if (w.flat.hi < lo) continue;
        int64_t& seen = recorded[static_cast<size_t>(w.writer) * static_cast<size_t>(q.grid) +
                                 static_cast<size_t>(w.block)];
        if (seen == b) continue;
        if (!boxes_meet(rb, &ev.pool[w.box], rank, both)) continue;
        const int64_t from = std::max(w.flat.lo, lo), to = std::min(w.flat.hi, hi);
        const int64_t e = first_at_or_after(both.data(), ev.strides(), rank, from);
        if (e < 0 || e > to) continue;
        mine.push_back({w.writer, w.block});
        seen = b;
        if (w.block != b && owned) {
          owned = false;
          p.reason = "block " + std::to_string(b) + " reads " + t->name + " element " +
                     std::to_string(e) + ", which block " + std::to_string(w.block) + " writes";
        }
      }
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    p.producers.insert(p.producers.end(), mine.begin(), mine.end());
    p.offsets.push_back(static_cast<int64_t>(p.producers.size()));
    if (known == same_reads.end()) same_reads.emplace(reads, mine);
  }
  p.steps = ev.steps;
  p.mapped = true;
  if (!owned) return p;
  p.level = Ownership::Block;
  p.reason.clear();

  // Thread level: one write, every read the same function of block, thread and loops, under at
  // least the write's guards, and the write injective over the thread and its loops.
  const Access* w = nullptr;
  int writes = 0;
  for (const Access& a : col.accesses) writes += a.write ? (w = &a, 1) : 0;
  if (writes != 1 || w->rows != 1 || w->cols != 1 || !injective_per_block(alg, col, *w, bx))
    return p;
  Canon canon(alg, col, bx, tx);
  std::vector<std::string> wkeys;
  for (const Lin& d : w->dims) wkeys.push_back(canon.key(d, *w));
  auto guard_key = [&](int32_t g, const Access& a) {
    const Constraint& c = col.constraints[static_cast<size_t>(g)];
    Lin l;
    l.t = c.terms;
    std::string k = canon.key(l, a);
    return k.empty()
               ? k
               : k + "in[" + std::to_string(c.allow.lo) + "," + std::to_string(c.allow.hi) + "]";
  };
  std::vector<std::string> wguards;
  for (int32_t g : w->guards) {
    wguards.push_back(guard_key(g, *w));
    if (wguards.back().empty()) return p;
  }
  for (const std::string& k : wkeys)
    if (k.empty()) return p;
  for (const Access& a : col.accesses) {
    if (a.write) continue;
    if (a.rows != 1 || a.cols != 1) return p;
    for (size_t d = 0; d < a.dims.size(); ++d)
      if (canon.key(a.dims[d], a) != wkeys[d]) return p;
    std::vector<std::string> rguards;
    for (int32_t g : a.guards) rguards.push_back(guard_key(g, a));
    for (const std::string& k : wguards)
      if (std::find(rguards.begin(), rguards.end(), k) == rguards.end()) return p;
  }
  p.level = Ownership::Thread;
  return p;
}

DependenceProof enumerate_dependence(const OwnershipQuery& q) {
  OwnershipQuery e = q;
  e.collect_producers = true;
  DependenceProof p;
  if (ownership_step_bound(e) >= e.max_steps) {
    p.reason = "too many accesses to enumerate";
    return p;
  }
  OwnershipProof o = prove_ownership(e);
  p.steps = o.steps;
  p.writers_read = o.writers_read;
  p.level = o.level;
  p.reason = o.reason;
  if (o.producers.empty()) return p;  // the walk failed
  p.mapped = true;
  p.offsets.assign(1, 0);
  for (std::vector<ProducerBlock>& v : o.producers) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    p.producers.insert(p.producers.end(), v.begin(), v.end());
    p.offsets.push_back(static_cast<int64_t>(p.producers.size()));
  }
  p.lo = o.lo;
  p.hi = o.hi;
  return p;
}

}  // namespace souffle::schedule
