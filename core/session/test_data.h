/// \file Reference data in the ONNX backend-test layout (outputs are judged by compare.h).
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/session/compare.h"
#include "core/support/tensor_data.h"

namespace souffle {

struct TestDataSet {
  std::string dir;  ///< .../test_data_set_N
  /// input_0.pb, input_1.pb, ... as files hold them: tensors, or sequences/optionals.
  std::vector<graph::DataValue> input_values;
  std::vector<graph::DataValue> output_values;
  /// The same, flattened to tensors in order (a sequence gives its elements, an empty optional
  /// nothing): what a compiled program takes and gives, since sequences fold away.
  std::vector<ConstTensorPtr> inputs;
  std::vector<ConstTensorPtr> outputs;
};

/// All test_data_set_N folders under `dir`, in N order. UserError if a file does not parse.
std::vector<TestDataSet> read_test_data(const std::string& dir);

}  // namespace souffle
