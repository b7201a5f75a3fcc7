/// \file The CUDA backend of souffle-runner (make_cuda_backend), shared by its three parts:
/// runner_cuda.cpp (the device and its context, bundles, their modules and memory),
/// runner_cuda_timing.cpp (runs, profiles, the one graph capture-and-replay path, counters) and
/// runner_cuda_calibrate.cpp (the device's calibration). Everything it makes through the driver
/// is held by an owner (cuda_handles.h). Internal to core/session.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/gpu/cupti_api.h"
#include "core/gpu/cupti_counters.h"
#include "core/session/cuda_handles.h"
#include "core/session/gemm_bench.h"
#include "core/session/runner.h"
#include "core/session/runner_cuda.h"

namespace souffle::runner::cuda_backend {

using nlohmann::json;

struct Device {
  int index = 0;
  std::string name;
  int major = 0, minor = 0, sms = 0;
  int clock_khz = 0, memory_clock_khz = 0, l2_bytes = 0, max_blocks_per_sm = 0;
  int max_threads_per_sm = 0;
  bool cooperative = false;
  size_t memory = 0;
  gpu::DeviceAttributes attributes;  ///< what hello reports and the device's spec is made from
  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
  std::string cc() const { return std::to_string(major) + "." + std::to_string(minor); }
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device) : m_ordinal(device) { m_api = gpu::cuda_api(&m_reason); }
  CudaBackend(const CudaBackendApis& apis, int device)
      : m_api(apis.driver),
        m_ordinal(device),
        m_tracer(apis.tracer),
        m_profiler(apis.profiler),
        m_cupti_library(apis.cupti_library) {}
  ~CudaBackend() override { release(); }

  std::string name() const override { return "cuda"; }
  bool dead() const override { return m_dead; }

  json hello() override;

  json load(const BundleManifest& m) override;

  void upload(int index, const std::string& bytes) override;

  std::string read(int index) override;

  void run(const EventFn& on_event) override;

  ProfileData profile(int runs, int warmup, bool graph, bool counters,
                      const EventFn& on_event) override;

  gpu::Calibration calibrate(const EventFn& on_event) override;

 private:
  struct Loaded {
    ManifestKernel k;
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    int registers = 0, per_sm = 0;
    std::string image;
    std::vector<void*> args;
    /// A kernel that takes its tensors packed (ManifestKernel::packed_args): their pointers, in
    /// parameter order; args' first entry points here.
    std::vector<CUdeviceptr> packed;
    /// Kernels with per-tile flags: the epoch of the last launch (the next passes one more);
    /// args' last entry points here, and a launch copies the value when it is made.
    long long epoch = 0;
  };

  /// Errors after which the context is lost: every later call returns them, nothing more runs.
  static bool sticky(CUresult r) {
    switch (r) {
      case CUDA_ERROR_ILLEGAL_ADDRESS:
      case CUDA_ERROR_LAUNCH_FAILED:
      case CUDA_ERROR_LAUNCH_TIMEOUT:
      case CUDA_ERROR_ILLEGAL_INSTRUCTION:
      case CUDA_ERROR_MISALIGNED_ADDRESS:
      case CUDA_ERROR_HARDWARE_STACK_ERROR:
      case CUDA_ERROR_ASSERT:
      case CUDA_ERROR_INVALID_ADDRESS_SPACE:
      case CUDA_ERROR_INVALID_PC:
      case CUDA_ERROR_ECC_UNCORRECTABLE:
        return true;
      default:
        return false;
    }
  }

  /// Whether the context is still usable after an error no list names: it is not when it cannot
  /// synchronize. (Not asked during a stream capture, which a context synchronization would end.)
  bool context_lost() { return !m_capturing && m_api->cuCtxSynchronize() != CUDA_SUCCESS; }

  void check(CUresult r, const std::string& what, const std::string& kernel = "") {
    if (r == CUDA_SUCCESS) return;
    if (sticky(r) || context_lost()) fault(r, kernel, what);
    throw RunnerError("launch_failed", what + ": " + m_api->error_text(r), kernel);
  }

  /// A kernel broke the context: nothing more can run in this process. `kernel` is the one that
  /// faulted when known; otherwise the error showed at `seen_at`, after the kernel that caused it.
  [[noreturn]] void fault(CUresult r, const std::string& kernel, const std::string& seen_at = "") {
    m_dead = true;
    throw RunnerError("kernel_fault",
                      (kernel.empty() ? std::string("a kernel") : kernel) + " faulted on " +
                          m_dev.name + ": " + m_api->error_text(r) +
                          (kernel.empty() && !seen_at.empty() ? " (seen at " + seen_at + ")" : "") +
                          " (the CUDA context is lost; the runner exits)",
                      kernel);
  }

  /// Waits for the stream; any error there comes from the work in flight and is fatal.
  void sync(const std::string& what, const std::string& kernel = "") {
    CUresult r = m_api->cuStreamSynchronize(m_stream);
    if (r != CUDA_SUCCESS) fault(r, kernel, what);
  }

  /// `bytes` of device memory at `from` into pageable `to`, in the kernels' stream order.
  void read_device(void* to, CUdeviceptr from, size_t bytes, const std::string& what) {
    check(m_api->cuMemcpyDtoHAsync(to, from, bytes, m_stream), what);
    sync(what);
  }

  EventHandle make_event() {
    EventHandle e(m_api->cuEventDestroy);
    check(m_api->cuEventCreate(e.out(), CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }

  /// The driver's rule: a block's static and dynamic shared memory together may pass the 48 KiB
  /// default only once the function's dynamic limit is raised to its dynamic size (otherwise the
  /// occupancy is 0 and a launch fails). Returns the function's static shared memory.
  int opt_in_shared(CUfunction f, size_t dynamic, const std::string& kernel);

  /// Runs an optional part of a profile; its failure becomes `note` and what was measured
  /// before it stands.
  template <typename Part>
  void optional_part(const std::string& what, std::string& note, Part part) {
    if (m_dead) {
      note = what + " was not made: the CUDA context was lost before it";
      return;
    }
    try {
      part();
    } catch (const RunnerError& e) {
      note = what + " failed: " + e.what();
    }
  }

  double elapsed_us(const EventHandle& a, const EventHandle& b) {
    return elapsed_us(a.get(), b.get());
  }
  double elapsed_us(CUevent a, CUevent b) {
    float ms = 0;
    check(m_api->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
    return ms * 1e3;
  }

  Device describe(int i);

  void ensure_context();

  void need_bundle() const {
    if (m_manifest.kernels.empty() && m_loaded.empty())
      throw RunnerError("bad_request", "no bundle is loaded (send load first)");
  }

  /// Zeroes (in stream order) every tensor of the bundle that `which` picks.
  template <typename Which>
  void clear(Which which) {
    for (size_t i = 0; i < m_manifest.tensors.size(); ++i)
      if (which(m_manifest.tensors[i]) && m_manifest.tensors[i].bytes > 0)
        check(m_api->cuMemsetD8Async(m_ptrs[i], 0, static_cast<size_t>(m_manifest.tensors[i].bytes),
                                     m_stream),
              "clearing " + m_manifest.tensors[i].name);
  }

  /// What the kernels write (outputs, intermediates, scratch), before every run.
  void zero() {
    clear([](const ManifestTensor& t) { return t.zeroed(); });
  }

  /// Zeroes every flag counter (in stream order) and restarts every kernel's epoch, so that the
  /// next launch of each passes 1 — the state the epoch scheme starts from.
  void restart_flags() {
    clear([](const ManifestTensor& t) { return t.zeroed_at_load(); });
    for (Loaded& l : m_loaded) l.epoch = 0;
  }

  /// Launches kernel k; one with flags passes an epoch one larger than its last launch's
  /// (warm-up and timed runs alike), or `fixed_epoch` when that is not 0 (graph capture).
  void launch(size_t k, long long fixed_epoch = 0);

  /// Per-kernel times over `runs` runs: from CUPTI's activity records (no events between the
  /// kernels to perturb them), or from CUDA events around each kernel when CUPTI is missing,
  /// refuses, or its records cannot be matched to the launches (dropped ones among them).
  void time_kernels(int runs, const std::vector<std::string>& order, ProfileData& p);

  /// End to end (first launch to the last kernel's end) and the zeroing before it, over `runs`
  /// runs of their own with three events each and CUPTI's tracing off: tracing costs each kernel
  /// time, which would weigh against a plan of many small kernels.
  void time_end_to_end(int runs, ProfileData& p);

  /// The one graph path of the backend: what `enqueue` puts on the stream, captured as one CUDA
  /// graph, instantiated, replayed `warmup` times untimed and `runs` times between two events;
  /// the time of each timed replay in microseconds. Throws RunnerError naming what failed;
  /// whatever was made (capture, graph, executable graph, events) is given back on the way out.
  template <typename Enqueue>
  std::vector<double> replay(const std::string& what, int warmup, int runs, Enqueue enqueue) {
    StreamCapture capture(*m_api, m_stream, &m_capturing);
    check(capture.begin(), "capturing " + what);
    std::optional<RunnerError> failed;
    try {
      enqueue();
    } catch (const RunnerError& e) {
      failed = e;
    }
    GraphHandle graph(m_api->cuGraphDestroy);
    CUresult r = capture.end(graph);
    if (failed)
      throw RunnerError(failed->code(), what + " could not be captured: " + failed->what(),
                        failed->kernel());
    check(r, "cuStreamEndCapture of " + what);
    GraphExecHandle exec(m_api->cuGraphExecDestroy);
    check(m_api->cuGraphInstantiate(exec.out(), graph.get(), 0), "cuGraphInstantiate of " + what);
    graph.reset();  // an executable graph does not need it
    EventHandle a = make_event(), b = make_event();
    for (int i = 0; i < warmup; ++i)
      check(m_api->cuGraphLaunch(exec.get(), m_stream), "cuGraphLaunch");
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
      check(m_api->cuEventRecord(a.get(), m_stream), "cuEventRecord");
      check(m_api->cuGraphLaunch(exec.get(), m_stream), "cuGraphLaunch");
      check(m_api->cuEventRecord(b.get(), m_stream), "cuEventRecord");
      sync("a graph replay");
      t.push_back(elapsed_us(a, b));
    }
    return t;
  }

  /// The whole run (zeroing and every launch) captured once as a CUDA graph and replayed.
  ///
  /// Per-tile flags: a captured launch keeps the epoch it was captured with, so replays cannot
  /// count epochs up. Instead the graph zeroes the flag counters itself (memset nodes before its
  /// first kernel) and every kernel with flags is captured with epoch 1. Each replay then starts
  /// from the state of a first run — counters at zero, epoch 1 — and a wait for 1 x releases is
  /// met only by that replay's own releases, as in a first run. Replays on one stream do not
  /// overlap, so no replay's releases are seen by another. After the replays the counters hold
  /// a replay's counts while the kernels' epochs were overwritten, so restart_flags puts both
  /// back to the start (zero, next launch epoch 1) for whatever runs next, whether the replay
  /// worked or not.
  void replay_graph(int runs, ProfileData& p);

  /// One more run under CUPTI's range profiler: a range per launch, replayed as the metrics
  /// need. Counters that cannot be had leave p.counters empty and say why in counters_note.
  void count(const std::vector<std::string>& order, ProfileData& p);

  void release_bundle();

  /// Everything, in the order the driver wants: what lives in the context, then its stream,
  /// then the hold on the context.
  void release();

  // Calibration helpers (runner_cuda_calibrate.cpp).
  CUfunction calibration_kernel(const char* name);
  double time_launches(CUfunction f, unsigned grid, unsigned block, void** args, int n, bool coop,
                       unsigned shared = 0);
  /// The TFLOP/s of the project's GEMM kernel `b` on the device; 0 and `note` when it cannot be
  /// compiled, launched, or computes a wrong result.
  double time_gemm(const GemmBench& b, std::string* note);

  /// The kernel tracer: the one given, else the process' libcupti.
  gpu::CuptiKernelTracer* tracer(std::string* why) const {
    return m_tracer ? m_tracer : gpu::CuptiKernelTracer::instance(why);
  }

  const gpu::CudaApi* m_api = nullptr;
  std::string m_reason;
  int m_ordinal = 0;
  gpu::CuptiKernelTracer* m_tracer = nullptr;
  const gpu::CuptiProfilerApi* m_profiler = nullptr;
  std::string m_cupti_library;  ///< the range profiler's libcupti; empty: the usual places
  CUdevice m_device = 0;
  PrimaryContext m_ctx;
  StreamHandle m_stream_owner;
  CUstream m_stream = nullptr;  ///< m_stream_owner's stream, which every call here uses
  Device m_dev;
  bool m_dead = false;
  BundleManifest m_manifest;
  std::vector<Loaded> m_loaded;
  bool m_capturing = false;  ///< a stream capture is under way
  std::vector<ModuleHandle> m_modules;
  std::vector<DeviceMemory> m_memory;  ///< the bundle's tensors
  std::vector<CUdeviceptr> m_ptrs;     ///< their addresses, which launches point at
  ModuleHandle m_calibration;
};

}  // namespace souffle::runner::cuda_backend
