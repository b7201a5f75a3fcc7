#include "core/session/plan_json.h"

#include <set>

namespace souffle {

namespace {

nlohmann::json edit_json(const plan::Edit& e) {
  nlohmann::json j = {{"kind", plan::edit_kind_name(e.kind)}, {"a", e.a}};
  if (e.kind == plan::Edit::Kind::Merge) j["b"] = e.b;
  j["text"] = plan::describe(e);
  return j;
}

nlohmann::json names_of(const plan::FusionPlan& p, const std::vector<int>& tes) {
  nlohmann::json names = nlohmann::json::array();
  for (int te : tes) names.push_back(p.program.ops[te]->name);
  return names;
}

/// Every boundary of a priced partition: the stages it separates (by anchor node), its kind,
/// its reason as a typed value with what it names, and the prices compared where the cost model
/// chose (a souffle decision at the TE the later stage starts with).
/// The partition's reasons as the JSON shows them: their sentences.
nlohmann::json reason_texts(const plan::Partition& k) {
  nlohmann::json out = nlohmann::json::array();
  for (const plan::Reason& r : k.reasons) out.push_back(r.text);
  return out;
}

nlohmann::json boundaries_json(const plan::FusionPlan& p, const plan::Partition& k) {
  nlohmann::json out = nlohmann::json::array();
  auto anchor = [&](int stage) -> nlohmann::json {
    if (stage < 0 || static_cast<size_t>(stage) >= k.built_stages.size()) return nullptr;
    return k.built_stages[static_cast<size_t>(stage)].anchor();
  };
  for (const plan::Boundary& b : k.boundaries) {
    const StageBoundary& o = b.order;
    nlohmann::json reason = {{"kind", boundary_reason_name(o.reason)}};
    if (!o.tensor.empty()) reason["tensor"] = o.tensor;
    if (b.producer >= 0) reason["producer"] = anchor(b.producer);
    if (o.reason == BoundaryReason::CrossBlock || o.reason == BoundaryReason::Unproven ||
        o.reason == BoundaryReason::Rewrite || o.reason == BoundaryReason::NoProofs)
      reason["consumer"] = anchor(b.to);
    if (o.consumer_block >= 0) reason["consumer_block"] = o.consumer_block;
    if (o.producer_block >= 0) reason["producer_block"] = o.producer_block;
    if (o.awaited_tiles > 0) reason["awaited_tiles"] = o.awaited_tiles;
    if (!o.detail.empty()) reason["detail"] = o.detail;
    nlohmann::json j = {{"launch", b.launch},
                        {"from", b.from},
                        {"to", b.to},
                        {"from_anchor", anchor(b.from)},
                        {"to_anchor", anchor(b.to)},
                        {"kind", boundary_kind_name(o.kind)},
                        {"reason", reason},
                        {"text", describe(o)},
                        {"cost_us", b.cost_us}};
    if (o.kind == BoundaryKind::Grid || o.kind == BoundaryKind::Flags) j["grid"] = o.grid;
    if (o.kind == BoundaryKind::Flags) j["flag_waits"] = o.waits;
    if (o.grid_price_us + o.flags_price_us > 0)
      j["sync_priced"] = {{"grid_us", o.grid_price_us}, {"flags_us", o.flags_price_us}};
    if (o.prefetched) j["prefetched"] = true;
    for (const plan::Decision& d : k.decisions)
      if (b.te >= 0 && d.te == b.te && d.merged_us + d.split_us > 0) {
        j["priced"] = {{"decision", plan::decision_kind_name(d.kind)},
                       {"merged_us", d.merged_us},
                       {"split_us", d.split_us}};
        break;
      }
    out.push_back(j);
  }
  return out;
}

}  // namespace

nlohmann::json plan_json(const std::string& model, const plan::FusionPlan& p) {
  nlohmann::json j;
  j["model"] = model;
  j["strategy"] = plan::strategy_name(p.strategy);
  j["sync"] = sync_mode_name(p.sync);
  j["gpu"] = p.gpu;
  std::set<std::string> ops;
  for (const te::Op& op : p.input.ops)
    if (!op->origin.node.empty()) ops.insert(op->origin.node);
  j["ops"] = ops.size();
  j["input_tes"] = p.input_tes;
  j["tes"] = p.program.ops.size();
  j["kernels"] = p.kernels();
  j["launches"] = p.launches;
  j["grid_syncs"] = p.grid_syncs;
  j["block_barriers"] = p.block_barriers;
  j["cost_model"] = p.cost_model;
  j["cost_constants"] = p.cost_constants;
  j["flops"] = p.flops;
  j["dram_bytes"] = p.dram_bytes;
  j["est_time_us"] = p.est_time_us;
  nlohmann::json parts = nlohmann::json::array();
  for (const plan::Partition& k : p.partitions) {
    nlohmann::json stages = nlohmann::json::array();
    for (const plan::Stage& s : k.stages)
      stages.push_back({{"kind", plan::stage_kind_name(s.kind)},
                        {"tes", names_of(p, s.tes)},
                        {"blocks", s.blocks},
                        {"threads", s.threads},
                        {"schedule", s.schedule},
                        {"sync_before", s.sync_before}});
    parts.push_back({{"id", k.id},
                     {"ops", k.ops},
                     {"tes", names_of(p, k.tes)},
                     {"kind", plan::partition_kind_name(k.kind)},
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
                     {"reasons", reason_texts(k)}});
    nlohmann::json& q = parts.back();
    q["priced"] = k.priced;
    q["launches"] = k.launches;
    q["block_barriers"] = k.block_barriers;
    q["l2_bytes"] = k.l2_bytes;
    q["launch_us"] = k.launch_us;
    q["barrier_us"] = k.barrier_us;
    if (!k.build_error.empty()) q["build_error"] = k.build_error;
    nlohmann::json decisions = nlohmann::json::array();
    for (const plan::Decision& d : k.decisions)
      decisions.push_back({{"kind", plan::decision_kind_name(d.kind)},
                           {"te", d.te >= 0 ? p.program.ops[static_cast<size_t>(d.te)]->name : ""},
                           {"merged_us", d.merged_us},
                           {"split_us", d.split_us},
                           {"reason", d.reason}});
    for (size_t i = 0; i < k.decisions.size(); ++i)
      if (!k.decisions[i].tensors.empty()) decisions[i]["tensors"] = k.decisions[i].tensors;
    q["decisions"] = decisions;
    if (!k.global_scratch.empty()) q["global_scratch"] = k.global_scratch;
    if (k.priced) {
      nlohmann::json built = nlohmann::json::array();
      for (const plan::BuiltStage& st : k.built_stages) {
        nlohmann::json b = {{"launch", st.launch},   {"name", st.name},
                            {"anchor", st.anchor()}, {"tes", st.tes},
                            {"nodes", st.nodes},     {"blocks", st.blocks},
                            {"threads", st.threads}, {"schedule", st.schedule}};
        // Side by side with the other stages of its wave, from this block on.
        if (st.wave >= 0) {
          b["wave"] = st.wave;
          b["block_offset"] = st.block_offset;
        }
        // Its GEMM's weights in a shared buffer for the whole kernel, loaded here or earlier.
        if (!st.weight_panel.empty())
          b["weight_panel"] = {{"buffer", st.weight_panel}, {"loads", st.weight_panel_load}};
        // The stage's own price, and the mainloop structure a tensor-core stage was priced from.
        b["est_us"] = st.est_us;
        b["bound"] = st.bound;
        if (!st.corrected.empty()) b["est_corrected"] = st.corrected;
        if (!st.mainloop.empty())
          b["mainloop"] = {{"structure", st.mainloop}, {"priced_from", st.priced_from}};
        built.push_back(std::move(b));
      }
      q["built_stages"] = built;
      // The built kernels' stage count (loop::Kernel::stages over its launches), beside the
      // planner's grouping in "stages": one planned stage is often several kernel stages.
      q["kernel_stages"] = k.built_stages.size();
      q["boundaries"] = boundaries_json(p, k);
      nlohmann::json counts = {{"none", 0}, {"block", 0}, {"grid", 0}, {"launch", 0}, {"flags", 0}};
      for (const plan::Boundary& b : k.boundaries)
        counts[boundary_kind_name(b.order.kind)] =
            counts[boundary_kind_name(b.order.kind)].get<int>() + 1;
      q["boundary_kinds"] = counts;
    }
  }
  j["partitions"] = parts;
  nlohmann::json tr = nlohmann::json::array();
  for (const plan::TransformSite& s : p.transforms)
    tr.push_back({{"kind", plan::transform_kind_name(s.kind)},
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
  for (const plan::PassRecord& r : p.passes)
    passes.push_back({{"name", std::string(r.name())}, {"ms", r.ms}});
  j["passes"] = passes;
  return j;
}

}  // namespace souffle
