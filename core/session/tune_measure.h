/// \file GEMM tile candidates timed on a GPU through souffle-runner (`compile --tune measure`):
/// the tuner's measurement hook (schedule::MeasureFn) with a runner behind it.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/spec.h"
#include "core/schedule/tune.h"
#include "core/session/bundle_manifest.h"
#include "core/session/gemm_bench.h"

namespace souffle {

/// Sends `requests` to one runner in order and returns its answers, one per request; throws
/// (RunnerFailure, UserError) when a request fails. The only coupling to the runner, so a test
/// can serve the requests in process.
using RunnerBatch = std::function<std::vector<nlohmann::json>(const std::vector<nlohmann::json>&)>;

struct TileMeasureOptions {
  std::string arch;  ///< the runner's device ("sm_90"): what the candidates are compiled for
  gpu::GpuSpec gpu;  ///< the spec the tiles were ranked on (named in the bundles)
  /// The compute type of tensor-core candidates (the plan's precision); SIMT candidates run fp32.
  gpu::Precision precision = gpu::Precision::FP32;
  std::string dir;  ///< candidate bundles go into DIR/gemmN (created when missing)
  int runs = 10, warmup = 2;
};

/// One GEMM problem's candidates as measured.
struct TileMeasurement {
  std::string problem;  ///< "batch 1, 128 x 3072 x 768"
  std::vector<std::string> tiles;
  std::vector<double> us;  ///< per candidate: median per launch, -1 when it failed
  std::string timer;       ///< what timed them ("cupti", "cuda-events")
  std::string note;        ///< why candidates failed, when some did
};

/// The bundle of `benches` (one problem, a kernel per candidate, all reading A and B and writing
/// C, ranked on `gpu`) compiled for `arch` into `dir`: NAME.cu and NAME.ARCH.{ptx,cubin} per
/// kernel, random A and B under inputs/, bundle.json. A candidate that does not compile is left
/// out; `errors` gets one line per such candidate (by index). Throws UserError when a file cannot
/// be written.
BundleManifest write_candidate_bundle(const std::string& dir, const std::vector<GemmBench>& benches,
                                      const std::string& arch, const gpu::GpuSpec& gpu,
                                      std::map<size_t, std::string>* errors);

/// The tuner's measurement hook on a runner: each GEMM problem's candidates built as GEMM
/// benchmark kernels (gemm_bench.h: the op's batch x M x N x K with fp32 operands; its epilogue
/// and operand layout are not part of the measurement), compiled for the device, written as one
/// bundle, loaded, run once (a fault names its candidate), and timed. A problem measured once
/// is not measured again. Thread-safe (one runner, one request batch at a time).
class TileMeasurer {
 public:
  TileMeasurer(TileMeasureOptions options, RunnerBatch batch);
  /// Times per candidate (microseconds per launch, -1 for one that failed), as MeasureFn.
  std::vector<double> measure(const te::ComputeOp& op,
                              const std::vector<schedule::TileEstimate>& candidates);
  schedule::MeasureFn fn();
  std::vector<TileMeasurement> measurements() const;

 private:
  TileMeasureOptions m_options;
  RunnerBatch m_batch;
  mutable std::mutex m_mutex;
  std::map<std::string, size_t> m_done;  ///< problem and tiles -> index in m_measurements
  std::vector<TileMeasurement> m_measurements;
};

}  // namespace souffle
