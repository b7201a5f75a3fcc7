/// \file A fake CUDA driver and CUPTI for the CUDA backend's tests (no GPU here), as strict as the
/// real ones where those are unforgiving: work on a stream runs when the stream, an event on it
/// or the context is synchronized (in stream order), so a copy from pageable memory on the legacy
/// stream is not seen by a kernel on a non-blocking stream; events not yet reached are not ready;
/// static and dynamic shared memory together may pass 48 KiB only after the function's dynamic
/// limit is raised; a faulting kernel poisons the context (every later call returns its error);
/// graph instantiation, graph launches and launches under CUPTI's kernel replay can be made to
/// fail; CUPTI has a version, drops records and refuses (privileges, virtual GPUs). Every event,
/// graph, graph exec, module and allocation is counted, so a test sees what leaked.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti_api.h"

namespace souffle::fake {

/// The per-tile flag counters of the test bundles' flag kernel.
constexpr int kCounters = 4;

/// One piece of work on a stream (or in a graph).
struct Op {
  std::function<void()> run;
  std::string kernel;  ///< the kernel it launches, if any
  bool from_graph = false;
};

/// The fake's state (its entry points are plain functions, so it is global: `g_fake`).
struct FakeDriver {
  // ---- device ----
  std::string device_name = "Fake H200";
  std::map<CUdevice_attribute, int> attributes;  ///< what cuDeviceGetAttribute reports instead
  int sms = 132;
  int shared_optin = 232448;  ///< the most a block may opt in to, static included
  int shared_per_sm = 233472;
  std::map<std::string, int> static_shared;  ///< a kernel's static shared memory (0 if absent)

  // ---- streams and the context ----
  std::map<CUstream, std::deque<Op>> queues;  ///< nullptr: the legacy stream
  std::set<CUstream> non_blocking;
  CUresult sticky = CUDA_SUCCESS;  ///< a fault poisons the context: every call returns it
  /// Kernels that fault when they run (all launches, or only replayed from a graph), with the
  /// error; the device runs ahead, so the fault is there before the host's next call.
  std::map<std::string, CUresult> faults, graph_faults;
  /// Kernels whose launch is refused with this error (the context stays usable).
  std::map<std::string, CUresult> launch_errors;

  // ---- graphs ----
  CUstream capture_stream = nullptr;
  bool capturing = false;
  std::vector<Op> captured;
  std::map<uintptr_t, std::vector<Op>> graphs, execs;
  std::vector<size_t> captured_sizes;  ///< the ops of each capture ended, in order
  uintptr_t next_handle = 0x1000;
  CUresult instantiate_error = CUDA_SUCCESS;
  CUresult graph_launch_error = CUDA_SUCCESS;

  // ---- events, memory, modules, functions ----
  struct Event {
    bool recorded = false, done = false;
    double t = 0;
    CUstream stream = nullptr;
  };
  std::map<uintptr_t, Event> events;
  struct Allocation {
    size_t bytes = 0;
    bool backed = true;  ///< larger ones are address space whose contents the fake does not keep
  };
  std::map<CUdeviceptr, Allocation> allocations;
  std::set<uintptr_t> modules;
  std::map<CUfunction, std::string> functions;
  std::map<CUfunction, int> max_dynamic_shared;  ///< set by cuFuncSetAttribute
  std::map<std::string, int> opted_in;           ///< by kernel name: the last limit set
  std::vector<std::string> violations;           ///< misuse the real driver would punish

  // ---- kernels ----
  std::vector<long long> epochs;  ///< seen by the flag kernel, per launch
  int plain_launches = 0;
  /// Kernels whose image takes its tensors packed (codegen::kPackedArgs): the launch's first
  /// parameter is an array of their pointers (then the epoch), as the real driver copies it by
  /// the image's parameter layout; `plain` and `flagged` read them from there.
  std::set<std::string> packed;
  bool gemm_right = true;  ///< the calibration GEMMs compute C = K * A * B
  struct Launch {
    unsigned grid = 0, block = 0, shared = 0;
    int count = 0;
  };
  std::map<std::string, Launch> gemm_launches;
  /// A virtual GPU clock: a kernel takes durations_us[its name] (1 us unless given) when it
  /// runs; an event reads the clock when the stream reaches it.
  double clock_us = 0;
  std::map<std::string, double> durations_us;

  // ---- CUPTI activity ----
  uint32_t cupti_version = CUPTI_API_VERSION;
  CUptiResult cupti_enable_error = CUPTI_SUCCESS;
  bool tracing = false;
  double tracing_overhead_us = 0;  ///< what tracing adds to each kernel's time on the clock
  size_t cupti_drop = 0;           ///< records the next flush drops (the last ones)
  size_t cupti_dropped = 0;        ///< what cuptiActivityGetNumDroppedRecords reports
  struct Record {
    std::string name;
    uint64_t start = 0, end = 0;
  };
  std::vector<Record> activity;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;

  // ---- CUPTI range profiler ----
  CUptiResult profiler_enable_error = CUPTI_SUCCESS;  ///< e.g. INSUFFICIENT_PRIVILEGES
  bool virtual_gpu = false;  ///< cuptiProfilerDeviceSupported says a vGPU refuses profiling
  bool range_profiling = false;
  /// A launch under kernel replay (cooperative kernels) refused with this error.
  CUresult replay_error = CUDA_SUCCESS;
  std::vector<std::string> ranges;

  /// Entry points that refuse a call (CUDA_ERROR_INVALID_VALUE, the context stays usable) after
  /// this many more calls have worked, once: {"cuEventRecord", 3} refuses the fourth record.
  /// Taken by cuEventCreate, cuEventRecord, cuStreamCreate, cuMemsetD8Async and cuGraphLaunch.
  std::map<std::string, int> fail_after;
  int context_retains = 0;  ///< cuDevicePrimaryCtxRetain less cuDevicePrimaryCtxRelease

  /// Objects made and not destroyed.
  size_t live_events() const { return events.size(); }
  size_t live_graphs() const { return graphs.size(); }
  size_t live_execs() const { return execs.size(); }
  size_t live_modules() const { return modules.size(); }
  size_t live_allocations() const { return allocations.size(); }
  size_t live_streams() const { return queues.size() - queues.count(nullptr); }
  int live_contexts() const { return context_retains; }
};

/// The fake in use (a test's fixture sets it).
extern FakeDriver* g_fake;

/// The driver table over g_fake.
gpu::CudaApi fake_api();
/// CUPTI's activity API over g_fake (API version g_fake->cupti_version).
gpu::CuptiActivityApi fake_activity_api();
/// CUPTI's range profiler over g_fake ("GH100", two passes, one range per launch).
gpu::CuptiProfilerApi fake_profiler_api();

}  // namespace souffle::fake
