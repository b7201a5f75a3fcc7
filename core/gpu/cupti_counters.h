/// \file Per-kernel hardware counters (DRAM traffic, achieved occupancy) from CUPTI's range
/// profiler, libcupti loaded at run time: one range per kernel launch, replayed by CUPTI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace souffle::gpu {

struct CudaApi;

struct CuptiProfilerApi;

/// What the counters say about one kernel launch; -1 where a value was not measured (CUPTI gave
/// no finite value, or one outside the metric's range).
struct KernelCounters {
  std::string name;
  double dram_read_bytes = -1;
  double dram_write_bytes = -1;
  double achieved_occupancy = -1;  ///< active warps over the SM's peak, 0..1
};

/// The metric names asked for, in order: DRAM bytes read, DRAM bytes written, active warps in
/// percent of the peak sustained while the SM is active.
const std::vector<std::string>& counter_metrics();

/// One profiled range as CUPTI hands it over: its name and the values of counter_metrics(), in
/// that order.
using RangeValues = std::pair<std::string, std::vector<double>>;

/// The counters of each launch of `order` (kernel names in launch order) from `ranges` (one per
/// launch, in launch order). A range must be named after its kernel or after its zero-based
/// launch index (CUPTI names automatic ranges "0", "1", ...). A missing, extra or misnamed range,
/// or a range with the wrong number of values, gives an empty vector and sets `problem`, so a
/// wrong attribution is never reported. A NaN, infinite or negative value, or an occupancy above
/// 100%, is reported as not measured (-1); the launch's other values stand.
std::vector<KernelCounters> counters_from_ranges(const std::vector<RangeValues>& ranges,
                                                 const std::vector<std::string>& order,
                                                 std::string* problem);

/// The configuration image that schedules `metrics` on chip `chip` ("GH100", "GA100", as
/// CUPTI names chips), and the number of passes it needs. `availability` is the device's counter
/// availability image; empty means every counter of the chip. Works without a GPU. False and
/// `error` (an unknown metric or chip named) when CUPTI refuses.
bool counter_config_image(const std::string& chip, const std::vector<uint8_t>& availability,
                          const std::vector<std::string>& metrics, std::vector<uint8_t>* image,
                          size_t* passes, std::string* error, const std::string& library = "");

/// Hardware counters of the kernels launched on one CUDA context between start() and stop(),
/// one range per launch (automatic ranges, kernel replay: CUPTI replays a kernel as many times as
/// the metrics need passes, restoring device memory in between). One session per process at a
/// time; not thread-safe.
class CuptiCounterSession {
 public:
  /// Loads libcupti's profiler entry points (from `library` if given, else cupti_candidates()),
  /// checks that the device allows profiling, and enables the range profiler on `cu_context` (a
  /// CUcontext) for device `device_ordinal`. nullptr and `reason` in words ("CUPTI's range
  /// profiler is not available: ...") when it cannot.
  static std::unique_ptr<CuptiCounterSession> open(void* cu_context, int device_ordinal,
                                                   std::string* reason,
                                                   const std::string& library = "");
  /// The same on the profiler entry points `api` and the driver `cuda` (both kept alive by the
  /// caller: the runner's own, or a test's fakes).
  static std::unique_ptr<CuptiCounterSession> open(const CuptiProfilerApi& api, const CudaApi& cuda,
                                                   void* cu_context, int device_ordinal,
                                                   std::string* reason);

  /// Starts collection for up to `max_ranges` kernel launches; launches must be made on the
  /// session's context and may be cooperative. False and `error` when CUPTI refuses.
  bool start(size_t max_ranges, std::string* error);

  /// Stops, decodes and evaluates: one entry per recorded range, in launch order, named as
  /// CUPTI names the range (for automatic ranges, the launch index). Empty and `error` when
  /// CUPTI fails or dropped a range.
  std::vector<RangeValues> stop(std::string* error);

  std::string chip() const;  ///< as CUPTI names it: "GH100"
  size_t passes() const;     ///< times each kernel runs under replay, at least 1

  ~CuptiCounterSession();  ///< disables the range profiler and releases CUPTI's objects
  CuptiCounterSession(const CuptiCounterSession&) = delete;
  CuptiCounterSession& operator=(const CuptiCounterSession&) = delete;

 private:
  struct Impl;
  explicit CuptiCounterSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace souffle::gpu
