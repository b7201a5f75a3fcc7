/// \file Cost models: v1 (per-kernel roofline of a plan's partitions) and v2 (per stage of a
/// built kernel: FLOPs at the rate the stage reaches, bytes at DRAM or L2 bandwidth, occupancy
/// and waves, launch and grid-barrier costs from the GPU spec or a calibration file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu/calibration.h"
#include "core/gpu/spec.h"

namespace souffle::gpu {

/// The compute type of GEMM-like kernels, and so which peak arithmetic rate their FLOPs run at:
/// fp32 on the SIMT cores, tf32/fp16/bf16 on the tensor cores (fp32 accumulation).
enum class Precision : uint8_t { FP32, TF32, FP16, BF16 };
const char* precision_name(Precision p);  ///< "fp32", "tf32", "fp16", "bf16"
/// The precision named `name` ("fp32", "tf32", "fp16", "bf16", any case); UserError otherwise.
Precision parse_precision(const std::string& name);
/// Peak FLOP/s of `spec` at `p`; falls back to FP32 where the GPU has no such rate. BF16 runs at
/// the FP16 tensor-core rate on GPUs that have bf16 tensor cores (compute capability 8.0 on).
double peak_flops(const GpuSpec& spec, Precision p);

/// How one tensor touches one kernel.
struct KernelTensor {
  std::string name;
  int64_t bytes = 0;
  bool produced_inside = false;  ///< written by a stage of this kernel
  bool needed_outside = false;   ///< read by a later kernel or a model output
  /// Read by a stage of this kernel that is separated from its producer by a grid sync (it must
  /// survive the sync); false when every reader is in the producer's stage (registers).
  bool crosses_sync = false;
  /// Stages (in the kernel's order) from the producer to the last reader inside the kernel: the
  /// tensor occupies on-chip memory only over this range. -1 when unknown (the whole kernel).
  int first_stage = -1, last_stage = -1;
};

struct KernelTraffic {
  int64_t dram_bytes = 0;
  int64_t read_bytes = 0, write_bytes = 0;
  std::vector<std::string> on_chip;  ///< intermediates kept in shared memory/registers
  std::vector<std::string> spilled;  ///< intermediates too big for on-chip memory (round trip)
};

/// On-chip bytes a grid-synchronized kernel can keep across syncs: shared memory of every SM
/// (registers are left to the stages themselves).
int64_t on_chip_capacity(const GpuSpec& spec);

/// Each global tensor is read once and written once per kernel: tensors not produced inside are
/// read; tensors needed outside are written. An intermediate (produced and read only inside) costs
/// nothing when its readers share its producer's stage, and is kept on chip across syncs when it
/// fits the remaining on-chip capacity (largest first is not attempted: tensors are taken in the
/// given order); otherwise it is written and read back.
/// Places the tensors that cross a grid sync on chip while, at every stage of their live range,
/// the tensors live there fit in `on_chip_bytes` (first touch first); the rest round-trip DRAM.
KernelTraffic kernel_traffic(const std::vector<KernelTensor>& tensors, int64_t on_chip_bytes);

struct KernelCost {
  double compute_us = 0, memory_us = 0, launch_us = 0, sync_us = 0;
  double total_us = 0;           ///< max(compute, memory) + launch + syncs
  const char* bound = "memory";  ///< "compute" or "memory"
};

/// Roofline: max(flops / peak, bytes / bandwidth) plus the launch overhead plus the grid-sync
/// overhead per sync.
KernelCost kernel_cost(const GpuSpec& spec, int64_t flops, int64_t dram_bytes, int grid_syncs,
                       Precision precision = Precision::FP32);

// ---- cost model v2 ----

/// The constants cost model v2 prices with, and where each comes from: the GPU spec's datasheet
/// figures, or those a calibration file measured on a device (a figure it lacks stays the
/// spec's). `source` says which in words.
struct CostConstants {
  double launch_us = 0;      ///< one kernel launch
  double dram_gbps = 0;      ///< DRAM bandwidth, 1e9 bytes/s
  double l2_gbps = 0;        ///< L2 bandwidth: kL2BandwidthFactor x DRAM (no spec lists it)
  int64_t l2_bytes = 0;      ///< a tensor re-read within this many bytes is served by L2
  double simt_tflops = 0;    ///< FP32 FLOP/s of the SIMT cores (every non-tensor-core stage)
  double tensor_tflops = 0;  ///< the tensor-core rate at the plan's precision (0: none)
  /// tensor_tflops is a calibration's measured rate of the template tensor_template, not the
  /// spec's peak; a stage of another template is priced from its structure.
  bool tensor_calibrated = false;
  std::string tensor_template;  ///< the calibrated template (MainloopStructure::template_name)
  double barrier_us = 0;        ///< one grid barrier at one block per SM (spec figure)
  /// Per-tile flags (see flag_wait_cost_us): a producer block's release (a block barrier, a
  /// fence and an atomic add), and one awaited counter's acquire load by the waiting thread.
  double flag_release_us = 0, flag_poll_us = 0;
  const Calibration* calibration = nullptr;  ///< measured barrier cost against grid size
  Precision precision = Precision::FP32;
  std::string source;  ///< "spec A100-SXM4-40GB" or "calibration FILE (device NAME)"
  bool calibrated = false;
};

/// L2 bandwidth relative to DRAM where no measurement says otherwise (A100: ~2.3x, H100: ~1.7x).
constexpr double kL2BandwidthFactor = 2.0;

/// The constants of `spec` at `precision`, with those `calibration` measured (null: none)
/// taking the spec's place. The calibration must outlive the result.
CostConstants cost_constants(const GpuSpec& spec, Precision precision,
                             const Calibration* calibration = nullptr);

/// One grid barrier over `blocks` co-resident blocks: the calibration's measured curve when
/// there is one, else the spec's figure taken at one block per SM and growing with the blocks
/// each SM's arrival adds (0.75 + 0.25 x blocks / SMs of it).
double grid_barrier_cost_us(const GpuSpec& spec, const CostConstants& c, int64_t blocks);

/// Shares of one grid barrier's cost (at one block per SM) that the flag primitives are taken
/// to cost where nothing measured them. A grid barrier is built from the same primitives — a
/// block barrier, a fence and an atomic add on arrival, then acquire loads of a counter until
/// the last block arrives — so a flag release is priced as the arrival part (a quarter) and
/// each awaited counter as one acquire round trip through L2 (a sixth; the waiting thread
/// loads the counters one after another). Estimates, not measurements: the runner's
/// calibration measures the grid barrier, not these.
constexpr double kFlagReleaseShare = 0.25, kFlagPollShare = 1.0 / 6.0;

/// Per-tile flags ordering one stage after `waits` producer stages, each consumer block waiting
/// on at most `tiles` producer blocks of each: every producer block releases once per stage,
/// every consumer block polls its awaited counters one by one.
double flag_wait_cost_us(const CostConstants& c, int64_t tiles, int waits = 1);

/// How a tensor-core stage's mainloop is built, as its loop IR shows (schedule::price_kernel
/// reads it): how the operand tiles reach shared memory, how many are in flight while one is
/// computed, which MMA instruction computes and what the block tile is. The cost model prices a
/// tensor-core stage from this (see mainloop_cost), never from the spec's peak alone.
struct MainloopStructure {
  enum class Staging : uint8_t {
    None,         ///< no tensor-core mainloop recognized
    Synchronous,  ///< global loads to registers, stores to shared, block barriers (wmma template)
    Pipelined,    ///< cp.async copies in commit groups, waited with wait_group N
  };
  Staging staging = Staging::None;
  /// Operand tiles in flight while one is computed: 1 for synchronous staging; N + 1 for
  /// cp.async groups waited with wait_group N (the N still in flight and the one computed).
  int depth = 1;
  std::string instruction;  ///< "wmma" (Fragment*), "mma.sync" (MmaSync) or "wgmma" (WgmmaMma)
  int64_t warps = 0;        ///< warps per block
  int64_t tile_elems = 0;   ///< accumulator (output) elements of one block tile
  int64_t k_per_step = 0;   ///< reduction elements one mainloop trip consumes (0: unknown)
  /// Trips of the mainloop as the loop IR runs them per tile (0: unknown). A tile mostly past
  /// the problem's edge (M = 1 in a 16-row tile) runs every one of them, though its own FLOPs
  /// would fill fewer: mainloop_cost never prices fewer.
  int64_t trips = 0;
  int operand_bytes = 2;  ///< bytes of one staged operand element (f16/bf16 2, tf32 4)
  /// The accumulators go back through a shared tile before the epilogue (the wmma template);
  /// false: the epilogue runs from the accumulator registers.
  bool epilogue_through_shared = false;
  bool known() const { return staging != Staging::None; }
  /// "wmma, synchronous" or "mma.sync, cp.async depth 3": the template as a calibration names it.
  std::string template_name() const;
  /// The template name and the tile: "mma.sync, cp.async depth 3; 4 warps, 4096-element tile,
  /// k 32 per trip".
  std::string describe() const;
};

/// What one stage of a built kernel does, as the v2 model reads it.
struct StageWork {
  int64_t flops = 0;
  bool tensor_core = false;     ///< its arithmetic runs on tensor cores (WMMA fragments)
  MainloopStructure mainloop;   ///< how its tensor-core mainloop is built (tensor_core only)
  int64_t dram_read_bytes = 0;  ///< global reads not served by L2 (first touch, long reuse)
  int64_t l2_read_bytes = 0;    ///< global reads of a tensor touched within the L2's size
  int64_t write_bytes = 0;      ///< global writes (written back to DRAM)
  int64_t grid = 1;             ///< blocks that run the stage
  int64_t block = 1;            ///< threads per block (the kernel's)
  int regs = 32;                ///< registers per thread (the kernel's, or its cap)
  int64_t smem = 0;             ///< shared bytes per block (the kernel's arena)
};

/// A tensor-core mainloop priced from its structure (mainloop_cost): per SM, each mainloop trip
/// of the co-resident blocks costs the MMAs at the instruction's rate per SM and the ldmatrix
/// and staging traffic at the SM's shared-memory bandwidth (compute), and the operand tiles at
/// the SM's share of L2 bandwidth behind one memory latency (load). Synchronous staging costs
/// load plus compute; a pipeline of depth d their maximum, with the load's latency divided
/// over the d tiles in flight. An f32 ring under fp16/bf16 (4-byte staged operands of 2-byte
/// MMAs) adds its conversion to the shared-memory traffic, and a trip of one block is never
/// shorter than that conversion, its second barrier and the block's own MMAs or ldmatrix.
/// Then the pipeline's fill and the epilogue, per wave of blocks.
struct MainloopCost {
  bool priced = false;      ///< a structure was priced (false: a SIMT stage, or none recognized)
  bool calibrated = false;  ///< priced at a calibration's measured rate for this template
  double mma_tflops =
      0;  ///< the MMA instruction's rate over the whole GPU (the spec's peak x share)
  double peak_tflops = 0;               ///< the spec's peak at the precision
  int64_t steps = 0;                    ///< mainloop trips per block
  double step_us = 0;                   ///< one trip of the co-resident blocks of an SM
  double compute_us = 0, load_us = 0;   ///< of one trip, per SM (load: latency + transfer)
  double fill_us = 0, epilogue_us = 0;  ///< per wave of blocks
  double total_us = 0;                  ///< every wave
  std::string from;                     ///< what it was priced from, in words
};

struct StageCost {
  double flop_us = 0, dram_us = 0, l2_us = 0;
  MainloopCost mainloop;  ///< how flop_us of a tensor-core stage was priced
  double total_us = 0;    ///< max(flop, dram + l2) after waves and occupancy
  int blocks_per_sm = 0;
  int64_t waves = 0;
  double efficiency = 1;  ///< fraction of the GPU's rate the stage's grid reaches (<= 1)
  const char* bound = "memory";
  /// total_us was multiplied by a calibration's measured correction for the stage's template
  /// (1: none); `corrected` says which, in words. The result is still an estimate.
  double correction = 1;
  std::string corrected;
};

/// Multiplies `cost`'s time by `sc`'s ratio and says so (StageCost::correction, corrected).
void apply_stage_correction(StageCost& cost, const StageCorrection& sc);

/// MMA share of the spec's tensor-core peak that `instruction` ("wmma", "mma.sync", "wgmma") can
/// reach on `spec`: 1 on compute capability 8.x; on 9.0 the peak needs warpgroup MMA (wgmma),
/// and the warp-level mma.sync path reaches about five eighths of it (published microbenchmarks
/// of Hopper: ~62%); wgmma 0.8 (the best published wgmma GEMMs reach 75-80% of the dense peak).
double mma_instruction_share(const GpuSpec& spec, const std::string& instruction);
/// FP32 lanes per SM by compute capability (64 on 7.x and 8.0, 128 on 8.6 and later): with the
/// spec's FP32 peak it gives the SM clock the peaks assume.
int fp32_lanes_per_sm(const GpuSpec& spec);
/// The SM clock (GHz) the spec's FP32 peak assumes.
double sm_clock_ghz(const GpuSpec& spec);
/// Shared-memory bandwidth of one SM: 128 bytes per clock.
constexpr double kSharedBytesPerClock = 128;
/// Latency of one mainloop tile load from L2/DRAM, in SM clocks (an estimate between an L2 hit,
/// ~250, and a DRAM access, ~600; no calibration measures it yet).
constexpr double kMainloopLatencyClocks = 500;
/// One block barrier whose warps arrive together, in SM clocks (an estimate: published
/// microbenchmarks of Volta and Ampere put __syncthreads at a few tens of clocks). Priced where
/// a mainloop trip has a barrier no co-resident block hides: the f32 ring's second barrier.
constexpr double kBlockBarrierClocks = 40;
/// When the tensor pipe and the shared-memory pipe of an SM are both busy, this share of the
/// lesser of the two is not hidden behind the greater (an estimate: ldmatrix feeds the MMAs of
/// the same warp, and neither template double-buffers its fragments).
constexpr double kPipeInterference = 0.25;

/// Prices the tensor-core mainloop of a stage from its structure (w.mainloop), with `per_sm`
/// co-resident blocks in each of `waves` waves; a calibration's measured tensor-core rate takes
/// the place of the structure only when it was measured for the same template
/// (Calibration::gemm_fp16_template). Not priced (priced == false) without a structure.
MainloopCost mainloop_cost(const GpuSpec& spec, const CostConstants& c, const StageWork& w,
                           int64_t per_sm, int64_t waves);

/// A stage: max(FLOPs at its rate, bytes at DRAM and L2 bandwidth), each scaled by the fraction
/// of the GPU its grid keeps busy: waves of co-resident blocks (blocks per SM from its block,
/// registers and shared memory), the SMs a short grid leaves idle, and the warps per SM needed
/// to hide latency. Never below the stage's own roofline at the full rates.
StageCost stage_cost(const GpuSpec& spec, const CostConstants& c, const StageWork& w);

}  // namespace souffle::gpu
