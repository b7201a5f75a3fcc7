#include "views/scene_graph.h"

#include <QHash>
#include <QSet>
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/te/mutator.h"
#include "core/te/printer.h"

namespace souffle::views {

namespace {

NodeCategory categoryOf(const std::string& op) {
  static const QHash<QString, NodeCategory> table = [] {
    QHash<QString, NodeCategory> t;
    for (const char* s : {"Conv", "ConvTranspose", "ConvInteger", "MaxPool", "AveragePool",
                          "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool"})
      t.insert(QString::fromLatin1(s), NodeCategory::Conv);
    for (const char* s :
         {"MatMul", "Gemm", "Einsum", "MatMulInteger", "QLinearMatMul", "LSTM", "GRU", "RNN"})
      t.insert(QString::fromLatin1(s), NodeCategory::Matmul);
    for (const char* s :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Softmax", "LogSoftmax", "Hardmax",
          "ArgMax", "ArgMin", "CumSum", "TopK"})
      t.insert(QString::fromLatin1(s), NodeCategory::Reduce);
    for (const char* s : {"LayerNormalization", "BatchNormalization", "InstanceNormalization",
                          "GroupNormalization", "LRN", "MeanVarianceNormalization"})
      t.insert(QString::fromLatin1(s), NodeCategory::Norm);
    for (const char* s : {"Reshape",
                          "Transpose",
                          "Squeeze",
                          "Unsqueeze",
                          "Flatten",
                          "Concat",
                          "Split",
                          "Slice",
                          "Gather",
                          "GatherElements",
                          "GatherND",
                          "ScatterND",
                          "ScatterElements",
                          "Scatter",
                          "Expand",
                          "Pad",
                          "Tile",
                          "Identity",
                          "Shape",
                          "Size",
                          "DepthToSpace",
                          "SpaceToDepth",
                          "Resize",
                          "Upsample",
                          "Trilu",
                          "ConstantOfShape",
                          "Range",
                          "Constant"})
      t.insert(QString::fromLatin1(s), NodeCategory::Shape);
    return t;
  }();
  return table.value(QString::fromStdString(op), NodeCategory::Compute);
}

}  // namespace

int SceneGraph::count(SceneNode::Kind kind) const {
  int c = 0;
  for (const SceneNode& n : nodes) c += n.kind == kind ? 1 : 0;
  return c;
}

QString compactType(DType dtype, const Shape& shape) {
  QString dims;
  if (shape.empty()) {
    dims = QStringLiteral("scalar");
  } else {
    QStringList parts;
    for (int64_t d : shape) parts << QString::number(d);
    dims = parts.join(QChar(0x00D7));
  }
  if (dtype == DType::Float32) return dims;
  return QString::fromLatin1(dtype_name(dtype)) + QStringLiteral(" · ") + dims;
}

SceneGraph buildOpGraph(const graph::Graph& g, const te::TeProgram& program) {
  SceneGraph sg;
  sg.teLevel = false;
  std::unordered_map<std::string, int> teCounts;
  for (const te::Op& op : program.ops) ++teCounts[op->origin.node];

  // Box index of the box producing each value: graph inputs first, then node outputs.
  std::unordered_map<std::string, int> producerBox;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    SceneNode n;
    n.kind = SceneNode::Kind::Input;
    n.title = QStringLiteral("input");
    n.subtitle = QString::fromStdString(g.inputs[i]);
    n.index = static_cast<int>(i);
    n.category = NodeCategory::Input;
    producerBox[g.inputs[i]] = static_cast<int>(sg.nodes.size());
    sg.nodes.push_back(std::move(n));
  }
  const int firstOp = static_cast<int>(sg.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& node = g.nodes[i];
    SceneNode n;
    n.kind = SceneNode::Kind::Op;
    n.title = QString::fromStdString(node.op_type);
    n.subtitle = QString::fromStdString(node.name);
    n.onnxNode = n.subtitle;
    n.index = static_cast<int>(i);
    n.category = categoryOf(node.op_type);
    auto it = teCounts.find(node.name);
    n.teCount = it == teCounts.end() ? 0 : it->second;
    for (const std::string& o : node.outputs)
      if (!o.empty()) producerBox[o] = firstOp + static_cast<int>(i);
    sg.nodes.push_back(std::move(n));
  }
  auto label = [&](const std::string& value) {
    if (!g.has_value(value)) return QString();
    const graph::Value& v = g.value(value);
    return v.type_known ? compactType(v.type.dtype, v.type.shape) : QString();
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int to = firstOp + static_cast<int>(i);
    QSet<int> seen;
    for (const std::string& in : g.nodes[i].inputs) {
      if (in.empty()) continue;
      auto it = producerBox.find(in);
      if (it == producerBox.end() || seen.contains(it->second)) continue;
      seen.insert(it->second);
      sg.edges.push_back({it->second, to, label(in)});
    }
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    SceneNode n;
    n.kind = SceneNode::Kind::Output;
    n.title = QStringLiteral("output");
    n.subtitle = QString::fromStdString(g.outputs[i]);
    n.index = static_cast<int>(i);
    n.category = NodeCategory::Output;
    const int box = static_cast<int>(sg.nodes.size());
    sg.nodes.push_back(std::move(n));
    auto it = producerBox.find(g.outputs[i]);
    if (it != producerBox.end()) sg.edges.push_back({it->second, box, label(g.outputs[i])});
  }
  return sg;
}

SceneGraph buildTeGraph(const te::TeProgram& program) {
  SceneGraph sg;
  sg.teLevel = true;
  std::unordered_map<const te::TensorNode*, int> producerBox;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    SceneNode n;
    n.kind = SceneNode::Kind::Input;
    n.title = QStringLiteral("input");
    n.subtitle = QString::fromStdString(program.inputs[i]->name);
    n.index = static_cast<int>(i);
    n.category = NodeCategory::Input;
    producerBox[program.inputs[i].get()] = static_cast<int>(sg.nodes.size());
    sg.nodes.push_back(std::move(n));
  }
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const te::ComputeOp& op = *program.ops[i];
    const int box = static_cast<int>(sg.nodes.size());
    SceneNode n;
    n.kind = SceneNode::Kind::TeOp;
    n.title = QString::fromStdString(op.origin.op_type);
    if (op.reduce != te::ReduceKind::None)
      n.title += QStringLiteral(" · ") + QString::fromLatin1(te::reduce_name(op.reduce));
    n.subtitle = QString::fromStdString(op.name);
    n.onnxNode = QString::fromStdString(op.origin.node);
    n.index = static_cast<int>(i);
    n.category =
        op.reduce != te::ReduceKind::None ? NodeCategory::Reduce : categoryOf(op.origin.op_type);
    if (n.category == NodeCategory::Reduce && categoryOf(op.origin.op_type) == NodeCategory::Matmul)
      n.category = NodeCategory::Matmul;
    n.teCount = 1;
    sg.nodes.push_back(std::move(n));

    std::unordered_set<const te::TensorNode*> reads;
    auto collect = [&](const te::Expr& root) {
      if (!root.defined()) return;
      te::for_each_node(root, [&](const te::Expr& e) {
        if (const te::Read* r = e.as<te::Read>()) reads.insert(r->tensor.get());
      });
    };
    collect(op.body);
    collect(op.init);
    // Edges in a stable order (by producer box) so layouts are reproducible.
    std::vector<std::pair<int, const te::TensorNode*>> sources;
    for (const te::TensorNode* t : reads) {
      auto it = producerBox.find(t);
      if (it != producerBox.end()) sources.push_back({it->second, t});
    }
    std::sort(sources.begin(), sources.end());
    for (auto& [from, t] : sources)
      sg.edges.push_back({from, box, compactType(t->dtype, t->shape)});
    producerBox[op.output.get()] = box;
  }
  return sg;
}

ModelDataPtr buildModelData(std::shared_ptr<const LoadedModel> model) {
  auto data = std::make_shared<ModelData>();
  data->opGraph = buildOpGraph(model->graph, model->program);
  data->teGraph = buildTeGraph(model->program);
  data->teText = QString::fromStdString(te::print(model->program));
  data->model = std::move(model);
  return data;
}

}  // namespace souffle::views
