#include "core/te/equal.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace souffle::te {
namespace {

struct PairHash {
  size_t operator()(const std::pair<const ExprNode*, const ExprNode*>& p) const {
    return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
  }
};

/// Structural comparison; `vars` maps a's vars to b's (others must be identical). Pairs already
/// proven equal are remembered so shared sub-DAGs are compared once.
class Comparer {
 public:
  explicit Comparer(std::unordered_map<const ExprNode*, const ExprNode*> vars)
      : m_vars(std::move(vars)) {}

  bool eq(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    if (a.same_as(b) && m_vars.empty()) return true;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    auto key = std::make_pair(a.get(), b.get());
    if (m_proven.count(key)) return true;
    bool r = eq_node(a, b);
    if (r) m_proven.insert(key);
    return r;
  }

 private:
  bool eq_list(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!eq(a[i], b[i])) return false;
    return true;
  }

  bool eq_node(const Expr& a, const Expr& b) {
    switch (a.kind()) {
      case ExprKind::IntImm:
        return a.as<IntImm>()->value == b.as<IntImm>()->value;
      case ExprKind::FloatImm: {
        double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
        return x == y ? std::signbit(x) == std::signbit(y) : (x != x && y != y);
      }
      case ExprKind::Var: {
        auto it = m_vars.find(a.get());
        return it != m_vars.end() ? it->second == b.get() : a.same_as(b);
      }
      case ExprKind::Unary:
        return a.as<Unary>()->op == b.as<Unary>()->op && eq(a.as<Unary>()->a, b.as<Unary>()->a);
      case ExprKind::Binary: {
        const auto *x = a.as<Binary>(), *y = b.as<Binary>();
        return x->op == y->op && eq(x->a, y->a) && eq(x->b, y->b);
      }
      case ExprKind::Call: {
        const auto *x = a.as<Call>(), *y = b.as<Call>();
        return x->fn == y->fn && eq_list(x->args, y->args);
      }
      case ExprKind::Select: {
        const auto *x = a.as<Select>(), *y = b.as<Select>();
        return eq(x->cond, y->cond) && eq(x->t, y->t) && eq(x->f, y->f);
      }
      case ExprKind::Cast:
        return eq(a.as<Cast>()->a, b.as<Cast>()->a);
      case ExprKind::Read: {
        const auto *x = a.as<Read>(), *y = b.as<Read>();
        return x->tensor == y->tensor && eq_list(x->indices, y->indices);
      }
    }
    return false;
  }

  std::unordered_map<const ExprNode*, const ExprNode*> m_vars;
  std::unordered_set<std::pair<const ExprNode*, const ExprNode*>, PairHash> m_proven;
};

inline uint64_t mix(uint64_t h, uint64_t v) {
  // 64-bit FNV-style combine followed by a murmur finalizer step.
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h;
}

class Hasher {
 public:
  explicit Hasher(std::unordered_map<const ExprNode*, uint64_t> var_pos)
      : m_var_pos(std::move(var_pos)) {}

  uint64_t hash(const Expr& e) {
    if (!e.defined()) return 0x5bd1e995u;
    auto it = m_memo.find(e.get());
    if (it != m_memo.end()) return it->second;
    uint64_t h = mix(static_cast<uint64_t>(e.kind()) + 1, static_cast<uint64_t>(e.dtype()));
    switch (e.kind()) {
      case ExprKind::IntImm:
        h = mix(h, static_cast<uint64_t>(e.as<IntImm>()->value));
        break;
      case ExprKind::FloatImm: {
        double v = e.as<FloatImm>()->value;
        uint64_t bits;
        if (v != v) v = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(&bits, &v, sizeof bits);
        h = mix(h, bits);
        break;
      }
      case ExprKind::Var: {
        auto p = m_var_pos.find(e.get());
        h = mix(h, p != m_var_pos.end() ? p->second
                                        : reinterpret_cast<uintptr_t>(e.get()) | (1ull << 63));
        break;
      }
      case ExprKind::Unary:
        h = mix(mix(h, static_cast<uint64_t>(e.as<Unary>()->op)), hash(e.as<Unary>()->a));
        break;
      case ExprKind::Binary:
        h = mix(h, static_cast<uint64_t>(e.as<Binary>()->op));
        h = mix(h, hash(e.as<Binary>()->a));
        h = mix(h, hash(e.as<Binary>()->b));
        break;
      case ExprKind::Call:
        h = mix(h, static_cast<uint64_t>(e.as<Call>()->fn));
        for (const Expr& a : e.as<Call>()->args) h = mix(h, hash(a));
        break;
      case ExprKind::Select:
        h = mix(h, hash(e.as<Select>()->cond));
        h = mix(h, hash(e.as<Select>()->t));
        h = mix(h, hash(e.as<Select>()->f));
        break;
      case ExprKind::Cast:
        h = mix(h, hash(e.as<Cast>()->a));
        break;
      case ExprKind::Read:
        h = mix(h, reinterpret_cast<uintptr_t>(e.as<Read>()->tensor.get()));
        for (const Expr& a : e.as<Read>()->indices) h = mix(h, hash(a));
        break;
    }
    m_memo.emplace(e.get(), h);
    return h;
  }

 private:
  std::unordered_map<const ExprNode*, uint64_t> m_var_pos;
  std::unordered_map<const ExprNode*, uint64_t> m_memo;
};

}  // namespace

bool equal(const Expr& a, const Expr& b) {
  return Comparer({}).eq(a, b);
}

bool equal(const ComputeOp& a, const ComputeOp& b) {
  if (a.reduce != b.reduce || a.axes.size() != b.axes.size() ||
      a.reduce_axes.size() != b.reduce_axes.size())
    return false;
  if ((a.output == nullptr) != (b.output == nullptr)) return false;
  if (a.output && (a.output->dtype != b.output->dtype || a.output->shape != b.output->shape))
    return false;
  std::unordered_map<const ExprNode*, const ExprNode*> vars;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    if (a.axes[i].extent != b.axes[i].extent) return false;
    vars[a.axes[i].var.get()] = b.axes[i].var.get();
  }
  for (size_t i = 0; i < a.reduce_axes.size(); ++i) {
    if (a.reduce_axes[i].extent != b.reduce_axes[i].extent) return false;
    vars[a.reduce_axes[i].var.get()] = b.reduce_axes[i].var.get();
  }
  Comparer c(std::move(vars));
  return c.eq(a.init, b.init) && c.eq(a.body, b.body);
}

uint64_t structural_hash(const ComputeOp& op) {
  std::unordered_map<const ExprNode*, uint64_t> pos;
  uint64_t h = mix(0x243f6a8885a308d3ull, static_cast<uint64_t>(op.reduce));
  if (op.output) h = mix(h, static_cast<uint64_t>(op.output->dtype));
  uint64_t n = 0;
  for (const IterVar& iv : op.axes) {
    pos[iv.var.get()] = n++;
    h = mix(h, static_cast<uint64_t>(iv.extent));
  }
  h = mix(h, 0xabcdef);
  for (const IterVar& iv : op.reduce_axes) {
    pos[iv.var.get()] = n++;
    h = mix(h, static_cast<uint64_t>(iv.extent));
  }
  Hasher hs(std::move(pos));
  h = mix(h, hs.hash(op.init));
  h = mix(h, hs.hash(op.body));
  return h;
}

}  // namespace souffle::te
