/// \file Schedule estimates for compute-intensive TEs: tile candidates, block counts, resources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/analysis/analysis.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"

namespace souffle::plan {

/// One tile the planner judges co-residency with, and the registers per thread it assumes for
/// it. Threads and shared memory are the tile's own (gpu::tile_resources); the registers are
/// the planner's budget, below the template's estimate for all but the largest tile (the
/// souffle strategies' cuts and reasons were made with these figures; the kernels' own tiles
/// come from the tuner and their registers from ptxas).
struct PlannerTile {
  gpu::Tile tile;
  int64_t regs_per_thread = 0;
};

/// The SIMT GEMM template's tiles the planner judges co-residency with, largest first:
/// 128x128, 128x64, 64x64, 64x32, 32x32, each K 32 and double-buffered.
const std::vector<PlannerTile>& tile_candidates();

/// A compute-intensive TE's schedule: one output tile per block.
struct ScheduleEstimate {
  gpu::Tile tile;
  /// What a block of `tile` asks: gpu::tile_resources at 4-byte operands, with the planner's
  /// register budget (PlannerTile).
  gpu::TileResources resources;
  int64_t m = 0, n = 0, batch = 1;  ///< the output viewed as batch x M x N
  int64_t blocks = 0;
  int64_t co_resident = 0;       ///< blocks of this tile resident at once, alone on the GPU
  double est_us = 0;             ///< the estimate the choice minimized
  std::string describe() const;  ///< "64x64 tiles, 432 blocks of 128 threads"
};

/// The output viewed as batch x M x N. A convolution's (rank >= 4, [..., N, C, H, W]) is the
/// implicit GEMM M = C, N = N x H x W; otherwise M and N are the last two axes. Leading axes
/// (heads, a horizontal merge's group axis) are the batch.
void gemm_view(const Shape& shape, bool conv, int64_t& batch, int64_t& m, int64_t& n);

/// Estimates each tile alone on the GPU (waves of co-resident blocks x the per-tile roofline on
/// one SM) and returns every candidate with its estimate, in candidate order.
std::vector<ScheduleEstimate> estimate_schedules(const analysis::TeInfo& te,
                                                 const gpu::GpuSpec& spec);
/// The best of estimate_schedules: the lowest estimate; on a tie (within 1%) the larger tile,
/// which loads less per FLOP.
ScheduleEstimate best_schedule(const analysis::TeInfo& te, const gpu::GpuSpec& spec);

}  // namespace souffle::plan
