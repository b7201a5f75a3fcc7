// The pipeline as teaching steps: run_pipeline runs, and an instrument on it turns each
// PassRecord into a step; sentences are generated from the records' counts and from what the
// pipeline produced, never written by hand per model nor computed by a second run.
#include "core/session/pipeline_steps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/codegen/codegen_cuda.h"
#include "core/loop/mutator.h"
#include "core/loop/stmt.h"
#include "core/te/printer.h"

namespace souffle {

namespace {

std::string cut(std::string text, size_t max) {
  if (text.size() <= max) return text;
  // Cut at a line end so the last line shown is whole.
  size_t at = text.rfind('\n', max);
  text.resize(at == std::string::npos ? max : at + 1);
  text += fmt::format("… (cut here: the text goes on beyond {} KB)\n", max / 1024);
  return text;
}

std::string plural(int64_t n, const std::string& one, const std::string& many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string title_of(plan::Step step) {
  switch (step) {
    case plan::Step::Import:
      return "Import the ONNX file";
    case plan::Step::Fold:
      return "Infer types and fold constants";
    case plan::Step::Lower:
      return "Lower the graph to tensor expressions";
    case plan::Step::Analyze:
      return "Characterize every TE (intensity, access, reuse)";
    case plan::Step::Horizontal:
      return "Horizontal transformation: merge independent TEs";
    case plan::Step::Vertical:
      return "Vertical transformation: inline producers into consumers";
    case plan::Step::Reanalyze:
      return "Characterize the transformed TEs";
    case plan::Step::Partition:
      return "Partition the TEs into kernels";
    case plan::Step::Decisions:
      return "Apply the user's decisions (merge, split, pin)";
    case plan::Step::Price:
      return "Price every kernel from its built code";
    case plan::Step::BuildKernels:
      return "Schedule the kernels into loop IR";
    case plan::Step::Emit:
      return "Emit CUDA C";
    case plan::Step::Compile:
      return "Compile with NVRTC";
  }
  return std::string(plan::step_name(step));
}

int64_t count(const plan::PassRecord& r, const std::string& key) {
  auto it = r.counts.find(key);
  return it == r.counts.end() ? 0 : it->second;
}

/// Op types of TEs named in a site, "3 MatMul TEs" or "2 TEs (MatMul, Add)".
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

std::string analysis_sentence(const plan::PassRecord& r) {
  return fmt::format(
      "{} of {} are compute-intensive, {} memory-intensive and {} pure views; {} tensors are "
      "reused.",
      count(r, "compute"), plural(count(r, "tes"), "TE", "TEs"), count(r, "memory"),
      count(r, "views"), count(r, "reused"));
}

/// The horizontal or vertical step's sentence: its counts, and the first site it applied.
std::string transform_sentence(
    const plan::PassRecord& r, const plan::FusionPlan& p,
    const std::unordered_map<std::string, const te::ComputeOp*>& by_name) {
  const std::string kind(r.name());  // a transform site's kind is its step's name
  const int64_t sites = count(r, "sites"), applied = count(r, "applied");
  const int64_t before = count(r, "tes_before"), after = count(r, "tes");
  const plan::TransformSite* first = nullptr;
  for (const plan::TransformSite& s : p.transforms)
    if (plan::transform_kind_name(s.kind) == kind && s.applied) {
      first = &s;
      break;
    }
  if (applied == 0 || !first)
    return sites == 0 ? fmt::format(
                            "The {} transformation found no site to apply; the program keeps "
                            "its {}.",
                            kind, plural(before, "TE", "TEs"))
                      : fmt::format(
                            "The {} transformation looked at {} and applied none; the program "
                            "keeps its {}.",
                            kind, plural(sites, "site", "sites"), plural(before, "TE", "TEs"));
  if (r.step == plan::Step::Horizontal)
    return fmt::format(
        "Horizontal fusion applied {} of {}: e.g. it merged {} reading one input into {}; {} → "
        "{} TEs.",
        applied, plural(sites, "site", "sites"), describe_members(first->ops, by_name),
        first->result, before, after);
  return fmt::format("Vertical fusion applied {} of {}: e.g. {} became one TE {}; {} → {} TEs.",
                     applied, plural(sites, "site", "sites"), describe_members(first->ops, by_name),
                     first->result, before, after);
}

/// The first cut the partitioning made by reason ("kernel 2 starts with a cut before ...").
std::string first_cut(const plan::FusionPlan& p, std::vector<std::string>& nodes) {
  for (const plan::Partition& k : p.partitions)
    for (const plan::Reason& why : k.reasons)
      if (why.kind == plan::ReasonKind::Cut) {
        if (!k.ops.empty()) nodes.push_back(k.ops.front());
        return fmt::format("kernel {} starts with a {}", k.id, why.text);
      }
  return {};
}

/// The build kernels and emit steps: the shown partition's launches, as compile built and
/// emitted them.
void kernel_steps(const PipelineResult& r, int k, size_t max, PipelineStep& build,
                  PipelineStep& emit) {
  if (k < 0) {
    build.after = "(no kernel)\n";
    build.sentence = "The plan has no kernel to schedule.";
    emit.after = build.after;
    emit.sentence = "The plan has no kernel to emit.";
    return;
  }
  const plan::Partition& part = r.plan.partitions[static_cast<size_t>(k)];
  build.nodes = part.ops;
  emit.nodes = part.ops;
  std::vector<const CompiledKernel*> launches;
  for (const CompiledKernel& ck : r.kernels.kernels)
    if (ck.partition == part.id) launches.push_back(&ck);
  const std::string of_plan = fmt::format(
      "the plan's {} built alike",
      plural(static_cast<int64_t>(r.kernels.kernels.size()), "launch was", "launches were"));
  if (launches.empty()) {
    build.after = fmt::format("kernel {}: views only, no launch\n", part.id);
    build.sentence =
        fmt::format("Kernel {} holds only views: it launches nothing; {}.", part.id, of_plan);
    emit.after = build.after;
    emit.sentence = fmt::format("Kernel {} has no CUDA C: it launches nothing.", part.id);
    return;
  }
  auto sentence = [](std::string text) {
    if (text.empty() || text.back() != '.') text += '.';
    return text;
  };
  for (const CompiledKernel* ck : launches) {
    if (ck->ok()) continue;
    if (!ck->kernel.body.defined()) {  // the build failed
      build.after = ck->error + "\n";
      build.sentence =
          sentence(fmt::format("Kernel {} could not be scheduled: {}", part.id, ck->error));
      emit.after = build.after;
      emit.sentence = fmt::format("Nothing to emit: kernel {} has no loop IR.", part.id);
    } else {  // the emitter refused it
      build.after = cut(loop::print(ck->kernel), max);
      build.sentence = fmt::format("Scheduled kernel {}; {}.", part.id, of_plan);
      emit.after = ck->error + "\n";
      emit.sentence =
          sentence(fmt::format("Kernel {} could not be emitted: {}", part.id, ck->error));
    }
    return;
  }
  std::string loop_ir, cuda;
  int64_t barriers = 0, lines = 0;
  for (const CompiledKernel* ck : launches) {
    loop_ir += (loop_ir.empty() ? "" : "\n") + loop::print(ck->kernel);
    cuda += (cuda.empty() ? "" : "\n") + ck->cuda;
    loop::for_each_stmt(ck->kernel.body, [&](const loop::Stmt& st) {
      barriers += st.as<loop::GridBarrier>() != nullptr;
    });
    lines += std::count(ck->cuda.begin(), ck->cuda.end(), '\n');
  }
  build.after = cut(loop_ir, max);
  emit.after = cut(cuda, max);
  const CompiledKernel& first = *launches.front();
  if (launches.size() == 1) {
    build.sentence = fmt::format(
        "Scheduled kernel {} ({}) as one kernel of {} blocks × {} threads with {} between its "
        "stages; {}.",
        part.id, plural(static_cast<int64_t>(part.tes.size()), "TE", "TEs"),
        first.kernel.launch.grid_x, first.kernel.launch.block_x,
        plural(barriers, "grid barrier", "grid barriers"), of_plan);
    emit.sentence = fmt::format(
        "Emitted kernel {} as {} of CUDA C ({} parameters), as compile emits it.", part.id,
        plural(lines, "line", "lines"), codegen::kernel_params(first.kernel).size());
  } else {
    build.sentence = fmt::format(
        "Scheduled kernel {} ({}) as {} launches, split where a grid barrier would be "
        "needed; {}.",
        part.id, plural(static_cast<int64_t>(part.tes.size()), "TE", "TEs"), launches.size(),
        of_plan);
    emit.sentence = fmt::format(
        "Emitted kernel {}'s {} launches as {} of CUDA C, as compile "
        "emits them.",
        part.id, launches.size(), plural(lines, "line", "lines"));
  }
  // GEMM stages that keep their weights in shared memory for the whole kernel.
  int64_t loads = 0, reads = 0;
  for (const CompiledKernel* ck : launches)
    for (const loop::StageInfo& st : ck->kernel.stages)
      if (!st.weight_panel.empty()) ++(st.weight_panel_load ? loads : reads);
  if (loads > 0)
    build.sentence.insert(
        build.sentence.size() - 1,
        fmt::format("; {} load their weights into shared memory and {} read them there",
                    plural(loads, "GEMM stage", "GEMM stages"),
                    plural(reads, "later one", "later ones")));
}

}  // namespace

const std::vector<std::string>& pipeline_step_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (plan::Step s : plan::all_steps())
      if (s <= plan::Step::Emit) out.emplace_back(plan::step_name(s));
    return out;
  }();
  return names;
}

int default_step_partition(const plan::FusionPlan& p) {
  int first_compute = -1;
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    const plan::Partition& k = p.partitions[i];
    if (k.kind != plan::PartitionKind::Compute) continue;
    if (first_compute < 0) first_compute = static_cast<int>(i);
    // A kernel with a compute stage and more besides shows what fusion buys.
    if (k.tes.size() > 1) return static_cast<int>(i);
  }
  if (first_compute >= 0) return first_compute;
  return p.partitions.empty() ? -1 : 0;
}

PipelineWalk walk_pipeline(const std::string& path, const PipelineStepOptions& o) {
  const size_t max = o.max_text;
  PipelineWalk walk;
  std::vector<plan::PassRecord> records;  // the steps' records, for the sentences below
  PipelineOptions po;
  po.strategy = o.strategy;
  po.gpu = o.gpu;
  po.precision = o.precision;
  po.decisions = o.decisions;
  po.import = o.import;
  po.until = plan::Step::Emit;
  po.snapshots = true;
  po.keep_steps = o.programs;
  // The instrument: each record becomes a step, reading what the step before produced.
  po.instrument.after = [&](const plan::PassRecord& r) {
    PipelineStep s;
    s.step = r.step;
    s.name = r.name();
    s.title = title_of(r.step);
    s.ms = r.ms;
    s.before = walk.steps.empty() ? fmt::format("the file {}\n", path) : walk.steps.back().after;
    // A step that changed nothing shows what the step before produced.
    s.after = r.changed || walk.steps.empty() ? cut(r.snapshot, max) : walk.steps.back().after;
    s.nodes = r.nodes;
    walk.steps.push_back(std::move(s));
    plan::PassRecord kept = r;
    kept.snapshot.clear();
    records.push_back(std::move(kept));
  };
  walk.result = run_pipeline(path, po);
  const PipelineResult& res = walk.result;
  const plan::FusionPlan& p = res.plan;

  int k = o.partition;
  if (k < 0) k = o.choose ? o.choose(p) : default_step_partition(p);
  if (k >= static_cast<int>(p.partitions.size())) k = default_step_partition(p);
  walk.partition = k;

  // TE names of the input and the transformed program, for describing sites.
  std::unordered_map<std::string, const te::ComputeOp*> by_name;
  for (const te::Op& op : p.program.ops) by_name[op->name] = op.get();
  for (const te::Op& op : res.model.program.ops) by_name[op->name] = op.get();

  for (size_t i = 0; i < walk.steps.size(); ++i) {
    PipelineStep& s = walk.steps[i];
    const plan::PassRecord& r = records[i];
    if (s.step == plan::Step::Import) {
      const int64_t warnings = count(r, "warnings");
      s.sentence = fmt::format("Imported {} with {} and {} constant tensors{}.",
                               plural(count(r, "nodes"), "node", "nodes"),
                               plural(count(r, "inputs"), "input", "inputs"), count(r, "constants"),
                               warnings == 0
                                   ? std::string()
                                   : fmt::format(" ({})", plural(warnings, "warning", "warnings")));
    } else if (s.step == plan::Step::Fold) {
      const int64_t folded = count(r, "folded"), dead = count(r, "dead"), n = count(r, "nodes");
      s.sentence =
          folded + dead == 0
              ? fmt::format("Typed every value; nothing was constant, all {} remain.",
                            plural(n, "node", "nodes"))
              : fmt::format(
                    "Folded {} constant {}{}; {} remain.", folded, folded == 1 ? "node" : "nodes",
                    dead == 0 ? std::string() : fmt::format(" and removed {} dead", dead), n);
    } else if (s.step == plan::Step::Lower) {
      const int64_t widest = count(r, "widest");
      s.sentence = fmt::format("Lowered {} into {}{}.", plural(count(r, "nodes"), "node", "nodes"),
                               plural(count(r, "tes"), "tensor expression", "tensor expressions"),
                               widest > 1 && !r.nodes.empty()
                                   ? fmt::format("; {} alone became {}", r.nodes[0], widest)
                                   : std::string());
      if (widest <= 1) s.nodes.clear();
    } else if (s.step == plan::Step::Analyze) {
      s.sentence = analysis_sentence(r);
      if (!plan::is_souffle(o.strategy))
        s.sentence += fmt::format(
            " The {} strategy does not transform the program: its TEs go to partitioning as "
            "lowered.",
            plan::strategy_name(o.strategy));
    } else if (s.step == plan::Step::Horizontal || s.step == plan::Step::Vertical) {
      s.sentence = transform_sentence(r, p, by_name);
    } else if (s.step == plan::Step::Reanalyze) {
      s.sentence = "After the transformations, " + analysis_sentence(r);
    } else if (s.step == plan::Step::Partition) {
      const std::string why = first_cut(p, s.nodes);
      s.sentence = fmt::format("Partitioned {} into {}{}.",
                               plural(static_cast<int64_t>(p.program.ops.size()), "TE", "TEs"),
                               plural(count(r, "kernels"), "kernel", "kernels"),
                               why.empty() ? "" : "; " + why);
    } else if (s.step == plan::Step::Decisions) {
      const int64_t applied = count(r, "applied"), refused = count(r, "refused");
      s.sentence =
          applied + refused == 0
              ? fmt::format("No decisions to apply; the plan's {} as partitioned.",
                            plural(count(r, "kernels"), "kernel stays", "kernels stay"))
              : fmt::format("Applied {} and refused {}; {}.", plural(applied, "edit", "edits"),
                            refused,
                            plural(count(r, "kernels"), "kernel remains", "kernels remain"));
    } else if (s.step == plan::Step::Price) {
      s.sentence = fmt::format("Priced {} with {} in all: est. {:.1f} µs on {} (cost model {}).",
                               plural(count(r, "kernels"), "kernel", "kernels"),
                               plural(count(r, "grid_syncs"), "grid sync", "grid syncs"),
                               p.est_time_us, p.gpu, p.cost_model);
    }
  }
  auto find = [&](plan::Step step) -> PipelineStep* {
    for (PipelineStep& s : walk.steps)
      if (s.step == step) return &s;
    return nullptr;
  };
  PipelineStep* build = find(plan::Step::BuildKernels);
  PipelineStep* emit = find(plan::Step::Emit);
  if (build && emit) {
    kernel_steps(res, k, max, *build, *emit);
    emit->before = build->after;
  }
  // The horizontal step reads the TE program (the analysis only guides it): its text before is
  // the lowered program, so that the two texts differ by what it merged.
  PipelineStep* lower = find(plan::Step::Lower);
  if (PipelineStep* h = find(plan::Step::Horizontal); h && lower) h->before = lower->after;
  describe_step_changes(walk, o);
  return walk;
}

std::vector<PipelineStep> pipeline_steps(const std::string& path, const PipelineStepOptions& o) {
  return walk_pipeline(path, o).steps;
}

}  // namespace souffle
