#include "core/interp/infer_fold.h"

#include <unordered_map>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"

namespace souffle::interp {

std::map<std::string, std::vector<std::string>> find_unsupported(const graph::Graph& g) {
  std::map<std::string, std::vector<std::string>> out;
  const lower::Registry& reg = lower::Registry::instance();
  for (const graph::Node& n : g.nodes) {
    std::string key = lower::registry_key(n);
    if (!reg.find(key)) out[key].push_back(n.name);
  }
  return out;
}

std::string describe_unsupported(const std::map<std::string, std::vector<std::string>>& ops) {
  std::string s = "unsupported ops: ";
  bool first = true;
  for (const auto& [op, nodes] : ops) {
    if (!first) s += ", ";
    first = false;
    s += op + " (" + std::to_string(nodes.size()) + (nodes.size() == 1 ? " node: " : " nodes: ");
    for (size_t i = 0; i < nodes.size() && i < 3; ++i) s += (i ? ", " : "") + nodes[i];
    if (nodes.size() > 3) s += ", ...";
    s += ")";
  }
  return s;
}

namespace {

bool all_constant(const std::vector<te::Tensor>& ts) {
  for (const te::Tensor& t : ts)
    if (t && t->source != te::TensorNode::Source::Constant) return false;
  return true;
}

}  // namespace

InferFoldStats infer_and_fold(graph::Graph& g, const InferFoldOptions& options) {
  InferFoldStats stats;
  stats.nodes_before = g.nodes.size();
  auto unsupported = find_unsupported(g);
  if (!unsupported.empty()) throw UserError(g.source_file, "", describe_unsupported(unsupported));

  // The TE tensor standing for each graph value while we walk: constants carry their data so
  // lowerings can read shape-like inputs; everything else is a typed placeholder.
  std::unordered_map<std::string, te::Tensor> tensors;
  auto tensor_of = [&](const std::string& name) -> te::Tensor {
    if (name.empty()) return nullptr;
    auto it = tensors.find(name);
    if (it != tensors.end()) return it->second;
    if (!g.has_value(name))
      throw UserError(g.source_file, "", "tensor '" + name + "' is used but never defined");
    const graph::Value& v = g.value(name);
    te::Tensor t;
    if (v.constant)
      t = te::make_constant(name, v.constant);
    else if (v.type_known)
      t = te::make_input(name, v.type.shape, v.type.dtype);
    else
      throw UserError(g.source_file, "", "tensor '" + name + "' is used before it is defined");
    tensors.emplace(name, t);
    return t;
  };

  std::vector<graph::Node> kept;
  kept.reserve(g.nodes.size());
  for (graph::Node& node : g.nodes) {
    std::vector<te::Tensor> ins;
    ins.reserve(node.inputs.size());
    for (const std::string& in : node.inputs) ins.push_back(tensor_of(in));

    lower::NodeLowering nl;
    try {
      nl = lower::lower_node(node, g.opset, ins);
    } catch (const UserError& e) {
      throw e.with_file(g.source_file);
    }

    int64_t out_elements = 0;
    bool outputs_constant = true;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      const te::Tensor& t = nl.outputs[i];
      out_elements += shape_numel(t->shape);
      if (t->source != te::TensorNode::Source::Constant) outputs_constant = false;
    }

    bool fold = outputs_constant ||
                (options.fold && all_constant(ins) && out_elements <= options.max_fold_elements);
    std::vector<ConstTensorPtr> folded;
    if (fold && !outputs_constant) {
      te::TeProgram mini;
      mini.name = node.name;
      mini.ops = nl.ops;
      for (size_t i = 0; i < node.outputs.size(); ++i)
        if (!node.outputs[i].empty()) mini.outputs.push_back(nl.outputs[i]);
      try {
        folded = interp::run(mini, {}, {});
      } catch (const UserError& e) {
        throw e.with_node(node.name + " (" + node.op_type + ")").with_file(g.source_file);
      }
    }

    size_t k = 0;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& out = node.outputs[i];
      if (out.empty()) continue;
      const te::Tensor& t = nl.outputs[i];
      graph::Value& v = g.values[out];
      v.name = out;
      v.type = {t->dtype, t->shape};
      v.type_known = true;
      if (fold) {
        v.constant = outputs_constant ? t->data : folded[k++];
        tensors[out] = te::make_constant(out, v.constant);
      } else {
        // Downstream lowerings see the real producer's output as an opaque, typed tensor, except
        // when the op returned one of its inputs (Identity): then it stays that tensor.
        bool passthrough = t->source != te::TensorNode::Source::Compute;
        tensors[out] = passthrough ? t : te::make_input(out, t->shape, t->dtype);
      }
    }
    if (fold)
      ++stats.nodes_folded;
    else
      kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  size_t before_dead = g.nodes.size();
  graph::remove_dead_nodes(g);
  stats.nodes_dead = before_dead - g.nodes.size();
  stats.nodes_after = g.nodes.size();
  return stats;
}

}  // namespace souffle::interp
