/// \file The one bounds engine: integer intervals with saturating arithmetic, the constant folding
/// of integer operators, comparisons decided from the interval of a difference, and `bounds_of`,
/// the interval of a TE expression given its variables' intervals (a sign proof is its low bound).
/// The simplifiers (loop::simplify, plan's index simplification), the dependence proofs and the C
/// emitter reason about ranges through it; their linear forms build on its intervals.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/te/expr.h"

namespace souffle::te {

/// Bounds of this magnitude or more are unknown: sums and products saturate at +-2^60, which no
/// index of a real tensor reaches.
constexpr int64_t kBoundInf = int64_t{1} << 60;

/// `v` clamped to [-kBoundInf, kBoundInf].
constexpr int64_t saturate(__int128 v) {
  return v > kBoundInf ? kBoundInf : v < -kBoundInf ? -kBoundInf : static_cast<int64_t>(v);
}

/// A closed integer interval [lo, hi]; empty when lo > hi (as a default-constructed one is). A
/// bound at +-kBoundInf is unknown on that side.
struct Interval {
  int64_t lo = 0, hi = -1;

  static constexpr Interval point(int64_t v) { return {v, v}; }
  static constexpr Interval everything() { return {-kBoundInf, kBoundInf}; }
  static constexpr Interval at_least(int64_t v) { return {v, kBoundInf}; }

  bool empty() const { return lo > hi; }
  bool is_point() const { return lo == hi; }
  /// Neither side unknown (and not empty).
  bool bounded() const { return !empty() && lo > -kBoundInf && hi < kBoundInf; }
  /// Every value is >= 0 (a sign proof); false when empty.
  bool nonnegative() const { return !empty() && lo >= 0; }
  bool operator==(const Interval& o) const { return lo == o.lo && hi == o.hi; }

  Interval plus(const Interval& o) const;   ///< {a + b}
  Interval times(int64_t k) const;          ///< {a * k}
  Interval times(const Interval& o) const;  ///< {a * b}
  Interval negated() const { return times(-1); }
  Interval floor_div(int64_t d) const;         ///< {floor(a / d)}, d > 0
  Interval floor_mod(int64_t d) const;         ///< {a mod d}, d > 0, the result in [0, d)
  Interval min_with(const Interval& o) const;  ///< {min(a, b)}
  Interval max_with(const Interval& o) const;  ///< {max(a, b)}
  Interval meet(const Interval& o) const;      ///< intersection
  Interval hull(const Interval& o) const;      ///< the smallest interval holding both
};

// The four operations the dependence proofs run millions of times, inline.

inline Interval Interval::plus(const Interval& o) const {
  if (empty() || o.empty()) return {};
  // An unknown side stays unknown: -2^60 + 5 is no bound.
  return {lo <= -kBoundInf || o.lo <= -kBoundInf ? -kBoundInf
                                                 : saturate(static_cast<__int128>(lo) + o.lo),
          hi >= kBoundInf || o.hi >= kBoundInf ? kBoundInf
                                               : saturate(static_cast<__int128>(hi) + o.hi)};
}

inline Interval Interval::times(int64_t k) const {
  if (empty()) return {};
  const __int128 x = static_cast<__int128>(lo) * k, y = static_cast<__int128>(hi) * k;
  return {saturate(x < y ? x : y), saturate(x < y ? y : x)};
}

inline Interval Interval::times(const Interval& o) const {
  if (empty() || o.empty()) return {};
  const __int128 a = static_cast<__int128>(lo) * o.lo, b = static_cast<__int128>(lo) * o.hi,
                 c = static_cast<__int128>(hi) * o.lo, d = static_cast<__int128>(hi) * o.hi;
  const __int128 mn = std::min(std::min(a, b), std::min(c, d));
  const __int128 mx = std::max(std::max(a, b), std::max(c, d));
  return {saturate(mn), saturate(mx)};
}

inline Interval Interval::meet(const Interval& o) const {
  return {std::max(lo, o.lo), std::min(hi, o.hi)};
}

/// `a op b` on two integer (or Bool) constants with C semantics for Div and Mod and floor
/// semantics for FloorDiv and FloorMod; nullopt for a division by zero and the bitwise operators.
std::optional<int64_t> fold_int(BinaryOp op, int64_t a, int64_t b);

/// The differences `a - b` for which the comparison `a op b` holds, for LT, LE, GT, GE and EQ;
/// nullopt for NE (not an interval) and the other operators.
std::optional<Interval> holds_for(BinaryOp op);

/// Whether `a op b` holds for every difference `a - b` in `d`: 1 always, 0 never, -1 undecided
/// (or not a comparison).
int decide_compare(BinaryOp op, const Interval& d);

/// The values of a loop var running from a min in `min` for a count in `extent`: empty when the
/// loop may not run at all (extent at most 0 or either interval empty).
Interval loop_var_range(const Interval& min, const Interval& extent);

/// Whether sum(c_i * x_i), each x_i over span_i + 1 consecutive values, differs at every point:
/// sorted by |c_i|, each coefficient exceeds what the smaller ones span together (a mixed radix;
/// sound, not complete). Pairs are (c_i, span_i), span_i >= 0; a zero coefficient fails.
bool mixed_radix_injective(std::vector<std::pair<int64_t, int64_t>> coef_span);

/// Intervals of variables, by node.
using Scope = std::unordered_map<const ExprNode*, Interval>;

/// The values an integer expression can take when each variable lies in its interval in `scope`
/// (a variable not there is unknown). Floating-point expressions, reads and calls are unknown;
/// comparisons and logic are in [0, 1]; a division by a divisor that may be zero keeps only the
/// sign (the emitted helpers return 0 there, and C's `/` is undefined).
Interval bounds_of(const Expr& e, const Scope& scope);

/// bounds_of(e, scope).nonnegative().
bool provably_nonnegative(const Expr& e, const Scope& scope);

}  // namespace souffle::te
