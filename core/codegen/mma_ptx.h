/// \file CUDA emission of the Ampere-class warp statements (loop::AsyncCopy, AsyncCommit,
/// AsyncWait, MatrixLoad, MmaSync) as inline PTX: small device functions emitted once per
/// translation unit, and the call each statement becomes.
#pragma once

#include <string>

#include "core/loop/stmt.h"

namespace souffle::codegen {

/// The device functions the calls below use (cp.async, ldmatrix, mma.sync, cvt.rna.tf32).
std::string mma_ptx_helpers();

/// A call copying `bytes` from global `src` to shared `dst` (addresses as C expressions);
/// `pred` "" for always, else a C condition (false: zero-fill, nothing read).
std::string ptx_async_copy(const std::string& dst, const std::string& src, int64_t bytes,
                           const std::string& pred);
std::string ptx_async_commit();
std::string ptx_async_wait(int64_t pending);
/// ldmatrix of `count` matrices into the registers from `dst` (a pointer to the first element)
/// from the shared address `src`.
std::string ptx_matrix_load(const std::string& dst, int64_t count, bool trans,
                            const std::string& src);
/// mma.sync of `type` over register pointers d, a, b, c.
std::string ptx_mma_sync(loop::MmaType type, const std::string& d, const std::string& a,
                         const std::string& b, const std::string& c);

}  // namespace souffle::codegen
