#include "core/lower/qdq.h"

#include <vector>

namespace souffle::lower {
namespace {

using graph::Attribute;
using graph::Node;

/// One dequantized operand: the quantized tensor, its zero point, and its constant scale.
struct Operand {
  std::string q, zero_point;
  ConstTensorPtr scale;
  int64_t axis = 1;
  Shape shape;  ///< of q
};

std::optional<Operand> operand(const std::string& name,
                               const std::map<std::string, Dequantized>& dequantized,
                               ExpandScope& scope) {
  auto it = dequantized.find(name);
  if (it == dequantized.end()) return std::nullopt;
  const Dequantized& d = it->second;
  ConstTensorPtr scale = scope.constant(d.scale);
  const graph::TensorType* t = scope.type(d.x);
  if (!scale || !t || !is_float(scale->dtype())) return std::nullopt;
  if (t->dtype != DType::Int8 && t->dtype != DType::UInt8) return std::nullopt;
  if (!d.zero_point.empty()) {
    const graph::TensorType* z = scope.type(d.zero_point);
    if (!z || z->shape != scale->shape()) return std::nullopt;
  }
  Operand o{d.x, d.zero_point, scale, d.axis, t->shape};
  int64_t rank = static_cast<int64_t>(t->shape.size());
  if (o.axis < 0) o.axis += rank;
  return o;
}

bool per_tensor(const Operand& o) {
  return o.scale->numel() == 1 && o.scale->shape().size() <= 1;
}

/// The weight's scale per output channel, where the channel is axis `channel_axis` of the
/// weight; nullopt when its scale varies along another axis.
std::optional<std::vector<double>> channel_scales(const Operand& w, int64_t channel_axis) {
  if (per_tensor(w)) return std::vector<double>{w.scale->get_f64(0)};
  if (w.scale->shape().size() != 1 || w.axis != channel_axis ||
      channel_axis >= static_cast<int64_t>(w.shape.size()) ||
      w.scale->numel() != w.shape[static_cast<size_t>(channel_axis)])
    return std::nullopt;
  std::vector<double> s(static_cast<size_t>(w.scale->numel()));
  for (int64_t i = 0; i < w.scale->numel(); ++i) s[static_cast<size_t>(i)] = w.scale->get_f64(i);
  return s;
}

class Emit {
 public:
  Emit(const Node& node, ExpandScope& scope, Expansion& out)
      : m_node(node), m_scope(scope), m_out(out) {}
  std::string fresh(const std::string& what) {
    return m_scope.fresh_name(m_node.name + "/" + what);
  }
  std::string constant(const std::string& what, ConstTensorPtr data) {
    std::string n = fresh(what);
    m_out.constants.emplace_back(n, std::move(data));
    return n;
  }
  std::string add(const std::string& op, std::vector<std::string> inputs,
                  std::map<std::string, Attribute> attrs = {}, std::string output = "") {
    Node n;
    n.name = fresh(op);
    n.op_type = op;
    n.inputs = std::move(inputs);
    if (output.empty()) output = fresh(op + "_out");
    n.outputs = {output};
    n.attrs = std::move(attrs);
    m_out.nodes.push_back(std::move(n));
    return output;
  }

 private:
  const Node& m_node;
  ExpandScope& m_scope;
  Expansion& m_out;
};

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

/// The combined scale a * w[c] (times alpha) as a constant of `shape` holding one value per
/// channel along `channel_dim` of that shape (or a scalar).
ConstTensorPtr combined_scale(DType t, double a, const std::vector<double>& w, double alpha,
                              const Shape& shape) {
  std::vector<double> v(w.size());
  for (size_t i = 0; i < w.size(); ++i) v[i] = a * w[i] * alpha;
  return TensorData::from_f64(t, w.size() == 1 ? Shape{} : shape, v);
}

std::optional<Expansion> fuse_matmul(const Node& node, const Operand& a, const Operand& b,
                                     ExpandScope& scope, bool gemm) {
  if (!per_tensor(a) || a.shape.size() < 1) return std::nullopt;
  double alpha = 1;
  bool trans_b = false;
  if (gemm) {
    if (node.attr_int("transA", 0) != 0 || node.attr_float("beta", 1.0) != 1.0) return std::nullopt;
    alpha = node.attr_float("alpha", 1.0);
    trans_b = node.attr_int("transB", 0) != 0;
    if (a.shape.size() != 2 || b.shape.size() != 2) return std::nullopt;
  }
  if (b.shape.size() < 2) return std::nullopt;
  // The output column is the weight's last axis (its first with transB).
  int64_t column_axis = trans_b ? 0 : static_cast<int64_t>(b.shape.size()) - 1;
  if (!per_tensor(b) && b.shape.size() != 2) return std::nullopt;
  auto ws = channel_scales(b, column_axis);
  if (!ws) return std::nullopt;
  Expansion ex;
  Emit e(node, scope, ex);
  std::string bq = b.q, bzp = b.zero_point;
  if (trans_b) {
    Attribute perm;
    perm.kind = Attribute::Kind::Ints;
    perm.ints = {1, 0};
    bq = e.add("Transpose", {bq}, {{"perm", perm}});
  }
  std::vector<std::string> ins{a.q, bq};
  if (!a.zero_point.empty() || !bzp.empty()) ins.push_back(a.zero_point);
  if (!bzp.empty()) ins.push_back(bzp);
  std::string acc = e.add("MatMulInteger", ins);
  DType ft = a.scale->dtype();
  std::string f = e.add("Cast", {acc}, {{"to", int_attr(dtype_to_onnx(ft))}});
  int64_t cols = b.shape[static_cast<size_t>(column_axis)];
  std::string s = e.constant("scale", combined_scale(ft, a.scale->get_f64(0), *ws, alpha, {cols}));
  bool bias = gemm && node.inputs.size() > 2 && !node.inputs[2].empty();
  std::string scaled = e.add("Mul", {f, s}, {}, bias ? "" : node.outputs[0]);
  if (bias) e.add("Add", {scaled, node.inputs[2]}, {}, node.outputs[0]);
  return ex;
}

std::optional<Expansion> fuse_conv(const Node& node, const Operand& x, const Operand& w,
                                   ExpandScope& scope) {
  if (!per_tensor(x) || w.shape.size() < 3) return std::nullopt;
  auto ws = channel_scales(w, 0);
  if (!ws) return std::nullopt;
  Expansion ex;
  Emit e(node, scope, ex);
  std::vector<std::string> ins{x.q, w.q};
  if (!x.zero_point.empty() || !w.zero_point.empty()) ins.push_back(x.zero_point);
  if (!w.zero_point.empty()) ins.push_back(w.zero_point);
  std::map<std::string, Attribute> attrs;
  for (const char* key : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (node.has_attr(key)) attrs[key] = node.attrs.at(key);
  std::string acc = e.add("ConvInteger", ins, attrs);
  DType ft = x.scale->dtype();
  std::string f = e.add("Cast", {acc}, {{"to", int_attr(dtype_to_onnx(ft))}});
  // Per output channel: shaped [1, M, 1, ...] to broadcast over the output.
  int64_t m = w.shape[0];
  Shape chan(w.shape.size(), 1);
  chan[1] = m;
  std::string s = e.constant("scale", combined_scale(ft, x.scale->get_f64(0), *ws, 1.0, chan));
  bool bias = node.inputs.size() > 2 && !node.inputs[2].empty();
  std::string scaled = e.add("Mul", {f, s}, {}, bias ? "" : node.outputs[0]);
  if (bias) {
    std::vector<int64_t> shape(chan.begin(), chan.end());
    std::string shape_c =
        e.constant("bias_shape",
                   TensorData::from_i64(DType::Int64, {static_cast<int64_t>(shape.size())}, shape));
    std::string b = e.add("Reshape", {node.inputs[2], shape_c});
    e.add("Add", {scaled, b}, {}, node.outputs[0]);
  }
  return ex;
}

}  // namespace

std::optional<Expansion> fuse_dequantized(const graph::Node& node,
                                          const std::map<std::string, Dequantized>& dequantized,
                                          ExpandScope& scope) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return std::nullopt;
  const std::string& op = node.op_type;
  if (op != "MatMul" && op != "Gemm" && op != "Conv") return std::nullopt;
  if (node.inputs.size() < 2 || node.outputs.empty()) return std::nullopt;
  auto a = operand(node.inputs[0], dequantized, scope);
  auto b = operand(node.inputs[1], dequantized, scope);
  if (!a || !b) return std::nullopt;
  if (a->scale->dtype() != b->scale->dtype()) return std::nullopt;
  if (op == "Conv") return fuse_conv(node, *a, *b, scope);
  return fuse_matmul(node, *a, *b, scope, op == "Gemm");
}

}  // namespace souffle::lower
