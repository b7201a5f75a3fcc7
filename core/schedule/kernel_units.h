/// \file The program a plan's kernels compute: each view folded into its readers' indexing.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace souffle::schedule {

/// plan.program as the kernels of plan compute it. A TE of a "view" stage (reshape, transpose,
/// squeeze, ...), or any TE that only moves data (0 FLOPs: slice, concat, gather), is
/// substituted into the index expressions of its readers inside its partition (the vertical
/// transform's inliner), so no kernel copies it for them. When its output is also a model output
/// or read by another partition it is still written, by a copy stage.
struct KernelProgram {
  te::TeProgram program;      ///< plan.program, readers of folded views rewritten
  std::vector<bool> dropped;  ///< per op: a folded view no kernel computes
  /// Per op: the views folded into its body (names), for the stage's schedule text.
  std::vector<std::vector<std::string>> folds;
  /// Per op: for a view that is still written, why ("a model output", "read by another kernel").
  std::vector<std::string> copy_why;
};

KernelProgram fold_views(const plan::FusionPlan& plan);
/// The same for the partitions `partitions` of a plan over `program` (the plan's own are not read).
KernelProgram fold_views(const te::TeProgram& program,
                         const std::vector<plan::Partition>& partitions);

}  // namespace souffle::schedule
