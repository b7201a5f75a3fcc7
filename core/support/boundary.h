/// \file Stage boundaries as typed values: what orders a stage of a kernel after the stages
/// before it (nothing, a block barrier, a grid barrier, or a launch of its own) and why. The
/// kernels record them as they place barriers; the planner, the CLI and the views show them.
#pragma once

#include <cstdint>
#include <string>

namespace souffle {

/// The order between two stages: None (program order suffices), Block (`__syncthreads`), Grid
/// (a grid-wide barrier), Launch (the later stage starts another kernel launch of the same
/// partition, for strategies that launch without grid synchronization), Flags (each block
/// waits on per-tile counters of the producer blocks it reads, released after their stores).
enum class BoundaryKind : uint8_t { None, Block, Grid, Launch, Flags };
const char* boundary_kind_name(BoundaryKind k);  ///< "none", "block", "grid", "launch", "flags"

/// How a cooperative kernel orders a stage after an earlier stage's stores that other blocks
/// wrote: Grid, a grid barrier (Souffle's order); Flags, per-tile flags wherever the dependence
/// proof bounds the producer blocks each consumer block reads to fewer than the grid; Auto, per
/// boundary the one the cost model prices cheaper (flags where they are possible). Elsewhere a
/// grid barrier stays.
enum class SyncMode : uint8_t { Grid, Flags, Auto };
const char* sync_mode_name(SyncMode m);  ///< "grid", "flags", "auto"
/// Parses "grid", "flags" or "auto"; false for anything else.
bool parse_sync_mode(const std::string& s, SyncMode& out);

/// Why a boundary has its kind.
enum class BoundaryReason : uint8_t {
  Independent,  ///< reads nothing an earlier stage wrote since the last grid barrier
  ThreadOwned,  ///< each thread reads only what it wrote
  BlockOwned,   ///< each block reads only what it wrote
  SharedArena,  ///< thread-owned (or, without a tensor, independent and packed beside the
                ///< stages before it on other blocks), but a block barrier lets the stages
                ///< reuse the shared arena
  CrossBlock,   ///< a block reads what another block wrote (tensor, producer stage and blocks)
  Unproven,     ///< no order weaker than a grid barrier could be proven (`detail` says why)
  Rewrite,      ///< the stage writes a tensor an earlier stage wrote since the last barrier
  NoProofs,     ///< ownership proofs were off: every dependent stage gets a grid barrier
  SplitRows,    ///< within one stage: a reduction's rows split over blocks, partials joined
};
/// "independent", "thread-owned", "block-owned", "shared-arena", "cross-block", "unproven",
/// "rewrite", "no-proofs", "split-rows".
const char* boundary_reason_name(BoundaryReason r);

/// One boundary of a kernel, between the stage at index `before` and the one at `after`
/// (indices of Kernel::stages; before == after: between two phases of one stage; before -1:
/// the first stage of a launch that follows another launch of the same partition).
struct StageBoundary {
  int before = -1, after = 0;
  BoundaryKind kind = BoundaryKind::None;
  BoundaryReason reason = BoundaryReason::Independent;
  std::string tensor;  ///< the tensor that decided (empty for independent stages)
  int producer = -1;   ///< the stage that last wrote `tensor` (index of Kernel::stages), -1
  /// CrossBlock: the first cross-block read found, "block `consumer_block` reads what block
  /// `producer_block` wrote"; -1 where no proof named blocks.
  int64_t consumer_block = -1, producer_block = -1;
  /// CrossBlock with a mapped dependence proof: the most producer blocks one consumer block
  /// reads from, i.e. the tiles a per-tile dependency flag would have it wait for instead of
  /// the whole grid; 0 where unknown.
  int64_t awaited_tiles = 0;
  int64_t grid = 0;  ///< blocks the barrier waits for (the kernel's grid; Grid only)
  /// Flags: the producer stages waited on (one wait statement each).
  int waits = 0;
  /// Where the kind was chosen by price (sync mode auto): the estimated cost of a grid barrier
  /// over the kernel's grid and of the per-tile flags it would take (µs); 0 elsewhere.
  double grid_price_us = 0, flags_price_us = 0;
  bool prefetched = false;  ///< a GEMM weight tile is loaded before the grid barrier
  bool forced = false;      ///< the kind is a decision's (plan::Edit sync), not the proofs' choice
  std::string detail;       ///< the proof's sentence, for people
  /// Whether a statement of the kernel body stands for it (Block and Grid do).
  bool has_statement() const { return kind == BoundaryKind::Block || kind == BoundaryKind::Grid; }
};

/// One line for people: "grid: T12 read across blocks (block 0 reads what block 1 of stage 3
/// wrote; tile flags would wait for 2 tiles)".
std::string describe(const StageBoundary& b);

}  // namespace souffle
