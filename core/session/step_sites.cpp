// What each pipeline step changed, one line per change: the transform sites the plan kept, the
// constants folding removed, the kernels partitioning made and the stage boundaries of the
// kernel the later steps show. Built from the walk's own results (the graph as imported kept by
// the pipeline when asked); nothing is run again.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/session/pipeline_steps.h"

namespace souffle {

namespace {

/// The op types of TEs, in order, joined: "MatMul ∥ MatMul", "Add + Relu".
std::string op_types(const std::vector<std::string>& tes,
                     const std::unordered_map<std::string, const te::ComputeOp*>& by_name,
                     const char* sep) {
  std::vector<std::string> types;
  for (const std::string& t : tes) {
    auto it = by_name.find(t);
    std::string type = it == by_name.end() || it->second->origin.op_type.empty()
                           ? std::string("TE")
                           : it->second->origin.op_type;
    types.push_back(std::move(type));
  }
  if (types.size() > 4) {
    const size_t more = types.size() - 3;
    types.resize(3);
    types.push_back(fmt::format("{} more", more));
  }
  return fmt::format("{}", fmt::join(types, sep));
}

std::pair<StepGraph, StepGraph> graphs_of(plan::Step step) {
  switch (step) {
    case plan::Step::Import:
      return {StepGraph::None, StepGraph::Imported};
    case plan::Step::Fold:
      return {StepGraph::Imported, StepGraph::Folded};
    case plan::Step::Lower:
      return {StepGraph::Folded, StepGraph::Lowered};
    case plan::Step::Analyze:
      return {StepGraph::Lowered, StepGraph::Lowered};
    case plan::Step::Horizontal:
      return {StepGraph::Lowered, StepGraph::Horizontal};
    case plan::Step::Vertical:
      return {StepGraph::Horizontal, StepGraph::Planned};
    default:
      return {StepGraph::Planned, StepGraph::Planned};
  }
}

}  // namespace

const graph::Graph* PipelineWalk::graph_of(StepGraph which) const {
  if (which == StepGraph::Imported) return result.model.imported.get();
  if (which == StepGraph::Folded) return &result.model.graph;
  return nullptr;
}

const te::TeProgram* PipelineWalk::program_of(StepGraph which) const {
  if (which == StepGraph::Lowered) return &result.model.program;
  if (which == StepGraph::Horizontal) {
    const plan::PlanSteps* kept = result.plan.steps.get();
    return kept && !kept->after_horizontal.ops.empty() ? &kept->after_horizontal
                                                       : &result.model.program;
  }
  if (which == StepGraph::Planned) return &result.plan.program;
  return nullptr;
}

void describe_step_changes(PipelineWalk& walk, const PipelineStepOptions& o) {
  const LoadedModel& m = walk.result.model;
  const plan::FusionPlan& p = walk.result.plan;
  std::unordered_map<std::string, const te::ComputeOp*> by_name;
  for (const te::Op& op : m.program.ops) by_name[op->name] = op.get();
  for (const te::Op& op : walk.program_of(StepGraph::Horizontal)->ops)
    by_name.emplace(op->name, op.get());
  for (const te::Op& op : p.program.ops) by_name.emplace(op->name, op.get());

  std::map<std::string, int64_t> applied;  // per transformation kind
  for (const plan::TransformSite& s : p.transforms)
    applied[plan::transform_kind_name(s.kind)] += s.applied ? 1 : 0;

  for (PipelineStep& s : walk.steps) {
    std::tie(s.graph_before, s.graph_after) = graphs_of(s.step);
    if (s.step == plan::Step::Fold) {
      std::set<std::string> kept;
      for (const graph::Node& n : m.graph.nodes) kept.insert(n.name);
      // What folding removed: the nodes of the graph as imported (when kept) not in the folded.
      static const std::vector<graph::Node> kNone;
      const graph::Graph* before = walk.graph_of(StepGraph::Imported);
      for (const graph::Node& n : before ? before->nodes : kNone) {
        if (kept.count(n.name)) continue;
        bool constant = false;
        for (const std::string& out : n.outputs) {
          auto it = m.graph.values.find(out);
          constant |= it != m.graph.values.end() && it->second.constant != nullptr;
        }
        StepSite site;
        site.label = n.op_type + " " + n.name + (constant ? " → folded" : " → removed");
        site.reason = constant ? "its output is known before the model runs: kept as a constant"
                               : "nothing the model computes reads its output";
        site.before = {n.name};
        s.sites.push_back(std::move(site));
      }
      s.changed = m.stats.nodes_folded + m.stats.nodes_dead > 0;
    } else if (s.step == plan::Step::Horizontal || s.step == plan::Step::Vertical) {
      const bool h = s.step == plan::Step::Horizontal;
      for (const plan::TransformSite& t : p.transforms) {
        if (plan::transform_kind_name(t.kind) != s.name || !t.applied) continue;
        StepSite site;
        site.label = op_types(t.ops, by_name, h ? " ∥ " : " + ") + (h ? " → batched" : " → fused");
        if (!t.result.empty()) site.label += " (" + t.result + ")";
        site.reason = t.reason;
        site.before = t.ops;
        if (!t.result.empty()) site.after = {t.result};
        s.sites.push_back(std::move(site));
      }
      s.changed = applied[s.name] > 0;
    } else if (s.step == plan::Step::Reanalyze) {
      s.changed = applied[std::string(plan::step_name(plan::Step::Horizontal))] +
                      applied[std::string(plan::step_name(plan::Step::Vertical))] >
                  0;
    } else if (s.step == plan::Step::Partition) {
      // Per kernel: where it starts, then each decision the partitioner priced in it.
      for (const plan::Partition& k : p.partitions) {
        std::vector<std::string> tes;
        for (int te : k.tes) tes.push_back(p.program.ops[static_cast<size_t>(te)]->name);
        StepSite start;
        start.label =
            fmt::format("kernel {} ({}, {} TEs): {}", k.id, plan::partition_kind_name(k.kind),
                        tes.size(), op_types(tes, by_name, " + "));
        start.reason =
            k.reasons.empty() ? std::string("the program's first kernel") : k.reasons.front().text;
        start.before = tes;
        start.after = tes;
        s.sites.push_back(std::move(start));
        for (const plan::Decision& d : k.decisions) {
          if (d.kind == plan::DecisionKind::Start) continue;
          StepSite site;
          std::string te;
          if (d.te >= 0 && static_cast<size_t>(d.te) < p.program.ops.size())
            te = p.program.ops[static_cast<size_t>(d.te)]->name;
          site.label = fmt::format("kernel {} · {}{}", k.id, plan::decision_kind_name(d.kind),
                                   te.empty() ? std::string() : " at " + te);
          site.reason = d.reason;
          if (!te.empty()) site.before = site.after = {te};
          s.sites.push_back(std::move(site));
        }
      }
    } else if (s.step == plan::Step::Decisions) {
      s.changed = !o.decisions.edits.empty();
    } else if (s.step == plan::Step::BuildKernels && walk.partition >= 0) {
      // The shown kernel's stage boundaries: what orders each stage after the ones before it.
      const plan::Partition& k = p.partitions[static_cast<size_t>(walk.partition)];
      for (const plan::Boundary& b : k.boundaries) {
        if (b.to < 0 || static_cast<size_t>(b.to) >= k.built_stages.size()) continue;
        const plan::BuiltStage& to = k.built_stages[static_cast<size_t>(b.to)];
        StepSite site;
        site.label = fmt::format("{} before stage {} ({})", boundary_kind_name(b.order.kind), b.to,
                                 to.anchor());
        site.reason =
            b.order.detail.empty() ? boundary_reason_name(b.order.reason) : b.order.detail;
        if (!b.order.tensor.empty()) site.reason += " (tensor " + b.order.tensor + ")";
        if (b.cost_us > 0) site.reason += fmt::format("; costs {:.2f} µs", b.cost_us);
        if (b.from >= 0 && static_cast<size_t>(b.from) < k.built_stages.size())
          site.before = k.built_stages[static_cast<size_t>(b.from)].tes;
        site.after = to.tes;
        s.sites.push_back(std::move(site));
      }
    }
  }
}

}  // namespace souffle
