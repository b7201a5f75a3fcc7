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
  int64_t shared_bytes = 0;   ///< Q, K, V and score tiles plus the row statistics
  bool tensor_cores = false;  ///< QK^T and PV by mma.sync (attention_mma_tile)
};

/// The tile the stage would use under `c` (threads: c.block when c.exact_block, else 128): the
/// tensor-core tile where attention_mma_tile gives one, else the f32 one; br 0 when the head's
/// tiles do not fit 48 KB of shared memory (`why` says so).
AttentionTile attention_tile(const plan::AttentionMatch& a, const ScheduleConfig& c,
                             std::string* why = nullptr);

/// The tile of the tensor-core stage (schedule_attention_mma) under `c`: under fp16 or bf16
/// with the mma mainloop on, a block of whole warps, 16 query rows for each two warps (at least
/// 32), 32 keys per tile, the head padded to a multiple of 16 and the value width to one of 32,
/// within 48 KB of shared memory; br 0 otherwise.
AttentionTile attention_mma_tile(const plan::AttentionMatch& a, const ScheduleConfig& c);

/// One stage computing the chain's output O: each block takes BR query rows of one batch (head,
/// window) with their Q tile in shared memory and walks the keys BC at a time: K and V tiles
/// into shared memory, the scores of the tile (S's element, then the softmax's input x) into a
/// shared tile, each row's running max and sum updated (the tile's probabilities rescaled to
/// the new max, the accumulator rescaled by exp(old max - new max)), and the accumulator of O's
/// row plus the tile's probabilities times V. O = accumulator / row sum is the only global
/// store; S, M, L and P are never written. Fp32 arithmetic whatever the plan's precision.
loop::Kernel schedule_attention(const plan::AttentionMatch& a, const ScheduleConfig& c);

/// The same stage with QK^T and PV on tensor cores (core/schedule/attention_mma.cpp), the
/// precision's compute type in shared memory: Q, K and V tiles converted into padded shared
/// tiles, each warp's share of the score tile by ldmatrix + mma.sync m16n8k16 (K's rows as B,
/// without a transpose), the softmax's input from the accumulator registers into a shared f32
/// tile, the row statistics as above (one thread a row) with the probabilities converted into a
/// shared tile, and O's accumulator in registers: rescaled by each row's alpha, plus P V by
/// mma.sync (V by ldmatrix .trans). schedule_attention builds it where attention_mma_tile has a
/// tile.
loop::Kernel schedule_attention_mma(const plan::AttentionMatch& a, const ScheduleConfig& c);

}  // namespace souffle::schedule
