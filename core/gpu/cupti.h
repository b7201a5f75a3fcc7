/// \file Kernel timings from CUPTI's activity API (libcupti loaded at run time), and the
/// statistics over timed runs that the runner reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace souffle::gpu {

/// One kernel execution as CUPTI recorded it (a CONCURRENT_KERNEL activity record).
struct KernelActivity {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;  ///< GPU timestamps
  uint32_t correlation_id = 0;
  uint32_t stream_id = 0;
  int grid_x = 0, block_x = 0;
  int registers = 0;
  int static_shared = 0, dynamic_shared = 0;
  double duration_us() const { return (end_ns - start_ns) / 1e3; }
};

/// KernelActivity from the bytes of a CUPTI kernel record as this build's CUPTI headers lay it
/// out (CUpti_ActivityKernel10). Returns false for a record of another kind.
bool parse_kernel_record(const void* record, KernelActivity& out);

/// Median, min and max of a sample.
struct Stats {
  double median = 0, min = 0, max = 0;
  int count = 0;
};
Stats stats_of(std::vector<double> v);

/// Per kernel of a launch sequence (the kernels of one plan, in order), its durations over the
/// timed runs and the gap before it (from the end of the kernel before it in the same run; 0
/// for the first of a run).
struct KernelTimes {
  std::string name;
  Stats duration_us;
  Stats gap_before_us;
};

/// Groups the records of `runs` consecutive runs of `order` (kernel names in launch order) by
/// position: the records sorted by start time must repeat `order` exactly `runs` times.
/// Returns an empty vector and sets `problem` otherwise (dropped records, another kernel
/// interleaved), so a wrong attribution is never reported as a measurement.
std::vector<KernelTimes> group_runs(const std::vector<KernelActivity>& records,
                                    const std::vector<std::string>& order, int runs,
                                    std::string* problem);

struct CuptiActivityApi;

/// Why this build (compiled against CUPTI API version `headers`) cannot read the records of a
/// libcupti of API version `library`, or "" when it can. From CUDA 13 the version is
/// major * 10000 + minor * 100 + update (130001: 13.0 update 1): a library of the same major
/// version keeps the record layouts this build reads (a change of layout is a new record
/// version), whatever its minor or update, so 13.0's 130000 is read by a build against
/// 130001's headers. Before, the version was a plain count that had to be at least the headers'.
std::string cupti_version_refusal(uint32_t library, uint32_t headers);

/// Collects CUPTI kernel activity records between start() and stop(). One collects at a time in
/// a process (CUPTI's buffer callbacks are global).
class CuptiKernelTracer {
 public:
  /// The process' tracer on libcupti (from `library` if given, else the CUDA toolkit's usual
  /// places), made once; nullptr and `reason` when there is none.
  static CuptiKernelTracer* instance(std::string* reason, const std::string& library = "");
  /// A tracer on `api` (the process' libcupti, or a test's fake): nullptr and `reason` when the
  /// library's API version cannot be read by this build or CUPTI refuses its buffers.
  static std::unique_ptr<CuptiKernelTracer> open(const CuptiActivityApi& api, std::string* reason);

  /// Enables kernel activity records; false (and `error`) when CUPTI refuses.
  bool start(std::string* error);
  /// Flushes, disables and returns every kernel record since start(); dropped() then says how
  /// many records CUPTI dropped meanwhile (a full buffer; they are not in what is returned).
  std::vector<KernelActivity> stop(std::string* error);
  std::string library() const;
  uint32_t version() const { return m_version; }
  size_t dropped() const { return m_dropped; }

 private:
  explicit CuptiKernelTracer(const CuptiActivityApi& api) : m_api(api) {}
  const CuptiActivityApi& m_api;
  uint32_t m_version = 0;
  size_t m_dropped = 0;
};

/// Where libcupti is looked for, in order (the CUDA toolkit's extras/CUPTI, its lib64 and lib,
/// the usual library paths).
std::vector<std::string> cupti_candidates();

/// dlopen of `library`, or of the first of cupti_candidates() that loads when it is empty; the
/// handle (one per library for the process) and the file in `loaded`, or null and `error`
/// (dlerror's text when a named library does not load).
void* open_cupti(const std::string& library, std::string* loaded, std::string* error);

}  // namespace souffle::gpu
