#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "app/cli/step_progress.h"
#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/load.h"
#include "core/session/verify.h"
#include "core/session/verify_kernels.h"

namespace souffle::cli {
namespace {

void print_checks(const std::vector<OutputCheck>& checks) {
  for (const OutputCheck& c : checks)
    std::cout << fmt::format("{} {} {}: {}\n", c.ok ? "ok  " : "FAIL", c.data_set, c.name,
                             c.cmp.describe());
}

/// The loosest tolerance any output was judged with.
Tolerance loosest(const VerifyReport& rep) {
  Tolerance t{0, 0};
  for (const OutputCheck& c : rep.checks) {
    t.rtol = std::max(t.rtol, c.cmp.rtol);
    t.atol = std::max(t.atol, c.cmp.atol);
  }
  return t;
}

/// The verdict's fields of verify --json: element-wise (allclose) with the errors beside it.
void summary_json(nlohmann::json& j, const VerifyReport& rep) {
  const Tolerance t = loosest(rep);
  j["criterion"] = "allclose";
  j["rtol"] = t.rtol;
  j["atol"] = t.atol;
  j["mismatches"] = rep.mismatches;
  j["max_abs"] = rep.max_abs_error;
  j["max_rel"] = rep.max_rel_error;
  j["max_rel_l2"] = rep.max_rel_l2;
}

/// "every element within rtol 0.0001 + atol 1e-05; max abs error ..., max relative L2 ...".
std::string summary_text(const VerifyReport& rep) {
  const Tolerance t = loosest(rep);
  return fmt::format(
      "{} rtol {:g} + atol {:g}; max abs error {:.3g}, max rel error {:.3g}, max relative L2 "
      "{:.3g}",
      rep.mismatches == 0 ? std::string("every element within")
                          : fmt::format("{} elements outside", rep.mismatches),
      t.rtol, t.atol, rep.max_abs_error, rep.max_rel_error, rep.max_rel_l2);
}

/// The tolerances asked for on the command line (unset: each output's default).
souffle::VerifyOptions verify_options(const VerifyOptions& o) {
  warn_tolerance(o.tolerance);
  souffle::VerifyOptions vo;
  vo.rtol = o.rtol;
  vo.atol = o.atol;
  return vo;
}

/// The data sets to verify against. A folder without any is an error, but a model that cannot
/// be taken says so first: its error names the model, the node and the reason.
std::vector<TestDataSet> reference_sets(const VerifyOptions& o,
                                        const onnx_import::ImportOptions& io) {
  std::string dir = o.data_dir.empty()
                        ? std::filesystem::path(o.common.model).parent_path().string()
                        : o.data_dir;
  if (dir.empty()) dir = ".";
  std::vector<TestDataSet> sets = read_test_data(dir);
  if (sets.empty()) {
    load_model(o.common.model, io);
    throw UserError(dir, "", "no test_data_set_N folders with reference data found");
  }
  return sets;
}

/// Adds the checks of `r` (another model loaded for other data sets) to `into`.
void merge(VerifyReport& into, const VerifyReport& r) {
  for (const OutputCheck& c : r.checks) into.add(c);
  into.ok = into.ok && r.ok;
  into.run_ms += r.run_ms;
}

/// Says which inputs were bound from each data set (load_for_data), on stderr.
void note_bound(const VerifyOptions& o, const std::vector<ModelForData>& runs) {
  if (o.common.quiet || runs.empty() || runs[0].bound.empty()) return;
  std::string names;
  for (const std::string& n : runs[0].bound) names += (names.empty() ? "'" : ", '") + n + "'";
  std::cerr << fmt::format(
      "note: an If depends on {}: bound from each data set's inputs, one model per data set\n",
      names);
}

/// The plan's partitions as emulated kernels, compared with the reference outputs.
int run_verify_kernels(const VerifyOptions& o, const std::vector<ModelForData>& runs) {
  std::vector<TestDataSet> sets;
  for (const ModelForData& r : runs) sets.insert(sets.end(), r.sets.begin(), r.sets.end());
  PipelineOptions po;
  po.strategy = plan::parse_strategy(o.strategy.empty() ? "souffle" : o.strategy);
  po.gpu = gpu::gpu_spec(o.gpu);
  po.precision = gpu::parse_precision(o.precision);
  po.pricer = schedule::make_pricer(po.gpu, po.precision);
  souffle::VerifyOptions vo = verify_options(o);
  vo.timeline = o.timeline;
  schedule::parse_sync_mode(o.sync, po.sync);  // the plan is priced with the kernels verified
  po.waves = !o.no_waves;
  po.weight_panels = !o.no_weight_panels;
  po.wgmma = o.wgmma;
  KernelVerifyReport rep = [&] {
    // Its line is cleared (when it goes out of scope) before any output.
    StepProgress progress(o.common.quiet, plan::Step::BuildKernels, plan::is_souffle(po.strategy));
    po.instrument = progress.instrument(std::move(po.instrument));
    vo.progress = [&progress](const std::string& text) { progress.say(text); };
    progress.start();
    KernelVerifyReport r;
    for (const ModelForData& run : runs) {
      KernelVerifyReport one = verify_kernels(run.model, run.sets, po, vo);
      if (&run == &runs.front()) {
        r = std::move(one);
        continue;
      }
      merge(r.outputs, one.outputs);
      if (r.error.empty()) r.error = one.error;
      r.plan_ms += one.plan_ms;
      r.build_ms += one.build_ms;
    }
    vo.progress = nullptr;
    return r;
  }();
  if (o.common.json) {
    nlohmann::json j;
    j["model"] = o.common.model;
    j["level"] = o.level;
    j["strategy"] = plan::strategy_name(po.strategy);
    j["precision"] = gpu::precision_name(po.precision);
    j["kernels"] = rep.kernels;
    j["grid_barriers"] = rep.grid_barriers;
    j["flag_waits"] = rep.flag_waits;
    j["sync"] = o.sync;
    j["ok"] = rep.ok();
    if (!rep.error.empty()) j["error"] = rep.error;
    summary_json(j, rep.outputs);
    j["plan_ms"] = rep.plan_ms;
    j["build_ms"] = rep.build_ms;
    j["run_ms"] = rep.outputs.run_ms;
    j["checks"] = output_checks_json(rep.outputs.checks);
    if (o.timeline) {
      std::vector<TimelineAnalysis> as;
      for (const KernelTimeline& t : rep.timelines) as.push_back(analyse_timeline(t));
      j["timeline"] = timeline_analysis_json(as);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    print_checks(rep.outputs.checks);
    for (const KernelTimeline& t : rep.timelines)
      std::cout << timeline_summary(analyse_timeline(t));
    if (!rep.error.empty()) std::cout << "ERROR " << rep.error << "\n";
    std::cout << fmt::format(
        "{}: {} kernels ({} grid barriers{}), {} outputs over {} data sets, {}, emulator {:.0f} "
        "ms\n",
        rep.ok() ? "verified" : (rep.error.empty() ? "MISMATCH" : "FAILED"), rep.kernels,
        rep.grid_barriers,
        rep.flag_waits ? fmt::format(", {} flag waits", rep.flag_waits) : std::string(),
        rep.outputs.checks.size(), sets.size(), summary_text(rep.outputs), rep.outputs.run_ms);
  }
  return rep.ok() ? 0 : 1;
}

}  // namespace

void warn_tolerance(double tolerance) {
  if (tolerance < 0) return;
  std::cerr << "warning: --tolerance (a relative L2 limit) no longer judges outputs: they are "
               "judged element by element (--rtol, --atol; defaults by precision)\n";
}

int run_verify(const VerifyOptions& o) {
  onnx_import::ImportOptions io;
  io.dims = parse_dims(o.common.dims);
  io.bind = parse_binds(o.common.binds);
  io.shapes = parse_shapes(o.common.shapes);
  std::vector<ModelForData> runs = load_for_data(o.common.model, io, reference_sets(o, io));
  note_bound(o, runs);
  if (o.timeline && o.level != "kernels")
    throw UserError("--timeline records inside kernels: it needs --level kernels");
  if (o.level == "kernels") return run_verify_kernels(o, runs);
  std::vector<TestDataSet> sets;
  for (ModelForData& r : runs) {
    sets.insert(sets.end(), r.sets.begin(), r.sets.end());
    if (!o.strategy.empty())
      r.model.program =
          plan::transformed_program(r.model.program, plan::parse_strategy(o.strategy));
  }
  const LoadedModel& m = runs.front().model;
  souffle::VerifyOptions vo = verify_options(o);
  vo.f64 = o.f64;
  VerifyReport rep;
  for (const ModelForData& r : runs) merge(rep, verify_program(r.model, r.sets, vo));

  if (o.common.json) {
    nlohmann::json j;
    j["model"] = o.common.model;
    j["level"] = o.level;
    j["strategy"] = o.strategy.empty() ? "lowered" : o.strategy;
    j["tes"] = m.program.ops.size();
    j["ok"] = rep.ok;
    summary_json(j, rep);
    j["run_ms"] = rep.run_ms;
    j["checks"] = output_checks_json(rep.checks);
    std::cout << j.dump(2) << "\n";
  } else {
    print_checks(rep.checks);
    std::cout << fmt::format("{}: {} outputs over {} data sets, {}, interpreter {:.0f} ms\n",
                             rep.ok ? "verified" : "MISMATCH", rep.checks.size(), sets.size(),
                             summary_text(rep), rep.run_ms);
  }
  return rep.ok ? 0 : 1;
}

}  // namespace souffle::cli
