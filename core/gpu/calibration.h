/// \file Measured constants of one GPU (souffle-runner's `calibrate`), read by the cost model.
#pragma once

#include <string>
#include <vector>

namespace souffle::gpu {

/// One grid barrier's cost at one grid size, measured by a kernel that only synchronizes.
struct BarrierSample {
  int blocks = 0;         ///< grid size (blocks_per_sm x SMs)
  int blocks_per_sm = 0;  ///< co-resident blocks per SM the sample ran at
  int threads = 0;        ///< threads per block
  double us = 0;          ///< one barrier, median over the timed launches
};

/// y = base + slope * x, by least squares.
struct LinearFit {
  double base = 0, slope = 0;
  double at(double x) const { return base + slope * x; }
};

/// Least-squares line through (blocks, us) of `samples`; a single sample gives a flat line, none
/// gives zero.
LinearFit fit_barrier_cost(const std::vector<BarrierSample>& samples);

/// A correction of the cost model's stage estimates for one schedule template, measured from a
/// GPU timeline (souffle-cli calibrate --from-timeline): the ratio of each stage's measured time
/// (its slowest block) to the cost model's estimate from the spec, the median over the stages of
/// that template. The pricer multiplies its estimate of a stage of the template by it; the
/// result is still an estimate.
struct StageCorrection {
  std::string template_name;  ///< schedule_template(): "gemm", "gemm_tc", "injective", ...
  double ratio = 1;           ///< measured / estimated, median over `stages` stages
  int stages = 0;
  double min_ratio = 0, max_ratio = 0;  ///< the spread of the stages' ratios
  /// Measured on: the device as its driver names it, the driver version, the date (UTC).
  std::string device;
  int driver_version = 0;
  std::string date;
  std::string source;  ///< the timeline file the ratios were read from
  /// "gemm: 1.82 (median of 12 stages) measured on NVIDIA A100, driver 13000, 2026-12-06"
  std::string describe() const;
};

/// The template family of a stage's schedule (loop::StageInfo::schedule), the key of its
/// correction: the schedule's first word ("gemm 64x64x16 tile 4x4" -> "gemm", "gemm_tc f16
/// tensor-core ..." -> "gemm_tc", "reduction, warp shuffles" -> "reduction"), "attention" for
/// fused attention ("attention_mma" on tensor cores); "" for an empty schedule.
std::string schedule_template(const std::string& schedule);

/// What the runner measured on one device. A figure of 0 was not measured; the cost model then
/// takes the GPU spec's figure and says so.
struct Calibration {
  static constexpr int kVersion = 1;
  std::string device;              ///< "NVIDIA H200"
  std::string compute_capability;  ///< "9.0"
  int sm_count = 0;
  int driver_version = 0;  ///< 13000 for CUDA 13.0
  std::string date;        ///< ISO 8601, UTC, when it was measured
  std::string clocks;      ///< clocks seen while measuring, in words ("SM 1980 MHz, ...")
  /// One kernel launch, back to back on one stream, from the end of one to the end of the next:
  /// median over the timed launches of an empty kernel.
  double launch_overhead_us = 0;
  /// The same launches replayed as a CUDA graph (what is left when host overhead is gone).
  double graph_launch_us = 0;
  std::vector<BarrierSample> grid_barrier;  ///< ascending by blocks
  LinearFit grid_barrier_fit;               ///< fit_barrier_cost(grid_barrier)
  double dram_bandwidth_gbps = 0;           ///< copy kernel: bytes read + written per second, 1e9
  /// The project's own GEMM kernels (the SIMT template, and the tensor-core one at fp16) on a
  /// 4096-cubed fp32 problem with the tuner's tile for the device, checked against the known
  /// result; 0: not measured (gemm_note says why).
  double gemm_fp32_tflops = 0;
  double gemm_fp16_tflops = 0;
  std::string gemm_fp32_tile, gemm_fp16_tile;  ///< the tiles timed ("128x128x16 tile 8x8 ...")
  /// The tensor-core mainloop timed for gemm_fp16_tflops, as gpu::MainloopStructure::template_name
  /// names it ("wmma, synchronous", "mma.sync, cp.async depth 3"); the cost model takes the rate
  /// only for stages built the same way. Empty in files written before the field: the
  /// synchronous wmma template, the only one there was.
  std::string gemm_fp16_template;
  std::string gemm_note;  ///< why a GEMM rate is missing; empty when none
  /// Per-tile flags at one block per SM: one round of every block releasing its counter and
  /// waiting on the next block's (a release and one awaited tile), and what each further
  /// awaited tile adds (measured with four). 0: not measured.
  double flag_round_us = 0, flag_tile_us = 0;
  /// Per-template corrections of stage estimates measured from GPU timelines (empty: none).
  std::vector<StageCorrection> stage_corrections;
  std::string file;  ///< where it was read from (empty when made in memory)

  bool has_barrier() const { return !grid_barrier.empty(); }
  /// The correction for `template_name`, null when there is none.
  const StageCorrection* stage_correction(const std::string& template_name) const;
  bool has_flags() const { return flag_round_us > 0; }
};

/// One grid barrier over `blocks` blocks: linear between the two samples around it, the fit
/// beyond the samples (never below the smallest sample). 0 without samples.
double grid_barrier_us(const Calibration& c, int blocks);

/// Reads a calibration file. Throws UserError naming the file and the field for a bad one (not
/// JSON, a future version, a negative or non-finite figure, unordered samples).
Calibration load_calibration(const std::string& path);
/// Same, from JSON text; `file` names the source in errors.
Calibration parse_calibration(const std::string& json_text, const std::string& file);
/// The file's text (what load_calibration reads back); grid_barrier_fit is recomputed on reading.
std::string calibration_json(const Calibration& c);

}  // namespace souffle::gpu
