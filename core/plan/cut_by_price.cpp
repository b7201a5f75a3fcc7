// The souffle strategy's cuts chosen by price: at each grid-barrier site of a co-resident group,
// the two neighbouring segments priced merged against apart.
#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "core/plan/partition.h"

namespace souffle::plan::detail {

namespace {

constexpr double kUnpriced = std::numeric_limits<double>::infinity();

/// One kernel of some TEs, priced with its short reductions split over blocks and without,
/// and with the intermediates it keeps in shared memory there and in global scratch.
struct Priced {
  double us = kUnpriced;        ///< the cheapest variant
  bool split_rows = true;       ///< which rows variant
  double other_us = kUnpriced;  ///< the other rows variant (infinite when not built)
  std::vector<int> sites;       ///< TEs after a grid barrier between stages, in either variant
  std::vector<int> kept_sites;  ///< those of the cheapest variant
  /// Intermediates the chosen rows variant keeps in shared memory (empty: none, and the two
  /// prices below are not taken).
  std::vector<std::string> residents;
  double on_chip_us = kUnpriced, global_us = kUnpriced;  ///< residents kept there / not
  bool global_scratch = false;                           ///< global scratch was cheaper
  int grid_barriers = 0;                                 ///< of the cheapest variant's kernels
  int launches = 0;                                      ///< the same
  double launch_us = 0;  ///< what one launch costs (the pricer's constant)
};

class Prices {
 public:
  Prices(const ProgramFacts& f, const FusionPlan& context, const KernelPricer& pricer,
         gpu::Precision precision)
      : m_f(f), m_context(context), m_pricer(pricer), m_precision(precision) {}
  const Priced& of(const std::vector<int>& tes) {
    auto it = m_memo.find(tes);
    if (it != m_memo.end()) return it->second;
    return m_memo.emplace(tes, compute(tes)).first->second;
  }
  double us(const std::vector<int>& tes) { return of(tes).us; }

  /// Prices every set of `sets` not priced yet side by side, one build per core (each is
  /// independent, and the kernel pricer is safe to share between threads), so that the walk
  /// over the barrier sites that follows finds them in the memo. Same prices as one by one.
  void prefetch(const std::vector<std::vector<int>>& sets) {
    std::vector<const std::vector<int>*> todo;
    std::set<const std::vector<int>*, Less> seen;
    for (const std::vector<int>& s : sets)
      if (!m_memo.contains(s) && seen.insert(&s).second) todo.push_back(&s);
    std::vector<Priced> out(todo.size());
    if (!prefetch_side_by_side(todo.size(), [&](size_t i) { out[i] = compute(*todo[i]); })) return;
    for (size_t i = 0; i < todo.size(); ++i) m_memo.emplace(*todo[i], std::move(out[i]));
  }

 private:
  struct Less {
    bool operator()(const std::vector<int>* a, const std::vector<int>* b) const { return *a < *b; }
  };
  /// The price of `tes` as one kernel (see Priced); reads only what is shared between threads.
  Priced compute(const std::vector<int>& tes) const {
    Group g;
    g.tes = tes;
    Partition p = build_partitions(m_f, {g}, m_precision)[0];
    Priced out;
    // Priced whether or not its stages fit the co-resident grid by the partitioner's estimate:
    // the build schedules a cooperative kernel's stages within the blocks that are co-resident.
    {
      PartitionPrice a = m_pricer.price(m_context, p);
      if (a.ok()) {
        out.us = a.est_time_us;
        out.grid_barriers = a.grid_barriers;
        out.launches = a.launches;
        out.launch_us = a.launch_us / std::max(a.launches, 1);
        out.sites = a.barrier_sites;
        out.kept_sites = a.barrier_sites;
        std::vector<std::string> residents = a.on_chip;
        // A barrier that is no site between stages is inside one: a short reduction's rows
        // split over blocks.
        if (a.grid_barriers > static_cast<int>(a.barrier_sites.size())) {
          // Rows kept in one block: no barrier inside a short reduction, fewer blocks on it.
          p.split_rows = false;
          PartitionPrice b = m_pricer.price(m_context, p);
          if (b.ok()) {
            out.sites.insert(out.sites.end(), b.barrier_sites.begin(), b.barrier_sites.end());
            if (b.est_time_us < out.us) {
              out.other_us = out.us;
              out.us = b.est_time_us;
              out.split_rows = false;
              out.grid_barriers = b.grid_barriers;
              out.launches = b.launches;
              out.kept_sites = b.barrier_sites;
              residents = b.on_chip;
            } else {
              out.other_us = b.est_time_us;
            }
          }
        }
        // Intermediates in shared memory against global scratch: residents cost arena (fewer
        // blocks per SM), global scratch costs a write and a read back per reading stage.
        if (!residents.empty()) {
          std::sort(residents.begin(), residents.end());
          residents.erase(std::unique(residents.begin(), residents.end()), residents.end());
          p.split_rows = out.split_rows;
          p.global_scratch = residents;
          PartitionPrice g = m_pricer.price(m_context, p);
          out.residents = residents;
          out.on_chip_us = out.us;
          if (g.ok()) {
            out.global_us = g.est_time_us;
            if (g.est_time_us < out.us) {
              out.us = g.est_time_us;
              out.global_scratch = true;
              out.grid_barriers = g.grid_barriers;
              out.launches = g.launches;
              out.kept_sites = g.barrier_sites;
            }
          }
        }
      }
    }
    std::sort(out.sites.begin(), out.sites.end());
    out.sites.erase(std::unique(out.sites.begin(), out.sites.end()), out.sites.end());
    std::sort(out.kept_sites.begin(), out.kept_sites.end());
    return out;
  }

  const ProgramFacts& m_f;
  const FusionPlan& m_context;
  const KernelPricer& m_pricer;
  gpu::Precision m_precision;
  std::map<std::vector<int>, Priced> m_memo;
};

/// `tes` (in order) cut before each TE of `sites` (but the first); pure views just before a cut
/// go with the TE after it (they fold into their reader).
std::vector<std::vector<int>> cut_at(const ProgramFacts& f, const std::vector<int>& tes,
                                     const std::vector<int>& sites) {
  std::vector<std::vector<int>> segs(1);
  for (int te : tes) {
    if (!segs.back().empty() && std::binary_search(sites.begin(), sites.end(), te)) {
      std::vector<int> views;
      std::vector<int>& last = segs.back();
      while (!last.empty() && f.is_alias(last.back())) {
        views.insert(views.begin(), last.back());
        last.pop_back();
      }
      if (last.empty()) {
        last = views;
      } else {
        segs.push_back(views);
      }
    }
    segs.back().push_back(te);
  }
  return segs;
}

/// The segments of `g`: its TEs in order, cut at each stage that a compute-intensive TE or a
/// grid synchronization starts; a segment whose built kernel still has a grid barrier between
/// stages (an ownership proof that does not hold) is cut there too. What the segments' kernels
/// are priced on, so the partition can be cut at any grid barrier of its kernel.
std::vector<std::vector<int>> segments_of(const ProgramFacts& f, const Group& g, Prices& price) {
  std::vector<int> tes = g.tes;
  std::sort(tes.begin(), tes.end());
  std::vector<int> sites;
  KernelBuilder k(f);
  for (int te : tes) {
    // No cut inside an attention chain: its TEs are one stage fused.
    if (!k.empty() && !f.is_alias(te) && !f.inside_attention(te) &&
        (f.compute(te) || k.needs_sync(te)))
      sites.push_back(te);
    k.add(te);
  }
  std::vector<std::vector<int>> out;
  const std::vector<std::vector<int>> first = cut_at(f, tes, sites);
  price.prefetch(first);
  for (const std::vector<int>& seg : first) {
    const Priced& p = price.of(seg);
    for (std::vector<int>& s : cut_at(f, seg, p.sites)) out.push_back(std::move(s));
  }
  return out;
}

std::vector<int> joined(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

/// The first TE of `seg` that is not a pure view (what a decision is about).
int head(const ProgramFacts& f, const std::vector<int>& seg) {
  for (int te : seg)
    if (!f.is_alias(te)) return te;
  return seg.front();
}

/// Hands `from`'s reasons about TEs in `tes` to `to`.
void take_reasons(const Group& from, const std::vector<int>& tes, Group& to) {
  for (size_t i = 0; i < from.reasons.size(); ++i) {
    int te = i < from.reason_te.size() ? from.reason_te[i] : -1;
    if (te >= 0 && std::find(tes.begin(), tes.end(), te) == tes.end()) continue;
    if (te < 0 && !to.reasons.empty()) continue;
    to.reasons.push_back(from.reasons[i]);
    to.reason_te.push_back(te);
  }
  for (const Decision& d : from.decisions)
    if (d.te < 0 || std::find(tes.begin(), tes.end(), d.te) != tes.end()) to.decisions.push_back(d);
}

/// The rules strategy's kernels (`rules_of`: each TE's kernel in partition_rules of the same
/// program) restricted to `tes` (in order), in the rules kernels' order.
std::vector<std::vector<int>> rules_kernels(const std::vector<int>& tes,
                                            const std::vector<int>& rules_of) {
  std::map<int, std::vector<int>> by_kernel;
  for (int te : tes) by_kernel[rules_of[te]].push_back(te);
  std::vector<std::vector<int>> out;
  for (auto& [kernel, part] : by_kernel) out.push_back(std::move(part));
  return out;
}

/// Rules' cut of kernels `out` (rules_kernels): each cut again where its built kernel still has
/// a grid barrier between stages, as the rules strategy launches its stages separately there.
std::vector<std::vector<int>> rules_cut(const ProgramFacts& f, std::vector<std::vector<int>> out,
                                        Prices& price) {
  // A piece cut at its barriers is built anew, and may show barriers of its own.
  for (int round = 0; round < 4; ++round) {
    price.prefetch(out);
    std::vector<std::vector<int>> next;
    bool cut = false;
    for (std::vector<int>& part : out) {
      std::vector<std::vector<int>> pieces = cut_at(f, part, price.of(part).kept_sites);
      cut |= pieces.size() > 1;
      for (std::vector<int>& piece : pieces) next.push_back(std::move(piece));
    }
    out = std::move(next);
    if (!cut) break;
  }
  return out;
}

/// Whether kernels `pieces`, run in this order, read nothing a later one writes.
bool in_order(const ProgramFacts& f, const std::vector<std::vector<int>>& pieces) {
  const analysis::Analysis& a = f.analysis();
  std::map<int, size_t> at;
  for (size_t i = 0; i < pieces.size(); ++i)
    for (int te : pieces[i]) at[te] = i;
  for (const auto& [te, i] : at)
    for (const analysis::InputAccess& in : a.tes[te].inputs) {
      auto p = at.find(a.tensors[in.tensor].producer);
      if (p != at.end() && p->second > i) return false;
    }
  return true;
}

}  // namespace

bool prefetch_side_by_side(size_t n, const std::function<void(size_t)>& fn) {
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 2) return false;
  std::vector<std::exception_ptr> failed(n);
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return true;
}

std::vector<Group> cut_by_price(const ProgramFacts& f, const FusionPlan& context,
                                const KernelPricer& pricer, gpu::Precision precision,
                                std::vector<Group> groups) {
  // Pricing runs on several threads (Prices::prefetch): the facts' schedules, made on first
  // use, are made here first.
  for (const Group& g : groups)
    for (int te : g.tes)
      if (f.compute(te)) f.schedule(te);
  Prices price(f, context, pricer, precision);
  // The rules strategy's kernels of the same TEs: a candidate for every group.
  std::vector<int> rules_of(f.analysis().tes.size(), -1);
  {
    const std::vector<Group> rules = partition_rules(f);
    for (size_t r = 0; r < rules.size(); ++r)
      for (int te : rules[r].tes) rules_of[te] = static_cast<int>(r);
  }
  std::vector<Group> out;
  for (const Group& g : groups) {
    std::vector<std::vector<int>> segs = segments_of(f, g, price);
    {
      // Every segment and every neighbouring pair, priced side by side before the walk.
      std::vector<std::vector<int>> wanted = segs;
      for (size_t j = 1; j < segs.size(); ++j) wanted.push_back(joined(segs[j - 1], segs[j]));
      price.prefetch(wanted);
    }
    // Walk the barrier sites: join when the previous segment and this one cost no more merged.
    struct Piece {
      std::vector<std::vector<int>> segs;
      std::vector<Decision> decisions;
    };
    std::vector<Piece> pieces(1);
    pieces[0].segs.push_back(segs[0]);
    for (size_t j = 1; j < segs.size(); ++j) {
      const double merged = price.us(joined(segs[j - 1], segs[j]));
      const double apart = price.us(segs[j - 1]) + price.us(segs[j]);
      const int te = head(f, segs[j]);
      Decision d;
      d.te = te;
      d.merged_us = merged == kUnpriced ? 0 : merged;
      d.split_us = apart == kUnpriced ? 0 : apart;
      // A pair whose kernels fail to build keeps the paper's rule (fused).
      if (merged == kUnpriced || apart == kUnpriced || merged <= apart) {
        d.kind = DecisionKind::Join;
        d.reason =
            fmt::format("{} joins across a grid barrier: {:.2f} us merged <= {:.2f} us apart",
                        f.label(te), d.merged_us, d.split_us);
        if (merged == kUnpriced || apart == kUnpriced)
          d.reason =
              f.label(te) + " joins across a grid barrier (not priced: a kernel failed to build)";
        pieces.back().segs.push_back(segs[j]);
        pieces.back().decisions.push_back(d);
      } else {
        d.kind = DecisionKind::CutCheaper;
        d.reason = fmt::format(
            "cut before {}: {:.2f} us as two kernels < {:.2f} us merged across the grid barrier",
            f.label(te), d.split_us, d.merged_us);
        pieces.emplace_back();
        pieces.back().segs.push_back(segs[j]);
        pieces.back().decisions.push_back(d);
      }
    }
    // A kernel is never fused when its priced time is worse than its parts.
    {
      std::vector<std::vector<int>> wholes;
      for (const Piece& p : pieces) {
        if (p.segs.size() < 2) continue;
        wholes.emplace_back();
        for (const std::vector<int>& s : p.segs)
          wholes.back().insert(wholes.back().end(), s.begin(), s.end());
      }
      price.prefetch(wholes);
    }
    std::vector<Piece> settled;
    for (Piece& p : pieces) {
      if (p.segs.size() == 1) {
        settled.push_back(std::move(p));
        continue;
      }
      std::vector<int> all;
      double parts = 0;
      for (const std::vector<int>& s : p.segs) {
        all.insert(all.end(), s.begin(), s.end());
        parts += price.us(s);
      }
      const double whole = price.us(all);
      if (whole == kUnpriced || parts == kUnpriced || whole <= parts) {
        settled.push_back(std::move(p));
        continue;
      }
      for (size_t i = 0; i < p.segs.size(); ++i) {
        Piece one;
        one.segs.push_back(p.segs[i]);
        for (const Decision& d : p.decisions)
          if (d.te == head(f, p.segs[i]) && d.kind != DecisionKind::Join)
            one.decisions.push_back(d);
        Decision u;
        u.kind = DecisionKind::Unfused;
        u.te = head(f, p.segs[i]);
        u.merged_us = whole;
        u.split_us = parts;
        u.reason = fmt::format(
            "kernel of {} segments split back into them: {:.2f} us merged > {:.2f} us apart",
            p.segs.size(), whole, parts);
        one.decisions.push_back(u);
        settled.push_back(std::move(one));
      }
    }
    // Rules' cut of the same TEs, its kernels launched one after another without grid
    // synchronization, where it prices below the cuts chosen: the walk is greedy and its
    // segments end at every barrier, where rules' kernels end only where a launch must.
    bool rules_kept = false;
    {
      std::vector<int> all = g.tes;
      std::sort(all.begin(), all.end());
      double souffle_us = 0, rules_us = 0, launch_us = 0;
      int barriers = 0, launches = 0;
      const size_t kernels = settled.size();
      for (const Piece& p : settled) {
        std::vector<int> tes;
        for (const std::vector<int>& s : p.segs) tes.insert(tes.end(), s.begin(), s.end());
        std::sort(tes.begin(), tes.end());
        const Priced& pr = price.of(tes);
        souffle_us += pr.us;
        barriers += pr.grid_barriers;
        launch_us = std::max(launch_us, pr.launch_us);
      }
      std::vector<std::vector<int>> cut = rules_kernels(all, rules_of);
      // Each rules kernel that runs something costs a launch at least: where that is already
      // no cheaper, its kernels are not built.
      int64_t running = 0;
      for (const std::vector<int>& c : cut)
        running += std::any_of(c.begin(), c.end(), [&](int te) { return !f.is_alias(te); });
      if (souffle_us > launch_us * static_cast<double>(running)) {
        cut = rules_cut(f, std::move(cut), price);
        for (const std::vector<int>& c : cut) {
          const Priced& pr = price.of(c);
          rules_us += pr.us;
          launches += pr.launches;
        }
      } else {
        rules_us = kUnpriced;
      }
      if (rules_us < souffle_us && in_order(f, cut)) {
        rules_kept = true;
        settled.clear();
        for (std::vector<int>& c : cut) {
          Piece p;
          Decision d;
          d.kind = DecisionKind::RulesCut;
          d.te = head(f, c);
          d.merged_us = souffle_us == kUnpriced ? 0 : souffle_us;
          d.split_us = rules_us;
          const std::string as =
              fmt::format("{:.2f} us as {} launch{} without grid synchronization", rules_us,
                          launches, launches == 1 ? "" : "es");
          d.reason = souffle_us == kUnpriced
                         ? "rules' cut is kept here: " + as +
                               "; the kernels of the cuts chosen by price could not be built"
                         : fmt::format(
                               "rules' cut is cheaper here: {} < {:.2f} us as {} kernel{} with "
                               "{} grid barrier{}",
                               as, souffle_us, kernels, kernels == 1 ? "" : "s", barriers,
                               barriers == 1 ? "" : "s");
          p.decisions.push_back(std::move(d));
          p.segs.push_back(std::move(c));
          settled.push_back(std::move(p));
        }
      }
    }
    for (const Piece& p : settled) {
      std::vector<int> tes;
      for (const std::vector<int>& s : p.segs) tes.insert(tes.end(), s.begin(), s.end());
      Group n;
      n.tes = tes;
      if (rules_kept) {
        // The souffle walk's reasons are about kernels this one is not; its first TE's
        // decisions (the program's start, a co-residency cut) still hold.
        for (const Decision& d : g.decisions)
          if (std::find(tes.begin(), tes.end(), d.te) != tes.end()) {
            n.decisions.push_back(d);
            n.reasons.push_back(reason_of(d));
            n.reason_te.push_back(d.te);
          }
      } else {
        take_reasons(g, tes, n);
      }
      for (const Decision& d : p.decisions) {
        n.decisions.push_back(d);
        n.reasons.push_back(reason_of(d));
        n.reason_te.push_back(d.te);
      }
      std::sort(tes.begin(), tes.end());
      const Priced& pr = price.of(tes);
      if (!pr.split_rows) {
        n.split_rows = false;
        Decision d;
        d.kind = DecisionKind::RowsInBlock;
        d.te = head(f, tes);
        d.merged_us = pr.other_us;
        d.split_us = pr.us;
        d.reason = fmt::format(
            "short reductions keep each row in one block: {:.2f} us, against {:.2f} us with rows "
            "split over blocks and joined across a grid barrier",
            pr.us, pr.other_us);
        n.decisions.push_back(d);
        n.reasons.push_back(reason_of(d));
        n.reason_te.push_back(d.te);
      }
      if (!pr.residents.empty() && pr.global_us != kUnpriced) {
        if (pr.global_scratch) n.global_scratch = pr.residents;
        Decision d;
        d.kind = pr.global_scratch ? DecisionKind::GlobalScratch : DecisionKind::KeepOnChip;
        d.te = head(f, tes);
        d.merged_us = pr.on_chip_us;
        d.split_us = pr.global_us;
        d.tensors = pr.residents;
        std::string names;
        for (size_t i = 0; i < pr.residents.size() && i < 4; ++i)
          names += (i ? ", " : "") + pr.residents[i];
        if (pr.residents.size() > 4)
          names += " and " + std::to_string(pr.residents.size() - 4) + " more";
        d.reason = pr.global_scratch
                       ? fmt::format(
                             "{} in global scratch: {:.2f} us, against {:.2f} us kept in shared "
                             "memory",
                             names, pr.global_us, pr.on_chip_us)
                       : fmt::format(
                             "{} kept in shared memory: {:.2f} us, against {:.2f} us in global "
                             "scratch",
                             names, pr.on_chip_us, pr.global_us);
        n.decisions.push_back(d);
        n.reasons.push_back(reason_of(d));
        n.reason_te.push_back(d.te);
      }
      out.push_back(std::move(n));
    }
  }
  return out;
}

}  // namespace souffle::plan::detail
