/// \file Simplification pass: constant folding and algebraic identities on integer index math,
/// dead branches and trivial loops and lets.
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Folds integer/bool constants; x*1, x+0, x-0, x*0, floordiv/div by 1, floormod/mod by 1;
/// selects and ifs on constants; loops of extent 0 (dropped) and 1 (var replaced by min); lets
/// of constants or vars (substituted). Floating-point math is left exactly as written.
Expr simplify(const Expr& e);
Stmt simplify(const Stmt& s);

}  // namespace souffle::loop
