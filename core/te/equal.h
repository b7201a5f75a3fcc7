/// \file Structural equality of TE expressions and ops (vars matched positionally, not by name).
#pragma once

#include "core/te/expr.h"

namespace souffle::te {

/// Same tree shape, kinds, dtypes, immediates and tensors (by identity); Vars are equal only to
/// themselves.
bool equal(const Expr& a, const Expr& b);
/// Two ops compute the same thing: equal shapes, reduction kind and extents, init and body equal
/// with a's axis/reduce vars mapped to b's in order. Names and origins are ignored.
bool equal(const ComputeOp& a, const ComputeOp& b);
/// A structural hash consistent with equal(ComputeOp) (vars hashed by position).
uint64_t structural_hash(const ComputeOp& op);

}  // namespace souffle::te
