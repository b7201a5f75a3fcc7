/// \file Reference interpreter for TE programs: the numerical oracle for every transformation.
#pragma once

#include <vector>

#include "core/te/expr.h"

namespace souffle::interp {

struct InterpOptions {
  /// false: every op computes in double and rounds its result to the tensor's dtype on store
  ///        (what a float32 framework does, up to rounding inside an op);
  /// true:  floating-point intermediates are kept in float64 between ops as well, giving the
  ///        float64 reference that transformed programs are compared against.
  bool f64 = false;
  int threads = 0;  ///< 0 = hardware concurrency
};

/// Runs `prog` on `inputs` (one per prog.inputs, matching shape; dtype converted if it differs)
/// and returns one tensor per prog.outputs, in the declared output dtypes.
/// Throws UserError when an input's shape does not match.
std::vector<ConstTensorPtr> run(const te::TeProgram& prog,
                                const std::vector<ConstTensorPtr>& inputs,
                                const InterpOptions& options = {});

}  // namespace souffle::interp
