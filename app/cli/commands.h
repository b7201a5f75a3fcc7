/// \file The souffle-cli subcommands; each returns the process exit code (0 ok, 1 check failed,
/// 2 bad usage or a model it cannot take).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace souffle {
struct CompileReport;
}

namespace souffle::cli {

struct CommonOptions {
  std::string model;
  bool json = false;
  bool quiet = false;  ///< no progress on stderr (plan, compile; only on a terminal anyway)
  std::vector<std::string> dims;    ///< "name=value"
  std::vector<std::string> binds;   ///< "NAME=VALUE": a model input fixed as a constant
  std::vector<std::string> shapes;  ///< "NAME=D0,D1,...": sizes for an input's unsized dims
};

struct VerifyOptions {
  CommonOptions common;
  std::string data_dir;  ///< default: the model's folder
  std::string level = "te";
  /// Element-wise tolerance (core/session/compare.h); unset: the default of the precision.
  std::optional<double> rtol, atol;
  double tolerance = -1;  ///< deprecated --tolerance (a relative L2 limit): warned about, unused
  bool f64 = false;
  std::string strategy;  ///< verify the TE program this strategy transforms to ("" = lowered)
  std::string precision = "fp32";  ///< compute type of the kernels (--level kernels)
  std::string sync = "grid";       ///< grid, flags or auto (--level kernels)
  bool no_waves = false;           ///< kernels in program order (plan::PlanOptions::waves off)
  bool no_weight_panels = false;   ///< plan::PlanOptions::weight_panels off
  bool wgmma = false;              ///< plan::PlanOptions::wgmma (the Hopper mainloop on sm_90)
  std::string gpu = "a100";        ///< the kernels are built for this spec (--level kernels)
  bool timeline = false;  ///< --level kernels: timeline records, analysed (docs/timeline.md)
};

struct PlanCliOptions {
  CommonOptions common;
  std::string strategy = "souffle";
  std::string gpu = "a100";        ///< a built-in name or a spec file
  std::string precision = "fp32";  ///< compute type of GEMM-like kernels (cost and kernels)
  std::string decisions;           ///< a decisions JSON file
  std::string dump_after;          ///< print this step's snapshot (to stderr)
  std::string sync = "grid";       ///< grid, flags or auto (plan::PlanOptions::sync)
  std::string calibration;         ///< a calibration file (souffle-runner calibrate)
  bool no_waves = false;           ///< kernels in program order (plan::PlanOptions::waves off)
  bool no_weight_panels = false;   ///< plan::PlanOptions::weight_panels off
  bool wgmma = false;              ///< plan::PlanOptions::wgmma (the Hopper mainloop on sm_90)
  bool no_cache = false;           ///< every partition built to be priced (no price cache)
};

struct CompileCliOptions {
  CommonOptions common;
  std::string out;                    ///< bundle folder ("" compiles and reports only)
  std::string archs = "sm_80,sm_90";  ///< comma-separated NVRTC targets
  std::string strategy = "souffle";
  std::string gpu = "a100";        ///< co-residency is checked on this GPU
  std::string data_dir;            ///< test_data_set_0's folder (default: the model's)
  int threads = 0;                 ///< NVRTC compilations at once (0: cores)
  std::string precision = "fp32";  ///< compute type of GEMM-like kernels
  int batch = 1;                   ///< kernels per NVRTC unit (report only; a bundle needs 1)
  std::string calibration;         ///< a calibration file: the plan is priced with it
  std::string decisions;           ///< a decisions JSON file: the plan with these edits
  std::string sync = "grid";       ///< grid, flags or auto (KernelBuildOptions::sync)
  bool no_waves = false;           ///< kernels in program order (plan::PlanOptions::waves off)
  bool no_weight_panels = false;   ///< plan::PlanOptions::weight_panels off
  bool wgmma = false;  ///< plan::PlanOptions::wgmma; --arch then defaults to sm_90 (sm_90a)
  /// How GEMM tiles are chosen: "model" (the tile cost model) or "measure" (its top candidates
  /// timed on the runner's GPU).
  std::string tune = "model";
  std::string runner;     ///< --tune measure: how to start souffle-runner (default: beside this)
  int tune_top = 8;       ///< --tune measure: candidates timed per GEMM problem
  std::string tune_dir;   ///< --tune measure: where candidate bundles go (default: a temp folder)
  bool timeline = false;  ///< timeline records in every kernel (docs/timeline.md)
  /// NVRTC compiles every kernel: the compile cache is neither read nor written.
  bool no_cache = false;
  /// Each launch compiled alone, also where launches run the same code (CompileOptions::dedup).
  bool no_dedup = false;
  /// How kernels with stage functions compile (CompileOptions::separate): objects, lto, whole.
  std::string separate = "objects";
  /// --lto: the same as --separate lto.
  bool lto = false;
  /// Each kernel's SASS (nvdisasm) counted per stage: MMAs, async copies, ldmatrix, barriers,
  /// local memory.
  bool sass = false;
};

struct ReportCliOptions {
  CommonOptions common;
  std::string out;                   ///< FILE.html, .json, .csv or .dot (the extension says which)
  std::string strategy = "souffle";  ///< a strategy, or "all"
  bool steps = false;                ///< the walk-through: one HTML page per pipeline step
  bool lesson = false;               ///< --steps: one self-contained page with questions
  std::string compare;               ///< a second strategy to compare with
  std::string decisions;             ///< compare the strategy without and with these edits
  std::string gpu = "a100";
  std::string precision = "fp32";
  std::string calibration;   ///< a calibration file, shown in the environment
  std::string measurements;  ///< measured kernel times to show beside the estimates
  std::string layer;         ///< --steps: only nodes whose name contains this
  int kernel = -1;           ///< --steps: the kernel the schedule and emit steps show
  bool sass = false;         ///< each launch's SASS per stage (report::ReportOptions::sass)
  std::string timeline;  ///< a `profile --timeline-dir` folder (report::ReportOptions::timeline)
};

struct ConformanceOptions {
  std::vector<std::string> dirs;
  bool json = false;
  double rtol = 1e-3, atol = 1e-7;
  int jobs = 0;
  double timeout_s = 120;
  int64_t min_pass = 0;      ///< exit 1 when fewer tests pass
  double min_pass_rate = 0;  ///< exit 1 when the pass fraction is lower
  bool quiet = false;
  std::string expect;           ///< expected-status file: exit 1 when any test's status differs
  std::string update_expected;  ///< write this run's statuses to this file
  std::string level = "te";     ///< te, or kernels: every TE pass also as emulated kernels
  std::vector<std::string> archs = {"sm_80"};  ///< NVRTC targets at kernel level ("" = none)
  int sample = 1;                              ///< run every sample-th test only
};

struct ProfileCliOptions {
  CommonOptions common;
  std::string strategy = "souffle";  ///< a strategy or "all"
  std::string backend = "cuda";      ///< cuda or emulator
  std::string runner;                ///< command that starts souffle-runner ("" = local)
  int runs = 0;                      ///< 0: 20 on a GPU, 1 on the emulator
  int warmup = -1;                   ///< -1: 3 on a GPU, 0 on the emulator
  bool no_graph = false;
  bool no_counters = false;
  bool no_waves = false;             ///< kernels in program order (plan::PlanOptions::waves off)
  bool no_weight_panels = false;     ///< plan::PlanOptions::weight_panels off
  std::optional<double> rtol, atol;  ///< as VerifyOptions
  double tolerance = -1;             ///< deprecated, as VerifyOptions
  std::string gpu;                   ///< plan for this spec ("" = the runner's device, else a100)
  std::string precision = "fp32";
  std::string decisions;
  std::string sync = "grid";  ///< grid, flags or auto (KernelBuildOptions::sync)
  std::string bundle_dir, data_dir, trace;
  double timeout_s = 600;
  bool quiet = false;
  bool no_cache = false;  ///< as CompileCliOptions
  /// Timeline records in every kernel, analysed, written as a Perfetto trace and a CSV per
  /// strategy into timeline_dir (docs/timeline.md).
  bool timeline = false;
  std::string timeline_dir = "souffle-timeline";
};

struct CalibrateCliOptions {
  std::string runner;  ///< command that starts souffle-runner ("" = local)
  std::string out;     ///< the calibration file to write
  bool json = false;
  double timeout_s = 300;
  /// Timeline documents of a GPU (profile --timeline): per-template corrections instead of a
  /// runner's measurements, joined to `base` (a calibration file of the same device) if given.
  std::vector<std::string> from_timeline;
  std::string base;
};

int run_inspect(const CommonOptions& o);
int run_verify(const VerifyOptions& o);
int run_plan(const PlanCliOptions& o);
int run_conformance(const ConformanceOptions& o);
int run_compile(const CompileCliOptions& o);
int run_profile(const ProfileCliOptions& o);
int run_calibrate(const CalibrateCliOptions& o);
int run_report(const ReportCliOptions& o);

struct CacheCliOptions {
  std::string action = "stats";  ///< stats or clear
  bool json = false;
};
int run_cache(const CacheCliOptions& o);

/// How many of a compile's kernels (all their archs) and NVRTC results came from the compile
/// cache, for compile's summary and JSON.
struct CacheSummary {
  bool enabled = true;
  std::string dir;  ///< the disk cache's folder ("" when off)
  int kernels = 0, kernels_from_cache = 0, compiles = 0, from_cache = 0;
  /// Distinct compiled programs (launches of the same code share one) and those from the cache.
  int programs = 0, programs_from_cache = 0;
};
CacheSummary cache_summary(const CompileReport& report, bool use_cache);
std::string cache_summary_line(const CacheSummary& summary);

/// Says on stderr that --tolerance (a relative L2 limit) no longer judges outputs, when given.
void warn_tolerance(double tolerance);

/// Parses --dim name=value pairs; throws UserError on a malformed one.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims);

/// Parses --bind NAME=VALUE arguments (onnx_import::parse_binding); UserError on a malformed one
/// or a name given twice.
std::map<std::string, graph::DataValue> parse_binds(const std::vector<std::string>& binds);

/// Parses --shape NAME=D0,D1,... arguments (onnx_import::parse_shape).
std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& shapes);

}  // namespace souffle::cli
