/// \file Lowering of ONNX operators to tensor expressions; one registered function per op type.
///
/// Lowering is also our shape and type inference: lowering a node on placeholder inputs yields its
/// output tensors, whose shapes and dtypes are the node's inferred types (one place knows each op).
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph/graph.h"
#include "core/te/builder.h"
#include "core/te/expr.h"

namespace souffle::lower {

/// Everything one op's lowering may look at and the ops it emits.
class LowerCtx {
 public:
  LowerCtx(const graph::Node& node, int64_t opset, std::vector<te::Tensor> inputs);

  const graph::Node& node() const { return m_node; }
  int64_t opset() const { return m_opset; }
  size_t num_inputs() const { return m_inputs.size(); }
  /// Input i, or nullptr when the optional input is omitted (or past the end).
  te::Tensor input(size_t i) const { return i < m_inputs.size() ? m_inputs[i] : nullptr; }
  bool has_input(size_t i) const { return input(i) != nullptr; }
  /// Input i that must be present; a UserError naming the node otherwise.
  te::Tensor required(size_t i) const;
  /// The values of input i when it is a constant, else nullptr (shape-like inputs must be).
  ConstTensorPtr constant(size_t i) const;
  /// Constant input i as int64 values; a UserError ("<what> must be a constant") if not constant.
  std::vector<int64_t> constant_ints(size_t i, const char* what) const;
  size_t num_outputs() const { return m_node.outputs.size(); }

  /// A fresh, unique tensor/op name derived from the node's name: "<node>/<suffix>".
  std::string name(const std::string& suffix);
  /// Builds and records a compute op (origin = this node); returns its output tensor.
  te::Tensor compute(const std::string& suffix, const Shape& shape, DType dtype,
                     const te::IndexFn& fn);
  te::Tensor reduce(const std::string& suffix, const Shape& shape, DType dtype, te::ReduceKind kind,
                    const Shape& reduce_extents, const te::ReduceFn& fn, te::Expr init = {});
  /// Records an op built elsewhere.
  te::Tensor emit(te::Op op);
  /// A constant tensor (named after the node) — e.g. the value of Shape or ConstantOfShape.
  te::Tensor constant_tensor(const std::string& suffix, ConstTensorPtr data);

  /// A UserError naming this node (and its op type) with `reason`.
  UserError error(const std::string& reason) const;

  const std::vector<te::Op>& ops() const { return m_ops; }

 private:
  const graph::Node& m_node;
  int64_t m_opset;
  std::vector<te::Tensor> m_inputs;
  std::vector<te::Op> m_ops;
  int m_counter = 0;
};

/// Lowers one node: returns one tensor per node output ("" outputs get nullptr). An output may be
/// one of the inputs (Identity) or a constant (Shape). Throws UserError naming the node for
/// attributes or shapes the op does not accept.
using LowerFn = std::function<std::vector<te::Tensor>(LowerCtx&)>;

class Registry {
 public:
  /// The registry with every op family registered.
  static const Registry& instance();
  void add(const std::string& op_type, LowerFn fn);
  const LowerFn* find(const std::string& op_type) const;
  std::vector<std::string> op_types() const;  ///< sorted

 private:
  std::unordered_map<std::string, LowerFn> m_fns;
};

// One registration function per op family (core/lower/<family>.cpp).
void register_elementwise(Registry& r);
void register_reduce(Registry& r);
void register_matmul(Registry& r);
void register_conv_pool(Registry& r);
void register_norm(Registry& r);
void register_shape_index(Registry& r);
void register_recurrent(Registry& r);
void register_loss(Registry& r);
void register_quantize(Registry& r);
void register_signal(Registry& r);
void register_sort_select(Registry& r);
void register_sampling(Registry& r);
void register_optimizer(Registry& r);
void register_linalg(Registry& r);
void register_text(Registry& r);
/// com.microsoft contrib ops (core/lower/contrib.cpp); registered last, as some reuse the
/// lowerings of the ONNX ops they extend.
void register_contrib(Registry& r);

/// The registry key of a node's op: its op type in the default domain ("" or "ai.onnx"), else
/// "domain.OpType" (e.g. "ai.onnx.preview.training.Adam").
std::string registry_key(const graph::Node& node);

/// Lowers a node given its input tensors; UserError if the op type is unsupported.
struct NodeLowering {
  std::vector<te::Tensor> outputs;
  std::vector<te::Op> ops;
};
NodeLowering lower_node(const graph::Node& node, int64_t opset,
                        const std::vector<te::Tensor>& inputs);

/// Lowers a typed, folded graph to a TE program (inputs = graph inputs, constants = initializers).
te::TeProgram lower_graph(const graph::Graph& g);

// ---- helpers shared by the op families (core/lower/common.cpp) ----

/// Numpy-style multidirectional broadcast of shapes; UserError via ctx on mismatch.
Shape broadcast_shapes(const LowerCtx& ctx, const Shape& a, const Shape& b);
/// Reads `t` at output index `out` of a broadcast result of rank out.size() (right-aligned,
/// size-1 dims read index 0).
te::Expr read_broadcast(const te::Tensor& t, const std::vector<te::Expr>& out);
/// The type arithmetic on `t` is carried out in: f16/bf16 widen to f32, other types stay.
DType compute_type(DType t);
/// The type transcendental math on `t` is carried out in: compute_type for floats, f64 for ints.
DType math_type(DType t);
/// `e` rounded to its own float type at this point. The interpreter and the emulator carry
/// floats in double between stores, while a GPU rounds every f32 operation; where a later step
/// is discontinuous (rounding to an integer, a comparison that picks a bin) the two must agree,
/// so the value is narrowed explicitly (a no-op in CUDA C).
te::Expr round_to_own_type(const te::Expr& e);
/// Normalizes a possibly negative axis into [0, rank); UserError via ctx if out of range.
int64_t normalize_axis(const LowerCtx& ctx, int64_t axis, int64_t rank);

}  // namespace souffle::lower
