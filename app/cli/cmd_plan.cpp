#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/plan/plan.h"
#include "core/session/load.h"

namespace souffle::cli {

namespace {

const char* kSteps[] = {"analyze",   "horizontal", "vertical", "re-analyze",
                        "partition", "decisions",  "cost"};

nlohmann::json edit_json(const plan::Edit& e) {
  nlohmann::json j = {{"kind", plan::edit_kind_name(e.kind)}, {"a", e.a}};
  if (e.kind == plan::Edit::Kind::Merge) j["b"] = e.b;
  j["text"] = plan::describe(e);
  return j;
}

nlohmann::json plan_json(const std::string& model, const plan::FusionPlan& p) {
  nlohmann::json j;
  j["model"] = model;
  j["strategy"] = plan::strategy_name(p.strategy);
  j["gpu"] = p.gpu;
  std::set<std::string> ops;
  for (const te::Op& op : p.input.ops)
    if (!op->origin.node.empty()) ops.insert(op->origin.node);
  j["ops"] = ops.size();
  j["input_tes"] = p.input_tes;
  j["tes"] = p.program.ops.size();
  j["kernels"] = p.kernels();
  j["grid_syncs"] = p.grid_syncs;
  j["flops"] = p.flops;
  j["dram_bytes"] = p.dram_bytes;
  j["est_time_us"] = p.est_time_us;
  nlohmann::json parts = nlohmann::json::array();
  for (const plan::Partition& k : p.partitions) {
    nlohmann::json tes = nlohmann::json::array(), stages = nlohmann::json::array();
    for (int te : k.tes) tes.push_back(p.program.ops[te]->name);
    for (const plan::Stage& s : k.stages) {
      nlohmann::json st_tes = nlohmann::json::array();
      for (int te : s.tes) st_tes.push_back(p.program.ops[te]->name);
      stages.push_back({{"kind", s.kind},
                        {"tes", st_tes},
                        {"blocks", s.blocks},
                        {"threads", s.threads},
                        {"schedule", s.schedule},
                        {"sync_before", s.sync_before}});
    }
    parts.push_back({{"id", k.id},
                     {"ops", k.ops},
                     {"tes", tes},
                     {"kind", k.kind},
                     {"stages", stages},
                     {"grid_syncs", k.grid_syncs},
                     {"cooperative", k.cooperative},
                     {"blocks", k.blocks},
                     {"threads", k.threads},
                     {"co_resident", k.co_resident},
                     {"on_chip", k.on_chip},
                     {"flops", k.flops},
                     {"dram_bytes", k.dram_bytes},
                     {"est_time_us", k.est_time_us},
                     {"reasons", k.reasons}});
  }
  j["partitions"] = parts;
  nlohmann::json tr = nlohmann::json::array();
  for (const plan::TransformSite& s : p.transforms)
    tr.push_back({{"kind", s.kind},
                  {"key", s.key},
                  {"ops", s.ops},
                  {"result", s.result},
                  {"applied", s.applied},
                  {"reason", s.reason}});
  j["transforms"] = tr;
  nlohmann::json applied = nlohmann::json::array(), refused = nlohmann::json::array();
  for (const plan::Edit& e : p.applied) applied.push_back(edit_json(e));
  for (const plan::RefusedEdit& r : p.refused) {
    nlohmann::json x = edit_json(r.edit);
    x["reason"] = r.reason;
    refused.push_back(x);
  }
  j["decisions_applied"] = applied;
  j["refused"] = refused;
  nlohmann::json passes = nlohmann::json::array();
  for (const plan::PassRecord& r : p.passes) passes.push_back({{"name", r.name}, {"ms", r.ms}});
  j["passes"] = passes;
  return j;
}

}  // namespace

int run_plan(const PlanCliOptions& o) {
  plan::PlanOptions po;
  po.strategy = plan::parse_strategy(o.strategy);
  po.gpu = gpu::gpu_spec(o.gpu);
  if (!o.decisions.empty()) po.decisions = plan::load_decisions(o.decisions);
  if (!o.dump_after.empty()) {
    bool known = false;
    for (const char* s : kSteps) known |= o.dump_after == s;
    if (!known)
      throw UserError("--dump-after " + o.dump_after +
                      ": unknown step (analyze, horizontal, vertical, re-analyze, partition, "
                      "decisions, cost)");
    if (po.strategy != plan::Strategy::Souffle &&
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
