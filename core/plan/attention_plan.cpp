// The fused attention stage in the plan: attention chains folded into one stage of their
// kernel, and the souffle strategy's decision, by price, to keep each one fused.
#include <fmt/format.h>
#include <algorithm>
#include <set>

#include "core/plan/partition.h"

namespace souffle::plan::detail {

bool ProgramFacts::inside_attention(int te) const {
  for (const AttentionChain& c : m_attention)
    if (c.contains(te) && te != c.scores) return true;
  return false;
}

void fold_attention_stages(const ProgramFacts& f, Partition& p) {
  if (f.attention().empty()) return;
  const std::set<int> mine(p.tes.begin(), p.tes.end());
  bool folded = false;
  for (const AttentionChain& c : f.attention()) {
    const std::vector<int> chain = c.tes();
    if (!std::all_of(chain.begin(), chain.end(), [&](int te) { return mine.count(te) > 0; }))
      continue;
    // The stage of the chain's output: the fused stage takes its place, the TEs after the
    // output in that stage follow in a stage of their own.
    int last = -1;
    for (size_t s = 0; s < p.stages.size(); ++s)
      for (int te : p.stages[s].tes)
        if (te == c.out) last = static_cast<int>(s);
    if (last < 0) continue;
    std::vector<Stage> stages;
    for (size_t s = 0; s < p.stages.size(); ++s) {
      Stage rest = p.stages[s];
      rest.tes.clear();
      for (int te : p.stages[s].tes)
        if (!c.contains(te)) rest.tes.push_back(te);
      if (static_cast<int>(s) == last) {
        Stage a;
        a.kind = StageKind::Attention;
        a.tes = chain;
        a.blocks = p.stages[s].blocks;
        a.threads = 128;
        a.schedule = "fused attention (online softmax)";
        a.sync_before = p.stages[s].sync_before;
        stages.push_back(std::move(a));
        rest.sync_before = false;
        rest.tiles.clear();
      } else {
        // The chain's TEs leave their stages; a stage left empty goes, its sync with it.
        std::erase_if(rest.tiles, [&](const TileChoice& t) { return c.contains(t.te); });
      }
      if (!rest.tes.empty()) stages.push_back(std::move(rest));
    }
    p.stages = std::move(stages);
    folded = true;
  }
  if (!folded) return;
  p.tes.clear();
  p.grid_syncs = 0;
  for (const Stage& s : p.stages) {
    p.tes.insert(p.tes.end(), s.tes.begin(), s.tes.end());
    p.grid_syncs += s.sync_before;
  }
  p.cooperative = p.grid_syncs > 0;
}

namespace {

/// The index of the (last) group of `groups` holding every TE of chain `c`, or -1.
int holder_of(const std::vector<Group>& groups, const AttentionChain& c) {
  int holder = -1;
  const std::vector<int> chain = c.tes();
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::set<int> tes(groups[i].tes.begin(), groups[i].tes.end());
    if (std::all_of(chain.begin(), chain.end(), [&](int te) { return tes.count(te) > 0; }))
      holder = static_cast<int>(i);
  }
  return holder;
}

/// The TEs a chain's decision is priced on: its holder kernel's, or, in a holder of more than
/// kAttentionWindowTes TEs (a whole Swin-B in one cooperative kernel), the window around the
/// chain: its TEs and the memory-intensive TEs next to them, up to the compute-intensive TE on
/// each side. Pricing the whole kernel twice per chain cost Swin-B's 24 chains 48 builds of
/// its 280-stage kernel (8 s); a window prices what the choice changes (the chain's stages,
/// their barriers and score traffic), and the windows of same-shaped blocks are twins.
Group pricing_group(const ProgramFacts& f, const Group& holder, const AttentionChain& c) {
  Group g;
  g.tes = holder.tes;
  g.split_rows = holder.split_rows;
  g.global_scratch = holder.global_scratch;
  g.forced_sync = holder.forced_sync;
  if (g.tes.size() <= static_cast<size_t>(kAttentionWindowTes)) return g;
  std::vector<int> tes = holder.tes;
  std::sort(tes.begin(), tes.end());
  const std::vector<int> chain = c.tes();
  size_t lo = tes.size(), hi = 0;
  for (size_t i = 0; i < tes.size(); ++i) {
    if (std::find(chain.begin(), chain.end(), tes[i]) == chain.end()) continue;
    lo = std::min(lo, i);
    hi = std::max(hi, i);
  }
  if (lo > hi) return g;
  while (lo > 0 && !f.compute(tes[lo - 1])) --lo;
  while (hi + 1 < tes.size() && !f.compute(tes[hi + 1])) ++hi;
  g.tes.assign(tes.begin() + static_cast<std::ptrdiff_t>(lo),
               tes.begin() + static_cast<std::ptrdiff_t>(hi) + 1);
  std::erase_if(g.forced_sync, [&](const ForcedSync& s) {
    for (int te : g.tes)
      if (f.analysis().tes[static_cast<size_t>(te)].name == s.te) return false;
    return true;
  });
  return g;
}

/// Prices, side by side on every core, the kernels decide_attention will price one after
/// another: each holder kernel with its chain fused and apart, the chains before it taken as
/// fused (the usual outcome). The prices land in the pricer's memo, where the decisions find
/// them; a guess that turns out wrong (an earlier chain left apart) costs only a build the
/// decision then makes itself, so the decisions are those of pricing one by one.
void prefetch_attention_prices(const ProgramFacts& f, const KernelPricer& pricer,
                               const FusionPlan& context, gpu::Precision precision,
                               const std::vector<Group>& groups) {
  // A copy: set_attention below replaces what f.attention() refers to.
  const std::vector<AttentionChain> chains = f.attention();  // NOLINT(performance-*)
  std::vector<Partition> parts;
  for (size_t i = 0; i < chains.size(); ++i) {
    const int holder = holder_of(groups, chains[i]);
    if (holder < 0) continue;
    const Group g = pricing_group(f, groups[static_cast<size_t>(holder)], chains[i]);
    std::vector<AttentionChain> without = chains;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    f.set_attention(chains);
    parts.push_back(build_partitions(f, {g}, precision)[0]);
    f.set_attention(without);
    parts.push_back(build_partitions(f, {g}, precision)[0]);
  }
  f.set_attention(chains);
  prefetch_side_by_side(parts.size(), [&](size_t i) { pricer.price(context, parts[i]); });
}

}  // namespace

void decide_attention(const ProgramFacts& f, const FusionPlan& context, const KernelPricer* pricer,
                      gpu::Precision precision, const std::set<std::string>& forced,
                      std::vector<Group>& groups, std::vector<TransformSite>& sites) {
  const te::TeProgram& program = context.program;
  std::vector<AttentionChain> kept;
  const std::vector<AttentionChain> chains = f.attention();
  auto name = [&](int te) { return program.ops[static_cast<size_t>(te)]->name; };
  if (pricer) prefetch_attention_prices(f, *pricer, context, precision, groups);
  for (size_t i = 0; i < chains.size(); ++i) {
    const AttentionChain& c = chains[i];
    const std::string key = attention_site_key(program, c);
    TransformSite* site = nullptr;
    for (TransformSite& s : sites)
      if (s.kind == TransformKind::Attention && s.key == key) site = &s;
    const int at = holder_of(groups, c);
    Group* holder = at < 0 ? nullptr : &groups[static_cast<size_t>(at)];
    auto refuse = [&](const std::string& why) {
      if (!site) return;
      site->applied = false;
      site->result.clear();
      site->reason = why;
    };
    if (!holder) {
      refuse(
          "its TEs are in different kernels (a cut falls inside the chain): stays separate "
          "stages");
      continue;
    }
    const te::ComputeOp& s = *program.ops[static_cast<size_t>(c.scores)];
    const te::ComputeOp& p = *program.ops[static_cast<size_t>(c.probs)];
    // The score-shaped tensors the unfused chain writes: S, P and E where it is a TE.
    Decision d;
    d.te = c.scores;
    int64_t score_bytes = 0;
    std::string chain_text;
    for (int te : c.tes()) {
      const te::ComputeOp& x = *program.ops[static_cast<size_t>(te)];
      chain_text += (chain_text.empty() ? "" : " -> ") + x.name;
      if (te == c.scores || te == c.exp || te == c.probs) {
        score_bytes += shape_numel(x.output->shape) * dtype_size(x.output->dtype);
        d.tensors.push_back(x.output->name);
      }
    }
    bool fuse = true;
    if (pricer) {
      // The kernel holding the chain (or the window around it in a big one), fused (with the
      // chains kept so far and those to come) against its stages apart.
      const Group g = pricing_group(f, *holder, c);
      const std::string window =
          g.tes.size() < holder->tes.size()
              ? fmt::format(" (priced on the {} TEs around it of the {} in its kernel)",
                            g.tes.size(), holder->tes.size())
              : "";
      std::vector<AttentionChain> with = kept, without = kept;
      with.insert(with.end(), chains.begin() + static_cast<std::ptrdiff_t>(i), chains.end());
      without.insert(without.end(), chains.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                     chains.end());
      f.set_attention(with);
      const PartitionPrice fused = pricer->price(context, build_partitions(f, {g}, precision)[0]);
      f.set_attention(without);
      const PartitionPrice apart = pricer->price(context, build_partitions(f, {g}, precision)[0]);
      f.set_attention(with);
      if (!fused.ok()) {
        fuse = false;
        d.kind = DecisionKind::AttentionUnfused;
        d.reason =
            fmt::format("attention {} left as separate stages: the fused stage was not built ({})",
                        chain_text, fused.error);
      } else {
        d.merged_us = fused.est_time_us;
        d.split_us = apart.ok() ? apart.est_time_us : fused.est_time_us;
        const int64_t saved = apart.ok() ? apart.dram_bytes - fused.dram_bytes : 0;
        const bool cheaper = d.merged_us <= d.split_us;
        fuse = cheaper || forced.count(key) > 0;
        d.kind = fuse ? DecisionKind::FusedAttention : DecisionKind::AttentionUnfused;
        d.reason =
            fuse ? fmt::format(
                       "attention {} fused into one stage with an online softmax{}: scores {} and "
                       "probabilities {} ({} B) never written to DRAM, {} B less DRAM traffic; "
                       "{:.2f} us fused vs {:.2f} us as separate stages{}",
                       chain_text, cheaper ? "" : " by decision although priced slower",
                       s.output->name, p.output->name, score_bytes, saved, d.merged_us, d.split_us,
                       window)
                 : fmt::format(
                       "attention {} left as separate stages: {:.2f} us fused > {:.2f} us apart{}",
                       chain_text, d.merged_us, d.split_us, window);
      }
    } else {
      d.kind = DecisionKind::FusedAttention;
      d.reason = fmt::format(
          "attention {} fused into one stage with an online softmax: scores {} and probabilities "
          "{} ({} B) never written to DRAM (not priced: cost model v1)",
          chain_text, s.output->name, p.output->name, score_bytes);
    }
    holder->decisions.push_back(d);
    Reason why = reason_of(d);
    // Fused although priced slower: the user's force made it so.
    if (d.kind == DecisionKind::FusedAttention && d.merged_us > d.split_us)
      why.kind = ReasonKind::Decision;
    holder->reasons.push_back(why);
    holder->reason_te.resize(holder->reasons.size() - 1, -1);
    holder->reason_te.push_back(c.scores);
    if (fuse) {
      kept.push_back(c);
      if (site) {
        site->applied = true;
        site->result = name(c.out);
        site->reason = d.reason;
      }
    } else {
      refuse(d.reason);
    }
  }
  f.set_attention(kept);
}

}  // namespace souffle::plan::detail
