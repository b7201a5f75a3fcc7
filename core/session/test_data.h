/// \file Reference data in the ONNX backend-test layout, and numerical comparison of outputs.
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.h"
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

struct Comparison {
  bool shape_ok = true;
  bool dtype_ok = true;
  int64_t mismatches = 0;  ///< elements outside atol + rtol * |expected| (NaN == NaN)
  int64_t worst_index = -1;
  double max_abs_error = 0;
  double rel_l2_error = 0;  ///< ||a - e||_2 / max(||e||_2, tiny)
  std::string describe() const;
};

/// Element-wise allclose (numpy semantics) plus the relative L2 error. Integer and bool tensors
/// must match exactly.
Comparison compare_tensors(const TensorData& expected, const TensorData& actual, double rtol,
                           double atol);

}  // namespace souffle
