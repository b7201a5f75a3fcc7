/// \file Index-map analysis of one read (quasi-affinity, injectivity) and FLOP counting of a body.
#pragma once

#include "core/analysis/analysis.h"

namespace souffle::analysis {

/// Characterizes `read`, which occurs in the body of `op`.
ReadInfo analyze_read(const te::Read& read, const te::ComputeOp& op);

/// Arithmetic ops in one evaluation of `body`: each Unary/Binary/Call on data (not on index
/// math) counts 1, a Select counts 1 when its condition depends on data; casts, reads and
/// index arithmetic are free. Shared nodes count once. A Select on an index predicate runs one
/// branch at each point (a horizontally fused TE picks its operands so): only its costlier
/// branch counts.
int64_t count_flops(const te::Expr& body);

}  // namespace souffle::analysis
