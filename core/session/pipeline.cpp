// The pipeline, in order: one function lists its steps.
#include "core/session/pipeline.h"
#include "core/session/timeline.h"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "core/graph/graph.h"
#include "core/interp/infer_fold.h"
#include "core/loop/stmt.h"
#include "core/lower/lower.h"
#include "core/schedule/plan_pricer.h"
#include "core/te/printer.h"
#include "core/te/verify.h"

namespace souffle {

const std::vector<std::string>& pipeline_order() {
  static const std::vector<std::string> order = {
      "import",    "fold",      "lower", "analyze",       "horizontal", "vertical", "re-analyze",
      "partition", "decisions", "price", "build kernels", "emit",       "compile"};
  return order;
}

plan::PlanOptions plan_options(const PipelineOptions& o) {
  plan::PlanOptions po;
  po.strategy = o.strategy;
  po.gpu = o.gpu;
  po.precision = o.precision;
  po.sync = o.sync;
  po.waves = o.waves;
  po.weight_panels = o.weight_panels;
  po.decisions = o.decisions;
  po.instrument = o.instrument;
  po.snapshots = o.snapshots;
  po.pricer = o.calibration.empty() ? schedule::shared_pricer(o.gpu, o.precision)
                                    : schedule::make_pricer(o.gpu, o.precision, o.calibration);
  return po;
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
  void step(const std::string& name, F&& run, P&& snapshot, N&& facts) {
    auto t0 = Clock::now();
    run();
    plan::PassRecord r;
    r.name = name;
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (m_o.snapshots) r.snapshot = snapshot();
    facts(r);
    if (m_o.instrument) m_o.instrument(r);
    m_records.push_back(std::move(r));
  }
  /// The plan's own steps (analyze … price), observed as they run.
  void take(const plan::PassRecord& r) { m_records.push_back(r); }

 private:
  const PipelineOptions& m_o;
  std::vector<plan::PassRecord>& m_records;
};

bool reaches(const PipelineOptions& o, const std::string& step) {
  const std::vector<std::string>& order = pipeline_order();
  auto until = std::find(order.begin(), order.end(), o.until);
  auto at = std::find(order.begin(), order.end(), step);
  return until != order.end() && at <= until;
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

}  // namespace

PipelineResult run_pipeline(const std::string& path, const PipelineOptions& o) {
  const std::vector<std::string>& order = pipeline_order();
  if (std::find(order.begin(), order.end(), o.until) == order.end())
    throw UserError("unknown pipeline step '" + o.until + "'");
  PipelineResult out;
  LoadedModel& m = out.model;
  m.path = path;
  Steps steps(o, out.passes);
  auto t0 = Clock::now();
  steps.step(
      "import",
      [&] {
        onnx_import::ImportResult r = onnx_import::import_model(path, o.import);
        m.onnx_nodes = r.graph.nodes.size();
        m.warnings = std::move(r.warnings);
        m.graph = std::move(r.graph);
      },
      [&] { return graph::print(m.graph); },
      [&](plan::PassRecord& r) {
        graph_facts(m.graph, r);
        r.counts["warnings"] = static_cast<int64_t>(m.warnings.size());
      });
  steps.step(
      "fold",
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
      "lower",
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

  // analyze, horizontal, vertical, re-analyze, partition, decisions, price (plan.cpp).
  PipelineOptions inner = o;
  inner.instrument = [&](const plan::PassRecord& r) {
    steps.take(r);
    if (o.instrument) o.instrument(r);
  };
  const plan::PlanOptions po = plan_options(inner);
  out.plan = plan::plan(m.program, po);
  plan::verify(out.plan);
  if (!reaches(o, "build kernels")) return out;

  steps.step(
      "build kernels",
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
          out.kernels.kernels =
              build_compiled_kernels(out.plan, kernel_pricer(po).get(), out.plan.sync);
        }
        out.kernels.build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
      },
      [&] { return kernels_text(out.kernels, false); },
      [&](plan::PassRecord& r) { kernel_facts(out.kernels, r); });
  if (!reaches(o, "emit")) return out;
  steps.step(
      "emit",
      [&] {
        auto t = Clock::now();
        instrument_compiled_kernels(out.kernels.kernels, o.compile.timeline);
        emit_compiled_kernels(out.kernels.kernels, o.compile.outlining);
        out.kernels.build_ms += std::chrono::duration<double, std::milli>(Clock::now() - t).count();
      },
      [&] { return kernels_text(out.kernels, true); },
      [&](plan::PassRecord& r) { kernel_facts(out.kernels, r); });
  if (!reaches(o, "compile")) return out;
  steps.step(
      "compile",
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

}  // namespace souffle
