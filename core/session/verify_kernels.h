/// \file Kernel-level verification: a plan's partitions as emulated kernels vs reference data.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/schedule/kernel_units.h"
#include "core/schedule/plan_kernels.h"
#include "core/session/pipeline.h"
#include "core/session/timeline.h"
#include "core/session/verify.h"

namespace souffle {

// Building a plan's kernels is a schedule pass (core/schedule/plan_kernels.h); its names stay
// reachable from the session.
using schedule::build_partition_kernels;
using schedule::build_plan_kernels;
using schedule::fold_views;
using schedule::kernel_partition;
using schedule::KernelBuildError;
using schedule::KernelBuildOptions;
using schedule::KernelProgram;
using schedule::plan_build;
using schedule::PlanBuild;
using schedule::tune_plan;

struct KernelVerifyReport {
  VerifyReport outputs;  ///< per-output checks; run_ms is the emulator time over all data sets
  size_t kernels = 0;
  int grid_barriers = 0;
  int flag_waits = 0;  ///< FlagWait statements (per-tile flags in place of grid barriers)
  double plan_ms = 0, build_ms = 0;
  /// Non-empty when building or emulating failed (names the kernel and stage); ok is false then.
  std::string error;
  loop::KernelSet built;  ///< the kernels that ran (empty when building failed)
  /// With VerifyOptions::timeline: each kernel's records of the first data set, emulated.
  std::vector<KernelTimeline> timelines;
  bool ok() const { return error.empty() && outputs.ok; }
};

/// Runs the pipeline over `model` from analyze to build kernels under `pipeline` (run_pipeline:
/// the plan, then the kernels its pricing built, which compile ships; with
/// `pipeline.tune_measure`, tiles measured and the kernels built with them) and runs those
/// kernels in the emulator on each data set, judging outputs like verify_program (the default
/// tolerance is the plan's precision's). UserError when a data set does not fit the model.
KernelVerifyReport verify_kernels(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                                  const PipelineOptions& pipeline, const VerifyOptions& options);

}  // namespace souffle
