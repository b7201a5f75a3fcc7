/// \file Shape/type inference and constant folding over a Graph (they interleave: a Reshape's
/// target shape is often computed by a Shape/Gather/Concat chain that must fold first).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace souffle::interp {

struct InferFoldOptions {
  bool fold = true;
  /// Nodes whose inputs are all constant are evaluated when their outputs hold at most this many
  /// elements in total (larger constant subgraphs stay in the program).
  int64_t max_fold_elements = int64_t{1} << 22;
};

struct InferFoldStats {
  size_t nodes_before = 0, nodes_folded = 0, nodes_dead = 0, nodes_after = 0;
};

/// Types every value by lowering each node (core/lower), folds constant nodes with the
/// interpreter, then removes dead nodes. All unsupported op types are reported in one UserError.
InferFoldStats infer_and_fold(graph::Graph& g, const InferFoldOptions& options = {});

}  // namespace souffle::interp

namespace souffle::interp {

/// Op types in `g` that have no lowering (or a foreign domain), each with the nodes using it.
/// Empty when the model is fully supported.
std::map<std::string, std::vector<std::string>> find_unsupported(const graph::Graph& g);

/// "unsupported ops: Foo (2 nodes: a, b), Bar (1 node: c)"
std::string describe_unsupported(const std::map<std::string, std::vector<std::string>>& ops);

}  // namespace souffle::interp
