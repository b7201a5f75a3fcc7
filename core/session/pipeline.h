/// \file The pipeline's table of contents: import → fold → lower → analyze → horizontal →
/// vertical → partition → build kernels → price → emit → compile, each step named and observed
/// through the pass instrument; the CLI runs it, and it makes the plan options (with the kernel
/// pricer) for every caller that plans.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/onnx/importer.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/compile.h"
#include "core/session/load.h"

namespace souffle {

/// The pipeline's steps (plan::Step, printed by plan::step_name): import, fold, lower, analyze,
/// horizontal, vertical, re-analyze, partition, decisions, price, build kernels, emit, compile.
/// (Pricing builds each partition's kernels; build kernels builds the plan's, as compile needs
/// them.)
using plan::Step;

struct PipelineOptions {
  plan::Strategy strategy = plan::Strategy::Souffle;
  gpu::GpuSpec gpu;  ///< filled by the caller (gpu::gpu_spec("a100"))
  gpu::Precision precision = gpu::Precision::FP32;
  /// Grid barriers, per-tile flags or the cheaper per boundary (plan::PlanOptions::sync): the
  /// plan's prices, its kernels and the compile step use it.
  SyncMode sync = SyncMode::Grid;
  bool waves = true;          ///< plan::PlanOptions::waves
  bool weight_panels = true;  ///< plan::PlanOptions::weight_panels
  bool wgmma = false;         ///< plan::PlanOptions::wgmma
  plan::Decisions decisions;
  std::string calibration;  ///< a calibration file pricing the plan; empty: the spec's constants
  /// When set, prices the plan in place of the pricer made from gpu, precision and calibration
  /// (a calibration measured in memory, a pricer that reports progress).
  std::shared_ptr<const plan::KernelPricer> pricer;
  onnx_import::ImportOptions import;
  /// The last step run: lower (a loaded model), price (a plan), build kernels, emit or compile.
  /// The planner's steps run together: stopping after analyze … decisions is refused.
  Step until = Step::Price;
  /// Loading for `inspect`: a model with ops that have no lowering stops after import with
  /// LoadedModel::unsupported filled, instead of failing in lower.
  bool report_unsupported = false;
  /// When set, the plan reuses this plan's transformed program (plan::replan) where its
  /// strategy and transformation edits are the same.
  std::shared_ptr<const plan::FusionPlan> previous;
  CompileOptions compile;  ///< archs, threads, batch of the compile step (gpu: `gpu`)
  /// When set, "build kernels" first chooses every GEMM's tile with this measurement (the
  /// tuner's top candidates timed on a GPU, tune_measure.h), records the tiles in the plan's
  /// stages, and builds the kernels with them (the plan's prices stay those of its pricing).
  schedule::MeasureFn tune_measure;
  size_t tune_top = 8;  ///< candidates tune_measure times per GEMM problem
  /// The build kernels, emit and compile steps over some partitions only: those whose
  /// plan::Partition::id is listed, in plan order (the explorer's kernel cache builds what a
  /// view shows, one partition at a time). Empty: every partition. An id the plan does not
  /// have is refused (std::invalid_argument), as is a list with tune_measure (it tunes the
  /// whole plan).
  std::vector<int> partitions;
  plan::PassInstrument instrument;  ///< called before and after each step
  bool snapshots = false;           ///< printable snapshots in the records (`--dump-after`)
  /// Keep what the import, analyze and horizontal steps made (LoadedModel::imported,
  /// FusionPlan::steps), for drawing every step's graph without making it again.
  bool keep_steps = false;
};

struct PipelineResult {
  LoadedModel model;
  plan::FusionPlan plan;
  /// After "build kernels": one entry per launch (kernel, error); after "emit": CUDA C; after
  /// "compile": per-arch results, co-residency.
  CompileReport kernels;
  std::vector<plan::PassRecord> passes;  ///< every step run, in order
};

/// The plan options of `o` with the pricer that builds and prices kernels (its calibration file
/// read here, UserError naming it when bad): the one place plan options are made.
plan::PlanOptions plan_options(const PipelineOptions& o);

/// The pipeline options that plan as `po` does: its strategy, target, precision, sync, choices,
/// decisions, instrument, snapshots and pricer (plan_options of the result gives `po` back, but
/// for a null pricer, which in a pipeline means the shared pricer of the gpu and precision).
PipelineOptions pipeline_options(const plan::PlanOptions& po);

/// The pricer of `po` (plan_options made it) as compile takes it, so that compile reuses the
/// kernels the plan's pricing built (CompileOptions::pricer); null when `po` has none.
std::shared_ptr<const schedule::PlanPricer> kernel_pricer(const plan::PlanOptions& po);

/// Runs the steps on the model at `path` up to `o.until`: the one way a model is loaded, planned,
/// built, emitted and compiled. UserError (file, node, reason) for a model, spec or calibration
/// file it cannot take; kernel errors land in their entries.
PipelineResult run_pipeline(const std::string& path, const PipelineOptions& o);

/// run_pipeline over the bytes of a model file in memory; `file` names it in errors and anchors
/// external-data paths.
PipelineResult run_pipeline_bytes(std::string_view bytes, const std::string& file,
                                  const PipelineOptions& o);

/// run_pipeline from analyze on, over a model loaded before (one load planned many ways):
/// `o.until` is price or later, and the result's model is left empty (the caller's is used).
PipelineResult run_pipeline(const LoadedModel& model, const PipelineOptions& o);

/// run_pipeline from build kernels on, over a plan made before: its kernels built with
/// `o.compile`'s pricer and sync mode, then emitted and compiled up to `o.until` (build kernels
/// or later; no tune_measure). The result's model and plan are left empty.
PipelineResult run_pipeline(const plan::FusionPlan& plan, const PipelineOptions& o);

/// run_pipeline from `from` on (emit or compile, up to `o.until`), over kernels of `plan` an
/// earlier run built (from emit) or built and emitted (from compile), taken as they are: what
/// the explorer's kernel cache runs on the kernels it keeps, and on a source the user planted
/// (`o.partitions` is not read: the kernels are those given). The result's model and plan are
/// left empty; its kernels are `kernels` after the steps.
PipelineResult run_pipeline(const plan::FusionPlan& plan, std::vector<CompiledKernel> kernels,
                            Step from, const PipelineOptions& o);

/// The loop-IR kernels compile ships for `plan`, as one set (the plan program's inputs and
/// outputs): run_pipeline's build-kernels step over the plan with `o.compile`'s pricer and sync
/// mode (o.until is taken as build kernels). The first kernel that cannot be built leaves the
/// set incomplete and names itself in `failed` with its error.
struct ShippedKernels {
  loop::KernelSet set;
  std::string failed;  ///< the kernel that could not be built; empty when all were
  std::string error;
  bool ok() const { return failed.empty(); }
};
ShippedKernels shipped_kernels(const plan::FusionPlan& plan, PipelineOptions o);

}  // namespace souffle
