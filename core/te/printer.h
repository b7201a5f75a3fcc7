/// \file Printing TE expressions, ops and programs as stable, readable text (tests compare it).
#pragma once

#include <string>

#include "core/te/expr.h"

namespace souffle::te {

/// "(A[i0, k0] * B[k0, i1])", "select((i0 < 3), x[i0], 0f)", "cast<f32>(i0)".
std::string print(const Expr& e);
/// "T[i0 < 4, i1 < 8] = sum(k0 < 16; (A[i0, k0] * B[k0, i1]))   # MatMul_3 (MatMul)"
std::string print(const ComputeOp& op);
/// Inputs with types, then each op on its own line, then the outputs.
std::string print(const TeProgram& p);

}  // namespace souffle::te
