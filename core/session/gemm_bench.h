/// \file The GEMM benchmark kernel: one GEMM (batch x (M x K) * (K x N), fp32 operands) scheduled
/// by the project's own GEMM templates and emitted as CUDA C. souffle-runner's calibration times
/// it for the device's GEMM rates (the SIMT template under fp32, the tensor-core template under
/// fp16), and `compile --tune measure` times tile candidates with it.
#pragma once

#include <string>
#include <vector>

#include "core/codegen/codegen_c.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/loop/stmt.h"
#include "core/schedule/tune.h"
#include "core/te/expr.h"

namespace souffle {

/// The problem the calibration times: large enough that a GPU of this generation runs it for
/// milliseconds at its peak (137 GFLOP).
inline constexpr int64_t kCalibrationGemmSize = 4096;

struct GemmBench {
  schedule::GemmProblem problem;
  gpu::Precision precision = gpu::Precision::FP32;
  gpu::Tile tile;
  std::string why;  ///< the tuner's reason for the tile, or "given"
  te::Op op;        ///< the TE the kernel computes (its inputs A and B, output C)
  loop::Kernel kernel;
  std::string name;  ///< the kernel's extern "C" name
  std::string cuda;  ///< one translation unit holding it
  /// The tensor-core mainloop the kernel was built with, as the cost model reads it from the loop
  /// IR (gpu::MainloopStructure::template_name: "mma.sync, cp.async depth 3"); empty for the SIMT
  /// template. The calibration records it with the fp16 rate it times.
  std::string mainloop_template;
  /// Its pointer parameters in order (A, B, C, then any scratch), what a launch passes.
  std::vector<codegen::KernelParam> params;
  double flops() const {
    return 2.0 * static_cast<double>(problem.batch) * static_cast<double>(problem.m) *
           static_cast<double>(problem.n) * static_cast<double>(problem.k);
  }
};

/// C[b][m][n] = sum_k A[b][m][k] * B[b][k][n] over fp32 tensors named A, B and C (without the batch
/// axis when problem.batch is 1). problem.in_bytes and out_bytes are not read.
te::Op gemm_bench_op(const schedule::GemmProblem& problem);

/// The benchmark kernel for `problem` at `precision` with `tile`, or, when `tile` is null, with
/// the tuner's best tile on `gpu`. Throws UserError when no tile of the template fits `gpu` or
/// the given tile does not fit the precision's template.
GemmBench make_gemm_bench(const schedule::GemmProblem& problem, const gpu::GpuSpec& gpu,
                          gpu::Precision precision, const gpu::Tile* tile = nullptr,
                          const std::string& name = "souffle_gemm");

/// What one launch of `b` computes in every element of C when A and B hold only `a` and `bv`:
/// k * a * bv.
double gemm_bench_expected(const GemmBench& b, double a, double bv);

}  // namespace souffle
