/// \file Vectorizing passes: marks innermost loops whose accesses form aligned 16-byte vectors and
/// splits them into 16-byte copies through registers.
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Marks as Vectorized a serial or unrolled loop `for v in 0..+E` whose body is one Store where
/// E elements of the stored type make 16 bytes, v appears only as `+ v` in the last index of
/// the store and of every read that uses it, the rest of those indices is a multiple of E, and
/// those buffers' last dimensions are multiples of E (so vectors never straddle rows).
Stmt vectorize_loops(const Stmt& s);

/// Whether vectorize_loops would mark this loop (its body aside).
bool vectorizable(const For& f);

/// Rewrites each Vectorized loop over one computing Store into 16-byte register traffic: one
/// Vectorized copy per vector read into a local array, the computation as an Unrolled loop over
/// those arrays, and one Vectorized copy of the result out. The copies are what a SIMT emitter
/// turns into single 16-byte loads and stores (match_vector_copy); other loops stay.
Stmt lower_vector_accesses(const Stmt& s);

/// A Vectorized loop `for v in 0..+E: dst[..., a + v] = src[..., b + v]` of 16 bytes, as
/// vectorize_loops defines them: the element indices of its first lane (v = 0) on both sides.
struct VectorCopy {
  Tensor dst, src;
  std::vector<Expr> dst_first, src_first;
  int64_t lanes = 0;
};
bool match_vector_copy(const For& f, VectorCopy& out);

}  // namespace souffle::loop
