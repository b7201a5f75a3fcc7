/// \file Verifying a model's TE program against reference outputs (ONNX backend-test layout).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/session/load.h"
#include "core/session/test_data.h"

namespace souffle {

struct OutputCheck {
  std::string data_set;  ///< folder name, e.g. test_data_set_0
  size_t index = 0;
  std::string name;  ///< the model's output name
  Comparison cmp;
  bool ok = false;
};

struct VerifyReport {
  std::vector<OutputCheck> checks;
  bool ok = true;
  double max_rel_l2 = 0;
  double run_ms = 0;  ///< interpreter time over all data sets
};

enum class Criterion {
  RelativeL2,  ///< per output: relative L2 error <= tolerance (model verification)
  AllClose,    ///< per element: |a - e| <= atol + rtol |e| (the ONNX backend tests' rule)
};

struct VerifyOptions {
  Criterion criterion = Criterion::RelativeL2;
  double tolerance = 1e-4;          ///< RelativeL2
  double rtol = 1e-3, atol = 1e-7;  ///< AllClose
  bool f64 = false;
  /// Optional: what runs now, for a progress line ("kernel0: stage 37 of 3003" while the
  /// emulator runs kernels; verify_kernels calls it at most every 200 ms).
  std::function<void(const std::string&)> progress;
};

/// A reference tensor as the model declares it: files store bfloat16 tensors as UINT16 bit
/// patterns (the ONNX test generator has no bfloat16 numpy type); those bits are read as bf16.
ConstTensorPtr reference_as_declared(const ConstTensorPtr& t, DType declared);

/// UserError naming the data set when its input or expected-output count differs from the
/// program's (a data set with no output files, or fewer than the model gives, is an error).
void check_data_set_fits(const TestDataSet& ds, const te::TeProgram& prog);

/// Compares one output with its reference under `options` and fills c.cmp and c.ok; every
/// verification level judges outputs with this one rule.
void judge_output(OutputCheck& c, const TensorData& want, const TensorData& got,
                  const VerifyOptions& options);

/// Runs `model.program` in the interpreter on each data set and compares every output.
/// UserError when a data set's input count or shapes do not fit the model.
VerifyReport verify_program(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                            const VerifyOptions& options);

}  // namespace souffle
