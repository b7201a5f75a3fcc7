/// \file The Hopper tensor-core GEMM mainloop (docs/mainloop.md): warpgroup MMA
/// (wgmma.mma_async, sm_90a) on operand tiles staged into shared memory in the no-swizzle
/// core-matrix layout its descriptors read.
#pragma once

#include <string>
#include <vector>

#include "core/schedule/template_util.h"

namespace souffle::schedule::detail {

/// How the block tile splits over warpgroups: groups_m x groups_n warpgroups, each computing
/// m_tiles m64 x n tiles (one wgmma m64nNk16 per m tile and k16 step).
struct WgmmaSplit {
  int64_t groups_m = 0, groups_n = 0, m_tiles = 0, n = 0;
  bool ok() const { return groups_m > 0; }
};

/// The warpgroup split of the tensor-core tile `c` gives (tc_block_tile): a block of whole
/// warpgroups (128 threads each), BM a multiple of 64, BK of 16, each warpgroup's columns a
/// multiple of 8 up to 256 and at most 128 accumulator registers per thread; fp16 or bf16
/// (tf32 stays on the Ampere mainloop). Not ok() otherwise, `why` saying why.
WgmmaSplit wgmma_split(const ScheduleConfig& c, std::string* why = nullptr);

/// Knobs the tests plant.
struct WgmmaOptions {
  bool drop_copy_wait = false;   ///< leave out the cp.async wait of the K loop (a stale read)
  bool drop_wgmma_wait = false;  ///< leave out the wgmma wait (accumulators read before it)
};

/// The tensor-core GEMM on the Hopper mainloop: A (M x K) and B (as N x K) in the core-matrix
/// layout, copied by cp.async where the operand is a plain read of the compute type with K
/// innermost, converted element by element otherwise, in a ring of ScheduleConfig::mma_stages
/// shared stages; each warpgroup issues wgmma m64nNk16 from shared descriptors and computes
/// `epilogue` from its accumulator registers. Requires wgmma_split(c).ok(). Called by
/// schedule_gemm_tc_fused when ScheduleConfig::wgmma_mainloop is on and the tile allows.
loop::Kernel schedule_gemm_wgmma(const te::ComputeOp& op, const GemmParts& g,
                                 const std::vector<const te::ComputeOp*>& epilogue,
                                 const std::vector<te::Tensor>& on_chip, const ScheduleConfig& c,
                                 const WgmmaOptions& opts = {});

}  // namespace souffle::schedule::detail
