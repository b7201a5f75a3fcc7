/// \file The CUDA backend of souffle-runner on driver and CUPTI tables its caller provides (the
/// tests run it on a strict fake of the driver and of CUPTI).
#pragma once

#include <memory>
#include <string>

#include "core/session/runner.h"

namespace souffle::gpu {
struct CudaApi;
struct CuptiProfilerApi;
class CuptiKernelTracer;
}  // namespace souffle::gpu

namespace souffle::runner {

/// What the CUDA backend runs on; each is kept alive by the caller.
struct CudaBackendApis {
  const gpu::CudaApi* driver = nullptr;
  /// Kernel activity records; null: the process' libcupti (CuptiKernelTracer::instance).
  gpu::CuptiKernelTracer* tracer = nullptr;
  /// The range profiler's entry points; null: those of `cupti_library` (empty: the usual places).
  const gpu::CuptiProfilerApi* profiler = nullptr;
  std::string cupti_library;
};

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendApis& apis, int device = 0);

}  // namespace souffle::runner
