/// \file Kernel timelines (docs/timeline.md): instrumenting compiled kernels, the record files a
/// runner writes, decoding them, the per-stage analysis, and the exports (Perfetto/Chrome trace
/// with one track per SM, CSV of the per-stage statistics).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/loop/timeline.h"
#include "core/session/bundle_manifest.h"
#include "core/session/compile.h"

namespace souffle {

namespace runner {
class Backend;
}

/// Instruments every built kernel (loop::instrument_timeline) before it is emitted; a kernel
/// already carrying an error is left alone.
/// Throws Cancelled between kernels once `cancel` is set.
void instrument_compiled_kernels(std::vector<CompiledKernel>& kernels,
                                 const loop::TimelineOptions& options,
                                 const std::atomic<bool>* cancel = nullptr);

// ---- record files ----

/// What a runner answers per kernel for `profile` with `timeline: true`.
struct TimelineFileRef {
  std::string kernel;
  std::string file;  ///< absolute path of the record file
  /// "globaltimer" (ns of the GPU's global timer, clock64 where it is too coarse) or "emulator"
  /// (the emulator's cost model in emulated cycles, never a GPU time).
  std::string timer;
  double clock_mhz = 0;  ///< SM clock of the device (cycles to time), the emulator's nominal 1000
};

/// Writes `words` (the kernel's timeline buffer as read back) to `path` with a header naming
/// the layout. Throws UserError naming the path when it cannot be written.
void write_timeline_file(const std::string& path, const loop::TimelineLayout& layout,
                         const std::string& timer, double clock_mhz, const std::string& words);

/// The runner side of `profile` with `timeline: true`: each instrumented kernel's records read
/// back from the backend and written to DIR/timeline/KERNEL.timeline. Throws RunnerError
/// (bad_request) naming DIR/bundle.json when the bundle was built without a timeline.
nlohmann::json write_runner_timelines(const BundleManifest& m, runner::Backend& backend);
std::vector<TimelineFileRef> timeline_refs_from_json(const nlohmann::json& answer);

// ---- decoded timelines ----

/// One span of one block: a stage's work or a wait.
struct TimelineSpan {
  int64_t block = 0, sm = 0;
  int stage = 0;
  loop::TimelineWait wait = loop::TimelineWait::None;  ///< None: the stage's work
  double begin_us = 0, end_us = 0;                     ///< from the kernel's first record
  double us() const { return end_us - begin_us; }
};

struct KernelTimeline {
  std::string kernel, file, timer;
  /// What the times are: "GPU global timer (ns)", "SM clock64 per SM, aligned at each block's
  /// first record (skew between SMs unknown)", "emulated cycles at a nominal 1 GHz (the
  /// emulator's cost model, not a GPU time)".
  std::string time_base;
  bool emulated = false;
  double clock_mhz = 0;
  int64_t grid = 0, rows = 0, stride = 1, slot_count = 0;
  std::vector<TimelineSpan> spans;  ///< by block, in program order
  std::vector<std::string> stage_names;
  std::vector<double> stage_est_us;  ///< the cost model's estimate per stage (-1: none)
  /// The schedule template of each stage (gpu::schedule_template of its schedule: "gemm",
  /// "injective", ...), the key of a calibration's per-template correction.
  std::vector<std::string> stage_templates;
  std::vector<int> stage_waves;     ///< loop::StageInfo::wave per stage (-1: not packed)
  std::string sample_note() const;  ///< "every block", "every 2nd block (160 of 320)"
};

/// Names the stages of `t` after `kernel`'s and adds the cost model's estimate of each stage
/// (schedule::price_kernel on the plan's spec and precision), for "estimated beside measured".
void attach_stage_info(KernelTimeline& t, const CompiledKernel& kernel,
                       const plan::FusionPlan& plan);

/// Reads and decodes a record file. Throws UserError naming the file for a truncated file, a
/// bad header or a record kind nobody decodes (naming the block and slot).
KernelTimeline read_timeline_file(const std::string& path);
/// The bytes of a record file (what write_timeline_file writes).
std::string timeline_file_bytes(const loop::TimelineLayout& layout, const std::string& timer,
                                double clock_mhz, const std::string& words);
/// Decodes the bytes of a record file; `name` stands for the file in errors.
KernelTimeline decode_timeline(const std::string& bytes, const std::string& name);

// ---- analysis ----

struct StageTiming {
  int stage = 0;
  std::string name;
  int blocks = 0;  ///< recorded blocks that ran it
  double median_us = 0, min_us = 0, max_us = 0;
  int64_t slowest_block = -1;
  double first_begin_us = 0, last_end_us = 0;
  double est_us = -1;         ///< the cost model's estimate (-1: none)
  std::string template_name;  ///< its schedule template ("" where unknown)
};

struct WaitTiming {
  int before_stage = 0;  ///< the stage the wait comes before
  loop::TimelineWait kind = loop::TimelineWait::None;
  int blocks = 0;
  double total_us = 0, max_us = 0;
  int64_t straggler = -1;    ///< the block that arrived last (its wait was shortest)
  int straggler_stage = -1;  ///< the stage the straggler ran last before arriving
};

/// Stages packed side by side into one wave (schedule/wavefront.h) on disjoint blocks.
struct WaveTiming {
  int wave = 0;
  int stages = 0;
  double span_us = 0;     ///< first start to last end of its stages
  double slowest_us = 0;  ///< the longest block time of its stages
  double mean_us = 0;     ///< the mean over its stages of their longest block time
  int slowest_stage = -1;
  /// mean / slowest: 1 when its stages take as long as one another, near 0 when one stage
  /// keeps the others' blocks waiting.
  double balance() const { return slowest_us > 0 ? mean_us / slowest_us : 1; }
  /// The sum of its stages' longest block times over its span: how much of their work the
  /// packing overlapped (1: none, n: n stages fully side by side).
  double overlap = 0;
};

struct TimelineAnalysis {
  std::string kernel, time_base, sample;
  bool emulated = false;
  double span_us = 0;               ///< first record to last
  double work_us = 0, wait_us = 0;  ///< summed over recorded blocks
  double wait_share() const { return work_us + wait_us > 0 ? wait_us / (work_us + wait_us) : 0; }
  std::vector<StageTiming> stages;  ///< by stage index, stages that ran
  std::vector<WaitTiming> waits;    ///< in program order
  std::vector<WaveTiming> waves;    ///< waves of two or more stages, by wave index
  int slowest_stage = -1;           ///< index into stages (largest max block time)
  int longest_wait = -1;            ///< index into waits (largest total)
  /// The chain that decided the kernel's length: per wait, the straggler's last stage, then
  /// the stage that ended last (stage indices, in order).
  std::vector<int> critical_path;
};

TimelineAnalysis analyse_timeline(const KernelTimeline& t);
/// Three or four lines for people: span, work vs wait share, the slowest stage and the longest
/// wait (with its straggler), labelled as emulated where it is.
std::string timeline_summary(const TimelineAnalysis& a);

/// The analyses as JSON: per kernel the totals, the slowest stage, the longest wait, the
/// critical path and every stage and wait.
nlohmann::json timeline_analysis_json(const std::vector<TimelineAnalysis>& analyses);

// ---- exports ----

/// Chrome trace JSON (opens in ui.perfetto.dev): one process per kernel, one track per SM,
/// each stage a slice and each wait a slice named after what it waits for.
std::string timeline_trace_json(const std::vector<KernelTimeline>& timelines);
/// CSV of the per-stage statistics of every kernel (one row per stage).
std::string timeline_csv(const std::vector<TimelineAnalysis>& analyses);

}  // namespace souffle
