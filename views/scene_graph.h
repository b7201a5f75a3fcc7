/// \file The graph the explorer draws: boxes and labelled edges built from the op-level Graph or
/// from the TE program, as plain values that worker threads can build.
#pragma once

#include <QString>
#include <memory>
#include <vector>

#include "core/session/load.h"

namespace souffle::views {

/// Colour family of a box; the palette maps it to light/dark colours.
enum class NodeCategory { Input, Output, Constant, Compute, Reduce, Matmul, Conv, Norm, Shape };

struct SceneNode {
  /// Kernel: a collapsed partition standing for all its boxes (see views/collapse.h).
  enum class Kind { Op, TeOp, Input, Output, Kernel };
  Kind kind = Kind::Op;
  QString title;     ///< op type (or TE op kind)
  QString subtitle;  ///< node / tensor / op name
  QString onnxNode;  ///< the ONNX node this box stands for (empty for inputs/outputs)
  int index = -1;    ///< into graph.nodes (Op), program.ops (TeOp), graph inputs/outputs, or
                     ///< plan partitions (Kernel)
  NodeCategory category = NodeCategory::Compute;
  int teCount = 0;  ///< compute ops lowered from this node (Op boxes)
};

struct SceneEdge {
  int from = 0, to = 0;
  QString label;  ///< the tensor's shape, "1×64×128" (dtype named when not f32)
};

struct SceneGraph {
  bool teLevel = false;
  std::vector<SceneNode> nodes;
  std::vector<SceneEdge> edges;
  /// For a graph derived from another (collapsed kernels): per box, the box it stands for in
  /// the full graph, -1 for a kernel box. Empty for a full graph (every box is itself).
  std::vector<int> baseBoxes;
  int count(SceneNode::Kind kind) const;
  /// The box of the full graph that `box` shows (itself in a full graph; -1 for a kernel box).
  int baseBox(int box) const {
    if (baseBoxes.empty()) return box;
    return box >= 0 && static_cast<size_t>(box) < baseBoxes.size() ? baseBoxes[box] : -1;
  }
};

/// "1×64×128", or "i64 · 2×3" for a non-f32 tensor, "scalar" for rank 0.
QString compactType(DType dtype, const Shape& shape);

/// Op level: one box per graph node, plus the model's inputs and outputs; one edge per
/// (producer, consumer) pair, labelled with the first tensor between them.
SceneGraph buildOpGraph(const graph::Graph& g, const te::TeProgram& program);
/// TE level: one box per ComputeOp plus the program's inputs; edges from tensor reads.
SceneGraph buildTeGraph(const te::TeProgram& program);

/// Everything a loaded model shows, built off the GUI thread and shared read-only.
struct ModelData {
  std::shared_ptr<const LoadedModel> model;
  SceneGraph opGraph;
  SceneGraph teGraph;
  QString teText;  ///< te::print of the whole program
};
using ModelDataPtr = std::shared_ptr<const ModelData>;

/// Builds the view data of a loaded model (graphs and text). Pure; call it on a worker thread.
ModelDataPtr buildModelData(std::shared_ptr<const LoadedModel> model);

}  // namespace souffle::views
