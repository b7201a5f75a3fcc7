#include "core/lower/lower.h"

#include <algorithm>

namespace souffle::lower {

LowerCtx::LowerCtx(const graph::Node& node, int64_t opset, std::vector<te::Tensor> inputs)
    : m_node(node), m_opset(opset), m_inputs(std::move(inputs)) {}

te::Tensor LowerCtx::required(size_t i) const {
  te::Tensor t = input(i);
  if (!t) throw error("input " + std::to_string(i) + " is required");
  return t;
}

ConstTensorPtr LowerCtx::constant(size_t i) const {
  te::Tensor t = input(i);
  if (!t || t->source != te::TensorNode::Source::Constant) return nullptr;
  return t->data;
}

std::vector<int64_t> LowerCtx::constant_ints(size_t i, const char* what) const {
  ConstTensorPtr c = constant(i);
  if (!c) throw error(std::string(what) + " must be a constant (only static shapes are supported)");
  if (is_float(c->dtype())) throw error(std::string(what) + " must be an integer tensor");
  return c->to_i64();
}

std::string LowerCtx::name(const std::string& suffix) {
  std::string base = m_node.name.empty() ? m_node.op_type : m_node.name;
  std::string s = suffix.empty() ? base : base + "/" + suffix;
  if (m_counter++ > 0 && suffix.empty()) s += "#" + std::to_string(m_counter);
  for (const te::Op& op : m_ops)
    if (op->name == s) return s + "#" + std::to_string(m_counter++);
  return s;
}

te::Tensor LowerCtx::compute(const std::string& suffix, const Shape& shape, DType dtype,
                             const te::IndexFn& fn) {
  return emit(te::compute(name(suffix), shape, dtype, fn, {m_node.name, m_node.op_type}));
}

te::Tensor LowerCtx::reduce(const std::string& suffix, const Shape& shape, DType dtype,
                            te::ReduceKind kind, const Shape& reduce_extents,
                            const te::ReduceFn& fn, te::Expr init) {
  return emit(te::reduce(name(suffix), shape, dtype, kind, reduce_extents, fn, std::move(init),
                         {m_node.name, m_node.op_type}));
}

te::Tensor LowerCtx::emit(te::Op op) {
  te::Tensor out = op->output;
  m_ops.push_back(std::move(op));
  return out;
}

te::Tensor LowerCtx::constant_tensor(const std::string& suffix, ConstTensorPtr data) {
  return te::make_constant(name(suffix), std::move(data));
}

UserError LowerCtx::error(const std::string& reason) const {
  // An op of another domain is named with it (com.microsoft.Attention).
  return UserError("", m_node.name + " (" + registry_key(m_node) + ")", reason);
}

const Registry& Registry::instance() {
  static const Registry r = [] {
    Registry reg;
    register_elementwise(reg);
    register_reduce(reg);
    register_matmul(reg);
    register_conv_pool(reg);
    register_norm(reg);
    register_shape_index(reg);
    register_recurrent(reg);
    register_loss(reg);
    register_quantize(reg);
    register_signal(reg);
    register_sort_select(reg);
    register_sampling(reg);
    register_optimizer(reg);
    register_linalg(reg);
    register_text(reg);
    register_contrib(reg);
    return reg;
  }();
  return r;
}

void Registry::add(const std::string& op_type, LowerFn fn) {
  SOUFFLE_CHECK(m_fns.count(op_type) == 0, "op registered twice: " + op_type);
  m_fns.emplace(op_type, std::move(fn));
}

const LowerFn* Registry::find(const std::string& op_type) const {
  auto it = m_fns.find(op_type);
  return it == m_fns.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::op_types() const {
  std::vector<std::string> v;
  v.reserve(m_fns.size());
  for (const auto& [k, fn] : m_fns) v.push_back(k);
  std::sort(v.begin(), v.end());
  return v;
}

std::string registry_key(const graph::Node& node) {
  if (node.domain.empty() || node.domain == "ai.onnx") return node.op_type;
  return node.domain + "." + node.op_type;
}

NodeLowering lower_node(const graph::Node& node, int64_t opset,
                        const std::vector<te::Tensor>& inputs) {
  const LowerFn* fn = Registry::instance().find(registry_key(node));
  if (!fn && !node.domain.empty() && node.domain != "ai.onnx")
    throw UserError("", node.name + " (" + node.op_type + ")",
                    "unsupported op domain '" + node.domain + "'");
  if (!fn)
    throw UserError("", node.name + " (" + node.op_type + ")", "unsupported op: " + node.op_type);
  LowerCtx ctx(node, opset, inputs);
  std::vector<te::Tensor> outs = (*fn)(ctx);
  if (outs.size() < node.outputs.size()) outs.resize(node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty() && !outs[i])
      throw ctx.error("output " + std::to_string(i) + " is not produced by this lowering");
  return {std::move(outs), ctx.ops()};
}

te::TeProgram lower_graph(const graph::Graph& g) {
  te::TeProgram prog;
  prog.name = g.name;
  std::unordered_map<std::string, te::Tensor> tensors;
  auto tensor_of = [&](const std::string& name) -> te::Tensor {
    if (name.empty()) return nullptr;
    auto it = tensors.find(name);
    if (it != tensors.end()) return it->second;
    const graph::Value& v = g.value(name);
    SOUFFLE_CHECK(v.constant != nullptr, "lower_graph: value " + name + " used before defined");
    te::Tensor t = te::make_constant(name, v.constant);
    tensors.emplace(name, t);
    return t;
  };
  for (const std::string& in : g.inputs) {
    const graph::Value& v = g.value(in);
    te::Tensor t = te::make_input(in, v.type.shape, v.type.dtype);
    tensors.emplace(in, t);
    prog.inputs.push_back(t);
  }
  for (const graph::Node& node : g.nodes) {
    std::vector<te::Tensor> ins;
    ins.reserve(node.inputs.size());
    for (const std::string& in : node.inputs) ins.push_back(tensor_of(in));
    NodeLowering nl = lower_node(node, g.opset, ins);
    for (te::Op& op : nl.ops) prog.ops.push_back(std::move(op));
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) tensors[node.outputs[i]] = nl.outputs[i];
  }
  for (const std::string& out : g.outputs) prog.outputs.push_back(tensor_of(out));
  return prog;
}

}  // namespace souffle::lower
