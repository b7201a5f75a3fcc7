// The planning pipeline, the plan printer and the plan verifier.
#include "core/plan/plan.h"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>

#include "core/plan/partition.h"
#include "core/plan/vertical.h"
#include "core/te/printer.h"

namespace souffle::plan {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::Unfused:
      return "unfused";
    case Strategy::Rules:
      return "rules";
    case Strategy::Souffle:
      return "souffle";
    case Strategy::SoufflePaper:
      return "souffle-paper";
  }
  return "?";
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> all = {Strategy::Unfused, Strategy::Rules, Strategy::Souffle};
  return all;
}

const std::vector<Strategy>& every_strategy() {
  static const std::vector<Strategy> all = {Strategy::Unfused, Strategy::Rules, Strategy::Souffle,
                                            Strategy::SoufflePaper};
  return all;
}

bool is_souffle(Strategy s) {
  return s == Strategy::Souffle || s == Strategy::SoufflePaper;
}

Strategy parse_strategy(const std::string& name) {
  for (Strategy s : every_strategy())
    if (name == strategy_name(s)) return s;
  throw UserError("unknown strategy '" + name + "' (unfused, rules, souffle, souffle-paper)");
}

const std::string& BuiltStage::anchor() const {
  if (!nodes.empty()) return nodes.front();
  if (!tes.empty()) return tes.front();
  return name;
}

const char* decision_kind_name(DecisionKind k) {
  switch (k) {
    case DecisionKind::Start:
      return "start";
    case DecisionKind::Join:
      return "join";
    case DecisionKind::CutCheaper:
      return "cut-cheaper";
    case DecisionKind::CutCoResidency:
      return "cut-co-residency";
    case DecisionKind::Unfused:
      return "unfused";
    case DecisionKind::UserMerge:
      return "user-merge-slower";
    case DecisionKind::RowsInBlock:
      return "rows-in-block";
    case DecisionKind::KeepOnChip:
      return "keep-on-chip";
    case DecisionKind::GlobalScratch:
      return "global-scratch";
    case DecisionKind::RulesCut:
      return "rules-cut";
    case DecisionKind::FusedAttention:
      return "fused-attention";
    case DecisionKind::AttentionUnfused:
      return "attention-unfused";
  }
  return "?";
}

const char* refusal_name(Refusal r) {
  switch (r) {
    case Refusal::None:
      return "none";
    case Refusal::ComputeIntensive:
      return "compute-intensive";
    case Refusal::Reduction:
      return "reduction";
    case Refusal::OneReliesOnMany:
      return "one-relies-on-many";
    case Refusal::Gather:
      return "gather";
    case Refusal::ModelInputsOnly:
      return "model-inputs-only";
    case Refusal::BroadcastRead:
      return "broadcast-read";
  }
  return "?";
}

const char* reason_kind_name(ReasonKind k) {
  switch (k) {
    case ReasonKind::Start:
      return "start";
    case ReasonKind::Cut:
    case ReasonKind::Refused:
      return "cut";
    case ReasonKind::Join:
      return "join";
    case ReasonKind::Epilogue:
      return "epilogue";
    case ReasonKind::View:
      return "view";
    case ReasonKind::Decision:
      return "decision";
    case ReasonKind::Other:
      return "other";
  }
  return "?";
}

Reason reason_of(const Decision& d) {
  ReasonKind k = ReasonKind::Other;
  switch (d.kind) {
    case DecisionKind::Start:
      k = ReasonKind::Start;
      break;
    case DecisionKind::Join:
    case DecisionKind::FusedAttention:
      k = ReasonKind::Join;
      break;
    case DecisionKind::CutCheaper:
    case DecisionKind::CutCoResidency:
      k = ReasonKind::Cut;
      break;
    case DecisionKind::UserMerge:
      k = ReasonKind::Decision;
      break;
    case DecisionKind::Unfused:
    case DecisionKind::RowsInBlock:
    case DecisionKind::KeepOnChip:
    case DecisionKind::GlobalScratch:
    case DecisionKind::RulesCut:
    case DecisionKind::AttentionUnfused:
      k = ReasonKind::Other;
      break;
  }
  return {k, Refusal::None, d.reason};
}

const char* stage_kind_name(StageKind k) {
  switch (k) {
    case StageKind::Compute:
      return "compute";
    case StageKind::Memory:
      return "memory";
    case StageKind::Reduction:
      return "reduction";
    case StageKind::View:
      return "view";
    case StageKind::Attention:
      return "attention";
  }
  return "?";
}

const char* partition_kind_name(PartitionKind k) {
  switch (k) {
    case PartitionKind::Compute:
      return "compute";
    case PartitionKind::Memory:
      return "memory";
    case PartitionKind::View:
      return "view";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

/// Runs the steps, timing each and handing its record to the instrument.
class Pipeline {
 public:
  Pipeline(const PlanOptions& o, std::vector<PassRecord>& records) : m_o(o), m_records(records) {}
  /// `facts(result, record)` fills the record's counts and nodes.
  template <typename F, typename P, typename N>
  auto step(Step step, F&& run, P&& snapshot, N&& facts) {
    if (m_o.instrument.before) m_o.instrument.before(step);
    auto t0 = Clock::now();
    auto result = run();
    PassRecord r;
    r.step = step;
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (m_o.snapshots) {
      std::string text = snapshot(result);
      // A step that prints as the one before it left the IR as it was: no second copy.
      r.changed = text != m_last;
      if (r.changed) {
        m_last = text;
        r.snapshot = std::move(text);
      }
    }
    facts(result, r);
    if (m_o.instrument.after) m_o.instrument.after(r);
    m_records.push_back(std::move(r));
    return result;
  }

 private:
  const PlanOptions& m_o;
  std::vector<PassRecord>& m_records;
  std::string m_last;  ///< the last snapshot taken
};

TransformOptions transform_options(const Decisions& d) {
  TransformOptions t;
  for (const Edit& e : d.edits) {
    if (e.kind == Edit::Kind::Force) t.force.insert(e.a);
    if (e.kind == Edit::Kind::Forbid) t.forbid.insert(e.a);
  }
  return t;
}

std::string print_sites(const TransformResult& r) {
  std::ostringstream os;
  int applied = 0;
  for (const TransformSite& s : r.sites) applied += s.applied;
  os << applied << " of " << r.sites.size() << " sites applied, " << r.program.ops.size()
     << " TEs\n";
  for (const TransformSite& s : r.sites)
    os << (s.applied ? "  applied " : "  skipped ") << s.key
       << (s.result.empty() ? "" : " -> " + s.result) << ": " << s.reason << "\n";
  os << te::print(r.program);
  return os.str();
}

void add_node(const std::string& node, std::vector<std::string>& nodes) {
  if (!node.empty() && std::find(nodes.begin(), nodes.end(), node) == nodes.end())
    nodes.push_back(node);
}

/// An analysis' counts, and the ONNX nodes of its compute-intensive TEs.
void analysis_facts(const analysis::Analysis& a, PassRecord& r) {
  r.counts["tes"] = static_cast<int64_t>(a.tes.size());
  r.counts["compute"] = a.compute_intensive;
  r.counts["memory"] = a.memory_intensive;
  r.counts["views"] = a.pure_views;
  r.counts["reused"] = static_cast<int64_t>(a.reuse.size());
  for (const analysis::TeInfo& t : a.tes)
    if (t.kind == analysis::Intensity::Compute) add_node(t.origin_node, r.nodes);
}

/// A transformation's counts (sites, applied, TEs before and after), and the ONNX nodes of the
/// TEs its applied sites merged (named in `before`).
void transform_facts(const te::TeProgram& before, const TransformResult& t, PassRecord& r) {
  std::map<std::string, const te::ComputeOp*> by_name;
  for (const te::Op& op : before.ops) by_name[op->name] = op.get();
  int64_t applied = 0;
  for (const TransformSite& s : t.sites) {
    if (!s.applied) continue;
    ++applied;
    for (const std::string& te : s.ops)
      if (auto it = by_name.find(te); it != by_name.end())
        add_node(it->second->origin.node, r.nodes);
  }
  r.counts["sites"] = static_cast<int64_t>(t.sites.size());
  r.counts["applied"] = applied;
  r.counts["tes_before"] = static_cast<int64_t>(before.ops.size());
  r.counts["tes"] = static_cast<int64_t>(t.program.ops.size());
}

std::string print_groups(const analysis::Analysis& a, const std::vector<detail::Group>& groups) {
  std::ostringstream os;
  os << groups.size() << " kernels\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    os << "kernel " << g << ":";
    std::vector<int> tes = groups[g].tes;
    std::sort(tes.begin(), tes.end());
    for (int te : tes) os << " " << a.tes[te].name;
    os << "\n";
    for (const Reason& r : groups[g].reasons) os << "  - " << r.text << "\n";
  }
  return os.str();
}

/// Checks the transform edits against the sites they name.
void check_transform_edits(const Decisions& d, Strategy strategy,
                           const std::vector<TransformSite>& sites, FusionPlan& out) {
  for (const Edit& e : d.edits) {
    if (e.kind != Edit::Kind::Force && e.kind != Edit::Kind::Forbid) continue;
    if (!is_souffle(strategy)) {
      out.refused.push_back(
          {e, std::string("transformations run only under the souffle strategy, not ") +
                  strategy_name(strategy)});
      continue;
    }
    const TransformSite* site = nullptr;
    for (const TransformSite& s : sites)
      if (s.key == e.a) site = &s;
    if (!site) {
      out.refused.push_back({e, "no transformation site with key '" + e.a + "'", true});
    } else if (e.kind == Edit::Kind::Force && !site->applied) {
      out.refused.push_back({e, "cannot be applied: " + site->reason});
    } else if (e.kind == Edit::Kind::Forbid && site->applied) {
      out.refused.push_back({e, "still applied: " + site->reason});
    } else {
      out.applied.push_back(e);
    }
  }
}

/// The attention sites of a souffle plan (plan/attention.h), replacing any it had: one per chain
/// the TEs form, applied unless a decision forbids it (the attention step prices it later).
/// Returns the chains not forbidden.
std::vector<AttentionChain> attention_sites(const TransformOptions& t, FusionPlan& out) {
  std::erase_if(out.transforms,
                [](const TransformSite& s) { return s.kind == TransformKind::Attention; });
  if (out.strategy != Strategy::Souffle) return {};
  std::vector<AttentionChain> enabled;
  for (const AttentionChain& c : find_attention_chains(out.program, *index_of(out))) {
    TransformSite site;
    site.kind = TransformKind::Attention;
    site.key = attention_site_key(out.program, c);
    for (int te : c.tes()) site.ops.push_back(out.program.ops[static_cast<size_t>(te)]->name);
    if (t.forbid.count(site.key)) {
      site.reason = "forbidden by decision: the chain stays separate stages";
    } else {
      site.applied = true;
      site.result = site.ops.back();
      site.reason = "QK^T -> softmax -> xV chain: one stage with an online softmax";
      enabled.push_back(c);
    }
    out.transforms.push_back(std::move(site));
  }
  return enabled;
}

/// The partition's figures from its built kernels (cost model v2); v1's stay when the build
/// fails, with the error kept.
void price_partition(const KernelPricer& pricer, const FusionPlan& context, Partition& p) {
  PartitionPrice pr = pricer.price(context, p);
  if (!pr.ok()) {
    p.build_error = pr.error;
    return;
  }
  p.priced = true;
  p.launches = pr.launches;
  p.grid_syncs = pr.grid_barriers;
  p.block_barriers = pr.block_barriers;
  p.cooperative = pr.cooperative;
  p.blocks = pr.blocks;
  p.threads = pr.threads;
  p.regs_per_thread = pr.regs;
  p.smem_bytes = pr.smem;
  p.co_resident = pr.co_resident;
  p.on_chip = pr.on_chip;
  p.flops = pr.flops;
  p.dram_bytes = pr.dram_bytes;
  p.l2_bytes = pr.l2_bytes;
  p.est_time_us = pr.est_time_us;
  p.launch_us = pr.launch_us;
  p.barrier_us = pr.barrier_us;
  p.built_stages = std::move(pr.stages);
  p.boundaries = std::move(pr.boundaries);
}

/// A user's merge the model prices above its parts is kept, with a decision saying by how much.
void flag_user_merge(const detail::ProgramFacts& f, const KernelPricer& pricer,
                     const FusionPlan& context, const detail::Group& g, gpu::Precision precision,
                     Partition& p) {
  if (g.merged_from.empty() || !p.priced) return;
  double apart = 0;
  for (const std::vector<int>& part : g.merged_from) {
    detail::Group one;
    one.tes = part;
    Partition q = detail::build_partitions(f, {one}, precision)[0];
    PartitionPrice pr = pricer.price(context, q);
    if (!pr.ok()) return;
    apart += pr.est_time_us;
  }
  if (p.est_time_us <= apart) return;
  Decision d;
  d.kind = DecisionKind::UserMerge;
  d.te = g.merge_te;
  d.merged_us = p.est_time_us;
  d.split_us = apart;
  d.reason = fmt::format(
      "merged by decision although priced slower: {:.2f} us merged vs {:.2f} us apart (+{:.2f} "
      "us)",
      d.merged_us, d.split_us, d.merged_us - d.split_us);
  p.decisions.push_back(d);
  p.reasons.push_back(reason_of(d));
}

/// The plan's totals over its partitions.
void sum_partitions(FusionPlan& out) {
  out.flops = out.dram_bytes = 0;
  out.grid_syncs = 0;
  out.est_time_us = 0;
  out.launches = out.block_barriers = 0;
  for (const Partition& p : out.partitions) {
    out.flops += p.flops;
    out.dram_bytes += p.dram_bytes;
    out.grid_syncs += p.grid_syncs;
    out.est_time_us += p.est_time_us;
    out.launches += p.launches;
    out.block_barriers += p.block_barriers;
  }
}

/// The back half of the pipeline: partition -> decisions -> price, on an analyzed program.
void partition_and_cost(const PlanOptions& o, Pipeline& pl, FusionPlan& out,
                        const std::vector<AttentionChain>& attention) {
  detail::ProgramFacts facts(out.analysis, o.gpu);
  facts.set_attention(attention);
  std::vector<detail::Group> groups = pl.step(
      Step::Partition,
      [&]() {
        switch (o.strategy) {
          case Strategy::Unfused:
            return detail::partition_unfused(facts);
          case Strategy::Rules:
            return detail::partition_rules(facts);
          case Strategy::SoufflePaper:
            return detail::partition_souffle(facts);
          case Strategy::Souffle:
            break;
        }
        std::vector<detail::Group> g = detail::partition_souffle(facts);
        if (!o.pricer) return g;
        if (out.sync != SyncMode::Auto)
          return detail::cut_by_price(facts, out, *o.pricer, o.precision, std::move(g));
        // Sync auto: the cuts chosen with flags priced, and those chosen with grid barriers
        // only, both priced with flags where they are cheaper; the cheaper set is kept. Every
        // kernel under auto prices at most its grid-barrier form, so the plan is never
        // estimated above the grid plan (cutting is greedy: with flags priced it can take
        // another path to a dearer end).
        std::vector<detail::Group> with_flags =
            detail::cut_by_price(facts, out, *o.pricer, o.precision, g);
        out.sync = SyncMode::Grid;
        std::vector<detail::Group> with_grid =
            detail::cut_by_price(facts, out, *o.pricer, o.precision, std::move(g));
        out.sync = SyncMode::Auto;
        auto total = [&](const std::vector<detail::Group>& groups) {
          double us = 0;
          for (Partition& part : detail::build_partitions(facts, groups, o.precision)) {
            price_partition(*o.pricer, out, part);
            us += part.est_time_us;
          }
          return us;
        };
        return total(with_grid) < total(with_flags) ? with_grid : with_flags;
      },
      [&](const std::vector<detail::Group>& g) { return print_groups(out.analysis, g); },
      [](const std::vector<detail::Group>& g, PassRecord& r) {
        r.counts["kernels"] = static_cast<int64_t>(g.size());
      });
  groups = pl.step(
      Step::Decisions,
      [&]() {
        detail::apply_edits(facts, out.program, out.input, out.transforms, o.decisions.edits,
                            o.precision, groups, out.applied, out.refused);
        if (!facts.attention().empty())
          detail::decide_attention(facts, out, o.pricer.get(), o.precision,
                                   transform_options(o.decisions).force, groups, out.transforms);
        return groups;
      },
      [&](const std::vector<detail::Group>& g) {
        std::ostringstream os;
        for (const Edit& e : out.applied) os << "applied " << describe(e) << "\n";
        for (const RefusedEdit& r : out.refused)
          os << "refused " << describe(r.edit) << ": " << r.reason << "\n";
        return os.str() + print_groups(out.analysis, g);
      },
      [&](const std::vector<detail::Group>& g, PassRecord& r) {
        r.counts["kernels"] = static_cast<int64_t>(g.size());
        r.counts["applied"] = static_cast<int64_t>(out.applied.size());
        r.counts["refused"] = static_cast<int64_t>(out.refused.size());
      });
  out.partitions = pl.step(
      Step::Price,
      [&]() {
        std::vector<Partition> parts = detail::build_partitions(facts, groups, o.precision);
        if (o.pricer) {
          for (size_t i = 0; i < parts.size(); ++i) {
            price_partition(*o.pricer, out, parts[i]);
            flag_user_merge(facts, *o.pricer, out, groups[i], o.precision, parts[i]);
          }
        }
        detail::settle_sync_edits(facts, out.program, out.transforms, parts, out.applied,
                                  out.refused);
        return parts;
      },
      [&](const std::vector<Partition>& parts) {
        FusionPlan tmp;
        tmp.strategy = out.strategy;
        tmp.gpu = out.gpu;
        tmp.partitions = parts;
        tmp.program.name = out.program.name;
        tmp.analysis.tes = out.analysis.tes;
        tmp.input_tes = out.input_tes;
        sum_partitions(tmp);  // the heading's totals
        return print(tmp);
      },
      [](const std::vector<Partition>& parts, PassRecord& r) {
        int64_t syncs = 0, launches = 0;
        for (const Partition& p : parts) syncs += p.grid_syncs, launches += p.launches;
        r.counts["kernels"] = static_cast<int64_t>(parts.size());
        r.counts["grid_syncs"] = syncs;
        r.counts["launches"] = launches;
      });
  sum_partitions(out);
  bool all_priced = !out.partitions.empty();
  for (const Partition& p : out.partitions) all_priced &= p.priced;
  if (o.pricer) {
    out.cost_model =
        all_priced ? "v2: built kernels" : "v2: built kernels (v1 where a build failed)";
    out.cost_constants = o.pricer->constants();
  } else {
    out.cost_model = "v1: partition roofline";
    out.cost_constants = "spec " + o.gpu.name;
  }
}

}  // namespace

FusionPlan plan(const te::TeProgram& program, const PlanOptions& o) {
  FusionPlan out;
  out.strategy = o.strategy;
  out.gpu = o.gpu.name;
  out.gpu_spec = o.gpu;
  out.precision = o.precision;
  out.sync = o.sync;
  out.waves = o.waves;
  out.weight_panels = o.weight_panels;
  out.wgmma = o.wgmma;
  out.input = program;
  out.input_tes = program.ops.size();
  Pipeline pl(o, out.passes);
  auto print_analysis = [](const analysis::Analysis& a) { return analysis::print(a); };
  if (is_souffle(o.strategy)) {
    TransformOptions topt = transform_options(o.decisions);
    analysis::Analysis a0 = pl.step(
        Step::Analyze, [&]() { return analysis::analyze(program); }, print_analysis,
        analysis_facts);
    TransformResult h = pl.step(
        Step::Horizontal, [&]() { return horizontal_transform(program, a0, topt); }, print_sites,
        [&](const TransformResult& t, PassRecord& r) { transform_facts(program, t, r); });
    analysis::Analysis a1 = analysis::analyze(h.program);
    TransformResult v = pl.step(
        Step::Vertical, [&]() { return vertical_transform(h.program, a1, topt); }, print_sites,
        [&](const TransformResult& t, PassRecord& r) { transform_facts(h.program, t, r); });
    out.analysis = pl.step(
        Step::Reanalyze, [&]() { return analysis::analyze(v.program); }, print_analysis,
        analysis_facts);
    if (o.keep_steps)
      out.steps = std::make_shared<const PlanSteps>(PlanSteps{std::move(a0), h.program});
    out.program = std::move(v.program);
    out.transforms = std::move(h.sites);
    out.transforms.insert(out.transforms.end(), v.sites.begin(), v.sites.end());
  } else {
    out.program = program;
    out.analysis = pl.step(
        Step::Analyze, [&]() { return analysis::analyze(program); }, print_analysis,
        analysis_facts);
    if (o.keep_steps) out.steps = std::make_shared<const PlanSteps>(PlanSteps{out.analysis, {}});
  }
  out.index = std::make_shared<const te::ProgramIndex>(out.program);
  const std::vector<AttentionChain> attention =
      attention_sites(transform_options(o.decisions), out);
  check_transform_edits(o.decisions, o.strategy, out.transforms, out);
  partition_and_cost(o, pl, out, attention);
  return out;
}

std::shared_ptr<const te::ProgramIndex> index_of(const FusionPlan& p) {
  if (p.index && p.index->indexes(p.program)) return p.index;
  return std::make_shared<const te::ProgramIndex>(p.program);
}

FusionPlan replan(const FusionPlan& previous, const PlanOptions& o) {
  bool same = previous.strategy == o.strategy && previous.gpu == o.gpu.name;
  if (same) {
    Decisions old_d, new_d;
    for (const Edit& e : previous.applied) old_d.edits.push_back(e);
    for (const RefusedEdit& r : previous.refused) old_d.edits.push_back(r.edit);
    TransformOptions a = transform_options(old_d), b = transform_options(o.decisions);
    same = a.force == b.force && a.forbid == b.forbid;
  }
  if (!same) return plan(previous.input, o);
  FusionPlan out;
  out.strategy = o.strategy;
  out.gpu = o.gpu.name;
  out.gpu_spec = o.gpu;
  out.precision = o.precision;
  out.sync = o.sync;
  out.waves = o.waves;
  out.weight_panels = o.weight_panels;
  out.wgmma = o.wgmma;
  out.input = previous.input;
  out.input_tes = previous.input_tes;
  out.program = previous.program;
  out.analysis = previous.analysis;
  out.transforms = previous.transforms;
  out.steps = previous.steps;
  out.index = index_of(previous);
  Pipeline pl(o, out.passes);
  const std::vector<AttentionChain> attention =
      attention_sites(transform_options(o.decisions), out);
  check_transform_edits(o.decisions, o.strategy, out.transforms, out);
  partition_and_cost(o, pl, out, attention);
  return out;
}

te::TeProgram transformed_program(const te::TeProgram& program, Strategy strategy,
                                  const Decisions& decisions) {
  if (!is_souffle(strategy)) return program;
  TransformOptions topt = transform_options(decisions);
  TransformResult h = horizontal_transform(program, analysis::analyze(program), topt);
  TransformResult v = vertical_transform(h.program, analysis::analyze(h.program), topt);
  return std::move(v.program);
}

// ---- printer ----

void require_known_names(const FusionPlan& p, const std::string& decisions_file) {
  std::vector<std::string> names;
  for (const RefusedEdit& r : p.refused)
    if (r.unknown_name) names.push_back(describe(r.edit));
  if (names.empty()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : "; ") + n;
  throw UserError(decisions_file, "",
                  fmt::format("{} of its edits name{} nothing in this model (no such TE, ONNX node "
                              "or transformation site; a decisions file of another model?): {}",
                              names.size(), names.size() == 1 ? "s" : "", list));
}

std::string print(const FusionPlan& p) {
  std::ostringstream os;
  const auto& tes = p.analysis.tes;
  auto name = [&](int te) {
    return te >= 0 && te < int(tes.size()) ? tes[te].name : "#" + std::to_string(te);
  };
  os << fmt::format(
      "plan {} strategy {} on {}: {} kernels, {} launches, {} grid syncs, {} TEs ({} before "
      "transforms), {:.3f} GFLOP, {:.3f} MB DRAM, {:.1f} us\n",
      p.program.name, strategy_name(p.strategy), p.gpu, p.partitions.size(), p.launches,
      p.grid_syncs, p.analysis.tes.size(), p.input_tes, p.flops / 1e9, p.dram_bytes / 1e6,
      p.est_time_us);
  if (!p.cost_model.empty())
    os << "cost model " << p.cost_model << "; constants from " << p.cost_constants << "\n";
  int applied = 0;
  for (const TransformSite& s : p.transforms) applied += s.applied;
  if (!p.transforms.empty())
    os << "transforms: " << applied << " of " << p.transforms.size() << " sites applied\n";
  for (const Edit& e : p.applied) os << "decision applied: " << describe(e) << "\n";
  for (const RefusedEdit& r : p.refused)
    os << "decision refused: " << describe(r.edit) << ": " << r.reason << "\n";
  for (const Partition& k : p.partitions) {
    os << fmt::format(
        "kernel {} [{}] {} TEs, {} stages{}, {}{} grid syncs, grid {} x {} threads{}, {:.3f} "
        "MFLOP, {:.3f} MB, {:.2f} us\n",
        k.id, partition_kind_name(k.kind), k.tes.size(), k.stages.size(),
        // Beside the planned stages, those of the kernels built for it (often more).
        k.priced && !k.built_stages.empty() && k.built_stages.size() != k.stages.size()
            ? fmt::format(" ({} in its kernel{})", k.built_stages.size(),
                          k.launches != 1 ? "s" : "")
            : "",
        k.launches != 1 ? fmt::format("{} launches, ", k.launches) : "", k.grid_syncs, k.blocks,
        k.threads,
        k.cooperative ? fmt::format(" (cooperative, {} co-resident)", k.co_resident) : "",
        k.flops / 1e6, k.dram_bytes / 1e6, k.est_time_us);
    if (!k.build_error.empty())
      os << "  kernels not built (cost model v1): " << k.build_error << "\n";
    for (size_t s = 0; s < k.stages.size(); ++s) {
      const Stage& st = k.stages[s];
      os << "  " << (st.sync_before ? "sync | " : "       ") << "stage " << s << " "
         << stage_kind_name(st.kind) << " (" << st.schedule << "):";
      for (int te : st.tes) os << " " << name(te);
      os << "\n";
    }
    if (!k.on_chip.empty()) {
      os << "  on chip:";
      for (const std::string& t : k.on_chip) os << " " << t;
      os << "\n";
    }
    for (const Reason& r : k.reasons) os << "  - " << r.text << "\n";
    for (const Decision& d : k.decisions)
      if (d.merged_us > 0 || d.split_us > 0)
        os << fmt::format("  * {} at {}: merged {:.2f} us, apart {:.2f} us\n",
                          decision_kind_name(d.kind), name(d.te), d.merged_us, d.split_us);
  }
  return os.str();
}

// ---- verifier ----

void verify(const FusionPlan& p) {
  const analysis::Analysis& a = p.analysis;
  size_t n = p.program.ops.size();
  SOUFFLE_CHECK(a.tes.size() == n, "plan: analysis does not describe the program");
  std::vector<int> part(n, -1), stage(n, -1), pos(n, -1);
  int64_t flops = 0, bytes = 0;
  int syncs = 0;
  for (size_t k = 0; k < p.partitions.size(); ++k) {
    const Partition& q = p.partitions[k];
    SOUFFLE_CHECK(q.id == int(k), fmt::format("plan: kernel {} has id {}", k, q.id));
    SOUFFLE_CHECK(!q.tes.empty(), fmt::format("plan: kernel {} is empty", k));
    size_t staged = 0;
    int counted_syncs = 0;
    int order = 0;
    for (size_t s = 0; s < q.stages.size(); ++s) {
      counted_syncs += q.stages[s].sync_before;
      for (int te : q.stages[s].tes) {
        SOUFFLE_CHECK(te >= 0 && size_t(te) < n, fmt::format("plan: kernel {}: bad TE {}", k, te));
        SOUFFLE_CHECK(part[te] < 0,
                      fmt::format("plan: {} is in kernels {} and {}", a.tes[te].name, part[te], k));
        part[te] = int(k);
        stage[te] = int(s);
        pos[te] = order++;
        ++staged;
      }
    }
    SOUFFLE_CHECK(staged == q.tes.size(),
                  fmt::format("plan: kernel {}: its stages hold {} TEs, it lists {}", k, staged,
                              q.tes.size()));
    for (int te : q.tes)
      SOUFFLE_CHECK(part[te] == int(k),
                    fmt::format("plan: kernel {} lists {} but no stage holds it", k, te));
    // A priced kernel's grid syncs are its built kernels' barriers (ownership proofs may
    // remove or add some), not the stages' count.
    SOUFFLE_CHECK(q.priced || counted_syncs == q.grid_syncs,
                  fmt::format("plan: kernel {}: {} syncs between stages, {} counted", k,
                              counted_syncs, q.grid_syncs));
    SOUFFLE_CHECK(q.grid_syncs == 0 || q.cooperative,
                  fmt::format("plan: kernel {} synchronizes without a cooperative launch", k));
    // Built stages and their boundaries: one boundary per stage after the first, besides those
    // between the phases of one stage, each between stages that exist, in order.
    size_t between = 0;
    int grid_bounds = 0;
    for (const Boundary& b : q.boundaries) {
      SOUFFLE_CHECK(
          b.to >= 0 && size_t(b.to) < q.built_stages.size() && b.from <= b.to && b.from >= 0,
          fmt::format("plan: kernel {}: a boundary between stages {} and {} of {}", k, b.from, b.to,
                      q.built_stages.size()));
      between += b.from != b.to;
      grid_bounds += b.order.kind == BoundaryKind::Grid;
    }
    SOUFFLE_CHECK(q.built_stages.empty() || between + 1 == q.built_stages.size(),
                  fmt::format("plan: kernel {}: {} boundaries between {} built stages", k, between,
                              q.built_stages.size()));
    SOUFFLE_CHECK(grid_bounds <= q.grid_syncs,
                  fmt::format("plan: kernel {}: {} grid boundaries, {} grid barriers", k,
                              grid_bounds, q.grid_syncs));
    flops += q.flops;
    bytes += q.dram_bytes;
    syncs += q.grid_syncs;
  }
  for (size_t te = 0; te < n; ++te)
    SOUFFLE_CHECK(part[te] >= 0, "plan: " + a.tes[te].name + " is in no kernel");
  for (size_t te = 0; te < n; ++te)
    for (const analysis::InputAccess& in : a.tes[te].inputs) {
      int pr = a.tensors[in.tensor].producer;
      if (pr < 0) continue;
      SOUFFLE_CHECK(part[pr] <= part[te],
                    fmt::format("plan: {} (kernel {}) reads {} of the later kernel {}",
                                a.tes[te].name, part[te], a.tes[pr].name, part[pr]));
      if (part[pr] == part[te])
        SOUFFLE_CHECK(stage[pr] <= stage[te] && pos[pr] < pos[te],
                      fmt::format("plan: kernel {}: {} runs before its input {}", part[te],
                                  a.tes[te].name, a.tes[pr].name));
    }
  SOUFFLE_CHECK(flops == p.flops && bytes == p.dram_bytes && syncs == p.grid_syncs,
                "plan: totals do not add up over the kernels");
}

}  // namespace souffle::plan
