/// \file CUDA emission of the Hopper warpgroup statements (loop::WgmmaFence, WgmmaMma,
/// WgmmaCommit, WgmmaWait) as inline PTX for sm_90a: device functions emitted once per
/// translation unit (one per wgmma shape and type the unit uses) and the call each statement
/// becomes.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "core/loop/stmt.h"

namespace souffle::codegen {

/// The device functions for the wgmma shapes in `shapes` ((type, n) pairs): the no-swizzle
/// matrix descriptor, fence, commit, wait, the register fence, and one mma_async per shape.
std::string wgmma_ptx_helpers(const std::set<std::pair<loop::MmaType, int64_t>>& shapes);

/// A call of the m64n{n}k16 wgmma of `type`: accumulator registers from the pointer `d`, A and
/// B from the shared addresses `a` and `b` with their descriptors' byte offsets.
std::string ptx_wgmma_mma(const loop::WgmmaMma& m, const std::string& d, const std::string& a,
                          const std::string& b);
std::string ptx_wgmma_fence();
std::string ptx_wgmma_commit();
std::string ptx_wgmma_wait(int64_t pending);
/// Keeps the compiler from moving accesses of the `count` registers from `d` across a wgmma
/// fence or wait (an empty asm that reads and writes each).
std::string ptx_wgmma_register_fence(const std::string& d, int64_t count);

/// The NVRTC target for `arch` of the translation unit `source`: a unit holding wgmma needs the
/// architecture-specific sm_90a (compute_90a) where sm_90 (compute_90) is asked for; any other
/// arch, or a unit without wgmma, is `arch` itself.
std::string wgmma_target_arch(const std::string& arch, const std::string& source);

}  // namespace souffle::codegen
