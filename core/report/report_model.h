/// \file The report model: everything a shareable report says about one model, gathered once as
/// a plain value that every writer (HTML, JSON, CSV, DOT) renders, so they all say the same.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/graph/graph.h"
#include "core/plan/plan.h"
#include "core/session/load.h"
#include "core/session/sass_report.h"
#include "core/session/timeline.h"

namespace souffle::report {

/// The version of the report JSON (docs/report.schema.json); raised when a field changes meaning
/// or goes away, not when one is added.
constexpr int kSchemaVersion = 1;

/// What to report and how.
struct ReportOptions {
  /// The plans to show, in order; the first is the one a comparison starts from.
  std::vector<plan::Strategy> strategies = {plan::Strategy::Souffle};
  gpu::GpuSpec gpu;  ///< must be filled (gpu::gpu_spec("a100"))
  gpu::Precision precision = gpu::Precision::FP32;
  /// Compare the first strategy with this one (added to the plans when not among them).
  std::optional<plan::Strategy> compare;
  /// A decisions file: the first strategy is shown without and with these edits, compared.
  std::string decisions;
  /// Edits held in memory (the explorer's), used as a decisions file is when `decisions` is
  /// empty and there are any; `edits_label` names them in the report ("edits").
  plan::Decisions edits;
  std::string edits_label = "edits";
  std::string calibration;              ///< a calibration file, recorded in the environment
  std::string measurements;             ///< measured kernel times (see load_measurements)
  std::map<std::string, int64_t> dims;  ///< symbolic dimensions bound on import
  std::map<std::string, graph::DataValue> bind;  ///< model inputs fixed as constants (--bind)
  std::map<std::string, Shape> shapes;           ///< model input shapes given on import (--shape)
  /// Build every kernel and emit its CUDA C (no NVRTC). Off: plans and figures only.
  bool code = true;
  /// With `code`: compile each launch with NVRTC (line information) for sm_80 and sm_90 and
  /// count its SASS per stage (nvdisasm; see docs/sass.md). Off: nothing is compiled.
  bool sass = false;
  /// A folder written by `profile --timeline --timeline-dir` (docs/timeline.md): each plan's
  /// kernels with a record file STRATEGY.KERNEL.timeline there show their timeline. Empty: none.
  std::string timeline;
};

/// One reason the planner gave for where a kernel starts or why a TE joined it.
struct ReportReason {
  /// "start" (first TE), "cut" (a kernel boundary forced by a limit), "join" (a TE fused in),
  /// "epilogue", "view", "decision" (a user's edit), "other".
  std::string kind;
  std::string text;
  /// Prices the decision compared (µs), where the plan recorded them; empty otherwise.
  std::vector<std::pair<std::string, double>> prices;
};

struct ReportStage {
  std::string kind;  ///< "compute", "memory", "reduction", "view"
  std::vector<std::string> tes;
  std::vector<std::string> ops;  ///< ONNX nodes of its TEs, first appearance order
  int64_t blocks = 0;
  int threads = 0;
  std::string schedule;
  bool sync_before = false;
};

/// One launch of a kernel as built and emitted (under rules and unfused, a partition whose stages
/// would need a grid barrier launches as several kernels).
struct ReportLaunch {
  std::string name;  ///< the CUDA function name
  int64_t grid = 0, block = 0, smem_bytes = 0;
  bool cooperative = false;
  int stages = 0, grid_barriers = 0, block_barriers = 0;
  std::string cuda;              ///< the emitted translation unit
  std::string error;             ///< why it could not be built or emitted
  std::vector<KernelSass> sass;  ///< per arch, with ReportOptions::sass (sass_report.h)
};

/// A measured time, only when a measurement was given.
struct MeasuredTime {
  double time_us = 0;
  /// Hardware counters of one run (a `profile --json` file with them): DRAM bytes read and
  /// written by the kernel's launches, achieved occupancy weighted by their times; -1: none.
  double dram_bytes = -1;
  double occupancy = -1;
};

/// One launch's measured timeline (ReportOptions::timeline): its records and their analysis.
struct ReportTimeline {
  KernelTimeline records;
  TimelineAnalysis analysis;
};

struct ReportKernel {
  int id = 0;
  std::string kind;
  std::vector<std::string> ops;
  std::vector<std::string> tes;
  std::vector<ReportStage> stages;
  int grid_syncs = 0;
  bool cooperative = false;
  int64_t blocks = 0;
  int threads = 0;
  int64_t co_resident = 0;
  std::vector<std::string> on_chip;
  /// GEMM stages that keep their weights in shared memory for the whole kernel (weight panels):
  /// those that load them there, those that read what an earlier stage loaded.
  int weight_panel_loads = 0, weight_panel_reads = 0;
  int64_t flops = 0, dram_bytes = 0;
  double est_time_us = 0;  ///< the cost model's estimate on the plan's GPU spec
  gpu::KernelCost cost;    ///< its roofline parts (compute, memory, launch, syncs)
  double intensity = 0;    ///< FLOPs per DRAM byte
  std::vector<ReportReason> reasons;
  std::vector<ReportLaunch> launches;
  std::optional<MeasuredTime> measured;
  std::vector<ReportTimeline> timelines;  ///< per launch with records (ReportOptions::timeline)
};

struct ReportTransform {
  std::string kind, key, result, reason;
  std::vector<std::string> ops;
  bool applied = false;
};

struct ReportEdit {
  std::string kind, text;
  std::string reason;  ///< why it was refused (refused edits only)
};

/// Where measured times came from.
struct Measurement {
  std::string device, driver, date, source;
  double total_us = 0;
};

struct ReportPlan {
  std::string label;  ///< "souffle", or "souffle + decisions.json"
  plan::Strategy strategy = plan::Strategy::Souffle;
  std::string decisions;  ///< the decisions file applied ("" for none)
  std::string gpu;
  gpu::Precision precision = gpu::Precision::FP32;
  size_t input_tes = 0, tes = 0;
  int grid_syncs = 0;
  int64_t flops = 0, dram_bytes = 0;
  double est_time_us = 0;
  std::vector<ReportKernel> kernels;
  std::vector<ReportTransform> transforms;
  std::vector<ReportEdit> applied, refused;
  std::vector<std::pair<std::string, double>> passes;  ///< step, ms
  double plan_ms = 0, build_ms = 0;
  int launches = 0, build_errors = 0;
  /// Per ONNX node, the kernels its TEs run in (a node split over kernels lists each).
  std::map<std::string, std::vector<int>> node_kernels;
  std::optional<Measurement> measurement;
};

/// A group of kernels of two plans that share ONNX nodes (a connected group of the overlap), so a
/// kernel split in one plan and fused in the other is compared as one row.
struct KernelDelta {
  std::vector<int> a, b;  ///< kernel ids in plan a and plan b
  size_t ops = 0;         ///< ONNX nodes the group covers
  std::string first_op;   ///< the first of them, to find the group
  double a_us = 0, b_us = 0;
  int64_t a_bytes = 0, b_bytes = 0, a_flops = 0, b_flops = 0;
  int a_syncs = 0, b_syncs = 0;
  bool same = false;  ///< the same kernels with the same figures
};

struct ReportComparison {
  size_t a = 0, b = 1;  ///< indices into Report::plans
  std::string basis;    ///< "strategies" or "decisions"
  std::vector<KernelDelta> rows;
};

struct ReportTensor {
  std::string name, type;  ///< "f32[1, 128, 768]"
};

struct ReportSummary {
  std::string path, name;
  int64_t file_bytes = 0;
  int64_t opset = 0;
  size_t onnx_nodes = 0, nodes = 0, folded = 0, tes = 0;
  std::vector<ReportTensor> inputs, outputs;
  std::map<std::string, int> op_counts;
  size_t constants = 0;
  int64_t constant_bytes = 0;
  int64_t flops = 0;  ///< of the lowered program (analysis)
  std::vector<std::string> warnings;
  double load_ms = 0;
};

struct ReportEnvironment {
  gpu::GpuSpec gpu;
  /// The machine the report was made on: its CUDA driver and device, or why there is none.
  std::string device, device_reason;
  int driver_version = 0;
  std::string nvrtc;  ///< NVRTC version of this build, "" without
  std::map<std::string, std::string> options;
  std::optional<gpu::Calibration> calibration;
  std::string generated;  ///< ISO 8601 UTC
  std::string generator;  ///< "Souffle Explorer 0.1.0"
};

/// The op-level graph the report draws.
struct ReportGraph {
  struct Node {
    std::string name, op_type, kind;  ///< kind: "op", "input", "output"
    std::string type;                 ///< the first output's type
  };
  struct Edge {
    int from = 0, to = 0;
    std::string label;
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
};

struct Report {
  int schema_version = kSchemaVersion;
  ReportSummary model;
  ReportEnvironment environment;
  ReportGraph graph;
  std::vector<ReportPlan> plans;
  std::optional<ReportComparison> comparison;
};

/// Loads the model at `path`, plans it under each strategy asked (and the comparison's), builds
/// and emits every kernel's CUDA (no NVRTC), and gathers it all. Throws UserError naming the
/// file and the reason for a model, decisions, calibration or measurement file it cannot take.
Report gather_report(const std::string& path, const ReportOptions& options);

/// A report of plans made elsewhere (the Python module's) from the model `m`: its summary and
/// graph, and each plan as gather_report shows one, labelled "STRATEGY + LABEL" where its label
/// is not empty; with `code`, each kernel's CUDA C (built and emitted, not compiled). No
/// comparison; the environment names the first plan's GPU.
Report report_of_plans(const LoadedModel& m, const std::vector<const plan::FusionPlan*>& plans,
                       const std::vector<std::string>& labels, bool code);

/// The comparison of two plans of one model: kernels grouped by shared ONNX nodes.
ReportComparison compare_plans(const std::vector<ReportPlan>& plans, size_t a, size_t b,
                               const std::string& basis);

/// Reads measured kernel times into the plans they were measured on. The file:
/// {"device": "...", "driver": "...", "date": "...", "strategy": "souffle",
///  "kernels": [{"kernel": 0, "time_us": 12.5}, ...]} (strategy optional: the first plan), or the
/// output of `souffle-cli profile --json` (each strategy's run into the plan of that strategy;
/// an emulator run is named as CPU time in the device).
/// Throws UserError naming the file and field.
void load_measurements(const std::string& path, std::vector<ReportPlan>& plans);
/// Same, from the file's text; `path` names it in errors and in each measurement's source.
void parse_measurements(const std::string& json_text, const std::string& path,
                        std::vector<ReportPlan>& plans);

/// The colour of kernel `id` (one palette for the graph, the tables and the charts), "#rrggbb".
std::string kernel_colour(int id);

}  // namespace souffle::report
