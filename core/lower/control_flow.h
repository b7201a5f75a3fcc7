/// \file Structured ops resolved at compile time: If, Loop, Scan, and the sequence and optional
/// ops. Each is expanded in the graph while types are inferred (interp::infer_and_fold) into
/// plain nodes, so that only tensors reach lowering: an If with a constant condition becomes
/// its branch (else both branches and a select), a Loop with a constant trip count is unrolled
/// one iteration at a time (its condition must fold), a Scan is unrolled over its static
/// length, and sequences and optionals become compile-time lists of tensor values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"

namespace souffle::lower {

/// What an expansion may ask about the values seen so far, and where it gets fresh names.
class ExpandScope {
 public:
  virtual ~ExpandScope() = default;
  /// The value of a constant tensor, else nullptr.
  virtual ConstTensorPtr constant(const std::string& name) const = 0;
  /// The type of a tensor value whose type is known, else nullptr (composites have none).
  virtual const graph::TensorType* type(const std::string& name) const = 0;
  /// The sequence/optional of that name, else nullptr.
  virtual const graph::Composite* composite(const std::string& name) const = 0;
  /// A value or node name not used yet, derived from `base`.
  virtual std::string fresh_name(const std::string& base) = 0;
  virtual int64_t opset() const = 0;
};

/// What a structured node became.
struct Expansion {
  std::vector<graph::Node> nodes;  ///< to run in its place, in order (structured ones expand too)
  std::vector<std::pair<std::string, graph::Composite>> composites;  ///< values it defines
  std::vector<std::pair<std::string, ConstTensorPtr>> constants;     ///< values it defines
};

/// Op types this file expands (Identity too when its input is a composite).
bool is_structured_op(const graph::Node& node);

/// Expands one structured node. UserError naming the node when it cannot be resolved at compile
/// time (a data-dependent condition or trip count, mismatched branch shapes); messages that say
/// "must be a constant" mark inputs that, bound to values, would make it resolvable.
Expansion expand_structured(const graph::Node& node, ExpandScope& scope);

}  // namespace souffle::lower
