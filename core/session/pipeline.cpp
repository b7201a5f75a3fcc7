// The pipeline, in order: one function lists its steps.
#include "core/session/pipeline.h"
#include "core/session/timeline.h"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/graph/graph.h"
#include "core/interp/infer_fold.h"
#include "core/loop/stmt.h"
#include "core/lower/lower.h"
#include "core/schedule/plan_pricer.h"
#include "core/te/printer.h"
#include "core/te/verify.h"

namespace souffle {

plan::PlanOptions plan_options(const PipelineOptions& o) {
  plan::PlanOptions po;
  po.strategy = o.strategy;
  po.gpu = o.gpu;
  po.precision = o.precision;
  po.sync = o.sync;
  po.waves = o.waves;
  po.weight_panels = o.weight_panels;
  po.wgmma = o.wgmma;
  po.decisions = o.decisions;
  po.instrument = o.instrument;
  po.snapshots = o.snapshots;
  po.keep_steps = o.keep_steps;
  po.pricer = o.pricer                ? o.pricer
              : o.calibration.empty() ? schedule::shared_pricer(o.gpu, o.precision)
                                      : schedule::make_pricer(o.gpu, o.precision, o.calibration);
  return po;
}

PipelineOptions pipeline_options(const plan::PlanOptions& po) {
  PipelineOptions o;
  o.strategy = po.strategy;
  o.gpu = po.gpu;
  o.precision = po.precision;
  o.sync = po.sync;
  o.waves = po.waves;
  o.weight_panels = po.weight_panels;
  o.wgmma = po.wgmma;
  o.decisions = po.decisions;
  o.instrument = po.instrument;
  o.snapshots = po.snapshots;
  o.keep_steps = po.keep_steps;
  o.pricer = po.pricer;
  return o;
}

std::shared_ptr<const schedule::PlanPricer> kernel_pricer(const plan::PlanOptions& po) {
  return std::dynamic_pointer_cast<const schedule::PlanPricer>(po.pricer);
}

namespace {

using Clock = std::chrono::steady_clock;

/// Runs one step, times it and hands its record to the instrument.
class Steps {
 public:
  Steps(const PipelineOptions& o, std::vector<plan::PassRecord>& records)
      : m_o(o), m_records(records) {}
  /// `facts(record)` fills the record's counts and nodes.
  template <typename F, typename P, typename N>
  void step(Step step, F&& run, P&& snapshot, N&& facts) {
    if (m_o.instrument.before) m_o.instrument.before(step);
    auto t0 = Clock::now();
    run();
    plan::PassRecord r;
    r.step = step;
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (m_o.snapshots) {
      std::string text = snapshot();
      // A step that prints as the one before it left the IR as it was: no second copy.
      r.changed = text != m_last;
      if (r.changed) {
        m_last = text;
        r.snapshot = std::move(text);
      }
    }
    facts(r);
    if (m_o.instrument.after) m_o.instrument.after(r);
    m_records.push_back(std::move(r));
  }
  /// The plan's own steps (analyze … price), observed as they run.
  void take(const plan::PassRecord& r) {
    m_records.push_back(r);
    if (!r.snapshot.empty()) m_last = r.snapshot;
  }

 private:
  const PipelineOptions& m_o;
  std::vector<plan::PassRecord>& m_records;
  std::string m_last;  ///< the last snapshot taken
};

bool reaches(const PipelineOptions& o, Step step) {
  return step <= o.until;
}

/// A graph's node, input, output and constant-tensor counts.
void graph_facts(const graph::Graph& g, plan::PassRecord& r) {
  int64_t constants = 0;
  for (const auto& [name, v] : g.values) constants += v.constant != nullptr;
  r.counts["nodes"] = static_cast<int64_t>(g.nodes.size());
  r.counts["inputs"] = static_cast<int64_t>(g.inputs.size());
  r.counts["outputs"] = static_cast<int64_t>(g.outputs.size());
  r.counts["constants"] = constants;
}

/// Launches built and those with an error.
void kernel_facts(const CompileReport& rep, plan::PassRecord& r) {
  int64_t errors = 0;
  for (const CompiledKernel& k : rep.kernels) errors += k.ok() ? 0 : 1;
  r.counts["launches"] = static_cast<int64_t>(rep.kernels.size());
  r.counts["errors"] = errors;
}

std::string kernels_text(const CompileReport& rep, bool cuda) {
  std::ostringstream os;
  for (const CompiledKernel& k : rep.kernels) {
    if (!k.ok()) {
      os << k.name << ": " << k.error << "\n";
      continue;
    }
    os << (cuda ? k.cuda : loop::print(k.kernel)) << "\n";
  }
  return os.str();
}

/// The source of a pipeline: a file, a file's bytes, or a model loaded before.
struct Source {
  const std::string& path;
  std::optional<std::string_view> bytes;
  const LoadedModel* loaded = nullptr;
  const plan::FusionPlan* plan = nullptr;  ///< a plan made before: from build kernels on
  /// With `plan`: its kernels built (and emitted, from compile) before: from `from` on.
  std::vector<CompiledKernel>* kernels = nullptr;
  Step from = Step::BuildKernels;
};

/// Input ports declared a sequence or an optional: they must be bound (folded away).
void check_composite_inputs(const graph::Graph& g, const std::string& path) {
  for (const std::string& in : g.inputs)
    if (g.value(in).declared_composite)
      throw UserError(
          path, "",
          "input '" + in + "' is a " +
              (*g.value(in).declared_composite == graph::Composite::Kind::Sequence ? "sequence"
                                                                                   : "optional") +
              ": sequences and optionals fold away at compile time, so its value "
              "must be a constant (bound to the model, as conformance does from the "
              "test data)");
}

/// The steps, from import (or from analyze over `src.loaded`) to `o.until`.
PipelineResult run_steps(const Source& src, const PipelineOptions& o) {
  if (o.until > Step::Lower && o.until < Step::Price)
    throw std::invalid_argument(
        fmt::format("run_pipeline: cannot stop after {}: the planner's steps ({}) run together",
                    plan::step_name(o.until), plan::step_names({Step::Analyze, Step::Decisions})));
  if (src.loaded && o.until < Step::Price)
    throw std::invalid_argument("run_pipeline: a loaded model runs from analyze to price or later");
  if (src.plan && (o.until < Step::BuildKernels || o.tune_measure))
    throw std::invalid_argument(
        "run_pipeline: a plan runs from build kernels to build kernels or later, untuned");
  if (src.kernels &&
      ((src.from != Step::Emit && src.from != Step::Compile) || o.until < src.from)) {
    throw std::invalid_argument(fmt::format(
        "run_pipeline: kernels built before run from emit or compile to that step or later, "
        "not from {} to {}",
        plan::step_name(src.from), plan::step_name(o.until)));
  }
  if (!o.partitions.empty() && o.tune_measure) {
    throw std::invalid_argument(
        "run_pipeline: measured tiles tune the whole plan, not some partitions");
  }
  PipelineResult out;
  Steps steps(o, out.passes);
  if (!src.loaded && !src.plan) {
    LoadedModel& m = out.model;
    const std::string& path = src.path;
    m.path = path;
    auto t0 = Clock::now();
    steps.step(
        Step::Import,
        [&] {
          onnx_import::ImportResult r =
              src.bytes ? onnx_import::import_model_bytes(*src.bytes, path, o.import)
                        : onnx_import::import_model(path, o.import);
          m.onnx_nodes = r.graph.nodes.size();
          m.warnings = std::move(r.warnings);
          m.graph = std::move(r.graph);
          if (o.keep_steps) m.imported = std::make_shared<const graph::Graph>(m.graph);
          check_composite_inputs(m.graph, path);
        },
        [&] { return graph::print(m.graph); },
        [&](plan::PassRecord& r) {
          graph_facts(m.graph, r);
          r.counts["warnings"] = static_cast<int64_t>(m.warnings.size());
        });
    if (o.report_unsupported) {
      // inspect lists the ops without a lowering instead of failing on the first.
      m.unsupported = interp::find_unsupported(m.graph);
      if (!m.unsupported.empty()) return out;
    }
    steps.step(
        Step::Fold,
        [&] {
          m.stats = infer_and_fold_model(m.graph);
          graph::verify(m.graph);
        },
        [&] { return graph::print(m.graph); },
        [&](plan::PassRecord& r) {
          graph_facts(m.graph, r);
          r.counts["folded"] = static_cast<int64_t>(m.stats.nodes_folded);
          r.counts["dead"] = static_cast<int64_t>(m.stats.nodes_dead);
        });
    steps.step(
        Step::Lower,
        [&] {
          try {
            m.program = lower::lower_graph(m.graph);
          } catch (const UserError& e) {
            throw e.with_file(path);
          }
          te::verify(m.program);
        },
        [&] { return te::print(m.program); },
        [&](plan::PassRecord& r) {
          // The node that became the most TEs.
          std::map<std::string, int64_t> per_node;
          for (const te::Op& op : m.program.ops) ++per_node[op->origin.node];
          int64_t most = 0;
          std::string widest;
          for (const auto& [node, c] : per_node)
            if (c > most) most = c, widest = node;
          r.counts["nodes"] = static_cast<int64_t>(m.graph.nodes.size());
          r.counts["tes"] = static_cast<int64_t>(m.program.ops.size());
          r.counts["widest"] = most;
          if (!widest.empty()) r.nodes.push_back(widest);
        });
    m.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!reaches(o, Step::Analyze)) return out;
  }
  // The kernels' pricer (the plan's pricing built them) and the sync mode they are built with.
  std::shared_ptr<const schedule::PlanPricer> pricer = o.compile.pricer;
  SyncMode sync = o.compile.sync;
  if (!src.plan) {
    const te::TeProgram& program = src.loaded ? src.loaded->program : out.model.program;
    // analyze, horizontal, vertical, re-analyze, partition, decisions, price (plan.cpp).
    PipelineOptions inner = o;
    inner.instrument.after = [&](const plan::PassRecord& r) {
      steps.take(r);
      if (o.instrument.after) o.instrument.after(r);
    };
    const plan::PlanOptions po = plan_options(inner);
    out.plan = o.previous ? plan::replan(*o.previous, po) : plan::plan(program, po);
    plan::verify(out.plan);
    pricer = kernel_pricer(po);
    sync = out.plan.sync;
  }
  if (!reaches(o, Step::BuildKernels)) return out;
  const plan::FusionPlan& plan = src.plan ? *src.plan : out.plan;
  if (src.kernels) {
    out.kernels.kernels = std::move(*src.kernels);  // built before: no build step
  } else {
    for (int id : o.partitions) {
      if (std::none_of(plan.partitions.begin(), plan.partitions.end(),
                       [id](const plan::Partition& p) { return p.id == id; })) {
        throw std::invalid_argument(fmt::format(
            "run_pipeline: the plan has no partition {} (it has {})", id, plan.partitions.size()));
      }
    }
    steps.step(
        Step::BuildKernels,
        [&] {
          auto t = Clock::now();
          if (o.tune_measure) {
            // Measured tiles recorded in the plan; its kernels built with them.
            schedule::PlanBuild b = schedule::plan_build(out.plan);
            b.options.measure = o.tune_measure;
            b.options.measure_top = o.tune_top;
            schedule::tune_plan(out.plan, b.config, b.options);
            out.kernels.kernels = build_compiled_kernels(out.plan, nullptr, out.plan.sync);
          } else {
            // The kernels the plan's pricing built for its partitions (built once).
            out.kernels.kernels = build_compiled_kernels(plan, pricer.get(), sync, o.compile.cancel,
                                                         o.compile.building, o.partitions);
          }
          out.kernels.build_ms =
              std::chrono::duration<double, std::milli>(Clock::now() - t).count();
        },
        [&] { return kernels_text(out.kernels, false); },
        [&](plan::PassRecord& r) { kernel_facts(out.kernels, r); });
  }
  if (!reaches(o, Step::Emit)) return out;
  if (!src.kernels || src.from == Step::Emit) {  // emitted before: no emit step
    steps.step(
        Step::Emit,
        [&] {
          auto t = Clock::now();
          instrument_compiled_kernels(out.kernels.kernels, o.compile.timeline, o.compile.cancel);
          emit_compiled_kernels(out.kernels.kernels, o.compile.outlining, o.compile.cancel);
          out.kernels.build_ms +=
              std::chrono::duration<double, std::milli>(Clock::now() - t).count();
        },
        [&] { return kernels_text(out.kernels, true); },
        [&](plan::PassRecord& r) { kernel_facts(out.kernels, r); });
  }
  if (!reaches(o, Step::Compile)) return out;
  steps.step(
      Step::Compile,
      [&] {
        CompileOptions co = o.compile;
        co.gpu = o.gpu;
        out.kernels.compile_ms = compile_kernels(out.kernels.kernels, o.gpu, co);
        out.kernels.errors = 0;
        for (const CompiledKernel& k : out.kernels.kernels) out.kernels.errors += k.ok() ? 0 : 1;
        count_programs(out.kernels.kernels, out.kernels.programs, out.kernels.programs_from_cache);
      },
      [&] {
        std::ostringstream os;
        for (const CompiledKernel& k : out.kernels.kernels)
          os << fmt::format("{}: {}, {} registers, {} spilled bytes\n", k.name,
                            k.ok() ? "ok" : k.error, k.max_registers(), k.spill_bytes());
        return os.str();
      },
      [&](plan::PassRecord& r) { kernel_facts(out.kernels, r); });
  return out;
}

}  // namespace

PipelineResult run_pipeline(const std::string& path, const PipelineOptions& o) {
  return run_steps(Source{path, std::nullopt, nullptr, nullptr}, o);
}

PipelineResult run_pipeline_bytes(std::string_view bytes, const std::string& file,
                                  const PipelineOptions& o) {
  return run_steps(Source{file, bytes, nullptr, nullptr}, o);
}

PipelineResult run_pipeline(const LoadedModel& model, const PipelineOptions& o) {
  return run_steps(Source{model.path, std::nullopt, &model, nullptr}, o);
}

PipelineResult run_pipeline(const plan::FusionPlan& plan, const PipelineOptions& o) {
  static const std::string no_path;
  return run_steps(Source{no_path, std::nullopt, nullptr, &plan}, o);
}

PipelineResult run_pipeline(const plan::FusionPlan& plan, std::vector<CompiledKernel> kernels,
                            Step from, const PipelineOptions& o) {
  static const std::string no_path;
  return run_steps(Source{no_path, std::nullopt, nullptr, &plan, &kernels, from}, o);
}

ShippedKernels shipped_kernels(const plan::FusionPlan& plan, PipelineOptions o) {
  o.until = Step::BuildKernels;
  o.tune_measure = {};
  ShippedKernels out;
  out.set.name = plan.program.name;
  out.set.inputs = plan.program.inputs;
  out.set.outputs = plan.program.outputs;
  for (CompiledKernel& ck : run_pipeline(plan, o).kernels.kernels) {
    if (!ck.ok()) {
      out.failed = ck.name;
      out.error = ck.error;
      break;
    }
    out.set.kernels.push_back(std::move(ck.kernel));
  }
  return out;
}

}  // namespace souffle
