#include "core/report/json.h"

namespace souffle::report {

namespace {

using nlohmann::json;

json prices_json(const std::vector<std::pair<std::string, double>>& prices) {
  json out = json::array();
  for (const auto& [what, us] : prices) out.push_back({{"what", what}, {"us", us}});
  return out;
}

json kernel_json(const ReportKernel& k) {
  json stages = json::array();
  for (const ReportStage& s : k.stages)
    stages.push_back({{"kind", s.kind},
                      {"tes", s.tes},
                      {"ops", s.ops},
                      {"blocks", s.blocks},
                      {"threads", s.threads},
                      {"schedule", s.schedule},
                      {"sync_before", s.sync_before}});
  json reasons = json::array();
  for (const ReportReason& r : k.reasons)
    reasons.push_back({{"kind", r.kind}, {"text", r.text}, {"prices", prices_json(r.prices)}});
  json launches = json::array();
  for (const ReportLaunch& l : k.launches) {
    json j = {{"name", l.name},
              {"grid", l.grid},
              {"block", l.block},
              {"smem_bytes", l.smem_bytes},
              {"cooperative", l.cooperative},
              {"stages", l.stages},
              {"grid_barriers", l.grid_barriers},
              {"block_barriers", l.block_barriers},
              {"cuda", l.cuda}};
    if (!l.error.empty()) j["error"] = l.error;
    if (!l.sass.empty()) {
      json s = json::array();
      for (const KernelSass& k : l.sass) s.push_back(sass_json(k));
      j["sass"] = s;
    }
    launches.push_back(j);
  }
  json j = {{"id", k.id},
            {"kind", k.kind},
            {"ops", k.ops},
            {"tes", k.tes},
            {"stages", stages},
            {"grid_syncs", k.grid_syncs},
            {"cooperative", k.cooperative},
            {"blocks", k.blocks},
            {"threads", k.threads},
            {"co_resident", k.co_resident},
            {"on_chip", k.on_chip},
            {"weight_panels", {{"loads", k.weight_panel_loads}, {"reads", k.weight_panel_reads}}},
            {"flops", k.flops},
            {"dram_bytes", k.dram_bytes},
            {"intensity", k.intensity},
            {"estimate",
             {{"time_us", k.est_time_us},
              {"compute_us", k.cost.compute_us},
              {"memory_us", k.cost.memory_us},
              {"launch_us", k.cost.launch_us},
              {"sync_us", k.cost.sync_us},
              {"bound", k.cost.bound}}},
            {"reasons", reasons},
            {"launches", launches}};
  if (k.measured) {
    json m = {{"time_us", k.measured->time_us}};
    if (k.measured->dram_bytes >= 0) m["dram_bytes"] = k.measured->dram_bytes;
    if (k.measured->occupancy >= 0) m["achieved_occupancy"] = k.measured->occupancy;
    j["measured"] = m;
  } else {
    j["measured"] = nullptr;
  }
  if (!k.timelines.empty()) {
    // Per launch with records (report --timeline): the analysis profile --json gives.
    std::vector<TimelineAnalysis> as;
    for (const ReportTimeline& t : k.timelines) as.push_back(t.analysis);
    json tl = timeline_analysis_json(as)["kernels"];
    for (size_t i = 0; i < k.timelines.size(); ++i) tl[i]["records"] = k.timelines[i].records.file;
    j["timeline"] = tl;
  }
  return j;
}

json plan_json(const ReportPlan& p) {
  json kernels = json::array();
  for (const ReportKernel& k : p.kernels) kernels.push_back(kernel_json(k));
  json transforms = json::array();
  for (const ReportTransform& t : p.transforms)
    transforms.push_back({{"kind", t.kind},
                          {"key", t.key},
                          {"ops", t.ops},
                          {"result", t.result},
                          {"applied", t.applied},
                          {"reason", t.reason}});
  auto edits = [](const std::vector<ReportEdit>& v, bool with_reason) {
    json out = json::array();
    for (const ReportEdit& e : v) {
      json j = {{"kind", e.kind}, {"text", e.text}};
      if (with_reason) j["reason"] = e.reason;
      out.push_back(j);
    }
    return out;
  };
  json passes = json::array();
  for (const auto& [name, ms] : p.passes) passes.push_back({{"name", name}, {"ms", ms}});
  json node_kernels = json::object();
  for (const auto& [node, ks] : p.node_kernels) node_kernels[node] = ks;
  json j = {{"label", p.label},
            {"strategy", plan::strategy_name(p.strategy)},
            {"decisions", p.decisions},
            {"gpu", p.gpu},
            {"precision", gpu::precision_name(p.precision)},
            {"input_tes", p.input_tes},
            {"tes", p.tes},
            {"kernels", p.kernels.size()},
            {"launches", p.launches},
            {"grid_syncs", p.grid_syncs},
            {"flops", p.flops},
            {"dram_bytes", p.dram_bytes},
            {"est_time_us", p.est_time_us},
            {"plan_ms", p.plan_ms},
            {"build_ms", p.build_ms},
            {"build_errors", p.build_errors},
            {"partitions", kernels},
            {"transforms", transforms},
            {"decisions_applied", edits(p.applied, false)},
            {"refused", edits(p.refused, true)},
            {"passes", passes},
            {"node_kernels", node_kernels}};
  if (p.measurement) {
    const Measurement& m = *p.measurement;
    j["measurement"] = {{"device", m.device},
                        {"driver", m.driver},
                        {"date", m.date},
                        {"source", m.source},
                        {"total_us", m.total_us}};
  } else {
    j["measurement"] = nullptr;
  }
  return j;
}

json environment_json(const ReportEnvironment& e) {
  const gpu::GpuSpec& g = e.gpu;
  json spec = {{"name", g.name},
               {"compute_capability", g.compute_capability},
               {"sm_count", g.sm_count},
               {"max_threads_per_sm", g.max_threads_per_sm},
               {"registers_per_sm", g.registers_per_sm},
               {"shared_memory_per_sm", g.shared_memory_per_sm},
               {"max_shared_memory_per_block", g.max_shared_memory_per_block},
               {"l2_bytes", g.l2_bytes},
               {"dram_bytes", g.dram_bytes},
               {"dram_bandwidth_gbps", g.dram_bandwidth_gbps},
               {"peak_fp32_tflops", g.peak_fp32_tflops},
               {"peak_tf32_tflops", g.peak_tf32_tflops},
               {"peak_fp16_tflops", g.peak_fp16_tflops},
               {"launch_overhead_us", g.launch_overhead_us},
               {"grid_sync_overhead_us", g.grid_sync_overhead_us},
               {"source", g.source}};
  json j = {{"gpu_spec", spec},
            {"device", e.device},
            {"device_reason", e.device_reason},
            {"driver_version", e.driver_version},
            {"nvrtc", e.nvrtc},
            {"options", e.options},
            {"generated", e.generated},
            {"generator", e.generator}};
  if (e.calibration) {
    const gpu::Calibration& c = *e.calibration;
    j["calibration"] = {{"device", c.device},
                        {"compute_capability", c.compute_capability},
                        {"driver_version", c.driver_version},
                        {"date", c.date},
                        {"file", c.file},
                        {"launch_overhead_us", c.launch_overhead_us},
                        {"dram_bandwidth_gbps", c.dram_bandwidth_gbps},
                        {"grid_barrier_samples", c.grid_barrier.size()}};
  } else {
    j["calibration"] = nullptr;
  }
  return j;
}

}  // namespace

json report_json(const Report& r) {
  json j;
  j["schema_version"] = r.schema_version;
  const ReportSummary& m = r.model;
  auto tensors = [](const std::vector<ReportTensor>& v) {
    json out = json::array();
    for (const ReportTensor& t : v) out.push_back({{"name", t.name}, {"type", t.type}});
    return out;
  };
  j["model"] = {{"path", m.path},
                {"name", m.name},
                {"file_bytes", m.file_bytes},
                {"opset", m.opset},
                {"onnx_nodes", m.onnx_nodes},
                {"nodes", m.nodes},
                {"folded", m.folded},
                {"tes", m.tes},
                {"inputs", tensors(m.inputs)},
                {"outputs", tensors(m.outputs)},
                {"op_counts", m.op_counts},
                {"constants", m.constants},
                {"constant_bytes", m.constant_bytes},
                {"flops", m.flops},
                {"warnings", m.warnings},
                {"load_ms", m.load_ms}};
  j["environment"] = environment_json(r.environment);
  json nodes = json::array(), edges = json::array();
  for (const ReportGraph::Node& n : r.graph.nodes)
    nodes.push_back({{"name", n.name}, {"op_type", n.op_type}, {"kind", n.kind}, {"type", n.type}});
  for (const ReportGraph::Edge& e : r.graph.edges)
    edges.push_back({{"from", e.from}, {"to", e.to}, {"label", e.label}});
  j["graph"] = {{"nodes", nodes}, {"edges", edges}};
  json plans = json::array();
  for (const ReportPlan& p : r.plans) plans.push_back(plan_json(p));
  j["plans"] = plans;
  if (r.comparison) {
    const ReportComparison& c = *r.comparison;
    json rows = json::array();
    for (const KernelDelta& d : c.rows)
      rows.push_back({{"a", d.a},
                      {"b", d.b},
                      {"ops", d.ops},
                      {"first_op", d.first_op},
                      {"a_us", d.a_us},
                      {"b_us", d.b_us},
                      {"delta_us", d.b_us - d.a_us},
                      {"a_bytes", d.a_bytes},
                      {"b_bytes", d.b_bytes},
                      {"a_flops", d.a_flops},
                      {"b_flops", d.b_flops},
                      {"a_syncs", d.a_syncs},
                      {"b_syncs", d.b_syncs},
                      {"same", d.same}});
    j["comparison"] = {{"a", c.a}, {"b", c.b}, {"basis", c.basis}, {"rows", rows}};
  } else {
    j["comparison"] = nullptr;
  }
  return j;
}

}  // namespace souffle::report
