/// \file Loading a model: import, infer types, fold constants, verify — the front half of the
/// pipeline, shared by the CLI, the GUI and the tests.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/interp/infer_fold.h"
#include "core/onnx/importer.h"
#include "core/te/expr.h"

namespace souffle {

/// Model inputs given fixed values before inference: they become constants, so shape-like inputs
/// (a Reshape's target, a Resize's scales) that a test feeds as inputs fold like initializers.
/// A sequence or optional input must be bound: its tensors become constants and it folds away.
using InputBindings = std::map<std::string, graph::DataValue>;

struct LoadedModel {
  std::string path;
  graph::Graph graph;  ///< typed and folded
  te::TeProgram program;
  interp::InferFoldStats stats;
  std::vector<std::string> warnings;
  size_t onnx_nodes = 0;  ///< node count in the file, before folding
  /// Op types without a lowering, with their nodes (only filled when report_unsupported is set).
  std::map<std::string, std::vector<std::string>> unsupported;
  double load_ms = 0;  ///< wall time of the whole load
};

/// Throws UserError naming the file, node and reason. With report_unsupported, a model using ops
/// we cannot lower is returned unfolded and unlowered with `unsupported` filled instead of
/// throwing, so `inspect` can list them.
LoadedModel load_model(const std::string& path, const onnx_import::ImportOptions& options = {},
                       bool report_unsupported = false, const InputBindings& bind = {});

/// load_model over the bytes of a model file in memory; `file` names it in errors and anchors
/// external-data paths.
LoadedModel load_model_bytes(std::string_view bytes, const std::string& file,
                             const onnx_import::ImportOptions& options = {},
                             bool report_unsupported = false, const InputBindings& bind = {});

}  // namespace souffle
