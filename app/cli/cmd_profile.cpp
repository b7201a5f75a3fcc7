// souffle-cli profile: each strategy's kernels run through souffle-runner, verified and timed,
// measured beside estimated.
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/plan/plan.h"
#include "core/session/chrome_trace.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "core/session/profile.h"
#include "core/session/timeline_calibration.h"
#include "core/support/error.h"

namespace souffle::cli {

namespace {

void print_report(const ProfileReport& r) {
  const bool gpu = r.gpu_time();
  std::cout << fmt::format("\n{}{}{}{} on {}{}: {} kernels, {} runs, timed by {}\n", r.strategy,
                           r.sync == "grid" ? "" : " (--sync " + r.sync + ")",
                           r.waves ? "" : " (--no-waves)",
                           r.weight_panels ? "" : " (--no-weight-panels)", r.device,
                           r.arch.empty() ? "" : " (" + r.arch + ")", r.kernels.size(), r.runs,
                           gpu ? r.timer : "the emulator (CPU wall time, not a GPU time)");
  if (!r.timer_note.empty()) std::cout << "  note: " << r.timer_note << "\n";
  if (!r.error.empty()) {
    std::cout << "  FAILED" << (r.error_kernel.empty() ? "" : " at " + r.error_kernel) << ": "
              << r.error << "\n";
    if (r.kernels.empty()) return;
  }
  const char* unit = gpu ? "us" : "us (CPU)";
  std::cout << fmt::format("  {:<28} {:>12} {:>14} {:>12} {:>12} {:>10}\n", "kernel", "est. us",
                           std::string("median ") + unit, "min", "max", "gap before");
  for (const KernelMeasurement& k : r.kernels)
    std::cout << fmt::format("  {:<28} {:>12.2f} {:>14.2f} {:>12.2f} {:>12.2f} {:>10.2f}\n", k.name,
                             k.est_us, k.time_us.median, k.time_us.min, k.time_us.max,
                             k.gap_us.median);
  std::cout << fmt::format("  {:<28} {:>12.2f} {:>14.2f}   (sum of kernel medians)\n", "total",
                           r.est_total_us, r.kernels_us);
  std::cout << fmt::format("  end to end {:.2f} us{}", r.end_to_end_us, gpu ? "" : " (CPU)");
  if (gpu) {
    std::cout << fmt::format(", zeroing written buffers {:.2f} us", r.zeroing_us);
    if (r.graph_us > 0)
      std::cout << fmt::format(", as a CUDA graph {:.2f} us (zeroing included)", r.graph_us);
  }
  std::cout << "\n";
  if (!r.graph_note.empty() && gpu) std::cout << "  graph: " << r.graph_note << "\n";
  // Hardware counters of one more run, beside the plan's estimate of the DRAM traffic.
  bool counted = false;
  for (const KernelMeasurement& k : r.kernels) counted = counted || k.has_counters();
  if (counted) {
    std::cout << fmt::format("  {:<28} {:>12} {:>14} {:>12} {:>10}\n", "counters (one run)",
                             "est. DRAM MB", "DRAM read MB", "written MB", "occupancy");
    auto mb = [](double b) { return b < 0 ? std::string("-") : fmt::format("{:.2f}", b / 1e6); };
    for (const KernelMeasurement& k : r.kernels)
      std::cout << fmt::format(
          "  {:<28} {:>12.2f} {:>14} {:>12} {:>10}\n", k.name, k.est_dram_bytes / 1e6,
          mb(k.dram_read_bytes), mb(k.dram_write_bytes),
          k.achieved_occupancy < 0 ? std::string("-")
                                   : fmt::format("{:.0f}%", 100 * k.achieved_occupancy));
  }
  if (!r.counters_note.empty() && gpu) std::cout << "  counters: " << r.counters_note << "\n";
  if (r.dropped_records > 0)
    std::cout << "  CUPTI dropped " << r.dropped_records
              << " activity records: kernels timed by CUDA events\n";
  for (const OutputMeasurement& o : r.outputs)
    std::cout << fmt::format(
        "  output {:<30} {} {}\n", o.name, o.ok ? "ok      " : "MISMATCH",
        o.detail.empty() ? fmt::format("relative L2 {:.3g}", o.rel_l2) : o.detail);
  if (!r.verify_note.empty()) std::cout << "  not verified: " << r.verify_note << "\n";
}

}  // namespace

int run_profile(const ProfileCliOptions& o) {
  ProfileOptions po;
  po.backend = o.backend;
  po.runner = o.runner;
  po.runs = o.runs > 0 ? o.runs : (o.backend == "emulator" ? 1 : 20);
  po.warmup = o.warmup >= 0 ? o.warmup : (o.backend == "emulator" ? 0 : 3);
  po.graph = !o.no_graph;
  po.counters = !o.no_counters;
  warn_tolerance(o.tolerance);
  po.rtol = o.rtol;
  po.atol = o.atol;
  po.bundle_dir = o.bundle_dir;
  po.data_dir = o.data_dir;
  schedule::parse_sync_mode(o.sync, po.sync);
  po.timeout_s = o.timeout_s;
  po.use_cache = !o.no_cache;
  po.timeline = o.timeline;
  if (o.timeline) {
    // The record files are kept beside the traces, for `report --timeline`.
    std::error_code ec;
    std::filesystem::create_directories(o.timeline_dir, ec);
    if (ec || !std::filesystem::is_directory(o.timeline_dir))
      throw UserError(o.timeline_dir, "", "--timeline-dir: cannot create the folder");
    po.timeline_keep_dir = o.timeline_dir;
  }
  if (po.runs < 1) throw UserError("--runs must be at least 1");
  if (o.backend != "cuda" && o.backend != "emulator")
    throw UserError("--backend " + o.backend + ": cuda or emulator");
  std::vector<plan::Strategy> strategies;
  if (o.strategy == "all")
    strategies = plan::all_strategies();
  else
    strategies = {plan::parse_strategy(o.strategy)};
  const bool progress = !o.quiet && isatty(2);
  if (progress)
    po.progress = [](const std::string& s) { std::cerr << "\r\033[K" << s << std::flush; };

  onnx_import::ImportOptions io;
  io.dims = parse_dims(o.common.dims);
  io.bind = parse_binds(o.common.binds);
  io.shapes = parse_shapes(o.common.shapes);
  LoadedModel m = load_model(o.common.model, io);

  ProfileSession session(po);  // UserError (exit 2) when no GPU / runner
  PipelineOptions pipe;
  pipe.precision = gpu::parse_precision(o.precision);
  if (!o.gpu.empty())
    pipe.gpu = gpu::gpu_spec(o.gpu);
  else if (auto spec = session.device_spec())
    pipe.gpu = *spec;
  else
    pipe.gpu = gpu::gpu_spec("a100");
  pipe.sync = po.sync;  // plans priced and cut with the kernels profiled
  pipe.waves = !o.no_waves;
  pipe.weight_panels = !o.no_weight_panels;
  if (!o.decisions.empty()) pipe.decisions = plan::load_decisions(o.decisions);

  std::vector<ProfileReport> reports;
  for (plan::Strategy s : strategies) {
    pipe.strategy = s;
    plan::FusionPlan p = run_pipeline(m, pipe).plan;  // one load, a plan per strategy
    if (!o.decisions.empty()) plan::require_known_names(p, o.decisions);
    reports.push_back(session.profile(o.common.model, p, io.dims, o.common.binds, o.common.shapes));
    if (progress) std::cerr << "\r\033[K" << std::flush;
  }

  if (!o.trace.empty()) {
    std::ofstream f(o.trace, std::ios::trunc);
    f << chrome_trace_json(reports);
    if (!f) throw UserError(o.trace, "", "cannot write the trace");
  }
  // Timelines: per strategy a Perfetto trace (a track per SM) and the per-stage CSV.
  std::vector<nlohmann::json> timeline_json(reports.size());
  std::vector<std::string> timeline_text(reports.size());
  if (o.timeline) {
    std::error_code ec;
    std::filesystem::create_directories(o.timeline_dir, ec);
    for (size_t i = 0; i < reports.size(); ++i) {
      const ProfileReport& r = reports[i];
      if (r.timelines.empty()) continue;
      std::vector<TimelineAnalysis> as;
      for (const KernelTimeline& t : r.timelines) as.push_back(analyse_timeline(t));
      const std::string base = o.timeline_dir + "/" + r.strategy;
      for (const auto& [file, text] :
           {std::pair{base + ".trace.json", timeline_trace_json(r.timelines)},
            std::pair{base + ".stages.csv", timeline_csv(as)},
            std::pair{base + ".timeline.json", timeline_document(r, as).dump(1) + "\n"}}) {
        std::ofstream f(file, std::ios::trunc);
        f << text;
        if (!f) throw UserError(file, "", "cannot write the timeline");
      }
      timeline_json[i] = timeline_analysis_json(as);
      timeline_json[i]["trace"] = base + ".trace.json";
      timeline_json[i]["csv"] = base + ".stages.csv";
      timeline_json[i]["document"] = base + ".timeline.json";
      for (size_t k = 0; k < r.timelines.size(); ++k)
        timeline_json[i]["kernels"][k]["records"] = r.timelines[k].file;
      for (const TimelineAnalysis& a : as) timeline_text[i] += timeline_summary(a);
      timeline_text[i] += "  timeline: " + base + ".trace.json, " + base + ".stages.csv, " + base +
                          ".timeline.json\n";
    }
  }
  bool ok = true;
  for (const ProfileReport& r : reports) ok = ok && r.ok();
  if (o.common.json) {
    nlohmann::json j;
    j["model"] = o.common.model;
    j["backend"] = o.backend;
    j["gpu_spec"] = pipe.gpu.name;
    j["hello"] = session.hello();
    nlohmann::json rs = nlohmann::json::array();
    for (size_t i = 0; i < reports.size(); ++i) {
      rs.push_back(profile_report_json(reports[i]));
      if (!timeline_json[i].is_null()) rs.back()["timeline"] = timeline_json[i];
    }
    j["strategies"] = rs;
    j["ok"] = ok;
    if (!o.trace.empty()) j["trace"] = o.trace;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << o.common.model << ": planned for " << pipe.gpu.name << ", runner "
              << (o.runner.empty() ? "souffle-runner" : o.runner) << " (" << o.backend << ")\n";
    for (size_t i = 0; i < reports.size(); ++i) {
      print_report(reports[i]);
      std::cout << timeline_text[i];
    }
    if (!o.trace.empty()) std::cout << "\ntrace: " << o.trace << "\n";
  }
  return ok ? 0 : 1;
}

}  // namespace souffle::cli
