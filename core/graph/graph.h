/// \file Graph IR: ONNX operators with attributes over typed, static-shape tensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/support/dtype.h"
#include "core/support/tensor_data.h"

namespace souffle::graph {

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};
std::string type_str(const TensorType& t);  ///< "f32[1, 3, 224, 224]"

struct Graph;

struct Attribute {
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  ConstTensorPtr t;
  std::shared_ptr<const Graph> g;  ///< subgraph attributes (If/Loop bodies) are kept, not lowered
};

struct Node {
  std::string name;                 ///< unique; the importer names unnamed nodes "<OpType>_<index>"
  std::string op_type;              ///< "Conv", "MatMul", ...
  std::string domain;               ///< "" for the default ONNX domain
  std::vector<std::string> inputs;  ///< "" marks an omitted optional input
  std::vector<std::string> outputs;  ///< "" marks an omitted optional output
  std::map<std::string, Attribute> attrs;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  /// Typed attribute look-ups; a present attribute of the wrong kind is a UserError.
  int64_t attr_int(const std::string& key, int64_t def) const;
  double attr_float(const std::string& key, double def) const;
  std::string attr_string(const std::string& key, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(const std::string& key, std::vector<double> def = {}) const;
  ConstTensorPtr attr_tensor(const std::string& key) const;  ///< nullptr if absent
  /// Number of present (non-empty) inputs counted from the front, i.e. index of the last present
  /// + 1.
  size_t num_inputs() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

/// A sequence or optional value (ONNX's non-tensor types), known at compile time: the tensor
/// values it holds. Sequences fold away: every op on them is resolved while types are inferred
/// (core/lower/control_flow), so none reaches lowering.
struct Composite {
  enum class Kind : uint8_t { Sequence, Optional };
  Kind kind = Kind::Sequence;
  bool has_value = true;              ///< an Optional may be empty
  bool holds_sequence = false;        ///< an Optional holding a sequence (else one tensor)
  std::vector<std::string> elements;  ///< the tensor values held, in order
};

/// A concrete value of a model input or output (test data, a binding): one tensor, or a
/// sequence/optional whose tensors are listed in order.
struct DataValue {
  std::optional<Composite::Kind> composite;  ///< nullopt: a plain tensor
  bool has_value = true;                     ///< an Optional may be empty
  bool holds_sequence = false;               ///< an Optional holding a sequence
  std::vector<ConstTensorPtr> tensors;
  DataValue() = default;
  DataValue(ConstTensorPtr t) : tensors{std::move(t)} {}  // NOLINT(google-explicit-constructor)
  bool is_tensor() const { return !composite.has_value(); }
  std::string describe() const;  ///< "tensor", "sequence of 3 tensors", "empty optional", ...
};

/// A named tensor of the graph: a model input, an initializer/folded constant, or a node output.
struct Value {
  std::string name;
  TensorType type;
  bool type_known = false;  ///< false until shape inference has run over its producer
  ConstTensorPtr constant;  ///< set for initializers and folded constants
  /// A model input declared as a sequence or optional: it must be bound to a value to load.
  std::optional<Composite::Kind> declared_composite;
  /// Per dim of a model input: declared without a size (symbolic, unbound, so 1); a value bound
  /// to the input may give it another size.
  std::vector<bool> free_dims;
};

struct Graph {
  std::string name;
  std::string source_file;  ///< the model file, for error messages
  int64_t opset = 0;        ///< default-domain opset version
  std::vector<Node> nodes;  ///< topological order once imported
  std::unordered_map<std::string, Value> values;
  std::vector<std::string> inputs;  ///< real inputs (initializers excluded)
  std::vector<std::string> outputs;
  /// Sequence/optional values by name: bound inputs before inference; empty afterwards (a
  /// composite graph output is replaced in `outputs` by the tensors it holds).
  std::map<std::string, Composite> composites;

  const Value& value(const std::string& name) const;  ///< InternalError if missing
  Value& value(const std::string& name);
  bool has_value(const std::string& name) const { return values.count(name) != 0; }
  /// Index of the node producing `name`, or nullopt for inputs/constants.
  std::optional<size_t> producer(const std::string& name) const;
};

/// Human-readable listing: inputs, constants (shape only), nodes with attributes and output types.
std::string print(const Graph& g);

/// Checks the structural invariants: unique node and value names, every input defined before use,
/// topological order, all types known, outputs defined. Throws UserError naming the node on failure
/// (a graph that fails this came from the user's file or from a bug; the message says which node).
void verify(const Graph& g);

/// Re-sorts nodes topologically (stable); throws UserError naming a node on a cycle or a
/// dangling input.
void topo_sort(Graph& g);

/// Removes nodes whose outputs reach no graph output; drops values no longer referenced.
void remove_dead_nodes(Graph& g);

}  // namespace souffle::graph
