/// \file Owners of what the CUDA backend makes through the driver table: events, graphs,
/// executable graphs, modules and allocations (gpu::DriverHandle), its stream, its hold on the
/// device's primary context, and a stream capture under way. Each gives its object back when it
/// goes out of scope, so a check that throws half-way leaves nothing behind.
#pragma once

#include <utility>

#include "core/gpu/cuda_api.h"

namespace souffle::runner {

using gpu::DeviceMemory;
using gpu::EventHandle;
using gpu::GraphExecHandle;
using gpu::GraphHandle;
using gpu::ModuleHandle;
using StreamHandle = gpu::DriverHandle<CUstream>;

/// The device's primary context, retained while this lives (released once when it goes).
class PrimaryContext {
 public:
  PrimaryContext() = default;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  PrimaryContext(PrimaryContext&& o) noexcept { *this = std::move(o); }
  PrimaryContext& operator=(PrimaryContext&& o) noexcept {
    if (this != &o) {
      reset();
      m_api = std::exchange(o.m_api, nullptr);
      m_device = o.m_device;
      m_ctx = std::exchange(o.m_ctx, nullptr);
    }
    return *this;
  }
  ~PrimaryContext() { reset(); }

  /// Retains `device`'s primary context (after releasing one held before).
  CUresult retain(const gpu::CudaApi& api, CUdevice device) {
    reset();
    CUcontext ctx = nullptr;
    CUresult r = api.cuDevicePrimaryCtxRetain(&ctx, device);
    if (r != CUDA_SUCCESS) return r;
    m_api = &api;
    m_device = device;
    m_ctx = ctx;
    return r;
  }
  void reset() {
    if (m_ctx && m_api) m_api->cuDevicePrimaryCtxRelease(m_device);
    m_ctx = nullptr;
    m_api = nullptr;
  }
  CUcontext get() const { return m_ctx; }
  explicit operator bool() const { return m_ctx != nullptr; }

 private:
  const gpu::CudaApi* m_api = nullptr;
  CUdevice m_device = 0;
  CUcontext m_ctx = nullptr;
};

/// A capture of `stream` under way: begin() starts it, end() ends it and hands over the graph.
/// Left without end() (a throw during the enqueueing), it ends the capture and destroys what was
/// captured, so the stream takes work again. `*capturing` is true while the capture is open.
class StreamCapture {
 public:
  StreamCapture(const gpu::CudaApi& api, CUstream stream, bool* capturing)
      : m_api(api), m_stream(stream), m_capturing(capturing) {}
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;
  ~StreamCapture() {
    if (!m_open) return;
    GraphHandle dropped(m_api.cuGraphDestroy);
    end(dropped);
  }

  CUresult begin() {
    CUresult r = m_api.cuStreamBeginCapture(m_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    m_open = r == CUDA_SUCCESS;
    if (m_capturing) *m_capturing = m_open;
    return r;
  }
  /// Ends the capture; `graph` holds what was captured (nothing when it failed).
  CUresult end(GraphHandle& graph) {
    m_open = false;
    if (m_capturing) *m_capturing = false;
    return m_api.cuStreamEndCapture(m_stream, graph.out());
  }

 private:
  const gpu::CudaApi& m_api;
  CUstream m_stream;
  bool* m_capturing;
  bool m_open = false;
};

}  // namespace souffle::runner
