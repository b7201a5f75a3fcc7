// Gathering a report: the model loaded once, each plan made, each kernel built and emitted, and
// the figures copied into plain values the writers render.
#include "core/report/report_model.h"

#include "core/session/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "core/analysis/analysis.h"
#include "core/gpu/device.h"
#include "core/gpu/nvrtc.h"
#include "core/loop/mutator.h"
#include "core/plan/decisions.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"
#include "core/support/json_number.h"

#ifndef SOUFFLE_VERSION
#define SOUFFLE_VERSION "0"
#endif

namespace souffle::report {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string type_text(const graph::Graph& g, const std::string& value) {
  if (!g.has_value(value)) return "";
  const graph::Value& v = g.value(value);
  return v.type_known ? graph::type_str(v.type) : "";
}

ReportSummary summarize(const LoadedModel& m) {
  ReportSummary s;
  s.path = m.path;
  s.name = std::filesystem::path(m.path).parent_path().filename().string();
  if (s.name.empty()) s.name = std::filesystem::path(m.path).stem().string();
  std::error_code ec;
  auto bytes = std::filesystem::file_size(m.path, ec);
  s.file_bytes = ec ? 0 : static_cast<int64_t>(bytes);
  s.opset = m.graph.opset;
  s.onnx_nodes = m.onnx_nodes;
  s.nodes = m.graph.nodes.size();
  s.folded = m.stats.nodes_folded + m.stats.nodes_dead;
  s.tes = m.program.ops.size();
  for (const std::string& in : m.graph.inputs) s.inputs.push_back({in, type_text(m.graph, in)});
  for (const std::string& out : m.graph.outputs)
    s.outputs.push_back({out, type_text(m.graph, out)});
  for (const graph::Node& n : m.graph.nodes) ++s.op_counts[n.op_type];
  for (const auto& [name, v] : m.graph.values)
    if (v.constant) {
      ++s.constants;
      s.constant_bytes += v.constant->byte_size();
    }
  s.warnings = m.warnings;
  s.load_ms = m.load_ms;
  return s;
}

ReportGraph graph_of(const graph::Graph& g) {
  ReportGraph rg;
  std::map<std::string, int> producer;
  for (const std::string& in : g.inputs) {
    producer[in] = static_cast<int>(rg.nodes.size());
    rg.nodes.push_back({in, "input", "input", type_text(g, in)});
  }
  for (const graph::Node& n : g.nodes) {
    const int box = static_cast<int>(rg.nodes.size());
    rg.nodes.push_back({n.name, n.op_type, "op",
                        n.outputs.empty() ? std::string() : type_text(g, n.outputs.front())});
    std::set<int> seen;
    for (const std::string& in : n.inputs) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end() || !seen.insert(it->second).second) continue;
      rg.edges.push_back({it->second, box, type_text(g, in)});
    }
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer[o] = box;
  }
  for (const std::string& out : g.outputs) {
    const int box = static_cast<int>(rg.nodes.size());
    rg.nodes.push_back({out, "output", "output", type_text(g, out)});
    auto it = producer.find(out);
    if (it != producer.end()) rg.edges.push_back({it->second, box, type_text(g, out)});
  }
  return rg;
}

std::vector<std::string> te_names(const plan::FusionPlan& p, const std::vector<int>& tes) {
  std::vector<std::string> out;
  out.reserve(tes.size());
  for (int te : tes) out.push_back(p.program.ops[static_cast<size_t>(te)]->name);
  return out;
}

std::vector<std::string> te_nodes(const plan::FusionPlan& p, const std::vector<int>& tes) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (int te : tes) {
    const std::string& node = p.program.ops[static_cast<size_t>(te)]->origin.node;
    if (!node.empty() && seen.insert(node).second) out.push_back(node);
  }
  return out;
}

/// Per ONNX node, the kernels its TEs ended up in: a TE the transformations merged or inlined
/// into another is followed to the TE that replaced it, so a node fused away still has a kernel.
std::map<std::string, std::vector<int>> node_kernels(const plan::FusionPlan& p) {
  std::map<std::string, int> kernel_of;  // TE name in the planned program -> kernel id
  for (const plan::Partition& k : p.partitions)
    for (int te : k.tes) kernel_of[p.program.ops[static_cast<size_t>(te)]->name] = k.id;
  std::map<std::string, std::string> replaced;  // TE name -> the TE that replaced it
  for (const plan::TransformSite& s : p.transforms)
    if (s.applied && !s.result.empty())
      for (const std::string& member : s.ops)
        if (member != s.result) replaced[member] = s.result;
  auto resolve = [&](std::string name) {
    for (size_t hops = 0; hops < 16 && !kernel_of.count(name); ++hops) {
      auto it = replaced.find(name);
      if (it == replaced.end()) break;
      name = it->second;
    }
    return name;
  };
  std::map<std::string, std::vector<int>> out;
  auto add = [&](const std::string& node, int k) {
    if (node.empty()) return;
    std::vector<int>& ks = out[node];
    if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  };
  for (const te::Op& op : p.input.ops) {
    auto it = kernel_of.find(resolve(op->name));
    if (it != kernel_of.end()) add(op->origin.node, it->second);
  }
  for (const te::Op& op : p.program.ops) add(op->origin.node, kernel_of[op->name]);
  for (auto& [node, ks] : out) std::sort(ks.begin(), ks.end());
  return out;
}

ReportLaunch launch_of(const CompiledKernel& ck) {
  ReportLaunch l;
  l.name = ck.name;
  l.grid = ck.launch.grid_x;
  l.block = ck.launch.block_x;
  l.smem_bytes = ck.launch.dynamic_shared_bytes;
  l.cooperative = ck.launch.cooperative;
  l.stages = static_cast<int>(ck.kernel.stages.size());
  if (ck.kernel.body.defined())
    loop::for_each_stmt(ck.kernel.body, [&](const loop::Stmt& s) {
      l.grid_barriers += s.kind() == loop::StmtKind::GridBarrier;
      l.block_barriers += s.kind() == loop::StmtKind::BlockBarrier;
    });
  l.cuda = ck.cuda;
  l.error = ck.error;
  return l;
}

/// The timelines of `p`'s launches kept in `dir` as STRATEGY.KERNEL.timeline, into the kernels
/// of `rp`. A record file of the strategy naming no launch of the plan is refused, naming it.
void attach_timelines(ReportPlan& rp, const plan::FusionPlan& p,
                      const std::vector<CompiledKernel>& kernels, const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string prefix = std::string(plan::strategy_name(p.strategy)) + ".";
  const std::string suffix = ".timeline";
  std::map<std::string, const CompiledKernel*> by_name;
  for (const CompiledKernel& ck : kernels) by_name[ck.name] = &ck;
  std::map<int, size_t> index;
  for (size_t i = 0; i < rp.kernels.size(); ++i) index[rp.kernels[i].id] = i;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.size() > prefix.size() + suffix.size() && f.starts_with(prefix) && f.ends_with(suffix))
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string f = file.filename().string();
    const std::string name = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
    auto ck = by_name.find(name);
    if (ck == by_name.end() || !index.count(ck->second->partition))
      throw UserError(file.string(), "",
                      "no kernel " + name + " in the " + rp.label +
                          " plan of this model (were its records made with another model, "
                          "--gpu or --precision?)");
    KernelTimeline t = read_timeline_file(file.string());
    t.kernel = name;
    attach_stage_info(t, *ck->second, p);
    ReportTimeline rt;
    rt.analysis = analyse_timeline(t);
    rt.records = std::move(t);
    rp.kernels[index[ck->second->partition]].timelines.push_back(std::move(rt));
  }
}

ReportPlan report_plan(const plan::FusionPlan& p, const std::string& decisions, bool code,
                       double plan_ms, bool sass = false, const std::string& timeline = "") {
  ReportPlan rp;
  rp.strategy = p.strategy;
  rp.decisions = decisions;
  rp.label = plan::strategy_name(p.strategy);
  if (!decisions.empty()) rp.label += " + " + std::filesystem::path(decisions).filename().string();
  rp.gpu = p.gpu;
  rp.precision = p.precision;
  rp.input_tes = p.input_tes;
  rp.tes = p.program.ops.size();
  rp.grid_syncs = p.grid_syncs;
  rp.flops = p.flops;
  rp.dram_bytes = p.dram_bytes;
  rp.est_time_us = p.est_time_us;
  rp.plan_ms = plan_ms;
  const gpu::GpuSpec& spec = p.gpu_spec;
  for (const plan::Partition& k : p.partitions) {
    ReportKernel rk;
    rk.id = k.id;
    rk.kind = plan::partition_kind_name(k.kind);
    rk.ops = k.ops;
    rk.tes = te_names(p, k.tes);
    for (const plan::Stage& s : k.stages) {
      ReportStage rs{plan::stage_kind_name(s.kind),
                     te_names(p, s.tes),
                     te_nodes(p, s.tes),
                     s.blocks,
                     s.threads,
                     s.schedule,
                     s.sync_before};
      // A priced partition's stages as built (their tuned tiles and launch shapes), not the
      // planner's estimate: the stage built from the same first TE.
      if (k.priced && !rs.tes.empty())
        for (const plan::BuiltStage& b : k.built_stages)
          if (std::find(b.tes.begin(), b.tes.end(), rs.tes.front()) != b.tes.end() &&
              b.threads > 0) {
            rs.blocks = b.blocks;
            rs.threads = static_cast<int>(b.threads);
            rs.schedule = b.schedule;
            break;
          }
      rk.stages.push_back(std::move(rs));
    }
    rk.grid_syncs = k.grid_syncs;
    rk.cooperative = k.cooperative;
    rk.blocks = k.blocks;
    rk.threads = k.threads;
    rk.co_resident = k.co_resident;
    rk.on_chip = k.on_chip;
    for (const plan::BuiltStage& st : k.built_stages)
      if (!st.weight_panel.empty())
        ++(st.weight_panel_load ? rk.weight_panel_loads : rk.weight_panel_reads);
    rk.flops = k.flops;
    rk.dram_bytes = k.dram_bytes;
    rk.est_time_us = k.est_time_us;
    if (spec.sm_count > 0) {
      rk.cost = gpu::kernel_cost(spec, k.flops, k.dram_bytes, k.grid_syncs, p.precision);
      if (k.priced) {
        // Cost model v2 priced the built kernels: launches and barriers are its own; the rest
        // of its estimate is the stages' time, bound by whichever roofline term is larger.
        const double body = std::max(0.0, k.est_time_us - k.launch_us - k.barrier_us);
        const bool compute = rk.cost.compute_us >= rk.cost.memory_us;
        rk.cost.launch_us = k.launch_us;
        rk.cost.sync_us = k.barrier_us;
        rk.cost.compute_us = compute ? body : std::min(rk.cost.compute_us, body);
        rk.cost.memory_us = compute ? std::min(rk.cost.memory_us, body) : body;
        rk.cost.bound = compute ? "compute" : "memory";
        rk.cost.total_us = k.est_time_us;
      }
    }
    rk.intensity = k.dram_bytes > 0 ? static_cast<double>(k.flops) / k.dram_bytes : 0;
    for (const plan::Reason& why : k.reasons)
      rk.reasons.push_back({plan::reason_kind_name(why.kind), why.text, {}});
    // The souffle strategy's priced decisions: the two prices beside the reason they explain.
    for (const plan::Decision& d : k.decisions) {
      using K = plan::DecisionKind;
      // What the two prices are of: merged/apart, or rows split/in one block, or the tensors
      // kept in shared memory/in global scratch.
      const bool chip = d.kind == K::KeepOnChip || d.kind == K::GlobalScratch;
      const bool rows = d.kind == K::RowsInBlock;
      std::vector<std::pair<std::string, double>> prices;
      if (d.merged_us > 0)
        prices.push_back({chip ? "in shared memory" : rows ? "rows split" : "merged", d.merged_us});
      if (d.split_us > 0)
        prices.push_back({chip   ? "in global scratch"
                          : rows ? "rows in a block"
                                 : "apart",
                          d.split_us});
      if (d.reason.empty()) continue;
      auto same = std::find_if(rk.reasons.begin(), rk.reasons.end(),
                               [&](const ReportReason& r) { return r.text == d.reason; });
      if (same != rk.reasons.end()) {
        same->prices = prices;
        continue;
      }
      const char* kind = d.kind == K::Start                              ? "start"
                         : d.kind == K::Join || d.kind == K::RowsInBlock ? "join"
                         : d.kind == K::UserMerge || chip                ? "decision"
                                                                         : "cut";
      rk.reasons.push_back({kind, d.reason, prices});
    }
    rp.kernels.push_back(std::move(rk));
  }
  rp.node_kernels = node_kernels(p);
  for (const plan::TransformSite& s : p.transforms)
    rp.transforms.push_back(
        {plan::transform_kind_name(s.kind), s.key, s.result, s.reason, s.ops, s.applied});
  for (const plan::Edit& e : p.applied)
    rp.applied.push_back({plan::edit_kind_name(e.kind), plan::describe(e), ""});
  for (const plan::RefusedEdit& r : p.refused)
    rp.refused.push_back({plan::edit_kind_name(r.edit.kind), plan::describe(r.edit), r.reason});
  for (const plan::PassRecord& r : p.passes) rp.passes.push_back({std::string(r.name()), r.ms});

  if (code || !timeline.empty()) {
    // Kernels built and emitted as `compile` does, without NVRTC (no archs): a report is quick.
    CompileOptions co;
    co.archs = {};
    co.gpu = p.gpu_spec;
    CompileReport cr = compile_plan(p, co);
    rp.build_ms = cr.build_ms;
    if (!timeline.empty()) attach_timelines(rp, p, cr.kernels, timeline);
    std::map<int, size_t> index;
    for (size_t i = 0; i < rp.kernels.size(); ++i) index[rp.kernels[i].id] = i;
    // The SASS of every launch (compiled with line information for sm_80 and sm_90).
    std::vector<std::vector<KernelSass>> sass_of_launch;
    if (sass) sass_of_launch = sass_of_all(cr.kernels, {"sm_80", "sm_90"});
    for (size_t i = 0; code && i < cr.kernels.size(); ++i) {
      const CompiledKernel& ck = cr.kernels[i];
      auto it = index.find(ck.partition);
      if (it == index.end()) continue;
      rp.kernels[it->second].launches.push_back(launch_of(ck));
      if (i < sass_of_launch.size())
        rp.kernels[it->second].launches.back().sass = std::move(sass_of_launch[i]);
      ++rp.launches;
      rp.build_errors += ck.ok() ? 0 : 1;
    }
  }
  return rp;
}

plan::FusionPlan make_plan(const LoadedModel& m, plan::Strategy s, const ReportOptions& o,
                           const plan::Decisions& decisions, double& ms) {
  // The plan options every caller uses (core/session/pipeline): priced from built kernels,
  // with the calibration file's constants when one is given.
  PipelineOptions pipe;
  pipe.strategy = s;
  pipe.gpu = o.gpu;
  pipe.precision = o.precision;
  pipe.decisions = decisions;
  pipe.calibration = o.calibration;
  auto t0 = Clock::now();
  plan::FusionPlan p = run_pipeline(m, pipe).plan;
  ms = ms_since(t0);
  return p;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

std::string kernel_colour(int id) {
  // Twelve distinguishable hues (a qualitative palette), light enough for black text.
  static const char* palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                  "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  return palette[static_cast<size_t>(id < 0 ? 0 : id) % 12];
}

ReportComparison compare_plans(const std::vector<ReportPlan>& plans, size_t a, size_t b,
                               const std::string& basis) {
  ReportComparison c;
  c.a = a;
  c.b = b;
  c.basis = basis;
  const ReportPlan& pa = plans.at(a);
  const ReportPlan& pb = plans.at(b);
  // Union-find over the kernels of both plans (a's first), joined through shared ONNX nodes.
  const size_t na = pa.kernels.size(), nb = pb.kernels.size();
  std::vector<size_t> parent(na + nb);
  std::iota(parent.begin(), parent.end(), size_t{0});
  std::function<size_t(size_t)> find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::map<int, size_t> ia, ib;
  for (size_t i = 0; i < na; ++i) ia[pa.kernels[i].id] = i;
  for (size_t i = 0; i < nb; ++i) ib[pb.kernels[i].id] = na + i;
  std::map<std::string, std::vector<size_t>> members;
  for (const auto& [node, ks] : pa.node_kernels)
    for (int k : ks) members[node].push_back(ia[k]);
  for (const auto& [node, ks] : pb.node_kernels)
    for (int k : ks) members[node].push_back(ib[k]);
  for (const auto& [node, ms] : members)
    for (size_t m : ms) parent[find(m)] = find(ms.front());
  // One row per group, in the order of its first kernel of plan a (then of b).
  std::map<size_t, size_t> row_of;
  for (size_t i = 0; i < na + nb; ++i) {
    size_t r = find(i);
    auto [it, fresh] = row_of.emplace(r, c.rows.size());
    if (fresh) c.rows.emplace_back();
    KernelDelta& d = c.rows[it->second];
    if (i < na) {
      const ReportKernel& k = pa.kernels[i];
      d.a.push_back(k.id);
      d.a_us += k.est_time_us;
      d.a_bytes += k.dram_bytes;
      d.a_flops += k.flops;
      d.a_syncs += k.grid_syncs;
    } else {
      const ReportKernel& k = pb.kernels[i - na];
      d.b.push_back(k.id);
      d.b_us += k.est_time_us;
      d.b_bytes += k.dram_bytes;
      d.b_flops += k.flops;
      d.b_syncs += k.grid_syncs;
    }
  }
  std::map<size_t, std::set<std::string>> ops;
  for (const auto& [node, ms] : members) ops[row_of[find(ms.front())]].insert(node);
  for (size_t r = 0; r < c.rows.size(); ++r) {
    KernelDelta& d = c.rows[r];
    d.ops = ops[r].size();
    // The first node in the model's order: that of the group's first kernel.
    const ReportKernel* first = nullptr;
    if (!d.a.empty()) first = &pa.kernels[ia[d.a.front()]];
    if (!first && !d.b.empty()) first = &pb.kernels[ib[d.b.front()] - na];
    if (first && !first->ops.empty()) d.first_op = first->ops.front();
    bool same = d.a.size() == 1 && d.b.size() == 1;
    if (same) {
      const ReportKernel& x = pa.kernels[ia[d.a[0]]];
      const ReportKernel& y = pb.kernels[ib[d.b[0]] - na];
      same = x.tes == y.tes && x.est_time_us == y.est_time_us && x.dram_bytes == y.dram_bytes &&
             x.grid_syncs == y.grid_syncs;
    }
    d.same = same;
  }
  return c;
}

void load_measurements(const std::string& path, std::vector<ReportPlan>& plans) {
  std::ifstream in(path);
  if (!in) throw UserError(path, "", "cannot open the measurements file");
  std::ostringstream text;
  text << in.rdbuf();
  parse_measurements(text.str(), path, plans);
}

namespace {

void read_measurements(const nlohmann::json& j, const std::string& path,
                       std::vector<ReportPlan>& plans) {
  auto text = [&](const char* key) -> std::string {
    if (!j.contains(key)) return "";
    if (!j[key].is_string()) throw UserError(path, "", std::string("\"") + key + "\": not text");
    return j[key].get<std::string>();
  };
  // The output of `souffle-cli profile --json`: each strategy's run goes to its plan, per
  // partition the sum of its launches' medians; an emulator's CPU time is named as such.
  if (j.is_object() && j.contains("strategies") && j["strategies"].is_array()) {
    for (const nlohmann::json& run : j["strategies"]) {
      if (!run.is_object() || !run.contains("kernels") || !run["kernels"].is_array()) continue;
      const std::string strategy = run.value("strategy", std::string());
      ReportPlan* target = nullptr;
      for (ReportPlan& p : plans)
        if (plan::strategy_name(p.strategy) == strategy && p.decisions.empty()) target = &p;
      if (!target) continue;
      Measurement m;
      m.device = run.value("device", std::string());
      if (!run.value("gpu_time", false)) m.device += " (emulator: CPU time, not a GPU time)";
      // Kernels built with per-tile flags are not the plan's grid-barrier kernels: say so.
      if (const std::string sync = run.value("sync", std::string("grid")); sync != "grid")
        m.device += " (kernels built with --sync " + sync + ")";
      if (auto d = run.find("driver_version"); d != run.end() && !d->is_null()) {
        std::optional<int> v = json_number_as<int>(*d);
        if (!v) throw UserError(path, "", strategy + ": \"driver_version\": not a whole number");
        if (*v > 0) m.driver = std::to_string(*v);
      }
      m.date = run.value("date", std::string());
      m.source = path;
      std::map<int, double> per_partition;
      // Counters: bytes summed over a partition's launches (none when one launch lacks them),
      // occupancy weighted by the launches' times.
      std::map<int, double> bytes, occ_weight, occ_sum;
      std::set<int> uncounted;
      auto counter = [&](const nlohmann::json& k, const char* key) {
        auto it = k.find(key);
        if (it == k.end() || it->is_null()) return -1.0;
        std::optional<double> v = json_number_as<double>(*it);
        if (!v) throw UserError(path, "", strategy + ": \"" + key + "\": not a number");
        return *v;
      };
      for (const nlohmann::json& k : run["kernels"])
        if (k.is_object() && k.contains("time_us") && k["time_us"].is_object()) {
          std::optional<int> id = json_number_as<int>(k.value("partition", nlohmann::json(-1)));
          if (!id) throw UserError(path, "", strategy + ": \"partition\": not a whole number");
          const double us = k["time_us"].value("median", 0.0);
          per_partition[*id] += us;
          const double rd = counter(k, "dram_read_bytes"), wr = counter(k, "dram_write_bytes");
          if (rd < 0 || wr < 0)
            uncounted.insert(*id);
          else
            bytes[*id] += rd + wr;
          if (const double o = counter(k, "achieved_occupancy"); o >= 0) {
            occ_weight[*id] += std::max(us, 1e-9);
            occ_sum[*id] += std::max(us, 1e-9) * o;
          }
        }
      for (const auto& [id, us] : per_partition) {
        auto it = std::find_if(target->kernels.begin(), target->kernels.end(),
                               [id = id](const ReportKernel& rk) { return rk.id == id; });
        if (it == target->kernels.end())
          throw UserError(path, "",
                          fmt::format("{}: kernel {} is not in the {} plan (measured on another "
                                      "plan?)",
                                      strategy, id, target->label));
        it->measured = MeasuredTime{us};
        if (bytes.count(id) && !uncounted.count(id)) it->measured->dram_bytes = bytes[id];
        if (occ_weight[id] > 0) it->measured->occupancy = occ_sum[id] / occ_weight[id];
        m.total_us += us;
      }
      target->measurement = m;
    }
    return;
  }
  // Another tool's trace (ONNX Runtime's profile is a bare array of Chrome trace events; the
  // PyTorch profiler's an object with traceEvents) times that tool's operators, not this plan's
  // kernels: refused as such, saying where it is taken.
  const bool trace = (j.is_array() && !j.empty() && j[0].is_object() && j[0].contains("ph")) ||
                     (j.is_object() && j.contains("traceEvents"));
  if (trace)
    throw UserError(path, "",
                    "a trace of another runtime (an ONNX Runtime profile or a PyTorch profiler "
                    "trace: its operators' times, not this plan's kernels); --measurements takes "
                    "the JSON of `souffle-cli profile --json` or {\"kernels\": [{\"kernel\": "
                    "ID, \"time_us\": T}]}. Import such a trace in the explorer (Kernels > "
                    "Import a profile), which matches it to the model's nodes");
  if (!j.is_object() || !j.contains("kernels") || !j["kernels"].is_array())
    throw UserError(path, "", "\"kernels\": missing or not a list of {kernel, time_us}");
  ReportPlan* target = plans.empty() ? nullptr : &plans.front();
  if (std::string s = text("strategy"); !s.empty()) {
    target = nullptr;
    for (ReportPlan& p : plans)
      if (p.label == s || (plan::strategy_name(p.strategy) == s && !target)) target = &p;
    if (!target) throw UserError(path, "", "\"strategy\": " + s + " is not among the plans shown");
  }
  if (!target) return;
  Measurement m;
  m.device = text("device");
  m.driver = text("driver");
  m.date = text("date");
  m.source = path;
  for (const nlohmann::json& k : j["kernels"]) {
    if (!k.is_object() || !k.contains("kernel") || !k["kernel"].is_number_integer() ||
        !k.contains("time_us") || !k["time_us"].is_number())
      throw UserError(path, "", "\"kernels\": each entry needs an integer kernel and time_us");
    int id = k["kernel"].get<int>();
    double us = k["time_us"].get<double>();
    if (!(us >= 0)) throw UserError(path, "", fmt::format("kernel {}: time_us below 0", id));
    auto it = std::find_if(target->kernels.begin(), target->kernels.end(),
                           [&](const ReportKernel& rk) { return rk.id == id; });
    if (it == target->kernels.end())
      throw UserError(path, "",
                      fmt::format("kernel {}: the {} plan has no such kernel (it has {})", id,
                                  target->label, target->kernels.size()));
    it->measured = MeasuredTime{us};
    m.total_us += us;
  }
  target->measurement = m;
}

}  // namespace

void parse_measurements(const std::string& json_text, const std::string& path,
                        std::vector<ReportPlan>& plans) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path, "", std::string("not JSON: ") + e.what());
  }
  // A profile run written by someone else may hold a field of the wrong type (a boolean device
  // name): a refusal naming the file, not the JSON library's exception escaping the report.
  try {
    read_measurements(j, path, plans);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path, "", std::string("a field of the wrong type: ") + e.what());
  }
}

Report report_of_plans(const LoadedModel& m, const std::vector<const plan::FusionPlan*>& plans,
                       const std::vector<std::string>& labels, bool code) {
  if (plans.empty()) throw UserError("no plan to report");
  Report r;
  r.model = summarize(m);
  r.model.flops = analysis::analyze(m.program).total_flops;
  r.graph = graph_of(m.graph);
  std::vector<std::string> names;
  for (size_t i = 0; i < plans.size(); ++i) {
    double ms = 0;
    for (const plan::PassRecord& rec : plans[i]->passes) ms += rec.ms;
    r.plans.push_back(report_plan(*plans[i], i < labels.size() ? labels[i] : "", code, ms));
    names.push_back(r.plans.back().label);
  }
  ReportEnvironment& env = r.environment;
  env.gpu = plans.front()->gpu_spec;
  env.options["strategies"] = join(names, ", ");
  env.options["precision"] = gpu::precision_name(plans.front()->precision);
  env.options["gpu"] = env.gpu.name;
  env.options["code"] = code ? "CUDA C per kernel (emitted, not compiled)" : "none";
  env.generated = utc_now();
  env.generator = std::string("Souffle Explorer ") + SOUFFLE_VERSION;
  return r;
}

Report gather_report(const std::string& path, const ReportOptions& o) {
  if (o.strategies.empty()) throw UserError("no strategy to report");
  if (o.compare && !o.decisions.empty())
    throw UserError("--compare and --decisions both ask for a comparison: give one");
  if (o.gpu.sm_count == 0) throw UserError("no GPU spec given for the cost model");
  Report r;
  onnx_import::ImportOptions io;
  io.dims = o.dims;
  io.bind = o.bind;
  io.shapes = o.shapes;
  LoadedModel m = load_model(path, io);
  r.model = summarize(m);
  r.model.flops = analysis::analyze(m.program).total_flops;
  r.graph = graph_of(m.graph);

  plan::Decisions edits = o.edits;
  std::string edits_name = o.edits_label;
  if (!o.decisions.empty()) {
    edits = plan::load_decisions(o.decisions);
    edits_name = o.decisions;
  }
  const bool compare_edits = !o.decisions.empty() || !o.edits.edits.empty();
  if (o.compare && compare_edits)
    throw UserError("--compare and --decisions both ask for a comparison: give one");

  std::vector<plan::Strategy> strategies = o.strategies;
  if (o.compare && std::find(strategies.begin(), strategies.end(), *o.compare) == strategies.end())
    strategies.push_back(*o.compare);
  if (!o.timeline.empty() && !std::filesystem::is_directory(o.timeline))
    throw UserError(o.timeline, "",
                    "--timeline: no such folder (profile --timeline --timeline-dir writes one)");
  for (plan::Strategy s : strategies) {
    double ms = 0;
    plan::FusionPlan p = make_plan(m, s, o, {}, ms);
    r.plans.push_back(report_plan(p, "", o.code, ms, o.sass, o.timeline));
  }
  if (!o.timeline.empty()) {
    size_t found = 0;
    for (const ReportPlan& p : r.plans)
      for (const ReportKernel& k : p.kernels) found += k.timelines.size();
    if (found == 0)
      throw UserError(o.timeline, "",
                      "--timeline: no record files STRATEGY.KERNEL.timeline here for the plans "
                      "reported (profile --timeline --timeline-dir writes them)");
  }
  if (compare_edits) {
    double ms = 0;
    plan::FusionPlan p = make_plan(m, strategies.front(), o, edits, ms);
    if (!o.decisions.empty()) plan::require_known_names(p, o.decisions);
    r.plans.push_back(report_plan(p, edits_name, o.code, ms, o.sass));
    r.comparison = compare_plans(r.plans, 0, r.plans.size() - 1, "decisions");
  } else if (o.compare) {
    size_t b = static_cast<size_t>(std::find(strategies.begin(), strategies.end(), *o.compare) -
                                   strategies.begin());
    if (b == 0)
      throw UserError(std::string("--compare ") + plan::strategy_name(*o.compare) +
                      ": the same strategy as the one reported; compare with another");
    r.comparison = compare_plans(r.plans, 0, b, "strategies");
  }
  if (!o.measurements.empty()) load_measurements(o.measurements, r.plans);

  ReportEnvironment& env = r.environment;
  env.gpu = o.gpu;
  const gpu::DeviceInfo& dev = gpu::cuda_device();
  env.device = dev.device_name;
  env.device_reason = dev.reason;
  env.driver_version = dev.driver_version;
  env.nvrtc = gpu::nvrtc_version();
  std::vector<std::string> names;
  for (const ReportPlan& p : r.plans) names.push_back(p.label);
  env.options["strategies"] = join(names, ", ");
  env.options["precision"] = gpu::precision_name(o.precision);
  env.options["gpu"] = o.gpu.name;
  if (compare_edits) env.options["decisions"] = edits_name;
  if (!o.measurements.empty()) env.options["measurements"] = o.measurements;
  if (!o.timeline.empty()) env.options["timeline"] = o.timeline;
  std::vector<std::string> dims;
  for (const auto& [k, v] : o.dims) dims.push_back(fmt::format("{}={}", k, v));
  if (!dims.empty()) env.options["dims"] = join(dims, ", ");
  env.options["code"] = o.code ? "CUDA C per kernel (emitted, not compiled)" : "none";
  if (o.code && o.sass) env.options["sass"] = "per launch and stage, sm_80 and sm_90 (nvdisasm)";
  if (!o.calibration.empty()) {
    env.calibration = gpu::load_calibration(o.calibration);
    env.options["calibration"] = o.calibration;
  }
  env.generated = utc_now();
  env.generator = std::string("Souffle Explorer ") + SOUFFLE_VERSION;
  return r;
}

}  // namespace souffle::report
