/// \file souffle-runner's side of the runner protocol (docs/runner-protocol.md): the backends
/// that run a kernel bundle (the CUDA driver, the CPU emulator) and the request loop.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/calibration.h"
#include "core/gpu/cupti.h"
#include "core/gpu/cupti_counters.h"
#include "core/gpu/spec.h"
#include "core/session/bundle_manifest.h"

namespace souffle::gpu {
struct CudaApi;
}

namespace souffle::runner {

/// The protocol version this build speaks (the `protocol` field of hello).
inline constexpr int kProtocolVersion = 1;

/// A request that failed, with a machine-readable code ("no_driver", "no_device", "bad_request",
/// "bad_bundle", "not_co_resident", "launch_failed", "kernel_fault", "no_reference",
/// "unsupported") and the kernel it concerns, when one does.
class RunnerError : public std::runtime_error {
 public:
  RunnerError(std::string code, const std::string& message, std::string kernel = "")
      : std::runtime_error(message), m_code(std::move(code)), m_kernel(std::move(kernel)) {}
  const std::string& code() const { return m_code; }
  const std::string& kernel() const { return m_kernel; }

 private:
  std::string m_code, m_kernel;
};

/// Progress lines the runner writes between a request and its answer ({"event": "launch",
/// "kernel": ..., "index": i, "of": n}), so that a caller can name the kernel a dying runner
/// was running.
using EventFn = std::function<void(const nlohmann::json&)>;

/// A device's attributes as the fields of hello's "devices" entries ("sm_count",
/// "shared_memory_per_sm", "memory_bus_bits", ...), and back (0 where a field is absent).
nlohmann::json device_attributes_json(const gpu::DeviceAttributes& d);
gpu::DeviceAttributes device_attributes_from_json(const nlohmann::json& device);

/// Timings of the timed runs of a profile request.
struct ProfileData {
  /// What timed the kernels: "cupti" (activity records), "cuda-events" (events around each
  /// kernel; CUPTI missing), "emulator" (CPU wall time of the emulator: not a GPU time).
  std::string timer;
  std::string timer_note;  ///< why not CUPTI, when it is not
  /// Kernel activity records CUPTI dropped in the timed runs (its buffers were full); then the
  /// kernels are timed by CUDA events instead and timer_note says so.
  size_t dropped_records = 0;
  int runs = 0, warmup = 0;
  std::vector<gpu::KernelTimes> kernels;  ///< in launch order
  gpu::Stats end_to_end_us;               ///< first kernel's launch to the last one's end (events)
  gpu::Stats zeroing_us;   ///< clearing the buffers the kernels write, before each run
  gpu::Stats graph_us;     ///< the whole run (zeroing included) replayed as a CUDA graph
  std::string graph_note;  ///< why there is no graph figure, when there is none
  /// Hardware counters of one more run, one entry per kernel in launch order (CUPTI's range
  /// profiler: DRAM bytes read and written, achieved occupancy); empty when not measured, and
  /// then counters_note says why.
  std::vector<gpu::KernelCounters> counters;
  std::string counters_note;
};

/// {"median", "min", "max", "count"} of a sample's statistics, and back (zeros where absent).
nlohmann::json stats_json(const gpu::Stats& s);
gpu::Stats stats_from(const nlohmann::json& j);

nlohmann::json profile_json(const ProfileData& p);
ProfileData profile_from_json(const nlohmann::json& j);

/// Runs the kernels of one loaded bundle. One bundle at a time; load replaces the previous.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  ///< "cuda", "emulator"
  /// {"backend", "devices": [...], "unavailable": reason when no device, "cupti": ...}.
  virtual nlohmann::json hello() = 0;
  /// Prepares every kernel (images, co-residency on the actual device) and allocates every
  /// tensor. Throws RunnerError naming the kernel that cannot be loaded or launched.
  virtual nlohmann::json load(const BundleManifest& m) = 0;
  /// Sets tensor `index` (of the manifest) to `bytes` (exactly its size).
  virtual void upload(int index, const std::string& bytes) = 0;
  virtual std::string read(int index) = 0;
  /// One run in plan order: zeroes what the kernels write, launches each kernel and waits for
  /// it, so a fault names its kernel.
  virtual void run(const EventFn& on_event) = 0;
  virtual ProfileData profile(int runs, int warmup, bool graph, bool counters,
                              const EventFn& on_event) = 0;
  virtual gpu::Calibration calibrate(const EventFn& on_event) = 0;
  /// After a fault that leaves the device unusable (a CUDA context error) the runner exits.
  virtual bool dead() const { return false; }
};

/// The CUDA driver backend (libcuda and libcupti loaded at run time); `device` is an ordinal.
std::unique_ptr<Backend> make_cuda_backend(int device = 0);
/// The same on a driver table the caller made and keeps alive (the tests run the backend on a
/// fake driver that checks what it is asked to do).
std::unique_ptr<Backend> make_cuda_backend(const gpu::CudaApi& api, int device = 0,
                                           const std::string& cupti_library = "");
/// The CPU emulator backend: makes the bundle's kernels again from the model it names, checks
/// they are the bundle's (same CUDA C), and emulates them.
std::unique_ptr<Backend> make_emulator_backend();

/// Why kernel `k` must not be launched on a device that keeps `per_sm` of its blocks resident
/// on each of `sms` SMs (cuOccupancyMaxActiveBlocksPerMultiprocessor with its real registers and
/// shared memory), or "" when it may: a block that fits no SM, or a cooperative grid larger
/// than what is co-resident (grid.sync() would deadlock), or a cooperative kernel on a device
/// without cooperative launch. `resources` describes the block in words for the message.
std::string launch_refusal(const ManifestKernel& k, int per_sm, int sms, bool cooperative_launch,
                           const std::string& device, const std::string& resources);

/// Answers requests from `in` on `out`, one JSON line each, until quit or end of input.
/// Returns the process exit code (0; 3 after a fault that killed the device context).
int serve(std::istream& in, std::ostream& out, Backend& backend);

}  // namespace souffle::runner
