/// \file Profiling a plan's kernels on a GPU, behind an interface whose only implementation
/// today reports why there is no GPU to profile on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace souffle {

/// One kernel's measured time.
struct KernelMeasurement {
  int partition = 0;  ///< index into FusionPlan::partitions
  double time_us = 0;
};

struct ProfileOptions {
  int runs = 10;  ///< timed launches per kernel (after a warm-up)
};

struct ProfileReport {
  std::vector<KernelMeasurement> kernels;
  double total_us = 0;
  std::string device;  ///< the GPU measured on
  /// Non-empty when nothing was measured: why, in words for the user.
  std::string error;
  bool ok() const { return error.empty(); }
};

/// Runs a plan's kernels and times them. A profiler either works or says, through
/// unavailable_reason(), why it cannot (the GUI shows it on the disabled profile button).
class Profiler {
 public:
  virtual ~Profiler() = default;
  virtual bool available() const = 0;
  /// Empty when available().
  virtual std::string unavailable_reason() const = 0;
  /// Never throws for a missing GPU: returns a report with `error` set.
  virtual ProfileReport profile(const plan::FusionPlan& plan, const ProfileOptions& options) = 0;
};

/// The profiler of this build and machine. Without a CUDA driver and device it reports which is
/// missing; with one it still reports that launching kernels is not implemented yet.
std::unique_ptr<Profiler> make_profiler();

}  // namespace souffle
