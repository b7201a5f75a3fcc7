/// \file The fused attention stage: an attention chain (plan/attention.h) as one tiled stage with
/// an online softmax, so that neither the scores nor the probabilities reach global memory.
#pragma once

#include <string>

#include "core/plan/attention.h"
#include "core/schedule/schedule.h"

namespace souffle::schedule {

/// The tile of a fused attention stage: BR query rows per block, the keys BC at a time.
struct AttentionTile {
  int64_t br = 0, bc = 0, threads = 0;
  int64_t shared_bytes = 0;  ///< Q, K, V and score tiles plus the row statistics
};

/// The tile the stage would use under `c` (threads: c.block when c.exact_block, else 128), or
/// br 0 when the head's tiles do not fit 48 KB of shared memory (`why` says so).
AttentionTile attention_tile(const plan::AttentionMatch& a, const ScheduleConfig& c,
                             std::string* why = nullptr);

/// One stage computing the chain's output O: each block takes BR query rows of one batch (head,
/// window) with their Q tile in shared memory and walks the keys BC at a time: K and V tiles
/// into shared memory, the scores of the tile (S's element, then the softmax's input x) into a
/// shared tile, each row's running max and sum updated (the tile's probabilities rescaled to
/// the new max, the accumulator rescaled by exp(old max - new max)), and the accumulator of O's
/// row plus the tile's probabilities times V. O = accumulator / row sum is the only global
/// store; S, M, L and P are never written. Fp32 arithmetic whatever the plan's precision.
loop::Kernel schedule_attention(const plan::AttentionMatch& a, const ScheduleConfig& c);

}  // namespace souffle::schedule
