/// \file Unrolling pass: replaces small constant loops by copies of their body.
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Unrolls loops marked Unrolled with constant bounds, and serial loops of constant extent at
/// most max_extent whose body holds no loop. Each copy has the loop var replaced by its value
/// and is simplified.
Stmt unroll_loops(const Stmt& s, int64_t max_extent = 4);

}  // namespace souffle::loop
