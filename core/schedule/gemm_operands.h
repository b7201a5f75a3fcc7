/// \file Operand classification shared by the tensor-core mainloops (gemm_mma.cpp, the Ampere
/// mainloop, and gemm_wgmma.cpp, the Hopper one): the MMA type of a precision and whether an
/// operand is a plain row-major read that cp.async can copy.
#pragma once

#include <vector>

#include "core/gpu/cost.h"
#include "core/loop/stmt.h"
#include "core/te/expr.h"

namespace souffle::schedule::detail {

/// The MMA type a tensor-core GEMM computes in at `p` (fp32 and fp16 both give F16).
loop::MmaType mma_type_of(gpu::Precision p);

/// The read of a tensor of type `ct` that `value` is, possibly widened by a cast (an f16
/// tensor read as f32 is the same f16 value in the compute type); nullptr otherwise.
const te::Read* plain_read(const te::Expr& value, DType ct);

/// For a plain read `value` of a global tensor of type `ct` whose trailing dimensions are the
/// row-major [outer..., inner...] matrix of the operand (each index the axis var itself, the
/// leading ones free of both): the bytes one cp.async moves (16, 8 or 4, the widest whose
/// elements divide the inner extent and `inner_tile`), else 0.
int64_t direct_copy_bytes(const te::Expr& value, DType ct, const std::vector<te::IterVar>& outer,
                          const std::vector<te::IterVar>& inner, int64_t inner_tile);

}  // namespace souffle::schedule::detail
