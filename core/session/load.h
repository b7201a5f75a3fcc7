/// \file Loading a model: import, infer types, fold constants, verify — the front half of the
/// pipeline, shared by the CLI, the GUI and the tests.
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/interp/infer_fold.h"
#include "core/onnx/importer.h"
#include "core/te/expr.h"

namespace souffle {

struct LoadedModel {
  std::string path;
  graph::Graph graph;  ///< typed and folded
  te::TeProgram program;
  interp::InferFoldStats stats;
  std::vector<std::string> warnings;
  size_t onnx_nodes = 0;  ///< node count in the file, before folding
};

/// Throws UserError naming the file, node and reason.
LoadedModel load_model(const std::string& path, const onnx_import::ImportOptions& options = {});

}  // namespace souffle
