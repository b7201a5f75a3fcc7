/// \file Collapsed kernels: a SceneGraph in which chosen partitions of a plan are one box each,
/// with the edges rerouted to those boxes. A plain value, built off the GUI thread.
#pragma once

#include <memory>
#include <set>
#include <vector>

#include "views/plan_runner.h"
#include "views/scene_graph.h"

namespace souffle::views {

/// A graph with some kernels collapsed, and how its boxes relate to the full graph's.
struct CollapsedGraph {
  std::shared_ptr<const SceneGraph> graph;
  /// Per box of the full graph: the box that shows it in `graph`.
  std::vector<int> shownBox;
  /// Per box of `graph`: the partition indices it belongs to (like PlanData::kernelsOf).
  std::vector<std::vector<int>> kernels;
};

/// Collapses the partitions `collapsed` (indices into plan->partitions) of `full` (the op- or
/// TE-level graph `plan` was mapped onto). A box whose TEs are split over several kernels joins
/// the box of its first collapsed kernel. Each kernel box is titled "K<id> · <n> ops" and
/// subtitled with its estimated time; edges between two boxes that end in one box disappear,
/// parallel edges become one (labelled like the first). Pure.
CollapsedGraph collapseKernels(const SceneGraph& full, const PlanData& plan,
                               const std::set<int>& collapsed);

/// Every partition of `plan` that holds at least one box of the graph at `teLevel`.
std::set<int> drawnPartitions(const PlanData& plan, bool teLevel);

}  // namespace souffle::views
