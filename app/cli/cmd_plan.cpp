#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "app/cli/step_progress.h"
#include "core/plan/plan.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "core/session/plan_json.h"

namespace souffle::cli {

int run_plan(const PlanCliOptions& o) {
  PipelineOptions po;
  po.strategy = plan::parse_strategy(o.strategy);
  po.gpu = gpu::gpu_spec(o.gpu);
  po.precision = gpu::parse_precision(o.precision);
  po.calibration = o.calibration;
  parse_sync_mode(o.sync, po.sync);
  po.waves = !o.no_waves;
  po.weight_panels = !o.no_weight_panels;
  po.wgmma = o.wgmma;
  if (!o.decisions.empty()) po.decisions = plan::load_decisions(o.decisions);
  po.import.dims = parse_dims(o.common.dims);
  po.import.bind = parse_binds(o.common.binds);
  po.import.shapes = parse_shapes(o.common.shapes);
  // A short-lived process that never reads most weights: they stay in the file until read.
  po.import.defer_weights = true;
  std::string last_snapshot;  // a step that changed nothing repeats the step before's
  if (!o.dump_after.empty()) {
    const std::optional<plan::Step> dump = plan::parse_step(o.dump_after);
    if (!dump || *dump > plan::Step::Price) {
      std::vector<plan::Step> named;
      for (plan::Step s : plan::all_steps())
        if (s <= plan::Step::Price) named.push_back(s);
      throw UserError("--dump-after " + o.dump_after + ": unknown step (" +
                      plan::step_names(named) + ")");
    }
    if (!plan::is_souffle(po.strategy) &&
        (*dump == plan::Step::Horizontal || *dump == plan::Step::Vertical ||
         *dump == plan::Step::Reanalyze))
      throw UserError("--dump-after " + o.dump_after + ": the " + o.strategy +
                      " strategy has no such step (only souffle transforms)");
    po.snapshots = true;
    po.instrument.after = [&, step = *dump](const plan::PassRecord& r) {
      if (r.changed) last_snapshot = r.snapshot;
      if (r.step != step) return;
      std::cerr << "=== after " << r.name() << fmt::format(" ({:.1f} ms) ===\n", r.ms)
                << last_snapshot;
    };
  }
  PipelineResult r = [&] {
    // Its line is cleared (when it goes out of scope) before any output.
    StepProgress progress(o.common.quiet, po.until, plan::is_souffle(po.strategy));
    po.instrument = progress.instrument(std::move(po.instrument));
    progress.start();
    return run_pipeline(o.common.model, po);
  }();
  const plan::FusionPlan& p = r.plan;
  if (!o.decisions.empty()) plan::require_known_names(p, o.decisions);
  if (o.common.json) {
    nlohmann::json j = plan_json(o.common.model, p);
    j["load_ms"] = r.model.load_ms;
    j["precision"] = gpu::precision_name(p.precision);
    if (!o.calibration.empty()) j["calibration"] = o.calibration;
    nlohmann::json passes = nlohmann::json::array();
    for (const plan::PassRecord& rec : r.passes)
      passes.push_back({{"name", std::string(rec.name())}, {"ms", rec.ms}});
    j["passes"] = passes;  // the whole pipeline's steps: import, fold, lower, then the plan's
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << plan::print(p);
    double ms = 0;
    for (const plan::PassRecord& rec : p.passes) ms += rec.ms;
    std::cout << fmt::format("planned in {:.1f} ms (load {:.0f} ms)\n", ms, r.model.load_ms);
  }
  return 0;
}

}  // namespace souffle::cli
