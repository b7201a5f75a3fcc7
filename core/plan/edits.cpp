// Applying user decisions (merge, split, pin) to the groups of a strategy.
#include <fmt/format.h>
#include <algorithm>
#include <map>

#include "core/plan/partition.h"

namespace souffle::plan::detail {

namespace {

/// The TE of the (transformed) program a user's name anchors to: a TE name, a TE of the input
/// program replaced by a transformation (followed through the sites), or an ONNX node (its
/// first TE). -1 when nothing matches.
int find_te(const te::TeProgram& program, const std::vector<TransformSite>& sites,
            const std::string& name) {
  std::string cur = name;
  for (int hop = 0; hop < 64; ++hop) {
    for (size_t i = 0; i < program.ops.size(); ++i)
      if (program.ops[i]->name == cur) return int(i);
    std::string next;
    for (const TransformSite& s : sites)
      if (s.applied && !s.result.empty() && s.result != cur &&
          std::find(s.ops.begin(), s.ops.end(), cur) != s.ops.end()) {
        next = s.result;
        break;
      }
    if (next.empty()) break;
    cur = next;
  }
  for (size_t i = 0; i < program.ops.size(); ++i)
    if (program.ops[i]->origin.node == name) return int(i);
  return -1;
}

struct Resolved {
  int te = -1;
  std::string error;
};

Resolved resolve_name(const te::TeProgram& program, const std::vector<TransformSite>& sites,
                      const std::string& name) {
  Resolved r;
  r.te = find_te(program, sites, name);
  if (r.te < 0) r.error = "unknown TE or ONNX node '" + name + "'";
  return r;
}

/// reach[g][h]: kernel h depends (transitively) on kernel g.
std::vector<std::vector<bool>> reachability(const ProgramFacts& f,
                                            const std::vector<Group>& groups) {
  const analysis::Analysis& a = f.analysis();
  size_t n = groups.size();
  std::vector<int> group_of(a.tes.size(), -1);
  for (size_t g = 0; g < n; ++g)
    for (int te : groups[g].tes) group_of[te] = int(g);
  std::vector<std::vector<int>> succ(n);
  for (size_t g = 0; g < n; ++g)
    for (int te : groups[g].tes)
      for (const analysis::InputAccess& in : a.tes[te].inputs) {
        int p = a.tensors[in.tensor].producer;
        if (p >= 0 && group_of[p] >= 0 && group_of[p] != int(g))
          succ[group_of[p]].push_back(int(g));
      }
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  // Groups are in a dependency-respecting order, so walking backwards settles each row once.
  for (size_t gi = n; gi-- > 0;) {
    for (int h : succ[gi]) {
      reach[gi][h] = true;
      for (size_t x = 0; x < n; ++x)
        if (reach[h][x]) reach[gi][x] = true;
    }
  }
  return reach;
}

int group_of_te(const std::vector<Group>& groups, int te) {
  for (size_t g = 0; g < groups.size(); ++g)
    if (std::find(groups[g].tes.begin(), groups[g].tes.end(), te) != groups[g].tes.end())
      return int(g);
  return -1;
}

/// The edit applied to `groups`, or the reason it cannot be.
std::string apply_one(const ProgramFacts& f, const te::TeProgram& program,
                      const std::vector<TransformSite>& sites, const Edit& e,
                      gpu::Precision precision, std::vector<Group>& groups) {
  Resolved a = resolve_name(program, sites, e.a);
  if (a.te < 0) return a.error;
  int ga = group_of_te(groups, a.te);
  SOUFFLE_CHECK(ga >= 0, "TE without a kernel");
  std::string what = describe(e);
  switch (e.kind) {
    case Edit::Kind::Merge: {
      Resolved b = resolve_name(program, sites, e.b);
      if (b.te < 0) return b.error;
      int gb = group_of_te(groups, b.te);
      if (ga == gb)
        return fmt::format("{} and {} are already in one kernel", f.label(a.te), f.label(b.te));
      int i = std::min(ga, gb), j = std::max(ga, gb);
      std::vector<std::vector<bool>> reach = reachability(f, groups);
      for (int k = i + 1; k < j; ++k)
        if (reach[i][k] && reach[k][j])
          return fmt::format(
              "merging would create a dependency cycle: {} depends on the kernel of {}, and the "
              "kernel of {} depends on {}",
              f.label(groups[k].tes.front()), f.label(groups[i].tes.front()),
              f.label(groups[j].tes.front()), f.label(groups[k].tes.front()));
      Group merged;
      merged.tes = groups[i].tes;
      merged.tes.insert(merged.tes.end(), groups[j].tes.begin(), groups[j].tes.end());
      merged.reasons = groups[i].reasons;
      merged.reasons.insert(merged.reasons.end(), groups[j].reasons.begin(),
                            groups[j].reasons.end());
      merged.reasons.push_back(
          {ReasonKind::Decision, Refusal::None, "merged by decision: " + what});
      merged.merged_from = {groups[i].tes, groups[j].tes};
      merged.merge_te = a.te;
      std::vector<Partition> built = build_partitions(f, {merged}, precision);
      std::string bad = infeasible(f, built[0]);
      if (!bad.empty()) return "merging is impossible: " + bad;
      std::vector<Group> next;
      for (int k = 0; k < i; ++k) next.push_back(groups[k]);
      // Between i and j: what j needs goes before the merged kernel, the rest after it.
      for (int k = i + 1; k < j; ++k)
        if (reach[k][j]) next.push_back(groups[k]);
      next.push_back(merged);
      for (int k = i + 1; k < j; ++k)
        if (!reach[k][j]) next.push_back(groups[k]);
      for (int k = j + 1; k < int(groups.size()); ++k) next.push_back(groups[k]);
      groups = std::move(next);
      return "";
    }
    case Edit::Kind::Split:
    case Edit::Kind::Pin: {
      std::vector<int> tes = groups[ga].tes;
      std::sort(tes.begin(), tes.end());
      bool pin = e.kind == Edit::Kind::Pin;
      if (f.is_alias(a.te))
        return f.label(a.te) + " is a pure view: it is folded into its readers and has no kernel";
      if (!pin && tes.front() == a.te) return f.label(a.te) + " already starts a kernel";
      if (pin && tes.size() == 1) return f.label(a.te) + " already has a kernel of its own";
      Group before, self, after;
      for (int te : tes) (te < a.te ? before : te == a.te ? self : after).tes.push_back(te);
      if (!pin) {
        self.tes.insert(self.tes.end(), after.tes.begin(), after.tes.end());
        after.tes.clear();
      }
      before.reasons = groups[ga].reasons;
      self.reasons.push_back({ReasonKind::Decision, Refusal::None,
                              "kernel starts at " + f.label(a.te) + " by decision: " + what});
      if (!after.tes.empty())
        after.reasons.push_back(
            {ReasonKind::Decision, Refusal::None,
             "kernel resumes after " + f.label(a.te) + " by decision: " + what});
      std::vector<Group> pieces;
      for (Group* g : {&before, &self, &after})
        if (!g->tes.empty()) pieces.push_back(std::move(*g));
      groups.erase(groups.begin() + ga);
      groups.insert(groups.begin() + ga, pieces.begin(), pieces.end());
      return "";
    }
    case Edit::Kind::Force:
    case Edit::Kind::Forbid:
    case Edit::Kind::Sync:
      break;
  }
  return "";
}

/// A sync decision recorded on the kernel holding its TE, or the reason it cannot be. Whether
/// the boundary can take the order asked is known once its kernel is built (plan.cpp).
std::string apply_sync(const ProgramFacts& f, const te::TeProgram& program,
                       const std::vector<TransformSite>& sites, const Edit& e,
                       std::vector<Group>& groups) {
  Resolved a = resolve_name(program, sites, e.a);
  if (a.te < 0) return a.error;
  const int g = group_of_te(groups, a.te);
  SOUFFLE_CHECK(g >= 0, "TE without a kernel");
  if (f.is_alias(a.te))
    return f.label(a.te) + " is a pure view: it is folded into its readers and starts no stage";
  const std::vector<int>& tes = groups[size_t(g)].tes;
  if (*std::min_element(tes.begin(), tes.end()) == a.te)
    return f.label(a.te) + " starts its kernel: no stage comes before it to be ordered after";
  const BoundaryKind kind = e.b == "flags" ? BoundaryKind::Flags : BoundaryKind::Grid;
  const std::string name = f.analysis().tes[size_t(a.te)].name;
  std::vector<ForcedSync>& forced = groups[size_t(g)].forced_sync;
  forced.erase(std::remove_if(forced.begin(), forced.end(),
                              [&](const ForcedSync& x) { return x.te == name; }),
               forced.end());
  forced.push_back({name, kind});
  return "";
}

}  // namespace

void apply_edits(const ProgramFacts& f, const te::TeProgram& program, const te::TeProgram& input,
                 const std::vector<TransformSite>& sites, const std::vector<Edit>& edits,
                 gpu::Precision precision, std::vector<Group>& groups, std::vector<Edit>& applied,
                 std::vector<RefusedEdit>& refused) {
  (void)input;
  std::vector<const Edit*> syncs;
  for (const Edit& e : edits) {
    if (e.kind == Edit::Kind::Force || e.kind == Edit::Kind::Forbid) continue;
    if (e.kind == Edit::Kind::Sync) {
      syncs.push_back(&e);  // after the kernels are settled: a later merge or split moves TEs
      continue;
    }
    std::vector<Group> trial = groups;
    std::string why = apply_one(f, program, sites, e, precision, trial);
    if (why.empty()) {
      groups = std::move(trial);
      applied.push_back(e);
    } else {
      const bool unknown = find_te(program, sites, e.a) < 0 ||
                           (e.kind == Edit::Kind::Merge && find_te(program, sites, e.b) < 0);
      refused.push_back({e, why, unknown});
    }
  }
  for (const Edit* e : syncs) {
    std::string why = apply_sync(f, program, sites, *e, groups);
    if (why.empty())
      applied.push_back(*e);
    else
      refused.push_back({*e, why, find_te(program, sites, e->a) < 0});
  }
}

void settle_sync_edits(const ProgramFacts& f, const te::TeProgram& program,
                       const std::vector<TransformSite>& sites, const std::vector<Partition>& parts,
                       std::vector<Edit>& applied, std::vector<RefusedEdit>& refused) {
  std::vector<Edit> kept;
  for (const Edit& e : applied) {
    if (e.kind != Edit::Kind::Sync) {
      kept.push_back(e);
      continue;
    }
    const Resolved a = resolve_name(program, sites, e.a);
    const BoundaryKind want = e.b == "flags" ? BoundaryKind::Flags : BoundaryKind::Grid;
    std::string why;
    if (a.te < 0) {
      why = a.error;
    } else {
      const std::string& name = f.analysis().tes[size_t(a.te)].name;
      const Partition* holder = nullptr;
      for (const Partition& p : parts)
        if (std::find(p.tes.begin(), p.tes.end(), a.te) != p.tes.end()) holder = &p;
      const Boundary* found = nullptr;
      if (holder)
        for (const Boundary& b : holder->boundaries)
          if (b.from != b.to && b.to >= 0 && size_t(b.to) < holder->built_stages.size()) {
            const std::vector<std::string>& tes = holder->built_stages[size_t(b.to)].tes;
            if (!tes.empty() && tes.front() == name) found = &b;
          }
      if (!holder || !holder->priced)
        why = "the kernels of " + f.label(a.te) + " were not built, so no boundary can be ordered";
      else if (!found)
        why = f.label(a.te) + " does not start a stage after another in its kernel (it is " +
              "computed inside a stage, or its kernel starts a launch there)";
      else if (found->order.kind != want) {
        const std::string text = describe(found->order);  // "kind: why"
        const size_t colon = text.find(": ");
        why = std::string("the boundary before ") + f.label(a.te) + " stays " +
              boundary_kind_name(found->order.kind) + " (" +
              (colon == std::string::npos ? text : text.substr(colon + 2)) + ")";
      }
    }
    if (why.empty())
      kept.push_back(e);
    else
      refused.push_back({e, why, a.te < 0});
  }
  applied = std::move(kept);
}

}  // namespace souffle::plan::detail
