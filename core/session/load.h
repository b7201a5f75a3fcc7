/// \file Loading a model: import, infer types, fold constants, verify — the front half of the
/// pipeline, shared by the CLI, the GUI and the tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/interp/infer_fold.h"
#include "core/onnx/importer.h"
#include "core/session/test_data.h"
#include "core/te/expr.h"

namespace souffle {

/// Model inputs given fixed values before inference: they become constants, so shape-like inputs
/// (a Reshape's target, a Resize's scales) that a test feeds as inputs fold like initializers.
/// A sequence or optional input must be bound: its tensors become constants and it folds away.
/// Added to ImportOptions::bind, which the importer applies.
using InputBindings = std::map<std::string, graph::DataValue>;

struct LoadedModel {
  std::string path;
  graph::Graph graph;  ///< typed and folded
  /// The graph as imported, before folding: kept when PipelineOptions::keep_steps asks (it
  /// shares its constants with `graph`); null otherwise.
  std::shared_ptr<const graph::Graph> imported;
  te::TeProgram program;
  interp::InferFoldStats stats;
  std::vector<std::string> warnings;
  size_t onnx_nodes = 0;  ///< node count in the file, before folding
  /// Op types without a lowering, with their nodes (only filled when report_unsupported is set).
  std::map<std::string, std::vector<std::string>> unsupported;
  double load_ms = 0;  ///< wall time of the whole load
};

/// An If that cannot be built for the given shapes while its condition depends on model inputs:
/// both branches are built when the condition is not a constant, so an untaken branch that is
/// invalid for these shapes (a sample rate choosing a model half) fails the whole model. Binding
/// `inputs` (InputBindings, `--bind`) makes the If take one branch.
class UnboundControlInputs : public UserError {
 public:
  UnboundControlInputs(const UserError& e, std::vector<std::string> inputs)
      : UserError(e), m_inputs(std::move(inputs)) {}
  const std::vector<std::string>& inputs() const { return m_inputs; }

 private:
  std::vector<std::string> m_inputs;
};

/// interp::infer_and_fold of an imported graph; a failure inside an If whose condition depends on
/// model inputs throws UnboundControlInputs, naming the If, the inputs and how to bind them.
interp::InferFoldStats infer_and_fold_model(graph::Graph& g);

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

/// Takes the values of model inputs `names` out of data set `ds` as bindings: input K of the data
/// is input K of `model_inputs` (the file's inputs, in order); the rest stay the set's inputs.
/// UserError when the set's input count differs from the model's or a name is no input.
InputBindings bind_from_data(const std::vector<std::string>& model_inputs,
                             const std::vector<std::string>& names, TestDataSet& ds);

/// A model loaded for some data sets, which it takes as they now are.
struct ModelForData {
  LoadedModel model;
  std::vector<TestDataSet> sets;
  std::vector<std::string> bound;  ///< inputs bound from the data (empty when none)
};

/// The model at `path` loaded to be run on `sets`: the inputs `options` binds leave the data
/// sets; input dims declared without a size (and not sized by `options`) take the sizes of the
/// data's inputs, one load per distinct shape; and when an If's condition depends on further
/// inputs (UnboundControlInputs), the model is loaded once per data set with those inputs bound
/// to its values, since we compile for one branch.
std::vector<ModelForData> load_for_data(const std::string& path,
                                        const onnx_import::ImportOptions& options,
                                        std::vector<TestDataSet> sets);

}  // namespace souffle
