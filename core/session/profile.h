/// \file Profiling a plan: its kernels compiled for the runner's device, written as a bundle,
/// loaded by souffle-runner (CUDA or emulator backend), run, verified against the reference
/// data and timed; measured figures beside the plan's estimates.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/cupti.h"
#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_kernels.h"
#include "core/session/timeline.h"

namespace souffle {

class RunnerProcess;

struct ProfileOptions {
  std::string backend = "cuda";  ///< "cuda" or "emulator"
  /// How to start souffle-runner ("ssh gpu-host souffle-runner"); empty: the one beside this
  /// executable. `--backend B` is appended.
  std::string runner;
  int runs = 20, warmup = 3;
  bool graph = true;  ///< also replay the whole run as a CUDA graph
  /// Outputs are judged element-wise, |got - want| <= atol + rtol |want| (compare.h); unset, the
  /// runner takes the default of the plan's precision and each output's type.
  std::optional<double> rtol, atol;
  /// Where bundles are written (one folder per strategy); empty: a temporary folder, removed
  /// afterwards. A remote runner needs a folder it sees at the same path.
  std::string bundle_dir;
  std::string data_dir;  ///< reference data (test_data_set_0); empty: the model's folder
  /// Grid barriers or per-tile flags between dependent stages (CompileOptions::sync).
  schedule::SyncMode sync = schedule::SyncMode::Grid;
  double timeout_s = 600;  ///< per request
  /// How the user sets timeout_s, named when a request runs past its limit (`--timeout`);
  /// empty: the message says only the limit.
  std::string timeout_option = "--timeout";
  /// What the user can do instead when there is no GPU, in the message that says so.
  std::string no_gpu_hint = "--backend emulator runs the kernels in the CPU emulator";
  /// One more run under CUPTI's range profiler for DRAM bytes and achieved occupancy per kernel
  /// (where the device allows it).
  bool counters = true;
  /// The NVRTC compile cache (in memory and on disk; CompileOptions::use_cache).
  bool use_cache = true;
  /// Timeline records in every kernel (docs/timeline.md): the runner answers them per kernel,
  /// decoded into ProfileReport::timelines. Off by default.
  bool timeline = false;
  /// With `timeline`: a folder where each kernel's record file is kept, as
  /// STRATEGY.KERNEL.timeline (what `report --timeline` reads); empty: not kept.
  std::string timeline_keep_dir;
  std::function<void(const std::string&)> progress;
  const std::atomic<bool>* cancel = nullptr;
};

struct KernelMeasurement {
  std::string name;
  int partition = 0;
  gpu::Stats time_us;  ///< per launch, over the timed runs
  gpu::Stats gap_us;   ///< idle time before it (after the previous kernel of the run)
  double est_us = 0;   ///< the plan's estimate of its partition (shared by split launches)
  int64_t grid = 0;
  int block = 0;
  bool cooperative = false;
  int registers = 0;
  std::string image;  ///< what the runner loaded ("cubin sm_90", "ptx sm_80 (JIT ...)")
  /// The bundle file it was loaded from: launches of the same code name the same file, one
  /// image loaded once (docs/compile_dedup.md).
  std::string image_file;
  /// Hardware counters of one run (CUPTI's range profiler); -1 where not measured.
  double dram_read_bytes = -1, dram_write_bytes = -1;
  double achieved_occupancy = -1;  ///< active warps over the SM's peak, 0..1
  /// The plan's estimate of its partition's DRAM bytes (shared by split launches, as est_us).
  int64_t est_dram_bytes = 0;
  bool has_counters() const { return dram_read_bytes >= 0 || achieved_occupancy >= 0; }
};

/// One output as souffle-runner's verify judged it (compare.h): the verdict, the tolerance and
/// the errors beside it.
struct OutputMeasurement {
  std::string name;
  double rel_l2 = 0;
  bool ok = false;
  double rtol = 0, atol = 0;
  int64_t mismatches = 0, elements = 0;
  double max_abs = 0, max_rel = 0;
  std::string detail;  ///< Comparison::describe()
};

/// One plan measured. Times are GPU times only when backend is "cuda"; the emulator's are CPU
/// wall times, labelled so everywhere they are shown.
struct ProfileReport {
  std::string model, strategy, precision, gpu_spec;  ///< what was planned, for which spec
  std::string plan_key;  ///< plan_key() of the plan measured (with "|sync=S" unless grid)
  /// How dependent stages were ordered across blocks: "grid", "flags" or "auto".
  std::string sync = "grid";
  /// The kernels' forms: stages in waves, weights in shared memory where they fit (the plan's
  /// defaults), or off for comparison (plan::PlanOptions).
  bool waves = true, weight_panels = true;
  std::string backend, timer, timer_note;  ///< timer: "cupti", "cuda-events", "emulator"
  std::string device, compute_capability, arch, clocks, date, runner;
  int driver_version = 0;
  int runs = 0, warmup = 0;
  std::vector<KernelMeasurement> kernels;
  double kernels_us = 0;     ///< sum of the kernels' medians
  double end_to_end_us = 0;  ///< median, first launch to last end (events)
  double zeroing_us = 0;     ///< median time clearing written buffers before a run
  double graph_us = 0;       ///< median of the run replayed as a CUDA graph (0: none)
  std::string graph_note;
  std::string counters_note;  ///< why there are no hardware counters, when there are none
  /// Activity records CUPTI dropped (its buffers overflowed): the kernels were then timed by
  /// CUDA events, and timer_note says so.
  int64_t dropped_records = 0;
  double est_total_us = 0;  ///< the plan's estimate
  std::vector<OutputMeasurement> outputs;
  bool verified = false;    ///< every output element within its tolerance of the reference
  std::string verify_note;  ///< why nothing was verified, when nothing was
  double compile_ms = 0, load_ms = 0;
  std::string error, error_kernel;
  std::vector<KernelTimeline> timelines;  ///< with ProfileOptions::timeline, per kernel
  bool ok() const { return error.empty() && (verified || outputs.empty()); }
  bool gpu_time() const { return backend == "cuda"; }
};

/// What identifies a plan's kernels for a stored measurement: strategy, GPU spec, precision and
/// the edits applied. A measurement is shown again only for a plan with the same key.
std::string plan_key(const plan::FusionPlan& plan);

nlohmann::json profile_report_json(const ProfileReport& r);

/// One line on how the outputs compared (compare.h), for the explorer and the CLI: "outputs
/// verified: every element within rtol 0.0001 + atol 1e-05 (max abs error 1.4e-06, max relative
/// L2 1.8e-07)", "outputs differ: NAME: DETAIL", "not verified: NOTE", or "" when there was no
/// output to verify.
std::string verification_summary(const ProfileReport& r);
ProfileReport profile_report_from_json(const nlohmann::json& j);

/// Why profiling with `options` cannot start on this machine, or "" when it may: a local CUDA
/// backend needs a driver and a device; any backend needs a runner to start.
std::string profile_unavailable_reason(const ProfileOptions& options);

/// A started souffle-runner and what it said in hello; one per profile command or GUI run.
class ProfileSession {
 public:
  /// Starts the runner and greets it. Throws UserError when profiling cannot start (no runner,
  /// no GPU where the backend needs one: the message names what is missing).
  explicit ProfileSession(ProfileOptions options);
  ~ProfileSession();

  const nlohmann::json& hello() const { return m_hello; }
  /// One request to the runner, with this session's time limit, progress and cancel; the
  /// answer, or RunnerFailure.
  nlohmann::json call(const nlohmann::json& request);
  bool emulator() const { return m_options.backend == "emulator"; }
  std::string device() const;  ///< "NVIDIA H200", "CPU emulator"
  std::string arch() const;    ///< "sm_90"; "" on the emulator
  /// The built-in GPU spec of the runner's device (its name without the vendor), if any.
  std::optional<gpu::GpuSpec> device_spec() const;

  /// Compiles `plan` for the device, writes its bundle, and has the runner load, run, verify
  /// and time it. Never throws for a kernel that fails: the report's error names it.
  /// `dims`, `bind` and `shapes` are how the model was imported (recorded in the bundle).
  ProfileReport profile(const std::string& model_path, const plan::FusionPlan& plan,
                        const std::map<std::string, int64_t>& dims = {},
                        const std::vector<std::string>& bind = {},
                        const std::vector<std::string>& shapes = {});

 private:
  ProfileOptions m_options;
  std::unique_ptr<RunnerProcess> m_runner;
  nlohmann::json m_hello;
  std::string m_command;
};

}  // namespace souffle
