/// \file Verifier for TE ops and programs; runs after each pass in tests and debug builds.
#pragma once

#include "core/te/expr.h"

namespace souffle::te {

/// Checks: body/init types match the output dtype, every Var used is one of the op's axes or
/// reduce axes, each Read has one i64 index per dimension, constant reads have data, constant
/// index reads are in bounds, extents match the output shape. Throws InternalError naming the op.
void verify(const ComputeOp& op);
/// verify(op) for each op, plus: each tensor read is a program input, a constant or produced by an
/// earlier op; op output names are unique; outputs are defined.
void verify(const TeProgram& p);

}  // namespace souffle::te
