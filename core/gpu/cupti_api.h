/// \file The libcupti entry points the project uses, as tables: loaded at run time (dlopen;
/// libcupti is never linked) or made by a test. The activity API gives kernel records
/// (core/gpu/cupti.h), the range profiler hardware counters (core/gpu/cupti_counters.h).
#pragma once

#include <string>

#include <cupti_activity.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_version.h>

namespace souffle::gpu {

// libcupti's activity entry points the tracer uses.
#define SOUFFLE_CUPTI_ACTIVITY_FUNCTIONS(X) \
  X(cuptiActivityEnable)                    \
  X(cuptiActivityDisable)                   \
  X(cuptiActivityRegisterCallbacks)         \
  X(cuptiActivityFlushAll)                  \
  X(cuptiActivityGetNextRecord)             \
  X(cuptiActivityGetNumDroppedRecords)      \
  X(cuptiGetResultString)                   \
  X(cuptiGetVersion)

/// The activity API of one libcupti (loaded at run time), or a test's fake of it.
struct CuptiActivityApi {
#define SOUFFLE_CUPTI_ACTIVITY_MEMBER(f) decltype(&::f) f = nullptr;
  SOUFFLE_CUPTI_ACTIVITY_FUNCTIONS(SOUFFLE_CUPTI_ACTIVITY_MEMBER)
#undef SOUFFLE_CUPTI_ACTIVITY_MEMBER
  std::string library;  ///< the file it came from
  /// "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" (or the number when the library has no name for it).
  std::string result_text(CUptiResult r) const;
};

/// libcupti's activity API from `library` (else the first of cupti_candidates() that loads),
/// once per library for the process; nullptr and `reason` when it cannot be loaded or lacks an
/// entry point.
const CuptiActivityApi* cupti_activity_api(const std::string& library, std::string* reason);

// Every libcupti entry point the counters use; a missing one is named when the library loads.
#define SOUFFLE_CUPTI_PROFILER_FUNCTIONS(X)       \
  X(cuptiGetResultString)                         \
  X(cuptiProfilerInitialize)                      \
  X(cuptiProfilerDeInitialize)                    \
  X(cuptiProfilerDeviceSupported)                 \
  X(cuptiDeviceGetChipName)                       \
  X(cuptiProfilerGetCounterAvailability)          \
  X(cuptiProfilerHostInitialize)                  \
  X(cuptiProfilerHostDeinitialize)                \
  X(cuptiProfilerHostGetMetricProperties)         \
  X(cuptiProfilerHostConfigAddMetrics)            \
  X(cuptiProfilerHostGetConfigImageSize)          \
  X(cuptiProfilerHostGetConfigImage)              \
  X(cuptiProfilerHostGetNumOfPasses)              \
  X(cuptiProfilerHostEvaluateToGpuValues)         \
  X(cuptiRangeProfilerEnable)                     \
  X(cuptiRangeProfilerDisable)                    \
  X(cuptiRangeProfilerGetCounterDataSize)         \
  X(cuptiRangeProfilerCounterDataImageInitialize) \
  X(cuptiRangeProfilerSetConfig)                  \
  X(cuptiRangeProfilerStart)                      \
  X(cuptiRangeProfilerStop)                       \
  X(cuptiRangeProfilerDecodeData)                 \
  X(cuptiRangeProfilerGetCounterDataInfo)         \
  X(cuptiRangeProfilerCounterDataGetRangeInfo)

/// The range-profiler entry points of one libcupti (loaded at run time), or a test's fake.
struct CuptiProfilerApi {
#define SOUFFLE_CUPTI_MEMBER(f) decltype(&::f) f = nullptr;
  SOUFFLE_CUPTI_PROFILER_FUNCTIONS(SOUFFLE_CUPTI_MEMBER)
#undef SOUFFLE_CUPTI_MEMBER
  /// Optional: older libraries lack it.
  decltype(&::cuptiGetErrorMessage) cuptiGetErrorMessage = nullptr;
  std::string library;

  /// "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: User doesn't have sufficient privileges ...".
  std::string error_text(CUptiResult r) const;
  /// True when `r` is success; otherwise false and `error` names the call and CUPTI's reason.
  bool ok(CUptiResult r, const char* call, std::string* error) const;
};

/// libcupti's profiler entry points from `library` (else the first of cupti_candidates() that
/// loads), once per library for the process (a library is never unloaded: CUPTI keeps hooks in
/// the driver). nullptr and `reason` when they cannot be loaded.
const CuptiProfilerApi* cupti_profiler_api(const std::string& library, std::string* reason);

}  // namespace souffle::gpu
