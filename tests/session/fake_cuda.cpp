#include "tests/session/fake_cuda.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "core/loop/timeline.h"
#include "core/session/gemm_bench.h"

namespace souffle::fake {

FakeDriver* g_fake = nullptr;

namespace {

constexpr int kDefaultShared = 48 * 1024;
constexpr size_t kBackedBytes = size_t{256} << 20;

#define STICKY                                 \
  do {                                         \
    if (g_fake->sticky) return g_fake->sticky; \
  } while (0)

/// A refusal FakeDriver::fail_after asks of entry point `entry` (the context stays usable).
#define REFUSE(entry)                                                             \
  do {                                                                            \
    if (auto it = g_fake->fail_after.find(entry); it != g_fake->fail_after.end()) \
      if (it->second-- == 0) {                                                    \
        g_fake->fail_after.erase(it);                                             \
        return CUDA_ERROR_INVALID_VALUE;                                          \
      }                                                                           \
  } while (0)

bool is_legacy(CUstream s) {
  return s == nullptr || s == CU_STREAM_LEGACY;
}

/// Runs the work queued on `s`, in order; a fault empties the queue (the context is lost).
void flush(CUstream s) {
  if (is_legacy(s)) s = nullptr;
  std::deque<Op>& q = g_fake->queues[s];
  while (!q.empty() && !g_fake->sticky) {
    Op op = std::move(q.front());
    q.pop_front();
    op.run();
  }
  if (g_fake->sticky) q.clear();
}

void flush_all() {
  for (auto& [s, q] : g_fake->queues) flush(s);
}

/// Queues `op` on `s` with the legacy stream's implicit ordering: work on the legacy stream
/// waits for every blocking stream and they wait for it; non-blocking streams order with
/// nothing. While `s` is captured the op goes into the graph instead.
void enqueue(CUstream s, Op op) {
  if (is_legacy(s)) s = nullptr;
  if (g_fake->capturing && s == g_fake->capture_stream) {
    g_fake->captured.push_back(std::move(op));
    return;
  }
  if (s == nullptr) {
    for (auto& [other, q] : g_fake->queues)
      if (other && !g_fake->non_blocking.count(other)) flush(other);
  } else if (!g_fake->non_blocking.count(s)) {
    flush(nullptr);
  }
  const bool faults =
      !op.kernel.empty() &&
      (g_fake->faults.count(op.kernel) || (op.from_graph && g_fake->graph_faults.count(op.kernel)));
  // Kernel replay serializes every launch; a faulting kernel faults while the host goes on.
  const bool now = faults || (!op.kernel.empty() && g_fake->range_profiling);
  g_fake->queues[s].push_back(std::move(op));
  if (now) flush(s);
}

FakeDriver::Allocation* allocation_of(CUdeviceptr p) {
  auto it = g_fake->allocations.upper_bound(p);
  if (it == g_fake->allocations.begin()) return nullptr;
  --it;
  return p < it->first + it->second.bytes ? &it->second : nullptr;
}

int dynamic_limit(CUfunction f) {
  auto it = g_fake->max_dynamic_shared.find(f);
  if (it != g_fake->max_dynamic_shared.end()) return it->second;
  return kDefaultShared - g_fake->static_shared[g_fake->functions.at(f)];
}

/// The flag kernel: before this launch's releases, each counter must hold exactly one release
/// per earlier launch since the counters were zeroed.
void flag_kernel(long long epoch, CUdeviceptr flags) {
  auto* c = reinterpret_cast<int32_t*>(flags);
  g_fake->epochs.push_back(epoch);
  for (int i = 0; i < kCounters; ++i) {
    if (c[i] != epoch - 1)
      g_fake->violations.push_back("launch with epoch " + std::to_string(epoch) + ": counter " +
                                   std::to_string(i) + " is " + std::to_string(c[i]));
    ++c[i];
  }
}

CUresult launch(CUfunction f, void** params, bool cooperative, unsigned grid, unsigned block,
                unsigned shared, CUstream stream, bool from_graph = false) {
  STICKY;
  const std::string name = g_fake->functions.at(f);
  if (auto it = g_fake->launch_errors.find(name); it != g_fake->launch_errors.end())
    return it->second;
  if (cooperative && g_fake->range_profiling && g_fake->replay_error) return g_fake->replay_error;
  // The driver's rule: static + dynamic may pass 48 KiB only up to the function's dynamic limit.
  if (static_cast<int>(shared) > dynamic_limit(f)) return CUDA_ERROR_INVALID_VALUE;
  std::function<void()> body;
  if (name.rfind("souffle_gemm_", 0) == 0) {
    FakeDriver::Launch& l = g_fake->gemm_launches[name];
    l = {grid, block, shared, l.count + 1};
    const float* a = *static_cast<float**>(params[0]);
    const float* b = *static_cast<float**>(params[1]);
    float* c = *static_cast<float**>(params[2]);
    body = [a, b, c] {
      const int64_t n = kCalibrationGemmSize;
      const float value = g_fake->gemm_right ? static_cast<float>(n) * a[0] * b[0] : 1.0f;
      std::fill(c, c + n * n, value);
    };
  } else if (name == "flagged") {
    if (!cooperative) g_fake->violations.push_back("flagged launched without cooperation");
    // A launch (captured or not) copies its arguments when it is made.
    const bool packed = g_fake->packed.count(name) > 0;
    CUdeviceptr flags =
        packed ? static_cast<CUdeviceptr*>(params[0])[2] : *static_cast<CUdeviceptr*>(params[2]);
    long long epoch = *static_cast<long long*>(params[packed ? 1 : 3]);
    body = [=] { flag_kernel(epoch, flags); };
  } else if (name == "timed") {
    // An instrumented kernel (docs/timeline.md) of `grid` blocks, one row of 6 records each:
    // stage 0 (block b works 100 (b + 1) ns), a grid barrier, stage 1 (50 ns), on SM b % 2.
    CUdeviceptr rec = *static_cast<CUdeviceptr*>(params[0]);
    body = [rec, grid] {
      using loop::TimelineEvent;
      using loop::TimelineWait;
      auto* w = reinterpret_cast<int64_t*>(rec);
      const int64_t t0 = static_cast<int64_t>(g_fake->clock_us * 1000) + 1000000;
      for (int64_t b = 0; b < static_cast<int64_t>(grid); ++b) {
        const int64_t sm = b % 2, end0 = t0 + 100 * (b + 1), all = t0 + 100 * grid;
        const std::tuple<int64_t, TimelineEvent, TimelineWait, int> recs[] = {
            {t0, TimelineEvent::StageBegin, TimelineWait::None, 0},
            {end0, TimelineEvent::StageEnd, TimelineWait::None, 0},
            {end0, TimelineEvent::WaitBegin, TimelineWait::GridBarrier, 1},
            {all, TimelineEvent::WaitEnd, TimelineWait::GridBarrier, 1},
            {all, TimelineEvent::StageBegin, TimelineWait::None, 1},
            {all + 50, TimelineEvent::StageEnd, TimelineWait::None, 1}};
        for (int s = 0; s < 6; ++s) {
          const auto& [t, e, wt, st] = recs[s];
          int64_t* r = w + (b * 6 + s) * 3;
          r[0] = t;
          r[1] = (t - t0) * 2 + 7 * sm;  // clock64 at 2 GHz, its own origin per SM
          r[2] = (sm << 32) | loop::timeline_tag(e, wt, st);
        }
      }
    };
  } else if (name == "plain") {
    // y = x, as the bundle's first kernel: what it reads is what the stream has done by then.
    const bool packed = g_fake->packed.count(name) > 0;
    CUdeviceptr x =
        packed ? static_cast<CUdeviceptr*>(params[0])[0] : *static_cast<CUdeviceptr*>(params[0]);
    CUdeviceptr y =
        packed ? static_cast<CUdeviceptr*>(params[0])[1] : *static_cast<CUdeviceptr*>(params[1]);
    body = [x, y] {
      ++g_fake->plain_launches;
      std::memcpy(reinterpret_cast<void*>(y), reinterpret_cast<const void*>(x), kCounters * 4);
    };
  } else {
    body = [] { ++g_fake->plain_launches; };
  }
  auto it = g_fake->durations_us.find(name);
  const double us = it == g_fake->durations_us.end() ? 1.0 : it->second;
  Op op;
  op.kernel = name;
  op.from_graph = from_graph;
  op.run = [name, body, us] {
    auto fault = g_fake->faults.find(name);
    if (fault != g_fake->faults.end()) {
      g_fake->sticky = fault->second;
      return;
    }
    if (g_fake->range_profiling) g_fake->ranges.push_back(name);
    const double start = g_fake->clock_us;
    body();
    g_fake->clock_us += us;
    if (g_fake->tracing) {
      g_fake->activity.push_back({name, static_cast<uint64_t>(start * 1e3),
                                  static_cast<uint64_t>(g_fake->clock_us * 1e3)});
      g_fake->clock_us += g_fake->tracing_overhead_us;
    }
  };
  enqueue(stream, std::move(op));
  return CUDA_SUCCESS;
}

/// A graph's ops replayed: the same work, marked as coming from a graph.
std::vector<Op> replayed(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    Op o = op;
    o.from_graph = true;
    if (!o.kernel.empty() && g_fake->graph_faults.count(o.kernel)) {
      const CUresult code = g_fake->graph_faults.at(o.kernel);
      o.run = [code] { g_fake->sticky = code; };
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

gpu::CudaApi fake_api() {
  gpu::CudaApi a;
  a.library = "fake";
  a.cuInit = [](unsigned) { return CUDA_SUCCESS; };
  a.cuDriverGetVersion = [](int* v) {
    *v = 13000;
    return CUDA_SUCCESS;
  };
  a.cuDeviceGetCount = [](int* n) {
    *n = 1;
    return CUDA_SUCCESS;
  };
  a.cuDeviceGet = [](CUdevice* d, int) {
    *d = 0;
    return CUDA_SUCCESS;
  };
  a.cuDeviceGetName = [](char* name, int len, CUdevice) {
    std::strncpy(name, g_fake->device_name.c_str(), static_cast<size_t>(len));
    return CUDA_SUCCESS;
  };
  a.cuDeviceGetAttribute = [](int* v, CUdevice_attribute attr, CUdevice) {
    if (auto it = g_fake->attributes.find(attr); it != g_fake->attributes.end()) {
      *v = it->second;
      return CUDA_SUCCESS;
    }
    switch (attr) {
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        break;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = g_fake->sms;
        break;
      case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
        *v = 1;
        break;
      default:
        *v = 0;
    }
    return CUDA_SUCCESS;
  };
  a.cuDeviceTotalMem = [](size_t* b, CUdevice) {
    *b = size_t{80} << 30;
    return CUDA_SUCCESS;
  };
  a.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice) {
    *c = reinterpret_cast<CUcontext>(0x1);
    ++g_fake->context_retains;
    return CUDA_SUCCESS;
  };
  a.cuDevicePrimaryCtxRelease = [](CUdevice) {
    if (g_fake->context_retains == 0) {
      g_fake->violations.push_back("cuDevicePrimaryCtxRelease of a context not retained");
      return CUDA_ERROR_INVALID_CONTEXT;
    }
    --g_fake->context_retains;
    return CUDA_SUCCESS;
  };
  a.cuCtxSetCurrent = [](CUcontext) { return CUDA_SUCCESS; };
  a.cuCtxSynchronize = []() {
    if (g_fake->capturing) {
      // Synchronizing the context is not allowed while a stream captures; it ends the capture.
      g_fake->violations.push_back("cuCtxSynchronize during a stream capture");
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    flush_all();
    return g_fake->sticky;
  };
  a.cuGetErrorName = [](CUresult r, const char** s) {
    static std::map<CUresult, std::string> names;
    std::string& n = names[r];
    switch (r) {
      case CUDA_ERROR_ASSERT:
        n = "CUDA_ERROR_ASSERT";
        break;
      case CUDA_ERROR_ILLEGAL_ADDRESS:
        n = "CUDA_ERROR_ILLEGAL_ADDRESS";
        break;
      case CUDA_ERROR_INVALID_VALUE:
        n = "CUDA_ERROR_INVALID_VALUE";
        break;
      case CUDA_ERROR_NOT_SUPPORTED:
        n = "CUDA_ERROR_NOT_SUPPORTED";
        break;
      case CUDA_ERROR_NOT_READY:
        n = "CUDA_ERROR_NOT_READY";
        break;
      default:
        n = "CUDA_ERROR_" + std::to_string(static_cast<int>(r));
    }
    *s = n.c_str();
    return CUDA_SUCCESS;
  };
  a.cuGetErrorString = [](CUresult, const char** s) {
    *s = "fake";
    return CUDA_SUCCESS;
  };
  a.cuModuleLoadDataEx = [](CUmodule* m, const void*, unsigned, CUjit_option*, void**) {
    STICKY;
    const uintptr_t h = g_fake->next_handle++;
    g_fake->modules.insert(h);
    *m = reinterpret_cast<CUmodule>(h);
    return CUDA_SUCCESS;
  };
  a.cuModuleUnload = [](CUmodule m) {
    if (!g_fake->modules.erase(reinterpret_cast<uintptr_t>(m))) {
      g_fake->violations.push_back("cuModuleUnload of a module not loaded");
      return CUDA_ERROR_INVALID_HANDLE;
    }
    return g_fake->sticky;
  };
  a.cuModuleGetFunction = [](CUfunction* f, CUmodule m, const char* name) {
    STICKY;
    if (!g_fake->modules.count(reinterpret_cast<uintptr_t>(m))) return CUDA_ERROR_INVALID_HANDLE;
    *f = reinterpret_cast<CUfunction>(g_fake->next_handle++);
    g_fake->functions[*f] = name;
    return CUDA_SUCCESS;
  };
  a.cuFuncGetAttribute = [](int* v, CUfunction_attribute attr, CUfunction f) {
    STICKY;
    switch (attr) {
      case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *v = 32;
        break;
      case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        *v = g_fake->static_shared[g_fake->functions.at(f)];
        break;
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *v = dynamic_limit(f);
        break;
      default:
        *v = 0;
    }
    return CUDA_SUCCESS;
  };
  a.cuFuncSetAttribute = [](CUfunction f, CUfunction_attribute attr, int v) {
    STICKY;
    if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS;
    const std::string& name = g_fake->functions.at(f);
    if (v < 0 || g_fake->static_shared[name] + v > g_fake->shared_optin)
      return CUDA_ERROR_INVALID_VALUE;
    g_fake->max_dynamic_shared[f] = v;
    g_fake->opted_in[name] = v;
    return CUDA_SUCCESS;
  };
  a.cuOccupancyMaxActiveBlocksPerMultiprocessor = [](int* n, CUfunction f, int, size_t dynamic) {
    STICKY;
    const int total = g_fake->static_shared[g_fake->functions.at(f)] + static_cast<int>(dynamic);
    if (static_cast<int>(dynamic) > dynamic_limit(f) || total > g_fake->shared_optin)
      *n = 0;
    else
      *n = std::min(4, g_fake->shared_per_sm / (total + 1024));
    return CUDA_SUCCESS;
  };
  a.cuMemAlloc = [](CUdeviceptr* p, size_t bytes) {
    STICKY;
    // Garbage, as device memory is: only what the runner zeroes is zero. A large allocation is
    // address space only (its pages are never touched).
    const bool backed = bytes <= kBackedBytes;
    void* m = std::malloc(std::max<size_t>(bytes, 1));
    if (backed) std::memset(m, 0x5a, bytes);
    *p = reinterpret_cast<CUdeviceptr>(m);
    g_fake->allocations[*p] = {bytes, backed};
    return CUDA_SUCCESS;
  };
  a.cuMemFree = [](CUdeviceptr p) {
    flush_all();  // freeing waits for the work in flight, which may still use the memory
    if (!g_fake->allocations.erase(p)) {
      g_fake->violations.push_back("cuMemFree of memory not allocated");
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::free(reinterpret_cast<void*>(p));
    return g_fake->sticky;
  };
  a.cuMemcpyHtoDAsync = [](CUdeviceptr d, const void* s, size_t n, CUstream stream) {
    STICKY;
    if (g_fake->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    std::string staged(static_cast<const char*>(s), n);  // pageable: staged before it returns
    enqueue(stream,
            {[d, staged] { std::memcpy(reinterpret_cast<void*>(d), staged.data(), staged.size()); },
             "", false});
    return CUDA_SUCCESS;
  };
  a.cuMemcpyDtoHAsync = [](void* d, CUdeviceptr s, size_t n, CUstream stream) {
    STICKY;
    if (g_fake->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    // To pageable memory: in the stream's order, and done when it returns.
    enqueue(stream,
            {[d, s, n] { std::memcpy(d, reinterpret_cast<const void*>(s), n); }, "", false});
    flush(stream);
    return g_fake->sticky;
  };
  a.cuMemcpyDtoDAsync = [](CUdeviceptr d, CUdeviceptr s, size_t n, CUstream stream) {
    STICKY;
    enqueue(stream, {[d, s, n] {
                       std::memcpy(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
                     },
                     "", false});
    return CUDA_SUCCESS;
  };
  a.cuMemsetD8Async = [](CUdeviceptr d, unsigned char v, size_t n, CUstream stream) {
    STICKY;
    REFUSE("cuMemsetD8Async");
    const FakeDriver::Allocation* in = allocation_of(d);
    if (!in) return CUDA_ERROR_INVALID_VALUE;
    const bool backed = in->backed;
    enqueue(stream, {[d, v, n, backed] {
                       if (backed) std::memset(reinterpret_cast<void*>(d), v, n);
                     },
                     "", false});
    return CUDA_SUCCESS;
  };
  a.cuStreamCreate = [](CUstream* s, unsigned flags) {
    STICKY;
    REFUSE("cuStreamCreate");
    *s = reinterpret_cast<CUstream>(g_fake->next_handle++);
    g_fake->queues[*s];
    if (flags & CU_STREAM_NON_BLOCKING) g_fake->non_blocking.insert(*s);
    return CUDA_SUCCESS;
  };
  a.cuStreamDestroy = [](CUstream s) {
    flush(s);
    g_fake->queues.erase(s);
    g_fake->non_blocking.erase(s);
    return g_fake->sticky;
  };
  a.cuStreamSynchronize = [](CUstream s) {
    STICKY;
    if (g_fake->capturing && s == g_fake->capture_stream)
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (is_legacy(s)) {
      for (auto& [other, q] : g_fake->queues)
        if (other && !g_fake->non_blocking.count(other)) flush(other);
    }
    flush(s);
    return g_fake->sticky;
  };
  a.cuEventCreate = [](CUevent* e, unsigned) {
    STICKY;
    REFUSE("cuEventCreate");
    const uintptr_t h = g_fake->next_handle++;
    g_fake->events[h];
    *e = reinterpret_cast<CUevent>(h);
    return CUDA_SUCCESS;
  };
  a.cuEventDestroy = [](CUevent e) {
    if (!g_fake->events.erase(reinterpret_cast<uintptr_t>(e))) {
      g_fake->violations.push_back("cuEventDestroy of an event not made");
      return CUDA_ERROR_INVALID_HANDLE;
    }
    return g_fake->sticky;
  };
  a.cuEventRecord = [](CUevent e, CUstream s) {
    STICKY;
    REFUSE("cuEventRecord");
    auto it = g_fake->events.find(reinterpret_cast<uintptr_t>(e));
    if (it == g_fake->events.end()) return CUDA_ERROR_INVALID_HANDLE;
    const uintptr_t h = it->first;
    it->second.recorded = true;
    it->second.done = false;
    it->second.stream = s;
    enqueue(s, {[h] {
                  if (auto ev = g_fake->events.find(h); ev != g_fake->events.end()) {
                    ev->second.done = true;
                    ev->second.t = g_fake->clock_us;
                  }
                },
                "", false});
    return CUDA_SUCCESS;
  };
  a.cuEventSynchronize = [](CUevent e) {
    STICKY;
    auto it = g_fake->events.find(reinterpret_cast<uintptr_t>(e));
    if (it == g_fake->events.end()) return CUDA_ERROR_INVALID_HANDLE;
    flush(it->second.stream);
    return g_fake->sticky;
  };
  a.cuEventElapsedTime = [](float* ms, CUevent a, CUevent b) {
    STICKY;
    auto ea = g_fake->events.find(reinterpret_cast<uintptr_t>(a));
    auto eb = g_fake->events.find(reinterpret_cast<uintptr_t>(b));
    if (ea == g_fake->events.end() || eb == g_fake->events.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (!ea->second.recorded || !eb->second.recorded) return CUDA_ERROR_INVALID_HANDLE;
    if (!ea->second.done || !eb->second.done) return CUDA_ERROR_NOT_READY;
    *ms = static_cast<float>((eb->second.t - ea->second.t) / 1e3);
    return CUDA_SUCCESS;
  };
  a.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned,
                        unsigned, unsigned shared, CUstream s, void** params,
                        void**) { return launch(f, params, false, gx, bx, shared, s); };
  a.cuLaunchCooperativeKernel = [](CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx,
                                   unsigned, unsigned, unsigned shared, CUstream s, void** params) {
    return launch(f, params, true, gx, bx, shared, s);
  };
  a.cuStreamBeginCapture = [](CUstream s, CUstreamCaptureMode) {
    STICKY;
    if (g_fake->capturing || is_legacy(s)) return CUDA_ERROR_ILLEGAL_STATE;
    g_fake->capturing = true;
    g_fake->capture_stream = s;
    g_fake->captured.clear();
    return CUDA_SUCCESS;
  };
  a.cuStreamEndCapture = [](CUstream s, CUgraph* g) {
    if (!g_fake->capturing || s != g_fake->capture_stream) return CUDA_ERROR_ILLEGAL_STATE;
    g_fake->capturing = false;
    STICKY;
    const uintptr_t h = g_fake->next_handle++;
    g_fake->captured_sizes.push_back(g_fake->captured.size());
    g_fake->graphs[h] = std::move(g_fake->captured);
    g_fake->captured.clear();
    *g = reinterpret_cast<CUgraph>(h);
    return CUDA_SUCCESS;
  };
  a.cuGraphInstantiate = [](CUgraphExec* e, CUgraph g, unsigned long long) {
    STICKY;
    if (g_fake->instantiate_error) return g_fake->instantiate_error;
    auto it = g_fake->graphs.find(reinterpret_cast<uintptr_t>(g));
    if (it == g_fake->graphs.end()) return CUDA_ERROR_INVALID_HANDLE;
    const uintptr_t h = g_fake->next_handle++;
    g_fake->execs[h] = replayed(it->second);  // an exec keeps its own copy of the graph
    *e = reinterpret_cast<CUgraphExec>(h);
    return CUDA_SUCCESS;
  };
  a.cuGraphLaunch = [](CUgraphExec e, CUstream s) {
    STICKY;
    REFUSE("cuGraphLaunch");
    if (g_fake->graph_launch_error) return g_fake->graph_launch_error;
    auto it = g_fake->execs.find(reinterpret_cast<uintptr_t>(e));
    if (it == g_fake->execs.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const Op& op : it->second) enqueue(s, op);
    return CUDA_SUCCESS;
  };
  a.cuGraphExecDestroy = [](CUgraphExec e) {
    if (!g_fake->execs.erase(reinterpret_cast<uintptr_t>(e))) {
      g_fake->violations.push_back("cuGraphExecDestroy of an exec not made");
      return CUDA_ERROR_INVALID_HANDLE;
    }
    return g_fake->sticky;
  };
  a.cuGraphDestroy = [](CUgraph g) {
    if (!g_fake->graphs.erase(reinterpret_cast<uintptr_t>(g))) {
      g_fake->violations.push_back("cuGraphDestroy of a graph not made");
      return CUDA_ERROR_INVALID_HANDLE;
    }
    return g_fake->sticky;
  };
  return a;
}

namespace {

const char* cupti_name(CUptiResult r) {
  switch (r) {
    case CUPTI_SUCCESS:
      return "CUPTI_SUCCESS";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_NOT_SUPPORTED:
      return "CUPTI_ERROR_NOT_SUPPORTED";
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    default:
      return "CUPTI_ERROR_UNKNOWN";
  }
}

/// Fake profiler objects: addresses only.
int g_host_object = 0, g_range_profiler = 0;

}  // namespace

gpu::CuptiActivityApi fake_activity_api() {
  gpu::CuptiActivityApi a;
  a.library = "fake libcupti";
  a.cuptiGetVersion = [](uint32_t* v) {
    *v = g_fake->cupti_version;
    return CUPTI_SUCCESS;
  };
  a.cuptiGetResultString = [](CUptiResult r, const char** s) {
    *s = cupti_name(r);
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityRegisterCallbacks = [](CUpti_BuffersCallbackRequestFunc req,
                                        CUpti_BuffersCallbackCompleteFunc done) {
    g_fake->requested = req;
    g_fake->completed = done;
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityEnable = [](CUpti_ActivityKind) {
    if (g_fake->cupti_enable_error) return g_fake->cupti_enable_error;
    g_fake->tracing = true;
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityDisable = [](CUpti_ActivityKind) {
    g_fake->tracing = false;
    return CUPTI_SUCCESS;
  };
  // Hands every record since the last flush to the client's buffers, as CONCURRENT_KERNEL
  // records laid out as this build's headers have them; the last `cupti_drop` are dropped.
  a.cuptiActivityFlushAll = [](uint32_t) {
    flush_all();
    if (!g_fake->requested || !g_fake->completed) return CUPTI_ERROR_INVALID_OPERATION;
    static std::deque<std::string> names;  // the records point at their names (never moved)
    std::vector<FakeDriver::Record> records = std::move(g_fake->activity);
    g_fake->activity.clear();
    const size_t keep = records.size() - std::min(records.size(), g_fake->cupti_drop);
    g_fake->cupti_dropped += records.size() - keep;
    g_fake->cupti_drop = 0;
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    g_fake->requested(&buffer, &size, &max_records);
    size_t valid = 0;
    for (size_t i = 0; i < keep && valid + sizeof(CUpti_ActivityKernel10) <= size; ++i) {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      names.push_back(records[i].name);
      k.name = names.back().c_str();
      k.start = records[i].start;
      k.end = records[i].end;
      k.correlationId = static_cast<uint32_t>(i);
      std::memcpy(buffer + valid, &k, sizeof k);
      valid += sizeof k;
    }
    g_fake->completed(nullptr, 0, buffer, size, valid);
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityGetNextRecord = [](uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    uint8_t* next =
        *record ? reinterpret_cast<uint8_t*>(*record) + sizeof(CUpti_ActivityKernel10) : buffer;
    if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid)
      return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = reinterpret_cast<CUpti_Activity*>(next);
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityGetNumDroppedRecords = [](CUcontext, uint32_t, size_t* dropped) {
    *dropped = g_fake->cupti_dropped;
    g_fake->cupti_dropped = 0;
    return CUPTI_SUCCESS;
  };
  return a;
}

gpu::CuptiProfilerApi fake_profiler_api() {
  gpu::CuptiProfilerApi a;
  a.library = "fake libcupti";
  a.cuptiGetResultString = [](CUptiResult r, const char** s) {
    *s = cupti_name(r);
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerInitialize = [](CUpti_Profiler_Initialize_Params*) { return CUPTI_SUCCESS; };
  a.cuptiProfilerDeInitialize = [](CUpti_Profiler_DeInitialize_Params*) { return CUPTI_SUCCESS; };
  a.cuptiProfilerDeviceSupported = [](CUpti_Profiler_DeviceSupported_Params* p) {
    const auto no = CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED;
    const auto yes = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    p->isSupported = g_fake->virtual_gpu ? no : yes;
    p->architecture = yes;
    p->sli = yes;
    p->vGpu = g_fake->virtual_gpu ? no : yes;
    p->confidentialCompute = yes;
    p->cmp = yes;
    p->wsl = yes;
    return CUPTI_SUCCESS;
  };
  a.cuptiDeviceGetChipName = [](CUpti_Device_GetChipName_Params* p) {
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerGetCounterAvailability = [](CUpti_Profiler_GetCounterAvailability_Params* p) {
    if (p->pCounterAvailabilityImage)
      std::memset(p->pCounterAvailabilityImage, 1, p->counterAvailabilityImageSize);
    else
      p->counterAvailabilityImageSize = 16;
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostInitialize = [](CUpti_Profiler_Host_Initialize_Params* p) {
    p->pHostObject = reinterpret_cast<CUpti_Profiler_Host_Object*>(&g_host_object);
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostDeinitialize = [](CUpti_Profiler_Host_Deinitialize_Params*) {
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostGetMetricProperties = [](CUpti_Profiler_Host_GetMetricProperties_Params*) {
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostConfigAddMetrics = [](CUpti_Profiler_Host_ConfigAddMetrics_Params*) {
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostGetConfigImageSize = [](CUpti_Profiler_Host_GetConfigImageSize_Params* p) {
    p->configImageSize = 64;
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostGetConfigImage = [](CUpti_Profiler_Host_GetConfigImage_Params* p) {
    std::memset(p->pConfigImage, 7, p->configImageSize);
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostGetNumOfPasses = [](CUpti_Profiler_Host_GetNumOfPasses_Params* p) {
    p->numOfPasses = 2;
    return CUPTI_SUCCESS;
  };
  a.cuptiProfilerHostEvaluateToGpuValues = [](CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
    const double values[] = {1000, 500, 50};
    for (size_t i = 0; i < p->numMetrics && i < 3; ++i) p->pMetricValues[i] = values[i];
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerEnable = [](CUpti_RangeProfiler_Enable_Params* p) {
    if (g_fake->profiler_enable_error) return g_fake->profiler_enable_error;
    p->pRangeProfilerObject = reinterpret_cast<CUpti_RangeProfiler_Object*>(&g_range_profiler);
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerDisable = [](CUpti_RangeProfiler_Disable_Params*) {
    g_fake->range_profiling = false;
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerGetCounterDataSize = [](CUpti_RangeProfiler_GetCounterDataSize_Params* p) {
    p->counterDataSize = 64;
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerCounterDataImageInitialize =
      [](CUpti_RangeProfiler_CounterDataImage_Initialize_Params*) { return CUPTI_SUCCESS; };
  a.cuptiRangeProfilerSetConfig = [](CUpti_RangeProfiler_SetConfig_Params*) {
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerStart = [](CUpti_RangeProfiler_Start_Params*) {
    g_fake->ranges.clear();
    g_fake->range_profiling = true;
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerStop = [](CUpti_RangeProfiler_Stop_Params* p) {
    g_fake->range_profiling = false;
    p->isAllPassSubmitted = 1;
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerDecodeData = [](CUpti_RangeProfiler_DecodeData_Params* p) {
    p->numOfRangeDropped = 0;
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerGetCounterDataInfo = [](CUpti_RangeProfiler_GetCounterDataInfo_Params* p) {
    p->numTotalRanges = g_fake->ranges.size();
    return CUPTI_SUCCESS;
  };
  a.cuptiRangeProfilerCounterDataGetRangeInfo =
      [](CUpti_RangeProfiler_CounterData_GetRangeInfo_Params* p) {
        static std::deque<std::string> names;
        names.push_back(std::to_string(p->rangeIndex));  // automatic ranges: "0", "1", ...
        p->rangeName = names.back().c_str();
        return CUPTI_SUCCESS;
      };
  return a;
}

}  // namespace souffle::fake
