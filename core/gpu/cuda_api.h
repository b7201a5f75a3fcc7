/// \file The CUDA driver API loaded at run time (dlopen of libcuda.so.1; never linked).
#pragma once

#include <cuda.h>

#include <string>

namespace souffle::gpu {

// Every driver entry point the runner uses. cuda.h maps several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime -> cuEventElapsedTime_v2); the table takes
// each name through the same macros, so a member and the symbol looked up always agree.
#define SOUFFLE_CUDA_FUNCTIONS(X)                                                                  \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                    \
      X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)                  \
          X(cuCtxSynchronize) X(cuGetErrorName) X(cuGetErrorString) X(cuModuleLoadDataEx)          \
              X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute) \
                  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuMemAlloc) X(cuMemFree)        \
                      X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async)      \
                          X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)              \
                              X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)                  \
                                  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuLaunchKernel)    \
                                      X(cuLaunchCooperativeKernel) X(cuStreamBeginCapture)         \
                                          X(cuStreamEndCapture) X(cuGraphInstantiate)              \
                                              X(cuGraphLaunch) X(cuGraphExecDestroy)               \
                                                  X(cuGraphDestroy)

/// The loaded entry points; a member is never null once cuda_api() returned the table.
struct CudaApi {
#define SOUFFLE_CUDA_MEMBER(f) decltype(&::f) f = nullptr;
  SOUFFLE_CUDA_FUNCTIONS(SOUFFLE_CUDA_MEMBER)
#undef SOUFFLE_CUDA_MEMBER
  std::string library;  ///< the file that was loaded

  /// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".
  std::string error_text(CUresult r) const;
};

/// The driver loaded from `library` (libcuda.so.1 unless given), once per process, with cuInit
/// called. nullptr when it cannot be loaded, lacks an entry point or does not initialize; then
/// `reason` says which, in words for the user.
const CudaApi* cuda_api(std::string* reason, const std::string& library = "");

}  // namespace souffle::gpu
