// The three partitioning strategies and the kernel builder they share.
#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>

#include "core/plan/partition.h"

namespace souffle::plan::detail {

using analysis::AccessKind;
using analysis::Intensity;

// ---- facts ----

ProgramFacts::ProgramFacts(const analysis::Analysis& a, const gpu::GpuSpec& spec)
    : m_a(&a), m_spec(&spec) {
  size_t n = a.tes.size();
  m_alias.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const analysis::TeInfo& t = a.tes[i];
    m_alias[i] = t.is_pure_view && t.inputs.size() == 1 && t.output_tensor >= 0 &&
                 !a.tensors[t.output_tensor].is_output;
  }
  m_resolve.resize(a.tensors.size());
  for (size_t x = 0; x < a.tensors.size(); ++x) m_resolve[x] = int(x);
  // Ops are in topological order, so a view's source is resolved before the view.
  for (size_t i = 0; i < n; ++i)
    if (m_alias[i]) m_resolve[a.tes[i].output_tensor] = m_resolve[a.tes[i].inputs[0].tensor];
  m_readers.assign(a.tensors.size(), {});
  for (size_t i = 0; i < n; ++i) {
    if (m_alias[i]) continue;
    for (const analysis::InputAccess& in : a.tes[i].inputs) {
      std::vector<int>& r = m_readers[m_resolve[in.tensor]];
      if (r.empty() || r.back() != int(i)) r.push_back(int(i));
    }
  }
  m_sched.resize(n);
  m_has_sched.assign(n, false);
}

int ProgramFacts::resolve(int tensor) const {
  return m_resolve[tensor];
}

int ProgramFacts::producer(int tensor) const {
  return m_a->tensors[m_resolve[tensor]].producer;
}

std::string ProgramFacts::label(int te) const {
  const analysis::TeInfo& t = m_a->tes[te];
  if (t.origin_node.empty() || t.origin_node == t.name) return t.name;
  return t.name + " (" + t.origin_node + ")";
}

bool ProgramFacts::compute(int te) const {
  return m_a->tes[te].kind == Intensity::Compute;
}

const ScheduleEstimate& ProgramFacts::schedule(int te) const {
  if (!m_has_sched[te]) {
    m_sched[te] = best_schedule(m_a->tes[te], *m_spec);
    m_has_sched[te] = true;
  }
  return m_sched[te];
}

void stage_resources(const ProgramFacts& f, int te, int& threads, int& regs, int64_t& smem) {
  if (f.compute(te)) {
    const gpu::TileResources& c = f.schedule(te).resources;
    threads = static_cast<int>(c.threads);
    regs = static_cast<int>(c.regs_per_thread);
    smem = c.smem_bytes;
    return;
  }
  threads = 256;
  regs = 32;
  smem = f.analysis().tes[te].is_reduction ? 1024 : 0;
}

void ProgramFacts::choose_schedule(int te, const ScheduleEstimate& e) const {
  m_sched[te] = e;
  m_has_sched[te] = true;
}

// ---- kernel builder ----

bool KernelBuilder::needs_sync(int te, std::string* why) const {
  const analysis::TeInfo& t = m_f->analysis().tes[te];
  for (const analysis::InputAccess& in : t.inputs) {
    int p = m_f->producer(in.tensor);
    if (p < 0 || std::find(m_since_sync.begin(), m_since_sync.end(), p) == m_since_sync.end())
      continue;
    // A one-to-one read of a reduction's result is its epilogue, in the block that owns the
    // element; a broadcast of it needs every block's partials, hence a sync.
    const char* how = nullptr;
    if (in.kind == AccessKind::OneReliesOnMany)
      how = "many elements (one-relies-on-many)";
    else if (!in.injective)
      how = m_f->analysis().tes[p].is_reduction ? "a broadcast of the reduction" : "a broadcast";
    if (!how) continue;
    if (why) *why = fmt::format("reads {} of {} across blocks", how, m_f->label(p));
    return true;
  }
  return false;
}

int64_t KernelBuilder::co_resident(int extra) const {
  int threads = m_threads, regs = m_regs;
  int64_t smem = m_smem;
  if (extra >= 0) {
    int t, r;
    int64_t s;
    stage_resources(*m_f, extra, t, r, s);
    threads = std::max(threads, t);
    regs = std::max(regs, r);
    smem = std::max(smem, s);
  }
  return gpu::max_active_blocks(m_f->spec(), std::max(threads, 1), std::max(regs, 1), smem);
}

void KernelBuilder::add(int te) {
  const analysis::TeInfo& t = m_f->analysis().tes[te];
  bool sync = needs_sync(te);
  bool is_compute = m_f->compute(te);
  bool alias = m_f->is_alias(te);
  int threads, regs;
  int64_t smem;
  stage_resources(*m_f, te, threads, regs, smem);
  if (!alias) {
    m_threads = std::max(m_threads, threads);
    m_regs = std::max(m_regs, regs);
    m_smem = std::max(m_smem, smem);
  }
  bool new_stage =
      m_stages.empty() || sync || is_compute || (m_stages.back().kind == StageKind::View && !alias);
  if (sync) {
    ++m_syncs;
    m_since_sync.clear();
  }
  if (new_stage) {
    Stage s;
    s.sync_before = sync;
    s.kind = alias            ? StageKind::View
             : is_compute     ? StageKind::Compute
             : t.is_reduction ? StageKind::Reduction
                              : StageKind::Memory;
    m_stages.push_back(s);
  }
  Stage& s = m_stages.back();
  s.tes.push_back(te);
  if (is_compute) {
    const ScheduleEstimate& e = m_f->schedule(te);
    s.blocks = e.blocks;
    s.threads = static_cast<int>(e.resources.threads);
    s.schedule = e.describe();
    m_max_compute_blocks = std::max(m_max_compute_blocks, e.blocks);
  } else if (!alias) {
    int64_t elems = std::max<int64_t>(
        1, t.output_tensor >= 0 ? m_f->analysis().tensors[t.output_tensor].elements : 1);
    int64_t blocks = (elems + threads - 1) / threads;
    s.blocks = std::max(s.blocks, blocks);
    s.threads = std::max(s.threads, threads);
    if (s.kind == StageKind::Compute) {
      // An epilogue runs on the compute stage's tiles.
    } else if (s.schedule.empty()) {
      s.schedule =
          t.is_reduction ? "grid-stride, per-block partials + atomic accumulation" : "grid-stride";
    }
  } else if (s.schedule.empty()) {
    s.schedule = "folded into its readers' indexing";
  }
  m_tes.push_back(te);
  m_since_sync.push_back(te);
}

// ---- strategies ----

namespace {

/// Puts pure view `v` into kernel `host` (its reader's), else into its source producer's kernel,
/// else into a kernel of its own; the reason says which.
void place_pure_view(const ProgramFacts& f, int v, int host, std::vector<int>& group_of,
                     std::vector<Group>& groups) {
  if (host < 0) {
    int p = f.producer(f.analysis().tes[v].output_tensor);
    if (p >= 0) host = group_of[p];
  }
  if (host < 0) {
    group_of[v] = int(groups.size());
    groups.push_back(
        Group::of({v}, {ReasonKind::View, Refusal::None,
                        f.label(v) + " is a pure view with no reader: a kernel of its own"}));
    return;
  }
  group_of[v] = host;
  groups[host].tes.push_back(v);
  groups[host].reasons.push_back(
      {ReasonKind::View, Refusal::None,
       f.label(v) + " is a pure view: no kernel, folded into its reader's indexing"});
}

/// The earliest kernel among the non-alias TEs that read pure view `v`'s output, directly or
/// through further alias views; -1 when nothing does. Kernels are numbered in dependency order but
/// not in TE order (a later TE may join an earlier kernel's epilogue), so the view must ride with
/// the lowest-numbered of its readers, never merely the first reader by TE index or a reader of
/// its source that does not read it.
int earliest_reader_group(const ProgramFacts& f, int v, const std::vector<int>& group_of) {
  const analysis::Analysis& a = f.analysis();
  int best = -1;
  std::vector<int> todo{v};
  std::set<int> seen{v};
  while (!todo.empty()) {
    int w = todo.back();
    todo.pop_back();
    for (int c : a.tensors[a.tes[w].output_tensor].consumers) {
      if (f.is_alias(c)) {
        if (seen.insert(c).second) todo.push_back(c);
      } else if (group_of[c] >= 0 && (best < 0 || group_of[c] < best)) {
        best = group_of[c];
      }
    }
  }
  return best;
}

}  // namespace

std::vector<Group> partition_unfused(const ProgramFacts& f) {
  const analysis::Analysis& a = f.analysis();
  int n = int(a.tes.size());
  std::vector<Group> groups;
  std::vector<int> group_of(n, -1);
  std::vector<int> views;
  for (int i = 0; i < n; ++i) {
    if (f.is_alias(i)) {
      views.push_back(i);
      continue;
    }
    group_of[i] = int(groups.size());
    groups.push_back(
        Group::of({i}, {ReasonKind::Start, Refusal::None, "one kernel for " + f.label(i)}));
  }
  // A pure view launches nothing: it rides with the earliest kernel that reads it, or with its
  // source's producer when nothing reads it.
  for (int v : views)
    place_pure_view(f, v, earliest_reader_group(f, v, group_of), group_of, groups);
  return groups;
}

namespace {

/// A refusal of the rules strategy and its words ("reads x one-relies-on-many").
struct Refused {
  Refusal why = Refusal::None;
  std::string text;
  bool none() const { return why == Refusal::None; }
};

/// Why `te` cannot join the epilogue of a kernel of the rules strategy (None when it can).
Refused epilogue_refusal(const ProgramFacts& f, int te) {
  const analysis::TeInfo& t = f.analysis().tes[te];
  if (f.compute(te)) return {Refusal::ComputeIntensive, "compute-intensive"};
  if (t.is_reduction) return {Refusal::Reduction, "a reduction (no fusion across reductions)"};
  for (const analysis::InputAccess& in : t.inputs) {
    if (in.kind != AccessKind::OneReliesOnOne)
      return {Refusal::OneReliesOnMany, "reads " + in.name + " one-relies-on-many"};
    for (const analysis::ReadInfo& r : in.reads)
      if (r.data_dependent) return {Refusal::Gather, "gathers from " + in.name};
  }
  return {};
}

}  // namespace

std::vector<Group> partition_rules(const ProgramFacts& f) {
  const analysis::Analysis& a = f.analysis();
  int n = int(a.tes.size());
  std::vector<Group> groups;
  std::vector<int> group_of(n, -1);
  for (int i = 0; i < n; ++i) {
    if (f.is_alias(i)) continue;  // placed below, like unfused
    Refused refusal = epilogue_refusal(f, i);
    int host = -1;
    std::string via;
    if (refusal.none()) {
      // The latest kernel among the producers: joining an earlier one would create a cycle.
      const analysis::InputAccess* from = nullptr;
      for (const analysis::InputAccess& in : a.tes[i].inputs) {
        int p = f.producer(in.tensor);
        if (p < 0) continue;
        if (group_of[p] > host) {
          host = group_of[p];
          from = &in;
        }
      }
      if (host < 0) {
        refusal = {Refusal::ModelInputsOnly, "reads only model inputs and constants"};
      } else {
        // Every read of the host's tensors must be one-to-one with an injective map.
        for (const analysis::InputAccess& in : a.tes[i].inputs) {
          int p = f.producer(in.tensor);
          if (p >= 0 && group_of[p] == host && !in.injective) {
            refusal = {Refusal::BroadcastRead, "reads " + in.name + " of kernel " +
                                                   std::to_string(host) + " through a broadcast"};
            host = -1;
            break;
          }
        }
        if (host >= 0) via = f.label(f.producer(from->tensor));
      }
    }
    if (host >= 0) {
      group_of[i] = host;
      groups[host].tes.push_back(i);
      groups[host].reasons.push_back({ReasonKind::Epilogue, Refusal::None,
                                      f.label(i) + " fused into the epilogue of " + via +
                                          " (element-wise, reads it one-to-one)"});
      continue;
    }
    group_of[i] = int(groups.size());
    groups.push_back(Group::of({i}, {ReasonKind::Refused, refusal.why,
                                     "kernel starts at " + f.label(i) + ": " + refusal.text}));
  }
  // A pure view rides with the earliest kernel that reads it (see earliest_reader_group).
  for (int v = 0; v < n; ++v)
    if (f.is_alias(v))
      place_pure_view(f, v, earliest_reader_group(f, v, group_of), group_of, groups);
  return groups;
}

std::vector<Group> partition_souffle(const ProgramFacts& f) {
  const analysis::Analysis& a = f.analysis();
  const gpu::GpuSpec& spec = f.spec();
  std::vector<Group> groups;
  KernelBuilder k(f);
  Group cur;
  // Each reason is about one TE, so that cut_by_price can hand it to the piece holding it.
  auto note = [&](int te, ReasonKind kind, std::string text) {
    cur.reasons.push_back({kind, Refusal::None, std::move(text)});
    cur.reason_te.push_back(te);
  };
  auto close = [&]() {
    if (!k.empty()) groups.push_back(std::move(cur));
    cur = Group{};
    k = KernelBuilder(f);
  };
  for (int te : a.bfs_order) {
    if (k.empty()) {
      if (f.compute(te)) {
        std::vector<ScheduleEstimate> all = estimate_schedules(a.tes[te], spec);
        std::stable_sort(all.begin(), all.end(),
                         [](const auto& x, const auto& y) { return x.est_us < y.est_us * 0.99; });
        for (const ScheduleEstimate& c : all)
          if (c.blocks <= c.co_resident) {
            f.choose_schedule(te, c);
            break;
          }
      }
      note(te, ReasonKind::Start, "kernel starts at " + f.label(te) + " (first TE)");
      if (groups.empty())
        cur.decisions.push_back({DecisionKind::Start, te, 0, 0, cur.reasons.back().text, {}});
      k.add(te);
      cur.tes.push_back(te);
      continue;
    }
    std::string why;
    bool sync = k.needs_sync(te, &why);
    int64_t limit = k.co_resident(te);
    if (f.compute(te)) {
      // The best schedule whose blocks, with every stage so far, fit the kernel's co-residency
      // (only needed once the kernel synchronizes).
      std::vector<ScheduleEstimate> all = estimate_schedules(a.tes[te], spec);
      std::stable_sort(all.begin(), all.end(),
                       [](const auto& x, const auto& y) { return x.est_us < y.est_us * 0.99; });
      const ScheduleEstimate best = f.schedule(te);
      bool syncs = k.syncs() > 0 || sync;
      const ScheduleEstimate* fit = nullptr;
      int64_t fit_limit = 0;
      for (const ScheduleEstimate& c : all) {
        f.choose_schedule(te, c);
        int64_t lim = k.co_resident(te);
        if (!syncs || std::max(k.max_compute_blocks(), c.blocks) <= lim) {
          fit = &c;
          fit_limit = lim;
          break;
        }
      }
      if (!fit) {
        f.choose_schedule(te, all.front());
        int64_t blocks = std::max(k.max_compute_blocks(), best.blocks);
        std::string need =
            best.blocks > limit
                ? fmt::format("needs {} blocks of {} threads ({}x{} tiles)", best.blocks,
                              best.resources.threads, best.tile.bm, best.tile.bn)
                : fmt::format("the kernel already runs a stage of {} blocks", blocks);
        std::string text = fmt::format("cut before {}: {}, {} co-resident on {} (no tile fits)",
                                       f.label(te), need, limit, spec.name);
        close();
        // A new kernel will likely synchronize after this TE: prefer a schedule that fits alone.
        for (const ScheduleEstimate& c : all)
          if (c.blocks <= c.co_resident) {
            f.choose_schedule(te, c);
            break;
          }
        note(te, ReasonKind::Cut, text);
        cur.decisions.push_back({DecisionKind::CutCoResidency, te, 0, 0, text, {}});
        k.add(te);
        cur.tes.push_back(te);
        continue;
      }
      const ScheduleEstimate& s = *fit;
      note(te, ReasonKind::Join,
           fmt::format("{} joins: {} fit{} {} co-resident{}{}", f.label(te), s.describe(),
                       s.blocks == 1 ? "s" : "", fit_limit,
                       sync ? "; grid sync before it: " + why : "",
                       &s == &all.front() ? "" : " (its fastest tiling would not)"));
    } else if (f.is_alias(te)) {
      note(te, ReasonKind::View,
           f.label(te) + " is a pure view: folded into its readers' indexing");
    } else {
      if (sync && k.syncs() == 0 && k.max_compute_blocks() > limit) {
        std::string text = fmt::format(
            "cut before {}: it {}, and the kernel's stage of {} blocks exceeds the {} "
            "co-resident on {}, so it cannot grid-synchronize",
            f.label(te), why, k.max_compute_blocks(), limit, spec.name);
        close();
        note(te, ReasonKind::Cut, text);
        cur.decisions.push_back({DecisionKind::CutCoResidency, te, 0, 0, text, {}});
        k.add(te);
        cur.tes.push_back(te);
        continue;
      }
      const analysis::TeInfo& t = a.tes[te];
      std::string what =
          t.is_reduction ? "reduction as per-block partials + atomics" : "memory-intensive";
      note(te, ReasonKind::Join,
           fmt::format("{} ({}) stays with its compute-intensive neighbour{}", f.label(te), what,
                       sync ? "; grid sync before it: " + why : ""));
    }
    k.add(te);
    cur.tes.push_back(te);
  }
  close();
  return groups;
}

// ---- building partitions ----

std::vector<Partition> build_partitions(const ProgramFacts& f, const std::vector<Group>& groups,
                                        gpu::Precision precision) {
  const analysis::Analysis& a = f.analysis();
  std::vector<int> part_of(a.tes.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int te : groups[g].tes) part_of[te] = int(g);
  std::vector<Partition> out;
  out.reserve(groups.size());
  int64_t capacity = gpu::on_chip_capacity(f.spec());
  for (size_t g = 0; g < groups.size(); ++g) {
    Partition p;
    p.id = int(g);
    p.reasons = groups[g].reasons;
    p.decisions = groups[g].decisions;
    p.split_rows = groups[g].split_rows;
    p.global_scratch = groups[g].global_scratch;
    p.forced_sync = groups[g].forced_sync;
    std::vector<int> order = groups[g].tes;
    std::sort(order.begin(), order.end());
    KernelBuilder k(f);
    for (int te : order) k.add(te);
    p.tes = k.tes();
    p.stages = k.stages();
    p.grid_syncs = k.syncs();
    p.cooperative = p.grid_syncs > 0;
    p.threads = std::max(k.threads(), 1);
    p.regs_per_thread = std::max(k.regs(), 1);
    p.smem_bytes = k.smem();
    p.co_resident = k.co_resident();
    fold_attention_stages(f, p);
    std::set<std::string> seen;
    bool any_compute = false, all_views = true;
    std::map<int, int> stage_of;
    for (size_t s = 0; s < p.stages.size(); ++s)
      for (int te : p.stages[s].tes) stage_of[te] = int(s);
    int64_t most = 0;
    for (const Stage& s : p.stages) most = std::max(most, s.blocks);
    p.blocks = p.cooperative ? std::min(most, std::max<int64_t>(p.co_resident, 1)) : most;
    // Tensors the kernel touches, in first-touch order.
    std::vector<gpu::KernelTensor> touched;
    std::map<int, size_t> slot;
    auto touch = [&](int x) -> gpu::KernelTensor& {
      auto it = slot.find(x);
      if (it != slot.end()) return touched[it->second];
      slot[x] = touched.size();
      gpu::KernelTensor kt;
      kt.name = a.tensors[x].name;
      kt.bytes = a.tensors[x].bytes;
      touched.push_back(kt);
      return touched.back();
    };
    for (int te : p.tes) {
      const analysis::TeInfo& t = a.tes[te];
      if (!t.origin_node.empty() && seen.insert(t.origin_node).second)
        p.ops.push_back(t.origin_node);
      if (f.compute(te)) any_compute = true;
      if (f.is_alias(te)) continue;
      all_views = false;
      p.flops += t.flops;
      for (const analysis::InputAccess& in : t.inputs) touch(f.resolve(in.tensor));
      int x = t.output_tensor;
      gpu::KernelTensor& kt = touch(x);
      kt.produced_inside = true;
      kt.needed_outside = a.tensors[x].is_output;
      kt.first_stage = kt.last_stage = stage_of[te];
      for (int r : f.readers(x)) {
        if (part_of[r] != int(g)) {
          kt.needed_outside = true;
        } else if (stage_of[r] != stage_of[te]) {
          kt.crosses_sync = true;
          kt.last_stage = std::max(kt.last_stage, stage_of[r]);
        }
      }
      // Read through a view that is a model output.
      for (int c : a.tensors[x].consumers)
        if (part_of[c] != int(g)) kt.needed_outside = true;
    }
    p.kind = any_compute ? PartitionKind::Compute
             : all_views ? PartitionKind::View
                         : PartitionKind::Memory;
    gpu::KernelTraffic tr = gpu::kernel_traffic(touched, p.cooperative ? capacity : 0);
    p.on_chip = tr.on_chip;
    p.dram_bytes = tr.dram_bytes;
    if (all_views) {
      p.est_time_us = 0;
    } else {
      p.est_time_us =
          gpu::kernel_cost(f.spec(), p.flops, p.dram_bytes, p.grid_syncs,
                           // Only GEMM-like work runs on tensor cores.
                           p.kind == PartitionKind::Compute ? precision : gpu::Precision::FP32)
              .total_us;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string infeasible(const ProgramFacts& f, const Partition& p) {
  if (p.grid_syncs == 0) return "";
  for (const Stage& s : p.stages)
    if (s.kind == StageKind::Compute && s.blocks > p.co_resident)
      return fmt::format(
          "the kernel would need {} grid sync{} but its stage {} ({}) needs {} blocks, only {} "
          "co-resident on {}",
          p.grid_syncs, p.grid_syncs == 1 ? "" : "s", f.label(s.tes[0]), s.schedule, s.blocks,
          p.co_resident, f.spec().name);
  return "";
}

}  // namespace souffle::plan::detail
