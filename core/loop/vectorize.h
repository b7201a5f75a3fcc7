/// \file Vectorizing pass: marks innermost loops whose accesses form aligned 16-byte vectors.
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Marks as Vectorized a serial or unrolled loop `for v in 0..+E` whose body is one Store where
/// E elements of the stored type make 16 bytes, v appears only as `+ v` in the last index of
/// the store and of every read that uses it, the rest of those indices is a multiple of E, and
/// those buffers' last dimensions are multiples of E (so vectors never straddle rows).
Stmt vectorize_loops(const Stmt& s);

}  // namespace souffle::loop
