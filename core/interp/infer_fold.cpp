#include "core/interp/infer_fold.h"

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "core/interp/interpreter.h"
#include "core/lower/control_flow.h"
#include "core/lower/lower.h"
#include "core/lower/qdq.h"

namespace souffle::interp {

namespace {
void collect_unsupported(const graph::Graph& g,
                         std::map<std::string, std::vector<std::string>>& out) {
  const lower::Registry& reg = lower::Registry::instance();
  for (const graph::Node& n : g.nodes) {
    // Structured ops (If, Loop, Scan, sequences) expand into their bodies' nodes.
    if (lower::is_structured_op(n)) {
      for (const auto& [key, a] : n.attrs)
        if (a.kind == graph::Attribute::Kind::Graph && a.g) collect_unsupported(*a.g, out);
      continue;
    }
    std::string key = lower::registry_key(n);
    if (!reg.find(key)) out[key].push_back(n.name);
  }
}
}  // namespace

std::map<std::string, std::vector<std::string>> find_unsupported(const graph::Graph& g) {
  std::map<std::string, std::vector<std::string>> out;
  collect_unsupported(g, out);
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

  // Sequences and optionals (bound inputs, and what structured ops make) by name.
  std::map<std::string, graph::Composite> composites = std::move(g.composites);
  g.composites.clear();
  std::unordered_set<std::string> used_names;
  for (const graph::Node& n : g.nodes) used_names.insert(n.name);

  /// What an expansion sees: the values typed and folded so far.
  class Scope : public lower::ExpandScope {
   public:
    Scope(graph::Graph& g, std::unordered_map<std::string, te::Tensor>& tensors,
          std::map<std::string, graph::Composite>& composites,
          std::unordered_set<std::string>& used)
        : m_g(g), m_tensors(tensors), m_composites(composites), m_used(used) {}
    ConstTensorPtr constant(const std::string& name) const override {
      auto it = m_tensors.find(name);
      if (it != m_tensors.end())
        return it->second && it->second->source == te::TensorNode::Source::Constant
                   ? it->second->data
                   : nullptr;
      return m_g.has_value(name) ? m_g.value(name).constant : nullptr;
    }
    const graph::TensorType* type(const std::string& name) const override {
      if (!m_g.has_value(name) || m_composites.count(name)) return nullptr;
      const graph::Value& v = m_g.value(name);
      return v.type_known ? &v.type : nullptr;
    }
    const graph::Composite* composite(const std::string& name) const override {
      auto it = m_composites.find(name);
      return it == m_composites.end() ? nullptr : &it->second;
    }
    std::string fresh_name(const std::string& base) override {
      std::string n = base;
      for (int k = 1; m_g.has_value(n) || m_composites.count(n) || m_used.count(n); ++k)
        n = base + "#" + std::to_string(k);
      m_used.insert(n);
      return n;
    }
    int64_t opset() const override { return m_g.opset; }

   private:
    graph::Graph& m_g;
    std::unordered_map<std::string, te::Tensor>& m_tensors;
    std::map<std::string, graph::Composite>& m_composites;
    std::unordered_set<std::string>& m_used;
  } scope(g, tensors, composites, used_names);

  std::map<std::string, lower::Dequantized> dequantized;
  std::deque<graph::Node> work;
  // Runs an expansion's nodes next, with the values it defines.
  auto expand = [&](lower::Expansion& ex) {
    for (auto& [name, data] : ex.constants) {
      graph::Value& v = g.values[name];
      v.name = name;
      v.constant = data;
      v.type = {data->dtype(), data->shape()};
      v.type_known = true;
      tensors[name] = te::make_constant(name, data);
    }
    for (auto& [name, c] : ex.composites) composites[name] = std::move(c);
    for (size_t i = ex.nodes.size(); i-- > 0;) work.push_front(std::move(ex.nodes[i]));
  };
  work.assign(std::make_move_iterator(g.nodes.begin()), std::make_move_iterator(g.nodes.end()));
  g.nodes.clear();
  std::vector<graph::Node> kept;
  kept.reserve(work.size());
  while (!work.empty()) {
    graph::Node node = std::move(work.front());
    work.pop_front();
    bool composite_identity =
        node.op_type == "Identity" && !node.inputs.empty() && composites.count(node.inputs[0]);
    if (lower::is_structured_op(node) || composite_identity) {
      lower::Expansion ex;
      try {
        ex = lower::expand_structured(node, scope);
      } catch (const UserError& e) {
        throw e.with_file(g.source_file);
      }
      expand(ex);
      ++stats.nodes_folded;
      continue;
    }
    // A float product of two dequantized int8 tensors becomes the integer op (qdq.h).
    if (auto ex = lower::fuse_dequantized(node, dequantized, scope)) {
      expand(*ex);
      ++stats.nodes_folded;
      continue;
    }
    if (node.op_type == "DequantizeLinear" && node.inputs.size() >= 2 && node.domain.empty())
      dequantized[node.outputs.at(0)] = {node.inputs[0], node.inputs[1],
                                         node.inputs.size() > 2 ? node.inputs[2] : "",
                                         node.attr_int("axis", 1)};
    for (const std::string& in : node.inputs)
      if (composites.count(in))
        throw UserError(g.source_file, node.name + " (" + node.op_type + ")",
                        "input '" + in +
                            "' is a sequence or optional; only sequence ops take "
                            "them");
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
  // A sequence or optional graph output is replaced by the tensors it holds.
  std::vector<std::string> outputs;
  for (const std::string& o : g.outputs) {
    auto it = composites.find(o);
    if (it == composites.end()) {
      outputs.push_back(o);
      continue;
    }
    if (it->second.has_value)
      outputs.insert(outputs.end(), it->second.elements.begin(), it->second.elements.end());
  }
  g.outputs = std::move(outputs);
  for (const auto& [name, c] : composites) {
    auto v = g.values.find(name);
    if (v != g.values.end() && !v->second.constant && !v->second.type_known) g.values.erase(v);
  }
  size_t before_dead = g.nodes.size();
  graph::remove_dead_nodes(g);
  stats.nodes_dead = before_dead - g.nodes.size();
  stats.nodes_after = g.nodes.size();
  return stats;
}

}  // namespace souffle::interp
