/// \file Verifying a model's TE program against reference outputs (ONNX backend-test layout).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/session/compare.h"
#include "core/session/load.h"
#include "core/session/test_data.h"

namespace souffle {

struct OutputCheck {
  std::string data_set;  ///< folder name, e.g. test_data_set_0
  size_t index = 0;
  std::string name;  ///< the model's output name
  Comparison cmp;    ///< element-wise verdict (cmp.ok()) with the errors beside it
  bool ok = false;
};

/// The checks as `verify --json` writes them (data set, output, verdict, tolerances, errors).
nlohmann::json output_checks_json(const std::vector<OutputCheck>& checks);

struct VerifyReport {
  std::vector<OutputCheck> checks;
  bool ok = true;
  // Over every output (reported beside the element-wise verdict, not judged):
  double max_rel_l2 = 0;
  double max_abs_error = 0, max_rel_error = 0;
  int64_t mismatches = 0;  ///< elements outside their tolerance, summed
  double run_ms = 0;       ///< interpreter time over all data sets
  /// Adds a judged output (its errors into the maxima above).
  void add(OutputCheck c);
};

struct VerifyOptions {
  /// Outputs are judged element by element, |got - want| <= atol + rtol |want| (compare.h).
  /// Unset: default_tolerance for the computation's precision, each output's type and whether
  /// the model is quantized (docs/verification.md).
  std::optional<double> rtol, atol;
  bool f64 = false;
  /// Optional: what runs now, for a progress line ("kernel0: stage 37 of 3003" while the
  /// emulator runs kernels; verify_kernels calls it at most every 200 ms).
  std::function<void(const std::string&)> progress;
  /// Kernel level: timeline records in every kernel, decoded from the first data set's run
  /// (KernelVerifyReport::timelines, docs/timeline.md).
  bool timeline = false;
};

/// Whether `graph` computes with quantized integers (QuantizeLinear, DequantizeLinear, QLinear*,
/// MatMulInteger, ConvInteger, DynamicQuantizeLinear): its float outputs get a quantization
/// step's tolerance by default.
bool is_quantized(const graph::Graph& graph);

/// The tolerance an output of type `output` is judged with: `options`' rtol/atol where set, the
/// default for `compute`, `output` and `quantized` otherwise.
Tolerance output_tolerance(const VerifyOptions& options, gpu::Precision compute, DType output,
                           bool quantized);

/// A reference tensor as the model declares it: files store bfloat16 tensors as UINT16 bit
/// patterns (the ONNX test generator has no bfloat16 numpy type); those bits are read as bf16.
ConstTensorPtr reference_as_declared(const ConstTensorPtr& t, DType declared);

/// UserError naming the data set when its input or expected-output count differs from the
/// program's (a data set with no output files, or fewer than the model gives, is an error).
void check_data_set_fits(const TestDataSet& ds, const te::TeProgram& prog);

/// Compares one output with its reference under `tol` (compare_tensors) and fills c.cmp and
/// c.ok; every verification level judges outputs with this one rule.
void judge_output(OutputCheck& c, const TensorData& want, const TensorData& got,
                  const Tolerance& tol);

/// Runs `model.program` in the interpreter (fp32, or float64 between ops with `f64`) on each
/// data set and judges every output.
/// UserError when a data set's input count or shapes do not fit the model.
VerifyReport verify_program(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                            const VerifyOptions& options);

}  // namespace souffle
