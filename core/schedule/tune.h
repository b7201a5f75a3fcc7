/// \file GEMM tile tuner: tiles that fit a GPU, ranked by a tile cost model or by measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/schedule/schedule.h"
#include "core/te/expr.h"

namespace souffle::schedule {

/// `c` with its GEMM tile (ScheduleConfig::gemm_tile or tc_tile) set to `t`.
ScheduleConfig with_tile(ScheduleConfig c, const gpu::Tile& t);

/// What a GEMM-like TE asks of the template: batch x (M x K) * (K x N).
struct GemmProblem {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  int64_t in_bytes = 4;   ///< bytes per operand element (the wider of A and B)
  int64_t out_bytes = 4;  ///< bytes per output element
  /// How the tensor-core mainloop reads the operands (gpu::MmaOperands), when known
  /// (gemm_problem); else taken as plain reads of in_bytes-wide tensors.
  bool operands_known = false;
  gpu::MmaOperands operands{};
};
/// The problem of a TE that classify() calls Gemm; InternalError otherwise.
GemmProblem gemm_problem(const te::ComputeOp& op);

/// One tile on one problem and GPU under the tile-level cost model.
struct TileEstimate {
  gpu::Tile tile;
  int64_t threads = 0, regs_per_thread = 0, smem_bytes = 0;
  int64_t blocks = 0;       ///< one output tile per block
  int blocks_per_sm = 0;    ///< co-resident blocks of this tile on one SM
  int64_t co_resident = 0;  ///< blocks_per_sm x SMs
  std::string limited_by;   ///< what caps blocks_per_sm
  double waves = 0;         ///< blocks / co_resident
  int64_t load_bytes = 0;   ///< operand panels each block loads plus the output it writes
  /// Tensor-core tiles: load_bytes split into what DRAM serves (first reads, the output, and
  /// re-reads where the operands do not fit the L2) and what L2 serves (panel re-reads).
  int64_t dram_bytes = 0, l2_bytes = 0;
  /// SIMT tiles: FLOPs (padded to whole tiles) over the waves at the spec's peak. Tensor-core
  /// tiles: the mainloop's K loop (MMAs, ldmatrix and staging traffic) over the waves.
  double compute_us = 0;
  /// SIMT tiles: load_bytes at DRAM bandwidth (from the SMs the grid occupies). Tensor-core
  /// tiles: dram_bytes at DRAM and l2_bytes at L2 bandwidth, the same way.
  double memory_us = 0;
  /// SIMT tiles: overlapped (double-buffered) or partly exposed (single). Tensor-core tiles:
  /// priced by structure (rank_tiles): the K loop with the traffic overlapped (pipelined) or
  /// exposed (synchronous), then the fill and the epilogue per wave.
  double total_us = 0;
  /// Tensor-core tiles: the mainloop at the chosen depth (tile.stages) priced from its structure
  /// (gpu::mainloop_cost) on the tile's padded FLOPs, fill and epilogue included.
  double mainloop_us = 0;
  double measured_us = -1;  ///< from TuneOptions::measure; negative when not measured
  /// "gemm 128x64x16 tile 8x4, double-buffered, 96 blocks = 0.73 waves (1 per SM, registers),
  /// 12.6 MB loaded, model 10.5 us (compute 8.1, memory 10.5)"; a tensor-core tile also
  /// splits the bytes (DRAM, L2) and names its K loop's compute, its traffic and its mainloop.
  std::string why() const;
};

/// Constraints from the kernel the GEMM runs in.
struct TileLimits {
  int64_t threads = 0;           ///< exactly this many threads per block (0: any)
  bool fit_co_resident = false;  ///< blocks <= co_resident (the kernel has grid barriers)
};

/// Measures candidate tiles on a GPU: one time in microseconds per candidate, negative for one
/// that failed. Plugged in by a GPU runner; without one the model alone ranks.
using MeasureFn =
    std::function<std::vector<double>(const te::ComputeOp& op, const std::vector<TileEstimate>&)>;

struct TuneOptions {
  gpu::GpuSpec gpu;  ///< must be filled (gpu::gpu_spec("a100"))
  gpu::Precision precision = gpu::Precision::FP32;
  TileLimits limits;
  MeasureFn measure;       ///< optional
  size_t measure_top = 8;  ///< how many of the model's best are measured
};

/// Every configuration the template can be asked for (before fitting a GPU).
std::vector<gpu::Tile> tile_space();
/// Every configuration of the tensor-core template: 1, 2 or 4 warps along M and N, each of 1,
/// 2 or 4 fragments along M and N, BK 16, 32 or 64. The pipeline depth is left open (stages 0):
/// rank_tiles chooses it per tile.
std::vector<gpu::Tile> tensor_core_tile_space();

/// The tiles of tile_space() that fit `o.gpu` and `o.limits` (threads, registers estimate,
/// shared memory, at least one block per SM), estimated and sorted best first: lowest total_us,
/// then fewer bytes loaded, then fewer waves, then double-buffered, then the larger tile.
/// Under a tensor-core precision (tf32/fp16/bf16) the tiles of tensor_core_tile_space()
/// instead, priced by the structure they build: the mainloop as gpu::mainloop_cost prices it
/// (on the FLOPs of whole tiles, at the occupancy the tile's registers and shared memory
/// leave, over its waves) against the operand panels' traffic of the whole grid (first reads
/// from DRAM, re-reads from L2 where the operands fit it): a pipelined mainloop costs the
/// greater, synchronous staging the MMAs plus the greater of the traffic and its own loads;
/// then the fill and the epilogue per wave. Each tile at the pipeline depth (2..4 stages where
/// a copy is asynchronous, else 2) and, for f32 operands under fp16/bf16, with or without the
/// f32 ring, whichever prices lowest; the shallower of equal prices.
std::vector<TileEstimate> rank_tiles(const GemmProblem& p, const TuneOptions& o);

/// The estimate of tile `t` on `p` as rank_tiles makes it: a tensor-core tile with t.stages set
/// at that depth and t.f32_ring as given, else at the depth and staging rank_tiles chooses.
/// False when the tile does not fit `o.gpu` and `o.limits`.
bool estimate_tile(const GemmProblem& p, const gpu::Tile& t, const TuneOptions& o,
                   TileEstimate& out);

struct TuneResult {
  std::vector<TileEstimate> ranked;  ///< best first; empty when no tile fits
  bool measured = false;             ///< the order of the first measure_top comes from `measure`
  bool ok() const { return !ranked.empty(); }
  const TileEstimate& best() const { return ranked.front(); }
  /// best().why() plus how it compares: "; best of 212 (next 64x64x16 tile 4x4 at 11.2 us)".
  std::string reason() const;
};

/// Ranks the tiles for a GEMM-like TE (tensor-core tiles when `o.precision` is not fp32 and the
/// TE's operands are floats, as the kernels schedule it); with `o.measure`, the model's first
/// measure_top are re-ranked by their measured times (failed ones last).
TuneResult tune_gemm(const te::ComputeOp& op, const TuneOptions& o);

}  // namespace souffle::schedule
