/// \file Partitioning internals shared by the strategies, the decisions and the plan builder.
#pragma once

#include <functional>

#include <set>
#include <string>
#include <vector>

#include "core/analysis/analysis.h"
#include "core/gpu/cost.h"
#include "core/plan/attention.h"
#include "core/plan/plan.h"
#include "core/plan/schedule_estimate.h"

namespace souffle::plan::detail {

/// A kernel before its stages and cost are worked out: its TEs and the reasons so far.
struct Group {
  std::vector<int> tes;  ///< op indices, any order (sorted when built)
  std::vector<Reason> reasons;
  std::vector<int> reason_te;  ///< the TE each reason is about, where known (souffle)
  std::vector<Decision> decisions;
  /// A user's merge: the TEs of the kernels it joined, priced apart against the merged kernel.
  std::vector<std::vector<int>> merged_from;
  int merge_te = -1;                        ///< the merge's first TE
  bool split_rows = true;                   ///< Partition::split_rows
  std::vector<std::string> global_scratch;  ///< Partition::global_scratch
  std::vector<ForcedSync> forced_sync;      ///< Partition::forced_sync
  static Group of(std::vector<int> tes, Reason reason) {
    Group g;
    g.tes = std::move(tes);
    g.reasons.push_back(std::move(reason));
    return g;
  }
};

/// Facts about the analyzed program the strategies and the builder share.
class ProgramFacts {
 public:
  ProgramFacts(const analysis::Analysis& a, const gpu::GpuSpec& spec);
  const analysis::Analysis& analysis() const { return *m_a; }
  const gpu::GpuSpec& spec() const { return *m_spec; }
  /// A pure view whose output is not a model output: its readers read its source instead, it
  /// costs no kernel, FLOPs or traffic of its own.
  bool is_alias(int te) const { return m_alias[te]; }
  /// The tensor a read of `tensor` really touches, through alias views.
  int resolve(int tensor) const;
  /// The TE producing resolve(tensor), -1 for inputs and constants.
  int producer(int tensor) const;
  /// Non-alias TEs reading `tensor` directly or through alias views (tensor resolved).
  const std::vector<int>& readers(int tensor) const { return m_readers[tensor]; }
  /// "MatMul_3" or "T12 (/layers.0/MatMul_3)".
  std::string label(int te) const;
  bool compute(int te) const;
  /// Schedule of a compute-intensive TE: best_schedule unless the partitioner chose another.
  const ScheduleEstimate& schedule(int te) const;
  /// The partitioner's choice of a fitting schedule for `te`.
  void choose_schedule(int te, const ScheduleEstimate& e) const;
  /// The attention chains planned as one fused stage where all their TEs share a kernel
  /// (souffle only; build_partitions folds them, cut_by_price cuts no segment inside one).
  const std::vector<AttentionChain>& attention() const { return m_attention; }
  void set_attention(std::vector<AttentionChain> chains) const { m_attention = std::move(chains); }
  /// Whether `te` is a TE of an attention chain other than its first (no cut before it).
  bool inside_attention(int te) const;

 private:
  const analysis::Analysis* m_a;
  const gpu::GpuSpec* m_spec;
  std::vector<bool> m_alias;
  std::vector<int> m_resolve;
  std::vector<std::vector<int>> m_readers;
  mutable std::vector<ScheduleEstimate> m_sched;
  mutable std::vector<bool> m_has_sched;
  mutable std::vector<AttentionChain> m_attention;
};

/// Incrementally assigns a kernel's TEs to stages: a TE needs a grid sync when it reads, across
/// blocks (one-relies-on-many, or a broadcast — of a reduction's result, say), something
/// produced in this kernel since the last sync. A compute-intensive TE always starts a stage.
class KernelBuilder {
 public:
  explicit KernelBuilder(const ProgramFacts& f) : m_f(&f) {}
  /// Whether adding `te` now would need a grid sync before it; `why` names the read.
  bool needs_sync(int te, std::string* why = nullptr) const;
  void add(int te);
  bool empty() const { return m_tes.empty(); }
  const std::vector<int>& tes() const { return m_tes; }
  const std::vector<Stage>& stages() const { return m_stages; }
  int syncs() const { return m_syncs; }
  /// The most blocks a compute stage needs, and the launch resources so far.
  int64_t max_compute_blocks() const { return m_max_compute_blocks; }
  int threads() const { return m_threads; }
  int regs() const { return m_regs; }
  int64_t smem() const { return m_smem; }
  /// Blocks resident at once with the resources so far, plus those of `extra` (a TE, or -1).
  int64_t co_resident(int extra = -1) const;

 private:
  const ProgramFacts* m_f;
  std::vector<int> m_tes;
  std::vector<Stage> m_stages;
  std::vector<int> m_since_sync;  ///< TEs added since the last sync
  int m_syncs = 0;
  int64_t m_max_compute_blocks = 0;
  int m_threads = 0, m_regs = 0;
  int64_t m_smem = 0;
};

/// Resources of one TE's stage: its schedule for compute-intensive TEs; 256 threads, 32
/// registers and a small partials buffer (reductions) for grid-stride stages.
void stage_resources(const ProgramFacts& f, int te, int& threads, int& regs, int64_t& smem);

std::vector<Group> partition_unfused(const ProgramFacts& f);
std::vector<Group> partition_rules(const ProgramFacts& f);
/// Souffle's rule: cuts only at compute-intensive TEs where co-residency forbids the stage.
std::vector<Group> partition_souffle(const ProgramFacts& f);

/// The souffle strategy by price: each group of partition_souffle is split at its grid-barrier
/// sites into segments (the stages from one barrier to the next; a compute-intensive TE and its
/// memory-intensive neighbours stay together unless a barrier separates them), and walking them
/// in order each segment joins the kernel before it only when `pricer` prices the two merged
/// (the previous segment with this one) at most as much as apart. A kernel that ends up priced
/// above the sum of its segments is split back into them. Where the rules strategy's kernels of
/// the group's TEs (partition_rules, cut again where a kernel would need a grid barrier: rules
/// launches those stages one after another) price below the kernels so chosen, they are kept
/// instead, so that no group is priced above rules' cut of it. Every choice is a Decision with
/// both prices. `context` is the plan being made (program, analysis, strategy, GPU, precision).
std::vector<Group> cut_by_price(const ProgramFacts& f, const FusionPlan& context,
                                const KernelPricer& pricer, gpu::Precision precision,
                                std::vector<Group> groups);

/// Stages, resources, traffic and cost of each group, in order; ids from 0.
std::vector<Partition> build_partitions(const ProgramFacts& f, const std::vector<Group>& groups,
                                        gpu::Precision precision);

/// Folds each chain of f.attention() whose TEs all lie in `p` into one stage of kind
/// "attention" at the place of the chain's last stage (every input of the chain is computed
/// before it), recounting the stages' syncs (core/plan/attention_plan.cpp).
void fold_attention_stages(const ProgramFacts& f, Partition& p);

/// For prefetching prices: runs fn(0) ... fn(n - 1) side by side, one thread per core (the
/// calling thread one of them), then rethrows the first exception in index order, and says
/// true. Runs nothing and says false where only one thread would run (the callers then price
/// one by one when they need to). The calls must be independent (the kernel pricer is safe to
/// share between threads).
bool prefetch_side_by_side(size_t n, const std::function<void(size_t)>& fn);

/// Holders of more TEs than this price an attention chain's decision on the window around it
/// (attention_plan.cpp, pricing_group), not on the whole kernel.
constexpr int kAttentionWindowTes = 64;

/// The souffle strategy's attention step: each chain of f.attention() is priced in the kernel
/// that holds it (or the window around it, kAttentionWindowTes), fused against its stages apart,
/// and kept where fused is no dearer (or `forced` names its site); the others are dropped from
/// f.attention(). Each outcome is a Decision of its group and the site's result (sites of kind
/// "attention" in `sites`). Without a pricer every chain that shares a kernel is kept.
void decide_attention(const ProgramFacts& f, const FusionPlan& context, const KernelPricer* pricer,
                      gpu::Precision precision, const std::set<std::string>& forced,
                      std::vector<Group>& groups, std::vector<TransformSite>& sites);

/// Why a built partition cannot run: grid syncs with a stage needing more blocks than are
/// co-resident. Empty when it can.
std::string infeasible(const ProgramFacts& f, const Partition& p);

/// Applies the structural edits (merge, split, pin) in order; each refused edit leaves the
/// groups as they were and is listed with its reason.
void apply_edits(const ProgramFacts& f, const te::TeProgram& program, const te::TeProgram& input,
                 const std::vector<TransformSite>& sites, const std::vector<Edit>& edits,
                 gpu::Precision precision, std::vector<Group>& groups, std::vector<Edit>& applied,
                 std::vector<RefusedEdit>& refused);

/// Once the partitions are built (priced): each applied sync decision whose boundary did not
/// take the order asked (flags the dependence proof cannot bound, a TE inside a stage, kernels
/// not built) moves to `refused`, with the boundary's own reason.
void settle_sync_edits(const ProgramFacts& f, const te::TeProgram& program,
                       const std::vector<TransformSite>& sites, const std::vector<Partition>& parts,
                       std::vector<Edit>& applied, std::vector<RefusedEdit>& refused);

}  // namespace souffle::plan::detail
