/// \file Integer division rounding toward negative infinity and up: the one definition the
/// simplifier, the planner, the ownership proofs, the templates and the tile model share.
#pragma once

#include <cstdint>

namespace souffle {

/// a / b rounded toward negative infinity (Python's //); b != 0.
constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// a - b * floor_div(a, b): the remainder with the sign of b.
constexpr int64_t floor_mod(int64_t a, int64_t b) {
  return a - b * floor_div(a, b);
}

/// a / b rounded up, for a >= 0 and b > 0 (counts of tiles, blocks and waves).
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace souffle
