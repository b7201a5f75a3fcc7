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
  /// "input", "weight", "intermediate", "output", "scratch", or "flags": a kernel's per-tile
  /// counters (Int32), zeroed once when the bundle is loaded and never again (see
  /// ManifestKernel::flag_epoch).
  std::string kind;
  int64_t weight_offset = -1;  ///< in weights.bin (weights)
  std::string file;            ///< inputs/NAME.bin (inputs)
  std::string expected;        ///< expected/NAME.bin (model outputs with reference data)
  int output_index = -1;       ///< position among the model's outputs
  /// Written by the kernels (outputs, intermediates, scratch): zeroed before every run, as the
  /// kernels' atomics and partial sums expect. Flag counters are not: they keep counting across
  /// runs (zeroed_at_load).
  bool zeroed() const { return kind != "input" && kind != "weight" && kind != "flags"; }
  /// Zeroed once, when the bundle is loaded: the per-tile flag counters.
  bool zeroed_at_load() const { return kind == "flags"; }
};

struct ManifestImage {
  std::string arch;   ///< "sm_90"
  std::string ptx;    ///< file name, "" when none
  std::string cubin;  ///< file name, "" when none
  int registers = 0;
};

struct ManifestKernel {
  std::string name;  ///< the extern "C" function in `source`
  /// The function's name in the images: launches of the same code share one image under a
  /// neutral name (compile.h, CompiledKernel::entry); `name` when the field is absent.
  std::string entry;
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
  /// Per-tile flags (loop::FlagRelease / FlagWait): the kernel takes one more argument after its
  /// tensors, a `long long` epoch that is 1 at its first launch after the counters were zeroed
  /// and one more at each launch after that (a wait is met when this launch's releases
  /// happened). Its flag counters are among `args` (tensors of kind "flags"). Such a kernel is
  /// cooperative: a block waiting on another only ends when all are co-resident.
  bool flag_epoch = false;
  /// The kernel takes its tensors packed in one parameter (codegen::kPackedArgs): the launch
  /// passes a pointer to an array of `args.size()` device pointers, in `args` order, then the
  /// epoch if flag_epoch. Version 3.
  bool packed_args = false;
  int flag_waits = 0, flag_releases = 0;  ///< statements in its code (for reports)
  /// Timeline records (docs/timeline.md): the scratch tensor holding them (-1: none) and its
  /// layout, [rows, slots, 3] int64 for blocks 0, stride, 2 * stride, ...
  int timeline_tensor = -1;
  int64_t timeline_rows = 0, timeline_slots = 0, timeline_stride = 1;
  double est_us = 0;  ///< the plan's estimate for its partition (shared by split launches)
};

/// What the kernels were made from, so that another build can make them again (the emulator
/// backend does, and checks it makes the same CUDA C).
struct ManifestSource {
  std::string model;  ///< absolute path of the ONNX file
  std::map<std::string, int64_t> dims;
  /// Inputs fixed as constants and input shapes, as the command line gives them (NAME=VALUE of
  /// --bind and --shape); written only when any.
  std::vector<std::string> bind, shapes;
  std::string strategy, precision;
  /// How dependent stages are ordered across blocks: "grid", "flags" or "auto"
  /// (schedule::SyncMode); bundles before version 2 are "grid".
  std::string sync = "grid";
  /// The kernels' forms when not the defaults (plan::PlanOptions::waves, weight_panels; written
  /// in version 2 only when off).
  bool waves = true, weight_panels = true;
  gpu::GpuSpec gpu;
  std::string decisions_json;  ///< the decisions applied ("" when none)
  /// Built with timeline records (--timeline), and the byte limit that sized their buffers.
  bool timeline = false;
  int64_t timeline_max_bytes = 0;
};

struct BundleManifest {
  /// The newest version this build reads and writes. Version 2 added per-tile flags (tensors of
  /// kind "flags", kernels with flag_epoch, source.sync); a bundle without them is still
  /// written as version 1, unchanged, so older runners keep loading it, and one with them is
  /// refused by those runners (as newer) instead of being run with counters they would zero.
  /// Version 3 added kernels that take their tensors packed (ManifestKernel::packed_args), for
  /// the same reason.
  static constexpr int kVersion = 3;
  /// Whether any kernel takes a flag epoch (then the bundle needs version 2).
  bool has_flags() const;
  /// Whether any kernel takes its tensors packed (then the bundle needs version 3).
  bool has_packed_args() const;
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
