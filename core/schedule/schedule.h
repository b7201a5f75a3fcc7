/// \file Schedule templates: one TE to one loop-IR kernel (injective, reduction, GEMM-like), and
/// merging several single-stage kernels into one grid-synchronized multi-stage kernel.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu/cost.h"
#include "core/gpu/tile.h"
#include "core/loop/stmt.h"
#include "core/te/expr.h"

namespace souffle::schedule {

struct OwnershipQuery;   // ownership.h
struct DependenceProof;  // dependence.h
struct WeightPanel;      // weight_panel.h

struct ScheduleConfig {
  int64_t block = 256;  ///< threads per block of injective and reduction kernels
  /// Reductions that reduce a row with the whole block take exactly `block` threads, also when
  /// the row is shorter (the extra threads contribute the identity): a merged kernel runs every
  /// stage with block barriers on one block size. Off: the smallest power of two from 32 that
  /// covers the row, up to `block`.
  bool exact_block = false;
  int64_t max_grid = 1024;  ///< injective/reduction grids stride over the rest
  /// The blocks a cooperative kernel may launch (its co-resident blocks on the target GPU): no
  /// template's grid exceeds it. GEMMs then loop over their output tiles (block b computes tiles
  /// b, b + grid, ...) and grid-stride templates stride further. 0: no cap (one block per GEMM
  /// tile, max_grid for the others).
  int64_t grid_cap = 0;
  /// The SIMT GEMM's tile (core/gpu/tile.h): a BM x BN block tile over the output, K staged in
  /// BK chunks through shared memory (two stages when double-buffered: tile k+1 is loaded into
  /// registers while tile k is computed, one block barrier per K step instead of two), each
  /// thread a TM x TN register tile: (BM/TM)*(BN/TN) threads per block.
  gpu::Tile gemm_tile{64, 64, 16, 4, 4, false, false};
  /// Compute type of GEMM-like TEs: fp32 runs the SIMT GEMM; tf32/fp16/bf16 run the tensor-core
  /// template (operands converted at the tile load, fp32 accumulation). Model inputs and outputs
  /// keep their declared types.
  gpu::Precision precision = gpu::Precision::FP32;
  /// The tensor-core GEMM's tile: a BM x BN block tile over warps of TM x TN 16x16 fragments
  /// each ((BM/16/TM) x (BN/16/TN) warps), K staged BK at a time, two shared stages when
  /// double-buffered (the next K chunk staged in registers). BM 0 derives 2x2 fragments per warp
  /// and 4, 2 or 1 warps from `block`, with BK 32.
  gpu::Tile tc_tile{0, 0, 32, 2, 2, false, true};
  /// Tensor-core GEMMs run the Ampere-class mainloop (docs/mainloop.md: cp.async pipeline,
  /// swizzled shared tiles, ldmatrix, mma.sync, epilogue from the accumulator registers); off:
  /// the wmma template with synchronous staging (for comparison, or GPUs before sm_80).
  bool mma_mainloop = true;
  /// The target is sm_90a: tensor-core GEMMs whose tile allows it (gemm_wgmma.h: whole
  /// warpgroups, BM a multiple of 64; fp16/bf16) run the Hopper mainloop, warpgroup MMA from
  /// shared-memory descriptors (docs/mainloop.md); the kernel then compiles for sm_90a only.
  /// Set by plan_build for plans with PlanOptions::wgmma on a compute capability 9.0 GPU.
  bool wgmma_mainloop = false;
  /// Shared-memory stages of that mainloop's pipeline (2..4), overriding the tile's; 0: the
  /// tile's (tc_tile.stages, which the tuner chooses from the GPU's shared memory, occupancy and
  /// the priced mainloop), else the template's default (3 when it fits 48 KB, else 2).
  int64_t mma_stages = 0;
  /// A reduction with fewer output rows than this splits each row over blocks (partials joined
  /// across a grid barrier) in a grid of at most this many blocks: the GPU's SM count. 0 keeps
  /// every row in one block, for strategies that launch without grid synchronization.
  int64_t cross_block_rows = 108;
};

enum class ScheduleKind : uint8_t { Injective, Reduction, Gemm };
const char* schedule_kind_name(ScheduleKind k);  ///< "injective", "reduction", "gemm"

/// How a TE is scheduled: Gemm for a sum over products of two operands that split the output
/// axes into rows (read by the first only) and columns (read by the second only); Reduction for
/// other reductions; Injective otherwise.
ScheduleKind classify(const te::ComputeOp& op);

/// One kernel computing `op` (a single stage, verified, simplified).
loop::Kernel schedule_op(const te::ComputeOp& op, const ScheduleConfig& config = {});

/// Whether `consumer` can be computed inside the store loop of the GEMM-like `main` whose store
/// loop already computes `group` (earlier epilogue TEs, in order): element-wise, of main's output
/// extents, reading main's or a group TE's output, and each such tensor only at the element being
/// stored (its own output index). Bias, activation, residual add, scale and cast qualify.
bool is_epilogue(const te::ComputeOp& main, const std::vector<const te::ComputeOp*>& group,
                 const te::ComputeOp& consumer);

/// One kernel computing the GEMM-like `main` and, in its store loop, `epilogue` (each accepted
/// by is_epilogue given the ones before it). Tensors in `on_chip` (main's output or an epilogue
/// TE's) stay in registers and are not written to global memory: only pass those that nothing
/// outside the group reads.
/// With `panel` (weight_panel.h; the SIMT template only), operand B is read from a shared buffer
/// that lives for the whole merged kernel, filled by this stage when panel->load.
loop::Kernel schedule_fused(const te::ComputeOp& main,
                            const std::vector<const te::ComputeOp*>& epilogue,
                            const ScheduleConfig& config = {},
                            const std::vector<te::Tensor>& on_chip = {},
                            const WeightPanel* panel = nullptr);

/// The element-wise `op` on the tiles of the GEMM-like `gemm` it reads, when each of its
/// elements (i, u) reads gemm's output only at columns G * u .. G * u + G - 1 of row i (an
/// LSTM's cell update over its interleaved gates) and the tile holds whole groups: the same
/// tiles in the same rounds as gemm scheduled with `tile` under `config` (`threads` per block,
/// the GEMM's), each block computing the elements of the tiles it computed, so that merge_stages
/// proves the dependence block-owned instead of placing a grid barrier. Nothing otherwise.
std::optional<loop::Kernel> schedule_on_gemm_tiles(const te::ComputeOp& op,
                                                   const te::ComputeOp& gemm, const gpu::Tile& tile,
                                                   int64_t threads, const ScheduleConfig& config);

/// The reduction counterpart of is_epilogue: whether `consumer` can be computed by the thread
/// that stores the row result of the reduction `main`, after `group` (earlier epilogue TEs, in
/// order): element-wise over main's output extents, reading main's or a group TE's output only
/// at its own output index (LayerNorm's variance -> + eps -> rsqrt, a mean's scale).
bool is_reduction_epilogue(const te::ComputeOp& main,
                           const std::vector<const te::ComputeOp*>& group,
                           const te::ComputeOp& consumer);

/// Whether schedule_op splits the rows of the reduction `op` over several blocks under `config`
/// (partials joined across a grid barrier): then no thread holds a finished row to store
/// epilogue TEs from, and schedule_reduction_fused takes no epilogue.
bool reduction_splits_rows(const te::ComputeOp& op, const ScheduleConfig& config);

/// One kernel computing the reduction `main` and, in the store of each row result, `epilogue`
/// (each accepted by is_reduction_epilogue given the ones before it). Tensors in `on_chip`
/// (main's output or an epilogue TE's) stay in registers and are not written: only pass those
/// that nothing outside the group reads.
loop::Kernel schedule_reduction_fused(const te::ComputeOp& main,
                                      const std::vector<const te::ComputeOp*>& epilogue,
                                      const ScheduleConfig& config = {},
                                      const std::vector<te::Tensor>& on_chip = {});

/// One kernel per op of the program, in order (the unfused strategy's kernels).
loop::KernelSet schedule_program(const te::TeProgram& program, const ScheduleConfig& config = {});

/// Merges kernels into one: a 1-D grid of the largest grid and block over the stages, each
/// stage guarded by `blockIdx.x < its grid` (and `threadIdx.x < its block` when smaller, allowed
/// only for stages without block barriers), a grid barrier before each stage that touches a
/// tensor written by an earlier stage since the last barrier. Stage infos are concatenated.
loop::Kernel merge_stages(std::vector<loop::Kernel> stages, const std::string& name);

/// How merge_stages orders dependent stages and where intermediates live.
struct MergeOptions {
  /// Prove block ownership (ownership.h) of what a stage reads of earlier stages' outputs: a
  /// block barrier, or nothing when each thread reads what it wrote, instead of a grid barrier.
  bool prove_ownership = true;
  /// Tests only: claim block ownership for every dependent pair (plants a wrong proof).
  bool force_ownership = false;
  int64_t max_proof_steps = int64_t{1} << 24;  ///< beyond this a proof gives up (grid barrier)
  /// All proofs of one kernel together: once spent, the remaining dependent stages get grid
  /// barriers (a kernel of hundreds of stages over big tensors would otherwise take minutes).
  int64_t max_kernel_proof_steps = int64_t{1} << 25;
  /// A GEMM stage after a grid barrier loads the first K tile of an operand that reads nothing
  /// the kernel writes (a weight) before the barrier, so the load overlaps the wait.
  bool prefetch_weights = true;
  /// Bytes the shared arena may grow beyond the largest stage's own so that a prefetched tile
  /// or a stage without a barrier can stack on the buffers of the stages before (co-residency
  /// of a cooperative grid depends on the arena; 0 never grows it).
  int64_t arena_growth = 0;
  /// Intermediates nothing outside the kernel reads: those proven block-owned whose per-block
  /// range fits `shared_budget` (bytes per block, the stages' arenas included) live in shared
  /// memory instead of global scratch.
  std::vector<te::Tensor> local;
  int64_t shared_budget = 48 * 1024;
  /// Shared buffers that stages allocate and that must live for the whole kernel (weight
  /// panels, weight_panel.h): each stage's own allocation is dropped (its arena counted without
  /// it) and the buffer is allocated once around every stage.
  std::vector<te::Tensor> kernel_shared;
  /// Tests: called with each dependence query between stages and its symbolic proof (the
  /// enumerating prover checks it on small shapes).
  std::function<void(const OwnershipQuery&, const DependenceProof&)> on_proof;
  /// Per-tile flags instead of a grid barrier (loop::FlagRelease / FlagWait): where every
  /// cross-block read of a stage has a mapped dependence proof in which no consumer block reads
  /// from more than `flag_max_tiles` producer blocks (and fewer than the grid), each producer
  /// stage releases a counter per block and the stage waits only on the range of producer
  /// blocks it reads. 0: grid barriers only.
  int64_t flag_max_tiles = 0;
  /// Both set: per-tile flags only where the cost model prices them below a grid barrier (sync
  /// mode auto). `grid_price(grid)`: one grid barrier over `grid` blocks; `flags_price(tiles,
  /// waits)`: flags on `waits` producer stages, each consumer block awaiting at most `tiles`
  /// producer blocks of each (µs). The boundary keeps both prices.
  std::function<double(int64_t grid)> grid_price;
  std::function<double(int64_t tiles, int waits)> flags_price;
  /// A user's order for the boundary before the stage that computes a TE (by name): Grid puts a
  /// grid barrier there whatever the proofs allow; Flags takes per-tile flags wherever the
  /// dependence proof bounds the producer blocks, whatever the mode and the prices (else a grid
  /// barrier stays, and the plan says why). The boundary is marked `forced`.
  std::map<std::string, BoundaryKind> forced;
  /// Stages packed side by side (schedule/wavefront.h), per stage in the order given: the
  /// first block each runs on and its wave (stages of one wave depend on none of the others).
  /// Empty: every stage from block 0, one after the other. A stage at an offset reads the
  /// kernel's block index less the offset as its own and is guarded to its range; a stage
  /// placed beside another of its wave with shared buffers of its own gets a block barrier
  /// before it when their buffers would otherwise stack beyond the arena.
  std::vector<int64_t> block_offsets;
  std::vector<int> waves;
};
/// merge_stages with barriers chosen by ownership proofs and resident intermediates (above);
/// the two-argument form uses the default options (proofs on, nothing resident).
loop::Kernel merge_stages(std::vector<loop::Kernel> stages, const std::string& name,
                          const MergeOptions& options);

}  // namespace souffle::schedule
