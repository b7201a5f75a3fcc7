/// \file Helpers shared by the schedule templates (one file per template) and merge_stages.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/support/int_math.h"

namespace souffle::schedule::detail {

using souffle::ceil_div;

/// The block and thread variables every template binds.
struct Frame {
  te::Expr bx = te::var("bx"), tx = te::var("tx");
};
te::Expr ic(int64_t v);
std::unordered_set<const te::ExprNode*> vars_of(const te::Expr& e);
/// Wraps body in lets binding each axis var to its digit of the row-major flat index.
loop::Stmt bind_flat(const std::vector<te::IterVar>& axes, const te::Expr& flat, loop::Stmt body);
int64_t extent_product(const std::vector<te::IterVar>& axes);
std::vector<te::Expr> axis_vars(const te::ComputeOp& op);
te::Expr combine(te::ReduceKind k, const te::Expr& a, const te::Expr& b);
/// init (+) value, leaving out an identity init so that the common sum reads as written.
te::Expr with_init(const te::ComputeOp& op, const te::Expr& value);
std::vector<te::Tensor> reads_of(const te::ComputeOp& op);
/// Whether `consumer` can be computed by the thread that holds `main`'s element (and the values
/// of the `group` computed from it before): element-wise over main's output extents, reading
/// main's or a group TE's output, each only at the consumer's own index. The epilogue test of
/// GEMMs and of reductions alike.
bool is_elementwise_follower(const te::ComputeOp& main,
                             const std::vector<const te::ComputeOp*>& group,
                             const te::ComputeOp& consumer);

/// The grid limit of the grid-stride templates: max_grid, or grid_cap when smaller.
int64_t strided_grid(const ScheduleConfig& c);

/// The name of the loop var over a block's rounds of tiles (TileGrid::wrap): merge_stages
/// recognises the loop and prefetches the first round's weight tile before a grid barrier.
extern const char* const kTileRoundVar;

/// The blocks of a template whose work is `tiles` independent tiles (a GEMM's output tiles): one
/// block per tile, or, when ScheduleConfig::grid_cap is smaller, grid_cap blocks that each loop
/// over the tiles bx, bx + grid, bx + 2 * grid, ...
struct TileGrid {
  int64_t tiles = 1, grid = 1, iters = 1;
  TileGrid(int64_t tiles, const ScheduleConfig& c);
  /// `body`, which names its tile by the var `tile`, for each of the block's tiles: with one
  /// tile per block `tile` is replaced by the block var itself; else a serial loop over the
  /// block's tiles, guarded where the last round has fewer tiles than blocks. The guard depends
  /// on the block only, so block barriers in `body` stay block-uniform.
  loop::Stmt wrap(const Frame& f, const te::Expr& tile, loop::Stmt body) const;
  /// "" with one tile per block, else ", 3328 tiles in 4 rounds of 864 blocks" (schedule text).
  std::string describe() const;
};

/// Wraps `inner` in the block and thread loops of a one-stage kernel computing `op`, verifies it
/// and plans its shared arena.
loop::Kernel finish(const te::ComputeOp& op, const Frame& f, loop::Stmt inner, int64_t grid,
                    int64_t block, std::string schedule);
/// The same for one stage computing several TEs (a GEMM and its epilogue, `ops[0]` first): the
/// kernel reads what the ops read and do not produce, and writes `outputs`.
loop::Kernel finish(const std::vector<const te::ComputeOp*>& ops, std::vector<te::Tensor> outputs,
                    const Frame& f, loop::Stmt inner, int64_t grid, int64_t block,
                    std::string schedule);

/// The end of the tensor-core GEMM templates: names the `epilogue` TEs in `schedule` (",
/// epilogue NAME..."), finishes the one stage computing `op` and then each epilogue TE, writing
/// `outputs`, and records `tile` on it (loop::StageInfo::tensor_core).
loop::Kernel finish_gemm_tc(const te::ComputeOp& op,
                            const std::vector<const te::ComputeOp*>& epilogue,
                            std::vector<te::Tensor> outputs, const Frame& f, loop::Stmt inner,
                            int64_t grid, int64_t block, std::string schedule,
                            const TensorCoreTile& tile);

/// Like finish, for a kernel of several phases over the whole grid (cross-block reductions):
/// one Stage node per phase, a grid barrier between phases, a cooperative launch. `scratch`
/// are global tensors the phases pass data through (kernel outputs besides op's).
loop::Kernel finish_phases(const te::ComputeOp& op, const Frame& f, std::vector<loop::Stmt> phases,
                           int64_t grid, int64_t block, std::string schedule,
                           std::vector<te::Tensor> scratch = {});

/// The operands of a GEMM-like TE and how its output axes split.
struct GemmParts {
  te::Expr a, b;  ///< body = a * b
  std::vector<te::IterVar> batch, rows, cols;
};
bool match_gemm(const te::ComputeOp& op, GemmParts& g);
/// `body` as a product a * b of two factors: a Mul itself, or a select between products (or a
/// zero) split into a select between the first factors times a select between the second ones,
/// exact because one branch is taken. A GEMM over a K axis concatenated from two operand pairs
/// reads this way: an LSTM's gate pre-activations, sum over k < I + H of
/// select(k < I, x*W, h*R), are [x|h] * [W|R]. False when body is no such product.
bool split_product(const te::Expr& body, te::Expr& a, te::Expr& b);

loop::Kernel schedule_injective(const te::ComputeOp& op, const ScheduleConfig& c);

/// How many of the output columns of the GEMM `gemm` (parts `g`, one row and one column axis)
/// the element-wise `op` reads per element: op's element (i, u) reading gemm's output only at
/// (i, G * u + k), 0 <= k < G, for G = gemm's columns / op's second extent (an LSTM's cell
/// update over its interleaved gates: 4). 0 when op does not read it that way.
int64_t tile_alignment(const te::ComputeOp& op, const te::ComputeOp& gemm, const GemmParts& g);
/// `op` (tile_alignment `group` against `gemm`) on gemm's tiles: the same tiles in the same
/// rounds of the same grid as the GEMM scheduled with `tile` under `c`, each block computing
/// the elements whose columns lie in its tiles, `threads` per block (the GEMM's block). The
/// merge then finds the dependence on the GEMM block-owned.
loop::Kernel schedule_tile_aligned(const te::ComputeOp& op, const te::ComputeOp& gemm,
                                   int64_t group, const gpu::Tile& tile, int64_t threads,
                                   const ScheduleConfig& c);
loop::Kernel schedule_reduction(const te::ComputeOp& op, const ScheduleConfig& c);
loop::Kernel schedule_gemm(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c);
/// The comment text, followed by the operand's tag ("a" or "b"), that precedes the SIMT GEMM's
/// load of an operand's first K tile into shared memory (the next statement of the same Seq):
/// merge_stages may issue that load before a grid barrier when the operand is a weight.
extern const char* const kFirstTileMarker;
/// Whether the tensor-core template takes this GEMM under `c`: a precision other than fp32,
/// float operands and output, and a block of whole warps.
bool tensor_core_eligible(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c);
loop::Kernel schedule_gemm_tc(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c);
/// The tensor-core GEMM whose store (from the shared accumulator tile) also computes `epilogue`
/// (each accepted by is_epilogue, in order); the tensors in `on_chip` stay in registers.
loop::Kernel schedule_gemm_tc_fused(const te::ComputeOp& op, const GemmParts& g,
                                    const std::vector<const te::ComputeOp*>& epilogue,
                                    const std::vector<te::Tensor>& on_chip,
                                    const ScheduleConfig& c);
/// Knobs of the Ampere-class mainloop that tests plant (docs/mainloop.md).
struct MmaOptions {
  bool swizzle = true;     ///< XOR-swizzled shared tiles; off: plain row-major (bank conflicts)
  bool drop_wait = false;  ///< leave out the cp.async wait of the K loop (a stale read)
};
/// The tensor-core GEMM on the Ampere-class mainloop: operands that are plain row-major reads
/// of the compute type stream through a ScheduleConfig::mma_stages-deep cp.async pipeline,
/// others are converted through registers one stage ahead; swizzled shared tiles feed ldmatrix
/// (tf32 B: conflict-free 32-bit loads) and mma.sync m16n8k16 / m16n8k8; `epilogue` is computed
/// from the accumulator registers. Called by schedule_gemm_tc_fused when mma_mainloop is on.
loop::Kernel schedule_gemm_mma(const te::ComputeOp& op, const GemmParts& g,
                               const std::vector<const te::ComputeOp*>& epilogue,
                               const std::vector<te::Tensor>& on_chip, const ScheduleConfig& c,
                               const MmaOptions& opts = {});
/// The pipeline depth schedule_gemm_mma uses for `tile` (tensor-core) at `precision` when the
/// config leaves it to the template, given the shared memory one block may take.
int64_t mma_pipeline_stages(const gpu::Tile& tile, gpu::Precision precision,
                            int64_t max_shared_per_block);
/// Shared bytes of one stage of that mainloop's operand tiles.
int64_t mma_stage_bytes(const gpu::Tile& tile, gpu::Precision precision);
/// How the operands of the GEMM `op` (parts `g`) read global memory, as that mainloop sees
/// them (gpu::MmaOperands: per operand the element bytes of a plain row-major read it can copy
/// by cp.async, else 0).
gpu::MmaOperands mma_operands(const te::ComputeOp& op, const GemmParts& g);

/// A GEMM whose store loop also computes `epilogue` (each accepted by is_epilogue, in order);
/// the tensors in `on_chip` (the GEMM's or an epilogue's output) stay in registers. With
/// `panel`, operand B is read from that kernel-lifetime shared buffer (weight_panel.h), which
/// this stage first fills when panel->load.
loop::Kernel schedule_gemm_fused(const te::ComputeOp& op, const GemmParts& g,
                                 const std::vector<const te::ComputeOp*>& epilogue,
                                 const std::vector<te::Tensor>& on_chip, const ScheduleConfig& c,
                                 const WeightPanel* panel = nullptr);

/// A tensor-core GEMM's block tile in 16x16 fragments: bm x bn x bk elements, fm x fn fragments
/// per warp, wr x wc warps. From ScheduleConfig::tc_tile when it is set, else from the block size
/// the caller asks for (a merged kernel runs every barrier stage on one block size): 4 warps as
/// 2x2, 2 as 2x1, 1 alone, each with 2x2 fragments, bk 32. `ks` is the MMA's k (bk must be a
/// multiple); `who` names the template in the checks' messages.
struct TcBlockTile {
  int64_t bm = 0, bn = 0, bk = 0, fm = 0, fn = 0, wr = 0, wc = 0;
  int64_t threads() const { return wr * wc * loop::kWarpSize; }
};
TcBlockTile tc_block_tile(const ScheduleConfig& c, int64_t ks, const std::string& who);

/// The stores of a GEMM's element `value` (before its init) and of each epilogue TE at the same
/// element, in order: each epilogue value kept in a one-element register buffer (`scalars`, to
/// be allocated Local around the stores) so that later epilogue TEs read it there. Tensors in
/// `on_chip` are not stored; `outputs` are those that are. `who` names the template in the
/// checks' messages.
struct ElementStores {
  std::vector<loop::Stmt> stores;
  std::vector<te::Tensor> outputs, scalars;
};
ElementStores gemm_element_stores(const te::ComputeOp& op, const te::Expr& value,
                                  const std::vector<const te::ComputeOp*>& epilogue,
                                  const std::vector<te::Tensor>& on_chip, const std::string& who);

}  // namespace souffle::schedule::detail
