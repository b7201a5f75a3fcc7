/// \file Horizontal transformation: independent TEs of one shape merged into one TE along a new
/// axis.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/analysis/analysis.h"
#include "core/te/expr.h"

namespace souffle::plan {

/// Which transformation a site is of.
enum class TransformKind : uint8_t {
  Horizontal,  ///< independent TEs of one shape merged along a new axis (plan/horizontal.h)
  Vertical,    ///< a producer inlined into its consumers (plan/vertical.h)
  Attention,   ///< an attention chain fused into one stage (plan/attention.h)
};
/// "horizontal", "vertical", "attention": the plan's text, JSON and reports show it, and the
/// horizontal and vertical sites are named as their pipeline steps are.
const char* transform_kind_name(TransformKind k);

/// One place where a transformation could apply, with what was decided there and why.
struct TransformSite {
  TransformKind kind = TransformKind::Horizontal;
  std::string key;               ///< stable id of the site, used by Decisions (force/forbid)
  std::vector<std::string> ops;  ///< names of the TEs involved (input program)
  std::string result;            ///< name of the TE that replaces them ("" when not applied)
  bool applied = false;
  std::string reason;  ///< why applied, or why not
};

/// Site keys the user forbids (never applied) or forces (applied when legal, whatever the
/// heuristic says).
struct TransformOptions {
  std::set<std::string> forbid, force;
};

struct TransformResult {
  te::TeProgram program;
  std::vector<TransformSite> sites;
};

/// Merges groups of TEs that are independent (no path between any two in the dependency graph),
/// compatible (equal output shape and dtype, equal reduce kind, reduce extents and init) and read
/// one common activation (a program input or a TE output; constants do not count, as a shared
/// scalar says nothing about reuse): Q/K/V projections, MMoE experts and gates.
///
/// A group of n TEs becomes one TE `M[g < n, i...] = select(g == 0, body0, select(g == 1, ...))`
/// (inside the reduction for reductions), each body's vars replaced by M's; every read of member
/// k becomes `M[k, ...]`, and a member that is a program output is kept as the view
/// `orig[i...] = M[k, i...]` so the outputs do not change. M is named after the first member
/// plus "_hN" (N = group size).
///
/// Heuristic: a group is applied when its members are reductions (GEMMs, convs, reduce ops):
/// one launch then loads the shared input once for all of them. Element-wise groups are listed
/// but left to the vertical transformation (force applies them). Site key: "h:" + the members'
/// names sorted and joined by ",". A forced key naming TEs that the search would group
/// differently is applied first when legal; an illegal forced key is reported with its reason.
/// The result is topologically ordered and passes te::verify.
TransformResult horizontal_transform(const te::TeProgram& program,
                                     const analysis::Analysis& analysis,
                                     const TransformOptions& options = {});

}  // namespace souffle::plan
