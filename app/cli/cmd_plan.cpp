#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/load.h"
#include "core/session/plan_json.h"

namespace souffle::cli {

namespace {

const char* kSteps[] = {"analyze",   "horizontal", "vertical", "re-analyze",
                        "partition", "decisions",  "price"};

}  // namespace

int run_plan(const PlanCliOptions& o) {
  plan::PlanOptions po;
  po.strategy = plan::parse_strategy(o.strategy);
  po.gpu = gpu::gpu_spec(o.gpu);
  po.precision = gpu::parse_precision(o.precision);
  if (!o.decisions.empty()) po.decisions = plan::load_decisions(o.decisions);
  po.pricer = schedule::make_pricer(po.gpu, po.precision, o.calibration);
  if (!o.dump_after.empty()) {
    bool known = false;
    for (const char* s : kSteps) known |= o.dump_after == s;
    if (!known)
      throw UserError("--dump-after " + o.dump_after +
                      ": unknown step (analyze, horizontal, vertical, re-analyze, partition, "
                      "decisions, price)");
    if (!plan::is_souffle(po.strategy) &&
        (o.dump_after == "horizontal" || o.dump_after == "vertical" ||
         o.dump_after == "re-analyze"))
      throw UserError("--dump-after " + o.dump_after + ": the " + o.strategy +
                      " strategy has no such step (only souffle transforms)");
    po.snapshots = true;
    po.instrument = [&](const plan::PassRecord& r) {
      if (r.name != o.dump_after) return;
      std::cerr << "=== after " << r.name << fmt::format(" ({:.1f} ms) ===\n", r.ms) << r.snapshot;
    };
  }
  onnx_import::ImportOptions io;
  io.dims = parse_dims(o.common.dims);
  LoadedModel m = load_model(o.common.model, io);
  plan::FusionPlan p = plan::plan(m.program, po);
  plan::verify(p);
  if (o.common.json) {
    nlohmann::json j = plan_json(o.common.model, p);
    j["load_ms"] = m.load_ms;
    j["precision"] = gpu::precision_name(p.precision);
    if (!o.calibration.empty()) j["calibration"] = o.calibration;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << plan::print(p);
    double ms = 0;
    for (const plan::PassRecord& r : p.passes) ms += r.ms;
    std::cout << fmt::format("planned in {:.1f} ms (load {:.0f} ms)\n", ms, m.load_ms);
  }
  return 0;
}

}  // namespace souffle::cli
