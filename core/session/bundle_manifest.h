/// \file bundle.json: the machine-readable table of contents of a kernel bundle (tensors, kernels
/// with their images and launch configurations, and the plan they came from), which
/// souffle-runner loads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/support/dtype.h"

namespace souffle {

struct ManifestTensor {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  std::string kind;            ///< "input", "weight", "intermediate", "output", "scratch"
  int64_t weight_offset = -1;  ///< in weights.bin (weights)
  std::string file;            ///< inputs/NAME.bin (inputs)
  std::string expected;        ///< expected/NAME.bin (model outputs with reference data)
  int output_index = -1;       ///< position among the model's outputs
  /// Written by the kernels (outputs, intermediates, scratch): zeroed before every run, as the
  /// kernels' atomics and partial sums expect.
  bool zeroed() const { return kind != "input" && kind != "weight"; }
};

struct ManifestImage {
  std::string arch;   ///< "sm_90"
  std::string ptx;    ///< file name, "" when none
  std::string cubin;  ///< file name, "" when none
  int registers = 0;
};

struct ManifestKernel {
  std::string name;  ///< the extern "C" function
  int partition = 0;
  std::string source;  ///< NAME.cu
  int64_t grid = 1;
  int block = 1;
  int64_t shared_bytes = 0;  ///< dynamic
  bool cooperative = false;
  int register_cap = 0;
  std::vector<int> args;  ///< tensor indices, in parameter order
  std::vector<ManifestImage> images;
  int stages = 0, grid_barriers = 0;
  double est_us = 0;  ///< the plan's estimate for its partition (shared by split launches)
};

/// What the kernels were made from, so that another build can make them again (the emulator
/// backend does, and checks it makes the same CUDA C).
struct ManifestSource {
  std::string model;  ///< absolute path of the ONNX file
  std::map<std::string, int64_t> dims;
  std::string strategy, precision;
  gpu::GpuSpec gpu;
  std::string decisions_json;  ///< the decisions applied ("" when none)
};

struct BundleManifest {
  static constexpr int kVersion = 1;
  ManifestSource source;
  std::vector<std::string> archs;
  std::string weights = "weights.bin";
  std::vector<ManifestTensor> tensors;
  std::vector<ManifestKernel> kernels;
  bool has_expected = false;
  std::string dir;  ///< where it was read from
};

std::string manifest_json(const BundleManifest& m);
/// Reads DIR/bundle.json. Throws UserError naming the file and field for a bad one.
BundleManifest load_manifest(const std::string& dir);
BundleManifest parse_manifest(const std::string& json_text, const std::string& file);

/// A spec entry as resources/gpus.json writes one (parse_gpu_specs reads it back).
std::string gpu_spec_json(const gpu::GpuSpec& s);

}  // namespace souffle
