/// \file Kernel bundle export: a compiled plan as .cu/.ptx files, weights, data and a host harness.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/session/compile.h"
#include "core/session/test_data.h"

namespace souffle {

struct BundleOptions {
  std::string model;     ///< the model's path, named in the generated files
  std::string strategy;  ///< named in the generated files
  /// Reference data: its inputs and outputs become inputs/NAME.bin and expected/NAME.bin. Without
  /// one the harness runs on zero inputs and skips the check.
  const TestDataSet* data = nullptr;
  /// CMAKE_CUDA_ARCHITECTURES of the generated CMakeLists.txt.
  std::vector<std::string> cuda_architectures = {"80", "90"};
  /// Symbolic dimensions the model was imported with (recorded in bundle.json, so that the
  /// kernels can be made again from the model).
  std::map<std::string, int64_t> dims;
  std::vector<std::string> bind, shapes;  ///< --bind and --shape as given (recorded the same way)
};

/// One device tensor of the harness and where its bytes come from.
struct BundleTensor {
  /// Flags: a kernel's per-tile counters, zeroed once and kept across runs (they come after
  /// every other tensor, so the harness' tables, which leave them to the kernel's launcher,
  /// keep the indices of the others).
  enum class Kind : uint8_t { Input, Weight, Intermediate, Output, Scratch, Flags };
  std::string name;  ///< the model's tensor name
  std::string file;  ///< "inputs/x.bin", "expected/y.bin" (outputs), "" otherwise
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int64_t weight_offset = -1;  ///< byte offset in weights.bin (Kind::Weight)
  Kind kind = Kind::Intermediate;
};
const char* bundle_tensor_kind_name(BundleTensor::Kind k);  ///< "input", "weight", ...

struct BundleReport {
  std::string dir;
  std::vector<std::string> files;  ///< written, relative to dir, in writing order
  std::vector<BundleTensor> tensors;
  int64_t weights_bytes = 0;  ///< size of weights.bin
  bool harness = false;       ///< main.cu and CMakeLists.txt written (every kernel compiled)
};

/// Writes the bundle of `report` (the kernels compile_plan produced for `plan`) into `dir`
/// (created when missing): per kernel NAME.cu, NAME.launch.cu, NAME.ARCH.ptx and NAME.ARCH.cubin;
/// bundle.json (the manifest souffle-runner loads, bundle_manifest.h); weights.bin
/// with its manifest weights.txt; inputs/ and expected/; main.cu, CMakeLists.txt, README.txt.
/// When a kernel has an error its .cu is still written, the harness is not, and ERRORS.txt lists
/// the errors. Throws UserError when a file cannot be written or the data does not fit the model.
BundleReport write_bundle(const std::string& dir, const plan::FusionPlan& plan,
                          const CompileReport& report, const CompileOptions& compile_options,
                          const BundleOptions& options);

/// The bundle of a model's plan as `compile --out` and the explorer write it: reference data from
/// `data_dir`'s test_data_set_0 (the model's folder when empty; none when it has no data set),
/// CUDA architectures from the compile options' archs.
BundleReport write_model_bundle(const std::string& dir, const std::string& model_path,
                                const std::string& data_dir, const plan::FusionPlan& plan,
                                const CompileReport& report, const CompileOptions& compile_options,
                                const std::map<std::string, int64_t>& dims = {},
                                const std::vector<std::string>& bind = {},
                                const std::vector<std::string>& shapes = {});

}  // namespace souffle
