/// \file Building a plan's kernels: each partition's TEs scheduled (views folded, epilogues
/// fused, tiles tuned) and merged into one loop-IR kernel per partition, or several launches.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gpu/calibration.h"
#include "core/loop/stmt.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/schedule/tune.h"

namespace souffle::schedule {

/// A partition of the plan could not be turned into a kernel (a TE no schedule template takes,
/// or stages that cannot be merged). Names the kernel and the TE.
class KernelBuildError : public std::runtime_error {
 public:
  KernelBuildError(std::string kernel, std::string te, std::string detail);
  const std::string& kernel() const { return m_kernel; }
  const std::string& te() const { return m_te; }
  const std::string& detail() const { return m_detail; }

 private:
  std::string m_kernel, m_te, m_detail;
};

/// Partition schedules (each TE's stage kernel, before the merge) kept between builds of the
/// same partition that differ only in what the merge does with them: which intermediates stay
/// in global scratch (the planner prices a kernel both ways) — scheduling does not read
/// plan::Partition::global_scratch. Holds the last few, under keys the caller gives
/// (KernelBuildOptions::schedule_key). Safe to share between threads.
class ScheduleMemo {
 public:
  ScheduleMemo();
  ~ScheduleMemo();
  ScheduleMemo(const ScheduleMemo&) = delete;
  ScheduleMemo& operator=(const ScheduleMemo&) = delete;
  struct Impl;
  Impl& impl() const { return *m_impl; }

 private:
  std::unique_ptr<Impl> m_impl;
};

/// How build_plan_kernels turns partitions into kernels beyond the schedule templates.
/// Sync modes (core/support/boundary.h): grid barriers, per-tile flags where proven, or the
/// cheaper of the two per boundary.
using SyncMode = souffle::SyncMode;
using souffle::parse_sync_mode;
using souffle::sync_mode_name;
/// Under Auto on a plan without a GPU spec (nothing to price with): flags where a consumer
/// block awaits at most this many producer blocks.
constexpr int64_t kAutoFlagTiles = 4;
/// The MergeOptions::flag_max_tiles a mode gives.
int64_t flag_max_tiles(SyncMode m);

struct KernelBuildOptions {
  /// GEMM tiles from the tuner (core/schedule/tune.h) on the plan's GPU: the tiles recorded in
  /// the plan's stages (tune_plan) when there are any, else chosen the same way on the spot.
  /// Off: config's tile for every GEMM.
  bool tune = true;
  /// A GEMM's element-wise consumers that follow it in its partition are computed in its store
  /// loop (schedule::is_epilogue); its output is written only when something else reads it.
  bool epilogues = true;
  schedule::MeasureFn measure;  ///< optional: ranks tile candidates by measured time
  size_t measure_top = 8;       ///< how many of the model's best `measure` times per GEMM
  /// Under rules and unfused, which launch without grid synchronization, a partition whose
  /// stages would need a grid barrier becomes several launches (kernelN.0, kernelN.1, ...).
  /// Off: one kernel per partition (cooperative where it needs grid barriers). plan_build
  /// (so the plan's pricing, compile_plan, verify_kernels, the code panel and the step-through)
  /// turns it on.
  bool split_launches = false;
  /// Intermediates only their partition reads that merge_stages proves block-owned live in
  /// shared memory (schedule::MergeOptions::local) within a per-block budget that keeps a
  /// cooperative grid co-resident on the plan's GPU; those the partition names in
  /// plan::Partition::global_scratch stay in global memory.
  bool shared_residents = true;
  /// A kernel of several stages that needs grid barriers is launched cooperatively, so all its
  /// blocks must be co-resident on the plan's GPU. Its grid is capped at the blocks that fit
  /// with this many registers per thread (beside its block size and shared arena): GEMM stages
  /// then loop over their tiles, grid-stride stages stride further. compile_plan keeps such a
  /// kernel within this budget by capping its registers when ptxas uses more. 0: no cap.
  int cooperative_registers = 128;
  /// Grid barriers or per-tile flags between the dependent stages of a cooperative kernel
  /// (plan_build: the plan's).
  SyncMode sync = SyncMode::Grid;
  /// A cooperative kernel's independent stages packed side by side in waves on disjoint blocks
  /// (schedule/wavefront.h) where that needs fewer barrier intervals than program order, kept
  /// when the cost model prices it below program order (on the plan's GPU). Off: program
  /// order, every stage from block 0.
  bool waves = true;
  /// GEMM stages of one cooperative kernel that multiply by the same weights (an LSTM layer's
  /// gate GEMM at each time step) keep the block's slice of them in a kernel-lifetime shared
  /// buffer (schedule/weight_panel.h) where it fits beside the stages' arenas with the grid
  /// still co-resident, kept when the cost model prices that lower. Off: every stage streams
  /// its weights through its K loop.
  bool weight_panels = true;
  /// Under SyncMode::Auto, the measured grid-barrier curve the flags are priced against (as the
  /// plan's pricer prices; null: the GPU spec's figures). Must outlive the build.
  const gpu::Calibration* calibration = nullptr;
  /// Optional, under SyncMode::Auto with a GPU spec to price on: filled with the kernels that
  /// SyncMode::Grid builds for the same partitions (auto builds each kernel's grid-barrier form
  /// on the way to pricing it against flags), so that a pricer that plans under auto and then
  /// under grid (plan.cpp compares the two cuts) builds each kernel once. Left empty where the
  /// build cannot give them (auto without a spec).
  loop::KernelSet* grid_form = nullptr;
  /// Optional: schedules kept between builds (see ScheduleMemo), under `schedule_key(p)` for
  /// partition p — a key that must name everything scheduling reads (its TEs and what reads
  /// them, stages and tiles, rows split or not, GPU, precision, strategy) and may leave out the
  /// partition's global scratch. Both or neither.
  const ScheduleMemo* schedules = nullptr;
  std::function<std::string(const plan::Partition&)> schedule_key;
  /// Optional: checked before each partition is built; when set the build throws Cancelled
  /// (core/support/cancel.h) and the partitions not yet built are not.
  const std::atomic<bool>* cancel = nullptr;
  /// Optional: told the name of each partition's kernel as its build starts (after the
  /// cancel check).
  std::function<void(const std::string&)> starting;
};

/// The schedule configuration and build options the kernels of `plan` are built with — the
/// one place they are made (the plan's pricing, compile, verify, the code panel and the
/// step-through all take them from here): the plan's precision, its GPU (tuning, co-resident
/// grids, cross-block rows), launches split where the strategy cannot grid-synchronize, the
/// cooperative register budget.
struct PlanBuild {
  ScheduleConfig config;
  KernelBuildOptions options;
};
PlanBuild plan_build(const plan::FusionPlan& plan);

/// The kernels of a plan, in partition order: each partition's TEs scheduled one by one
/// (schedule_op; a GEMM or a reduction with its epilogue TEs as one, schedule_fused /
/// schedule_reduction_fused; views folded into their readers, kernel_units.h) and merged into
/// one kernel (grid barriers between dependent stages, tensors produced inside the kernel become
/// global scratch). With options.split_launches, under rules and unfused a partition whose
/// stages would need a grid barrier becomes several launches instead (named kernelN.0,
/// kernelN.1, ...; see kernel_partition). Throws KernelBuildError.
loop::KernelSet build_plan_kernels(const plan::FusionPlan& plan, const ScheduleConfig& config = {},
                                   const KernelBuildOptions& options = {});

/// The kernels of one partition `p` of a plan over `context.program` (its strategy, GPU and
/// precision; context.partitions are not read): what build_plan_kernels builds for `p` in any
/// plan holding it, since a TE outside `p` is read or reads from another kernel either way.
loop::KernelSet build_partition_kernels(const plan::FusionPlan& context, const plan::Partition& p,
                                        const ScheduleConfig& config,
                                        const KernelBuildOptions& options);

/// The id of the partition a kernel of build_plan_kernels comes from: "kernel12" and, when the
/// partition was split into launches (strategies without grid synchronization), "kernel12.0",
/// "kernel12.1", ... give 12; -1 for another name.
int kernel_partition(const std::string& kernel_name);

/// Chooses the GEMM tiles of every partition as build_plan_kernels does and records them in the
/// plan: Stage::tiles, and the chosen tile and why in Stage::schedule ("tuned: gemm ...").
void tune_plan(plan::FusionPlan& plan, const ScheduleConfig& config = {},
               const KernelBuildOptions& options = {});

}  // namespace souffle::schedule
