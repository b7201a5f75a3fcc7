// The pipeline as teaching steps: each step runs for real, and its text and sentence are
// generated from what it produced, never written by hand per model.
#include "core/session/pipeline_steps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/analysis/analysis.h"
#include "core/codegen/codegen_cuda.h"
#include "core/interp/infer_fold.h"
#include "core/loop/mutator.h"
#include "core/lower/lower.h"
#include "core/onnx/importer.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/verify_kernels.h"
#include "core/te/printer.h"
#include "core/te/verify.h"

namespace souffle {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string cut(std::string text, size_t max) {
  if (text.size() <= max) return text;
  // Cut at a line end so the last line shown is whole.
  size_t at = text.rfind('\n', max);
  text.resize(at == std::string::npos ? max : at + 1);
  text += fmt::format("… (cut here: the text goes on beyond {} KB)\n", max / 1024);
  return text;
}

/// Node count, then op types by count: the shape of a graph at a glance.
std::string graph_summary(const graph::Graph& g, const std::string& heading) {
  std::map<std::string, int> ops;
  for (const graph::Node& n : g.nodes) ++ops[n.op_type];
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [op, c] : ops) by_count.push_back({-c, op});
  std::sort(by_count.begin(), by_count.end());
  int constants = 0;
  for (const auto& [name, v] : g.values) constants += v.constant != nullptr;
  std::ostringstream os;
  os << heading << "\n";
  os << g.nodes.size() << " nodes, " << g.inputs.size() << " inputs, " << g.outputs.size()
     << " outputs, " << constants << " constant tensors\n\nop types:\n";
  for (const auto& [neg, op] : by_count) os << fmt::format("  {:>5}  {}\n", -neg, op);
  return os.str();
}

std::string plural(size_t n, const std::string& one, const std::string& many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

/// Op types of TEs named in a site, "3 MatMul" or "MatMul, Add".
std::string describe_members(const std::vector<std::string>& ops,
                             const std::unordered_map<std::string, const te::ComputeOp*>& by_name) {
  std::map<std::string, int> types;
  for (const std::string& o : ops) {
    auto it = by_name.find(o);
    ++types[it == by_name.end() ? std::string("TE") : it->second->origin.op_type];
  }
  if (types.size() == 1)
    return fmt::format("{} {} TEs", types.begin()->second, types.begin()->first);
  std::vector<std::string> parts;
  for (const auto& [t, c] : types) parts.push_back(c == 1 ? t : fmt::format("{}×{}", c, t));
  return fmt::format("{} TEs ({})", ops.size(), fmt::join(parts, ", "));
}

void add_origin_nodes(const std::vector<std::string>& tes,
                      const std::unordered_map<std::string, const te::ComputeOp*>& by_name,
                      std::vector<std::string>& nodes) {
  for (const std::string& t : tes) {
    auto it = by_name.find(t);
    if (it == by_name.end() || it->second->origin.node.empty()) continue;
    if (std::find(nodes.begin(), nodes.end(), it->second->origin.node) == nodes.end())
      nodes.push_back(it->second->origin.node);
  }
}

/// The horizontal or vertical step of a souffle plan, from its sites.
PipelineStep transform_step(const plan::FusionPlan& p, const std::string& kind,
                            const te::TeProgram& before_program, const std::string& snapshot,
                            const std::unordered_map<std::string, const te::ComputeOp*>& by_name,
                            size_t tes_after) {
  PipelineStep s;
  s.name = kind;
  s.title = kind == "horizontal" ? "Horizontal transformation: merge independent TEs"
                                 : "Vertical transformation: inline producers into consumers";
  s.before = te::print(before_program);
  s.after = snapshot;
  std::vector<const plan::TransformSite*> applied;
  size_t sites = 0;
  for (const plan::TransformSite& site : p.transforms) {
    if (site.kind != kind) continue;
    ++sites;
    if (site.applied) applied.push_back(&site);
  }
  for (const plan::TransformSite* site : applied) add_origin_nodes(site->ops, by_name, s.nodes);
  if (applied.empty()) {
    s.sentence = sites == 0 ? fmt::format(
                                  "The {} transformation found no site to apply; the program "
                                  "keeps its {}.",
                                  kind, plural(before_program.ops.size(), "TE", "TEs"))
                            : fmt::format(
                                  "The {} transformation looked at {} and applied none; the "
                                  "program keeps its {}.",
                                  kind, plural(sites, "site", "sites"),
                                  plural(before_program.ops.size(), "TE", "TEs"));
    return s;
  }
  const plan::TransformSite& first = *applied.front();
  if (kind == "horizontal") {
    s.sentence = fmt::format(
        "Horizontal fusion applied {} of {}: e.g. it merged {} reading one input into {}; "
        "{} → {} TEs.",
        applied.size(), plural(sites, "site", "sites"), describe_members(first.ops, by_name),
        first.result, before_program.ops.size(), tes_after);
  } else {
    s.sentence = fmt::format(
        "Vertical fusion applied {} of {}: e.g. {} became one TE {}; {} → {} TEs.", applied.size(),
        plural(sites, "site", "sites"), describe_members(first.ops, by_name), first.result,
        before_program.ops.size(), tes_after);
  }
  return s;
}

}  // namespace

const std::vector<std::string>& pipeline_step_names() {
  static const std::vector<std::string> names = {"import",       "fold",       "lower",
                                                 "characterize", "horizontal", "vertical",
                                                 "partition",    "schedule",   "emit"};
  return names;
}

int default_step_partition(const plan::FusionPlan& p) {
  int first_compute = -1;
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    const plan::Partition& k = p.partitions[i];
    if (k.kind != "compute") continue;
    if (first_compute < 0) first_compute = static_cast<int>(i);
    // A kernel with a compute stage and more besides shows what fusion buys.
    if (k.tes.size() > 1) return static_cast<int>(i);
  }
  if (first_compute >= 0) return first_compute;
  return p.partitions.empty() ? -1 : 0;
}

std::vector<PipelineStep> pipeline_steps(const std::string& path, const PipelineStepOptions& o) {
  std::vector<PipelineStep> steps;
  const size_t max = o.max_text;

  // ---- import
  auto t0 = Clock::now();
  onnx_import::ImportResult imported = onnx_import::import_model(path);
  {
    PipelineStep s;
    s.name = "import";
    s.title = "Import the ONNX file";
    s.ms = ms_since(t0);
    s.before = fmt::format("the file {}\n", path);
    s.after = graph_summary(imported.graph, "the imported graph");
    int initializers = 0;
    for (const auto& [name, v] : imported.graph.values) initializers += v.constant != nullptr;
    s.sentence = fmt::format(
        "Imported {} with {} and {} constant tensors{}.",
        plural(imported.graph.nodes.size(), "node", "nodes"),
        plural(imported.graph.inputs.size(), "input", "inputs"), initializers,
        imported.warnings.empty()
            ? std::string()
            : fmt::format(" ({})", plural(imported.warnings.size(), "warning", "warnings")));
    steps.push_back(std::move(s));
  }

  // ---- fold
  graph::Graph g = imported.graph;
  t0 = Clock::now();
  interp::InferFoldStats stats = interp::infer_and_fold(g);
  graph::verify(g);
  {
    PipelineStep s;
    s.name = "fold";
    s.title = "Infer types and fold constants";
    s.ms = ms_since(t0);
    s.before = steps.back().after;
    s.after = graph_summary(g, "the graph after inference and folding");
    s.sentence = stats.nodes_folded + stats.nodes_dead == 0
                     ? fmt::format("Typed every value; nothing was constant, all {} remain.",
                                   plural(stats.nodes_after, "node", "nodes"))
                     : fmt::format("Folded {} constant {}{}; {} remain.", stats.nodes_folded,
                                   stats.nodes_folded == 1 ? "node" : "nodes",
                                   stats.nodes_dead == 0
                                       ? std::string()
                                       : fmt::format(" and removed {} dead", stats.nodes_dead),
                                   stats.nodes_after);
    steps.push_back(std::move(s));
  }

  // ---- lower
  t0 = Clock::now();
  te::TeProgram program = lower::lower_graph(g);
  te::verify(program);
  std::unordered_map<std::string, const te::ComputeOp*> by_name;
  for (const te::Op& op : program.ops) by_name[op->name] = op.get();
  {
    PipelineStep s;
    s.name = "lower";
    s.title = "Lower the graph to tensor expressions";
    s.ms = ms_since(t0);
    s.before = steps.back().after;
    s.after = cut(te::print(program), max);
    std::map<std::string, int> per_node;
    for (const te::Op& op : program.ops) ++per_node[op->origin.node];
    std::string widest;
    int most = 0;
    for (const auto& [node, c] : per_node)
      if (c > most) most = c, widest = node;
    s.sentence =
        fmt::format("Lowered {} into {}{}.", plural(g.nodes.size(), "node", "nodes"),
                    plural(program.ops.size(), "tensor expression", "tensor expressions"),
                    most > 1 ? fmt::format("; {} alone became {}", widest, most) : std::string());
    if (!widest.empty() && most > 1) s.nodes.push_back(widest);
    steps.push_back(std::move(s));
  }

  // ---- plan, with snapshots of every pass
  plan::PlanOptions po;
  po.strategy = o.strategy;
  po.gpu = o.gpu;
  po.precision = o.precision;
  po.snapshots = true;
  po.pricer = schedule::shared_pricer(po.gpu, po.precision);  // as plan and compile price it
  t0 = Clock::now();
  plan::FusionPlan p = plan::plan(program, po);
  const double plan_ms = ms_since(t0);
  auto pass = [&](const std::string& name) -> const plan::PassRecord* {
    for (const plan::PassRecord& r : p.passes)
      if (r.name == name) return &r;
    return nullptr;
  };

  {
    PipelineStep s;
    s.name = "characterize";
    s.title = "Characterize every TE (intensity, access, reuse)";
    const plan::PassRecord* r = pass("analyze");
    s.ms = r ? r->ms : 0;
    s.before = steps.back().after;
    s.after = cut(r ? r->snapshot : std::string(), max);
    // The first analysis is of the input program under every strategy.
    analysis::Analysis a = plan::is_souffle(o.strategy) ? analysis::analyze(program) : p.analysis;
    for (const analysis::TeInfo& t : a.tes)
      if (t.kind == analysis::Intensity::Compute)
        if (std::find(s.nodes.begin(), s.nodes.end(), t.origin_node) == s.nodes.end())
          s.nodes.push_back(t.origin_node);
    s.sentence = fmt::format(
        "{} of {} are compute-intensive, {} memory-intensive and {} pure views; {} tensors "
        "are reused.",
        a.compute_intensive, plural(a.tes.size(), "TE", "TEs"), a.memory_intensive, a.pure_views,
        a.reuse.size());
    steps.push_back(std::move(s));
  }

  size_t tes_after_h = program.ops.size();
  if (plan::is_souffle(o.strategy)) {
    // The horizontal snapshot ends with the program it produced; the vertical step reads it.
    const plan::PassRecord* hr = pass("horizontal");
    const plan::PassRecord* vr = pass("vertical");
    // TE counts after each transformation, from the snapshots' first line ("... , N TEs").
    auto tes_of = [](const plan::PassRecord* r, size_t fallback) {
      if (!r) return fallback;
      size_t comma = r->snapshot.find(" TEs");
      if (comma == std::string::npos) return fallback;
      size_t start = r->snapshot.rfind(' ', comma - 1);
      try {
        return static_cast<size_t>(std::stoul(r->snapshot.substr(start + 1, comma - start - 1)));
      } catch (const std::exception&) {
        return fallback;
      }
    };
    tes_after_h = tes_of(hr, program.ops.size());
    PipelineStep h =
        transform_step(p, "horizontal", program, hr ? hr->snapshot : "", by_name, tes_after_h);
    h.ms = hr ? hr->ms : 0;
    h.before = cut(h.before, max);
    h.after = cut(h.after, max);
    steps.push_back(std::move(h));
    PipelineStep v = transform_step(p, "vertical", program, vr ? vr->snapshot : "", by_name,
                                    p.program.ops.size());
    v.ms = vr ? vr->ms : 0;
    v.before = cut(hr ? hr->snapshot : std::string(), max);
    v.after = cut(v.after, max);
    // "N → M TEs" reads from the horizontal step's result, not the input program.
    const std::string from = fmt::format("{} → ", program.ops.size());
    if (size_t at = v.sentence.rfind(from); at != std::string::npos)
      v.sentence.replace(at, from.size(), fmt::format("{} → ", tes_after_h));
    steps.push_back(std::move(v));
  } else {
    for (const std::string& kind : {std::string("horizontal"), std::string("vertical")}) {
      PipelineStep s;
      s.name = kind;
      s.title = kind == "horizontal" ? "Horizontal transformation: merge independent TEs"
                                     : "Vertical transformation: inline producers into consumers";
      s.before = steps.back().after;
      s.after = s.before;
      s.sentence = fmt::format(
          "The {} strategy does not transform the program; its {} go to "
          "partitioning as lowered.",
          plan::strategy_name(o.strategy), plural(program.ops.size(), "TE", "TEs"));
      steps.push_back(std::move(s));
    }
  }

  {
    PipelineStep s;
    s.name = "partition";
    s.title = "Partition the TEs into kernels";
    const plan::PassRecord* r = pass("partition");
    s.ms = r ? r->ms : plan_ms;
    if (const plan::PassRecord* c = pass("price")) s.ms += c->ms;
    s.before = cut(te::print(p.program), max);
    s.after = cut(plan::print(p), max);
    std::string cut_reason;
    for (const plan::Partition& k : p.partitions) {
      for (const std::string& why : k.reasons)
        if (why.rfind("cut before", 0) == 0) {
          cut_reason = fmt::format("kernel {} starts with a {}", k.id, why);
          s.nodes.insert(s.nodes.end(), k.ops.begin(),
                         k.ops.begin() + std::min<size_t>(1, k.ops.size()));
          break;
        }
      if (!cut_reason.empty()) break;
    }
    s.sentence = fmt::format("Partitioned {} into {} with {} in all, est. {:.1f} µs on {}{}.",
                             plural(p.program.ops.size(), "TE", "TEs"),
                             plural(p.kernels(), "kernel", "kernels"),
                             plural(static_cast<size_t>(p.grid_syncs), "grid sync", "grid syncs"),
                             p.est_time_us, p.gpu, cut_reason.empty() ? "" : "; " + cut_reason);
    steps.push_back(std::move(s));
  }

  // ---- schedule and emit one kernel
  const int k = o.partition >= 0 && static_cast<size_t>(o.partition) < p.partitions.size()
                    ? o.partition
                    : default_step_partition(p);
  PipelineStep sched, emit;
  sched.name = "schedule";
  sched.title = "Schedule a kernel into loop IR";
  emit.name = "emit";
  emit.title = "Emit CUDA C";
  if (k < 0) {
    sched.sentence = "The plan has no kernel to schedule.";
    emit.sentence = "The plan has no kernel to emit.";
  } else {
    const plan::Partition& part = p.partitions[static_cast<size_t>(k)];
    sched.nodes = part.ops;
    emit.nodes = part.ops;
    std::ostringstream tes;
    tes << "kernel " << part.id << " (" << part.kind << ", "
        << plural(part.stages.size(), "stage", "stages") << ", "
        << plural(static_cast<size_t>(part.grid_syncs), "grid sync", "grid syncs") << ")\n\n";
    for (int te : part.tes) tes << te::print(*p.program.ops[static_cast<size_t>(te)]) << "\n";
    sched.before = cut(tes.str(), max);
    t0 = Clock::now();
    try {
      const PlanBuild b = plan_build(p);  // as the plan's pricing and compile build them
      loop::KernelSet ks = build_partition_kernels(p, part, b.config, b.options);
      sched.ms = ms_since(t0);
      if (ks.kernels.empty()) {
        sched.sentence = fmt::format("Kernel {} holds only views: it launches nothing.", part.id);
        emit.sentence = sched.sentence;
      } else {
        const loop::Kernel& kernel = ks.kernels.front();
        sched.after = cut(loop::print(kernel), max);
        int barriers = 0;
        loop::for_each_stmt(kernel.body, [&](const loop::Stmt& st) {
          barriers += st.as<loop::GridBarrier>() != nullptr;
        });
        sched.sentence = fmt::format(
            "Scheduled kernel {} ({}) as one kernel of {} blocks × {} threads with {} between "
            "its stages.",
            part.id, plural(part.tes.size(), "TE", "TEs"), kernel.launch.grid_x,
            kernel.launch.block_x,
            plural(static_cast<size_t>(barriers), "grid barrier", "grid barriers"));
        t0 = Clock::now();
        emit.before = sched.after;
        std::string cuda = codegen::emit_cuda(kernel);
        emit.ms = ms_since(t0);
        size_t lines = static_cast<size_t>(std::count(cuda.begin(), cuda.end(), '\n'));
        emit.after = cut(cuda, max);
        emit.sentence =
            fmt::format("Emitted kernel {} as {} of CUDA C ({} parameters).", part.id,
                        plural(lines, "line", "lines"), codegen::kernel_params(kernel).size());
      }
    } catch (const std::exception& e) {
      sched.sentence = fmt::format("Kernel {} could not be scheduled: {}", part.id, e.what());
      sched.after = e.what();
      emit.sentence = fmt::format("Nothing to emit: kernel {} has no loop IR.", part.id);
    }
  }
  steps.push_back(std::move(sched));
  steps.push_back(std::move(emit));
  return steps;
}

}  // namespace souffle
