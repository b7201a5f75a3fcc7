// Index maps are checked for injectivity component by component: indices that share no
// variable act on disjoint parts of the iteration box, so the whole map is injective exactly when
// each component is. A component is proven injective symbolically when it is affine and its
// coefficients dominate one another (mixed radix); otherwise it is enumerated when small.
#include "core/analysis/access.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/te/bounds.h"
#include "core/te/mutator.h"
#include "core/te/printer.h"

namespace souffle::analysis {
namespace {

using te::BinaryOp;
using te::Expr;
using te::ExprKind;

/// Components larger than this are not enumerated (the proof then falls back to "not proven").
constexpr int64_t kMaxEnumeratedPoints = int64_t{1} << 18;

void collect_vars(const Expr& e, std::unordered_set<const te::ExprNode*>& out) {
  te::for_each_node(e, [&](const Expr& n) {
    if (n.kind() == ExprKind::Var) out.insert(n.get());
  });
}

bool has_read(const Expr& e) {
  bool found = false;
  te::for_each_node(e, [&](const Expr& n) { found = found || n.kind() == ExprKind::Read; });
  return found;
}

std::optional<int64_t> const_value(const Expr& e) {
  if (const auto* i = e.as<te::IntImm>()) return i->value;
  if (const auto* c = e.as<te::Cast>()) {
    if (is_int(c->dtype) || c->dtype == DType::Bool) return const_value(c->a);
  }
  return std::nullopt;
}

bool is_quasi_affine(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::Var:
      return true;
    case ExprKind::Cast: {
      const auto* c = e.as<te::Cast>();
      return is_int(c->dtype) && is_int(c->a.dtype()) && is_quasi_affine(c->a);
    }
    case ExprKind::Unary: {
      const auto* u = e.as<te::Unary>();
      return u->op == te::UnaryOp::Neg && is_quasi_affine(u->a);
    }
    case ExprKind::Binary: {
      const auto* b = e.as<te::Binary>();
      switch (b->op) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
          return is_quasi_affine(b->a) && is_quasi_affine(b->b);
        case BinaryOp::Mul:
          return is_quasi_affine(b->a) && is_quasi_affine(b->b) &&
                 (const_value(b->a) || const_value(b->b));
        case BinaryOp::FloorDiv:
        case BinaryOp::FloorMod:
        case BinaryOp::Div:
        case BinaryOp::Mod: {
          auto d = const_value(b->b);
          return d && *d > 0 && is_quasi_affine(b->a);
        }
        default:
          return false;
      }
    }
    default:
      return false;
  }
}

/// sum(coef[v] * v) + constant, when e is affine.
struct Affine {
  std::map<const te::ExprNode*, int64_t> coef;
  int64_t constant = 0;
};

std::optional<Affine> to_affine(const Expr& e) {
  if (auto c = const_value(e)) return Affine{{}, *c};
  switch (e.kind()) {
    case ExprKind::Var:
      return Affine{{{e.get(), 1}}, 0};
    case ExprKind::Cast: {
      const auto* c = e.as<te::Cast>();
      if (!is_int(c->dtype)) return std::nullopt;
      return to_affine(c->a);
    }
    case ExprKind::Unary: {
      const auto* u = e.as<te::Unary>();
      if (u->op != te::UnaryOp::Neg) return std::nullopt;
      auto a = to_affine(u->a);
      if (!a) return std::nullopt;
      for (auto& [v, c] : a->coef) c = -c;
      a->constant = -a->constant;
      return a;
    }
    case ExprKind::Binary: {
      const auto* b = e.as<te::Binary>();
      if (b->op != BinaryOp::Add && b->op != BinaryOp::Sub && b->op != BinaryOp::Mul)
        return std::nullopt;
      auto x = to_affine(b->a), y = to_affine(b->b);
      if (!x || !y) return std::nullopt;
      if (b->op == BinaryOp::Mul) {
        if (x->coef.empty()) std::swap(x, y);
        if (!y->coef.empty()) return std::nullopt;
        for (auto& [v, c] : x->coef) c *= y->constant;
        x->constant *= y->constant;
        return x;
      }
      int64_t sign = b->op == BinaryOp::Sub ? -1 : 1;
      for (auto& [v, c] : y->coef) x->coef[v] += sign * c;
      x->constant += sign * y->constant;
      return x;
    }
    default:
      return std::nullopt;
  }
}

/// Evaluates a quasi-affine index expression at one point.
int64_t eval_index(const Expr& e, const std::unordered_map<const te::ExprNode*, int64_t>& vals) {
  switch (e.kind()) {
    case ExprKind::IntImm:
      return e.as<te::IntImm>()->value;
    case ExprKind::Var:
      return vals.at(e.get());
    case ExprKind::Cast:
      return eval_index(e.as<te::Cast>()->a, vals);
    case ExprKind::Unary:
      return -eval_index(e.as<te::Unary>()->a, vals);
    case ExprKind::Binary: {
      const auto* b = e.as<te::Binary>();
      const std::optional<int64_t> v =
          te::fold_int(b->op, eval_index(b->a, vals), eval_index(b->b, vals));
      if (v) return *v;
      break;
    }
    default:
      break;
  }
  SOUFFLE_CHECK(false, "eval_index: not a quasi-affine index: " + te::print(e));
  return 0;
}

struct AxisVar {
  const te::ExprNode* node;
  int64_t extent;
};

/// Injectivity of the indices `idx` (all quasi-affine) of a tensor of shape `shape` as a map of
/// the vars `vars`; `weights` are the tensor's row-major strides.
bool component_injective(const std::vector<Expr>& idx, const std::vector<int64_t>& weights,
                         const std::vector<AxisVar>& vars) {
  // Affine: linear "address" sum_d w_d * idx_d; its injectivity implies the tuple's.
  bool affine = true;
  std::map<const te::ExprNode*, __int128> addr;
  for (size_t d = 0; d < idx.size() && affine; ++d) {
    auto a = to_affine(idx[d]);
    if (!a) {
      affine = false;
      break;
    }
    for (const auto& [v, c] : a->coef) addr[v] += static_cast<__int128>(c) * weights[d];
  }
  if (affine) {
    std::vector<std::pair<int64_t, int64_t>> ce;
    bool fits = true;
    for (const AxisVar& v : vars) {
      if (v.extent <= 1) continue;
      __int128 c = addr.count(v.node) ? addr[v.node] : 0;
      if (c > INT64_MAX || c < -INT64_MAX) fits = false;
      ce.emplace_back(static_cast<int64_t>(c), v.extent - 1);  // (coefficient, span)
    }
    if (fits && te::mixed_radix_injective(std::move(ce))) return true;
  }
  int64_t points = 1;
  for (const AxisVar& v : vars) {
    if (v.extent > kMaxEnumeratedPoints / std::max<int64_t>(points, 1)) return false;
    points *= v.extent;
  }
  std::unordered_map<const te::ExprNode*, int64_t> vals;
  for (const AxisVar& v : vars) vals[v.node] = 0;
  std::vector<std::vector<int64_t>> seen;
  seen.reserve(static_cast<size_t>(points));
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (size_t k = vars.size(); k-- > 0;) {
      vals[vars[k].node] = rest % vars[k].extent;
      rest /= vars[k].extent;
    }
    std::vector<int64_t> t;
    t.reserve(idx.size());
    for (const Expr& e : idx) t.push_back(eval_index(e, vals));
    seen.push_back(std::move(t));
  }
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

bool map_injective(const te::Read& read, const std::vector<AxisVar>& axes,
                   const std::vector<std::unordered_set<const te::ExprNode*>>& idx_vars) {
  size_t n = read.indices.size();
  const Shape& shape = read.tensor->shape;
  std::vector<int64_t> strides(n, 1);
  for (size_t d = n; d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(shape[d], 1);
  // Union indices that share a var (a var of extent 1 is a constant and joins nothing).
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<int> owner(axes.size(), -1);
  for (size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].extent <= 1) continue;
    for (size_t d = 0; d < n; ++d) {
      if (!idx_vars[d].count(axes[a].node)) continue;
      if (owner[a] < 0)
        owner[a] = static_cast<int>(d);
      else
        parent[find(d)] = find(static_cast<size_t>(owner[a]));
    }
    if (owner[a] < 0) return false;  // the read ignores this axis: a broadcast
  }
  std::map<size_t, std::pair<std::vector<size_t>, std::vector<AxisVar>>> comps;
  for (size_t d = 0; d < n; ++d) comps[find(d)].first.push_back(d);
  for (size_t a = 0; a < axes.size(); ++a)
    if (owner[a] >= 0) comps[find(static_cast<size_t>(owner[a]))].second.push_back(axes[a]);
  // Fix extent-1 vars at 0 by treating them as part of no component: evaluation needs a value.
  std::vector<AxisVar> unit;
  for (const AxisVar& v : axes)
    if (v.extent <= 1) unit.push_back({v.node, 1});
  for (auto& [root, comp] : comps) {
    if (comp.second.empty()) continue;  // constant indices
    std::vector<Expr> idx;
    std::vector<int64_t> w;
    for (size_t d : comp.first) {
      idx.push_back(read.indices[d]);
      w.push_back(strides[d]);
    }
    std::vector<AxisVar> vars = comp.second;
    vars.insert(vars.end(), unit.begin(), unit.end());
    if (!component_injective(idx, w, vars)) return false;
  }
  return true;
}

}  // namespace

ReadInfo analyze_read(const te::Read& read, const te::ComputeOp& op) {
  ReadInfo info;
  info.indices.push_back('[');
  for (size_t d = 0; d < read.indices.size(); ++d) {
    if (d) info.indices.append(", ");
    info.indices.append(te::print(read.indices[d]));
  }
  info.indices.push_back(']');
  std::vector<std::unordered_set<const te::ExprNode*>> idx_vars(read.indices.size());
  std::unordered_set<const te::ExprNode*> used;
  info.quasi_affine = true;
  for (size_t d = 0; d < read.indices.size(); ++d) {
    collect_vars(read.indices[d], idx_vars[d]);
    used.insert(idx_vars[d].begin(), idx_vars[d].end());
    if (has_read(read.indices[d])) info.data_dependent = true;
    if (!is_quasi_affine(read.indices[d])) info.quasi_affine = false;
  }
  for (const te::IterVar& r : op.reduce_axes)
    if (r.extent > 1 && used.count(r.var.get())) info.uses_reduce_axes = true;
  std::vector<AxisVar> axes;
  for (size_t a = 0; a < op.axes.size(); ++a) {
    axes.push_back({op.axes[a].var.get(), op.axes[a].extent});
    if (op.axes[a].extent > 1 && !used.count(op.axes[a].var.get()))
      info.broadcast_axes.push_back(static_cast<int>(a));
  }
  bool empty = false;
  for (const AxisVar& v : axes) empty = empty || v.extent <= 0;
  // Reduce vars of extent 1 are constants; give them a slot so evaluation can fix them at 0.
  for (const te::IterVar& r : op.reduce_axes) {
    if (r.extent <= 1) axes.push_back({r.var.get(), 1});
    empty = empty || r.extent <= 0;
  }
  if (info.uses_reduce_axes || info.data_dependent || !info.quasi_affine) {
    info.injective = false;
  } else {
    info.injective = empty || map_injective(read, axes, idx_vars);
  }
  return info;
}

int64_t count_flops(const Expr& body) {
  // Whether a node's value depends on tensor data (index math does not).
  std::unordered_map<const te::ExprNode*, bool> data;
  std::function<bool(const Expr&)> on_data = [&](const Expr& e) -> bool {
    auto it = data.find(e.get());
    if (it != data.end()) return it->second;
    bool d = false;
    switch (e.kind()) {
      case ExprKind::Read:
        d = true;
        break;
      case ExprKind::Unary:
        d = on_data(e.as<te::Unary>()->a);
        break;
      case ExprKind::Binary: {
        // Both sides are visited (each memoizes its answer), so no short-circuit.
        const bool a = on_data(e.as<te::Binary>()->a);
        const bool b = on_data(e.as<te::Binary>()->b);
        d = a || b;
        break;
      }
      case ExprKind::Call:
        for (const Expr& a : e.as<te::Call>()->args) {
          const bool arg = on_data(a);
          d = d || arg;
        }
        break;
      case ExprKind::Select: {
        const auto* s = e.as<te::Select>();
        const bool c = on_data(s->cond), t = on_data(s->t), f = on_data(s->f);
        d = c || t || f;
        break;
      }
      case ExprKind::Cast:
        d = on_data(e.as<te::Cast>()->a);
        break;
      default:
        break;
    }
    data[e.get()] = d;
    return d;
  };
  // Each operation on data once (shared nodes once).
  auto counts = [&](const Expr& e) -> bool {
    switch (e.kind()) {
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Call:
        return on_data(e);
      case ExprKind::Select:
        return on_data(e.as<te::Select>()->cond);
      default:
        return false;
    }
  };
  auto all_of = [&](const Expr& e) {
    int64_t n = 0;
    te::for_each_node(e, [&](const Expr& x) { n += counts(x); });
    return n;
  };
  // A select on an index predicate (a horizontally fused TE's operands, a concatenation) runs
  // one of its branches at each point: only the costlier counts. A select on data computes
  // both (predicated), as before.
  std::unordered_set<const te::ExprNode*> seen;
  int64_t flops = 0;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (!e.defined() || !seen.insert(e.get()).second) return;
    flops += counts(e);
    switch (e.kind()) {
      case ExprKind::Unary:
        walk(e.as<te::Unary>()->a);
        return;
      case ExprKind::Binary:
        walk(e.as<te::Binary>()->a);
        walk(e.as<te::Binary>()->b);
        return;
      case ExprKind::Call:
        for (const Expr& a : e.as<te::Call>()->args) walk(a);
        return;
      case ExprKind::Select: {
        const auto* s = e.as<te::Select>();
        walk(s->cond);
        if (on_data(s->cond)) {
          walk(s->t);
          walk(s->f);
        } else {
          walk(all_of(s->t) >= all_of(s->f) ? s->t : s->f);
        }
        return;
      }
      case ExprKind::Cast:
        walk(e.as<te::Cast>()->a);
        return;
      case ExprKind::Read:
        for (const Expr& a : e.as<te::Read>()->indices) walk(a);
        return;
      default:
        return;
    }
  };
  walk(body);
  return flops;
}

}  // namespace souffle::analysis
