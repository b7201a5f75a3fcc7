/// \file The CUDA driver API loaded at run time (dlopen of libcuda.so.1; never linked).
#pragma once

#include <cuda.h>

#include <string>

namespace souffle::gpu {

// Every driver entry point the runner uses. cuda.h maps several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime -> cuEventElapsedTime_v2); the table takes
// each name through the same macros, so a member and the symbol looked up always agree. Copies
// are the stream-ordered ones only: the synchronous cuMemcpyHtoD works on the legacy stream,
// which does not order with the runner's non-blocking stream.
#define SOUFFLE_CUDA_FUNCTIONS(X)                \
  X(cuInit)                                      \
  X(cuDriverGetVersion)                          \
  X(cuDeviceGetCount)                            \
  X(cuDeviceGet)                                 \
  X(cuDeviceGetName)                             \
  X(cuDeviceGetAttribute)                        \
  X(cuDeviceTotalMem)                            \
  X(cuDevicePrimaryCtxRetain)                    \
  X(cuDevicePrimaryCtxRelease)                   \
  X(cuCtxSetCurrent)                             \
  X(cuCtxSynchronize)                            \
  X(cuGetErrorName)                              \
  X(cuGetErrorString)                            \
  X(cuModuleLoadDataEx)                          \
  X(cuModuleUnload)                              \
  X(cuModuleGetFunction)                         \
  X(cuFuncGetAttribute)                          \
  X(cuFuncSetAttribute)                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuMemAlloc)                                  \
  X(cuMemFree)                                   \
  X(cuMemcpyHtoDAsync)                           \
  X(cuMemcpyDtoHAsync)                           \
  X(cuMemcpyDtoDAsync)                           \
  X(cuMemsetD8Async)                             \
  X(cuStreamCreate)                              \
  X(cuStreamDestroy)                             \
  X(cuStreamSynchronize)                         \
  X(cuEventCreate)                               \
  X(cuEventDestroy)                              \
  X(cuEventRecord)                               \
  X(cuEventSynchronize)                          \
  X(cuEventElapsedTime)                          \
  X(cuLaunchKernel)                              \
  X(cuLaunchCooperativeKernel)                   \
  X(cuStreamBeginCapture)                        \
  X(cuStreamEndCapture)                          \
  X(cuGraphInstantiate)                          \
  X(cuGraphLaunch)                               \
  X(cuGraphExecDestroy)                          \
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

/// One driver object, destroyed when its handle goes (or is reset), so that a path that throws
/// leaks no event, graph, graph exec, module or device memory. The destroy call's result is not
/// checked: after a fault the context's objects go with the context.
template <class T>
class DriverHandle {
 public:
  using Destroy = CUresult (*)(T);
  DriverHandle() = default;
  explicit DriverHandle(Destroy destroy) : m_destroy(destroy) {}
  DriverHandle(DriverHandle&& o) noexcept : m_handle(o.m_handle), m_destroy(o.m_destroy) {
    o.m_handle = T{};
  }
  DriverHandle& operator=(DriverHandle&& o) noexcept {
    if (this != &o) {
      reset();
      m_handle = o.m_handle;
      m_destroy = o.m_destroy;
      o.m_handle = T{};
    }
    return *this;
  }
  DriverHandle(const DriverHandle&) = delete;
  DriverHandle& operator=(const DriverHandle&) = delete;
  ~DriverHandle() { reset(); }

  T get() const { return m_handle; }
  /// Where a create call writes the new object (the one held before is destroyed first).
  T* out() {
    reset();
    return &m_handle;
  }
  void reset() {
    if (m_handle != T{} && m_destroy) m_destroy(m_handle);
    m_handle = T{};
  }
  explicit operator bool() const { return m_handle != T{}; }

 private:
  T m_handle{};
  Destroy m_destroy = nullptr;
};

using EventHandle = DriverHandle<CUevent>;
using GraphHandle = DriverHandle<CUgraph>;
using GraphExecHandle = DriverHandle<CUgraphExec>;
using ModuleHandle = DriverHandle<CUmodule>;
using DeviceMemory = DriverHandle<CUdeviceptr>;

}  // namespace souffle::gpu
