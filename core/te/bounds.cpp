#include "core/te/bounds.h"

#include <algorithm>

#include "core/support/int_math.h"

namespace souffle::te {

namespace {

bool not_float(DType t) {  // an integer or a bool
  return !is_float(t);
}

/// Division toward zero of a bound, an unknown bound staying unknown.
int64_t trunc_bound(int64_t v, int64_t d) {
  return v <= -kBoundInf ? -kBoundInf : v >= kBoundInf ? kBoundInf : v / d;
}

}  // namespace

Interval Interval::floor_div(int64_t d) const {
  if (empty()) return {};
  return {lo <= -kBoundInf ? -kBoundInf : souffle::floor_div(lo, d),
          hi >= kBoundInf ? kBoundInf : souffle::floor_div(hi, d)};
}

Interval Interval::floor_mod(int64_t d) const {
  if (empty()) return {};
  // Within one period the remainder follows the value; across a period boundary it can be any.
  if (lo > -kBoundInf && hi < kBoundInf && souffle::floor_div(lo, d) == souffle::floor_div(hi, d))
    return {souffle::floor_mod(lo, d), souffle::floor_mod(hi, d)};
  return {0, d - 1};
}

Interval Interval::min_with(const Interval& o) const {
  if (empty() || o.empty()) return {};
  return {std::min(lo, o.lo), std::min(hi, o.hi)};
}

Interval Interval::max_with(const Interval& o) const {
  if (empty() || o.empty()) return {};
  return {std::max(lo, o.lo), std::max(hi, o.hi)};
}

Interval Interval::hull(const Interval& o) const {
  if (empty()) return o;
  if (o.empty()) return *this;
  return {std::min(lo, o.lo), std::max(hi, o.hi)};
}

std::optional<int64_t> fold_int(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      if (b == 0) return std::nullopt;
      return a / b;
    case BinaryOp::Mod:
      if (b == 0) return std::nullopt;
      return a % b;
    case BinaryOp::FloorDiv:
      if (b == 0) return std::nullopt;
      return souffle::floor_div(a, b);
    case BinaryOp::FloorMod:
      if (b == 0) return std::nullopt;
      return souffle::floor_mod(a, b);
    case BinaryOp::Min:
      return std::min(a, b);
    case BinaryOp::Max:
      return std::max(a, b);
    case BinaryOp::EQ:
      return a == b;
    case BinaryOp::NE:
      return a != b;
    case BinaryOp::LT:
      return a < b;
    case BinaryOp::LE:
      return a <= b;
    case BinaryOp::GT:
      return a > b;
    case BinaryOp::GE:
      return a >= b;
    case BinaryOp::And:
      return a && b;
    case BinaryOp::Or:
      return a || b;
    default:
      return std::nullopt;
  }
}

std::optional<Interval> holds_for(BinaryOp op) {
  switch (op) {
    case BinaryOp::LT:
      return Interval{-kBoundInf, -1};
    case BinaryOp::LE:
      return Interval{-kBoundInf, 0};
    case BinaryOp::GT:
      return Interval{1, kBoundInf};
    case BinaryOp::GE:
      return Interval{0, kBoundInf};
    case BinaryOp::EQ:
      return Interval::point(0);
    default:
      return std::nullopt;
  }
}

int decide_compare(BinaryOp op, const Interval& d) {
  if (d.empty()) return -1;
  if (op == BinaryOp::NE) {
    int eq = decide_compare(BinaryOp::EQ, d);
    return eq < 0 ? -1 : 1 - eq;
  }
  const std::optional<Interval> allow = holds_for(op);
  if (!allow) return -1;
  if (d.meet(*allow) == d) return 1;
  if (d.meet(*allow).empty()) return 0;
  return -1;
}

Interval loop_var_range(const Interval& min, const Interval& extent) {
  if (min.empty() || extent.empty() || extent.hi <= 0) return {};
  return {min.lo, min.hi >= kBoundInf ? kBoundInf
                                      : saturate(static_cast<__int128>(min.hi) + extent.hi - 1)};
}

bool mixed_radix_injective(std::vector<std::pair<int64_t, int64_t>> coef_span) {
  for (auto& [c, span] : coef_span) c = c < 0 ? -c : c;
  std::sort(coef_span.begin(), coef_span.end());
  __int128 below = 0;
  for (const auto& [c, span] : coef_span) {
    if (c <= below) return false;
    below += static_cast<__int128>(c) * span;
  }
  return true;
}

Interval bounds_of(const Expr& e, const Scope& scope) {
  const Interval all = Interval::everything();
  if (!e.defined() || !not_float(e.dtype())) return all;
  switch (e.kind()) {
    case ExprKind::IntImm:
      return Interval::point(e.as<IntImm>()->value);
    case ExprKind::Var: {
      auto it = scope.find(e.get());
      return it == scope.end() ? all : it->second;
    }
    case ExprKind::Unary: {
      const Unary* u = e.as<Unary>();
      if (u->op == UnaryOp::Not) return {0, 1};
      return bounds_of(u->a, scope).negated();
    }
    case ExprKind::Cast: {
      const Cast* c = e.as<Cast>();
      if (e.dtype() == DType::Bool) return {0, 1};
      if (e.dtype() != DType::Int64 || !not_float(c->a.dtype())) return all;
      return bounds_of(c->a, scope);
    }
    case ExprKind::Select: {
      const Select* s = e.as<Select>();
      return bounds_of(s->t, scope).hull(bounds_of(s->f, scope));
    }
    case ExprKind::Binary: {
      const Binary* b = e.as<Binary>();
      if (is_comparison(b->op) || is_logical(b->op)) return {0, 1};
      if (!not_float(b->a.dtype()) || !not_float(b->b.dtype())) return all;
      const Interval x = bounds_of(b->a, scope), y = bounds_of(b->b, scope);
      if (x.empty() || y.empty()) return {};
      switch (b->op) {
        case BinaryOp::Add:
          return x.plus(y);
        case BinaryOp::Sub:
          return x.plus(y.negated());
        case BinaryOp::Mul:
          return x.times(y);
        case BinaryOp::Min:
          return x.min_with(y);
        case BinaryOp::Max:
          return x.max_with(y);
        case BinaryOp::FloorDiv:
        case BinaryOp::Div: {
          const bool floor = b->op == BinaryOp::FloorDiv;
          if (y.is_point() && y.lo > 0) {
            if (floor) return x.floor_div(y.lo);
            return {trunc_bound(x.lo, y.lo), trunc_bound(x.hi, y.lo)};  // monotone in x
          }
          // A non-negative quotient of a non-negative dividend is at most the dividend (a zero
          // divisor included: the helpers give 0, and C leaves it undefined).
          if (x.lo >= 0 && y.lo >= 0) return {0, x.hi};
          return all;
        }
        case BinaryOp::FloorMod:
        case BinaryOp::Mod: {
          const bool floor = b->op == BinaryOp::FloorMod;
          if (y.is_point() && y.lo > 0 && (floor || x.lo >= 0)) return x.floor_mod(y.lo);
          if (x.lo >= 0 && y.lo >= 0) {
            Interval r{0, x.hi};
            if (y.lo >= 1 && y.hi < kBoundInf) r = r.meet({0, y.hi - 1});
            return r;
          }
          if (floor && y.lo >= 1) return {0, y.hi >= kBoundInf ? kBoundInf : y.hi - 1};
          return all;
        }
        default:
          return all;
      }
    }
    case ExprKind::FloatImm:
    case ExprKind::Call:
    case ExprKind::Read:
      return all;
  }
  return all;
}

bool provably_nonnegative(const Expr& e, const Scope& scope) {
  return bounds_of(e, scope).nonnegative();
}

}  // namespace souffle::te
