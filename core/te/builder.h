/// \file Helpers that build ComputeOps from index lambdas (TVM te.compute style).
#pragma once

#include <functional>

#include "core/te/expr.h"

namespace souffle::te {

using IndexFn = std::function<Expr(const std::vector<Expr>& axes)>;
using ReduceFn =
    std::function<Expr(const std::vector<Expr>& axes, const std::vector<Expr>& reduce_axes)>;

/// out[i0..] = fn(i0..). Axis vars are named i0, i1, ...; the output tensor is named `name`.
Op compute(const std::string& name, const Shape& shape, DType dtype, const IndexFn& fn,
           Origin origin = {});

/// out[i0..] = reduce over k0.. < reduce_extents of fn(i.., k..), starting from init
/// (the kind's identity when init is undefined). Reduce vars are named k0, k1, ...
Op reduce(const std::string& name, const Shape& shape, DType dtype, ReduceKind kind,
          const Shape& reduce_extents, const ReduceFn& fn, Expr init = {}, Origin origin = {});

/// 0 for Sum, 1 for Prod, the lowest value for Max (-inf for floats), the highest for Min.
Expr reduce_identity(ReduceKind kind, DType dtype);

}  // namespace souffle::te
