/// \file Plans a loaded model on a worker thread (strategy x GPU) and maps the kernels onto the
/// boxes of both graphs; stale results are dropped like the model loader's.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "core/gpu/calibration.h"
#include "core/plan/plan.h"
#include "core/session/pipeline.h"
#include "views/boundary_edges.h"
#include "views/kernel_identity.h"
#include "views/scene_graph.h"

namespace souffle::views {

/// A plan and where its kernels sit in the drawn graphs. Built off the GUI thread, read-only.
struct PlanData {
  ModelDataPtr model;  ///< the model the plan belongs to
  std::shared_ptr<const plan::FusionPlan> plan;
  QString strategy, gpu;
  /// Per box of the op-level / TE-level SceneGraph: indices into plan->partitions, in
  /// ascending order; empty for inputs, outputs and nodes without TEs. More than one entry
  /// means the node's TEs were split over several kernels.
  std::vector<std::vector<int>> opKernels, teKernels;
  /// Per edge (from box, to box) of the op-level / TE-level SceneGraph inside one kernel: the
  /// strongest stage boundary between its producer's and its consumer's stages.
  EdgeKinds opEdgeKinds, teEdgeKinds;
  /// Per partition: its name and colour, kept by a kernel an edit does not touch.
  std::vector<KernelIdentity> identities;
  double ms = 0;

  const std::vector<std::vector<int>>& kernelsOf(bool teLevel) const {
    return teLevel ? teKernels : opKernels;
  }
  const EdgeKinds& edgeKindsOf(bool teLevel) const { return teLevel ? teEdgeKinds : opEdgeKinds; }
  /// Boxes of `graph` (op or TE level) that hold a TE of partition `kernel`.
  std::vector<int> boxesOf(bool teLevel, int kernel) const;
};
using PlanDataPtr = std::shared_ptr<const PlanData>;

struct PlanOutcome {
  PlanDataPtr data;
  QString error;
  bool cancelled = false;
  bool ok() const { return data != nullptr; }
};

/// What a plan in flight has done, read by the GUI thread; `cancel` stops it at its next price.
struct PlanProgress {
  std::atomic<bool> cancel{false};
  std::atomic<int> priced{0};  ///< partitions (and candidates) priced
  std::atomic<int> built{0};   ///< of them, built for it (not found priced)
};

/// Maps a plan's partitions onto the boxes of `model`'s graphs. Pure.
PlanDataPtr buildPlanData(ModelDataPtr model, std::shared_ptr<const plan::FusionPlan> plan);

class PlanRunner : public QObject {
  Q_OBJECT
 public:
  explicit PlanRunner(QObject* parent = nullptr);
  ~PlanRunner() override;

  /// Starts planning `model`; a plan in progress becomes stale.
  void start(ModelDataPtr model, plan::Strategy strategy, const QString& gpu);
  void cancel();
  bool isBusy() const { return m_busy; }

  /// The synchronous body of a plan, for tests and tools: never throws.
  static PlanOutcome run(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
                         gpu::Precision precision = gpu::Precision::FP32);

  /// Starts planning under the user's decisions; when `previous` planned the same model, it is
  /// re-planned (its transformed program and analysis reused when the options allow).
  void start(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
             const plan::Decisions& decisions, PlanDataPtr previous = {},
             gpu::Precision precision = gpu::Precision::FP32, SyncMode sync = SyncMode::Grid);
  /// The synchronous body of a plan with decisions (refused ones are in plan->refused); with
  /// `progress`, its pricing is counted there and stops (cancelled) once progress->cancel is set.
  static PlanOutcome runWith(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
                             const plan::Decisions& decisions, PlanDataPtr previous,
                             gpu::Precision precision = gpu::Precision::FP32,
                             std::shared_ptr<PlanProgress> progress = {},
                             SyncMode sync = SyncMode::Grid);
  /// The plan options every view plans with (the pipeline's, priced from built kernels whose
  /// builds the session's kernel cache keeps). Throws UserError for an unknown GPU.
  /// The calibration every plan of this process is priced with (a file souffle-runner
  /// measured; `--calibration FILE` of the CLI), or none: the GPU spec's constants.
  static void setCalibration(std::optional<gpu::Calibration> calibration);
  static std::optional<gpu::Calibration> calibration();
  static PipelineOptions options(plan::Strategy strategy, const QString& gpu,
                                 const plan::Decisions& decisions,
                                 gpu::Precision precision = gpu::Precision::FP32,
                                 SyncMode sync = SyncMode::Grid);

 signals:
  void planned(souffle::views::PlanDataPtr data);
  void failed(const QString& reason);
  /// While planning, about three times a second: what it has done ("… 120 partitions priced
  /// (31 built), 12 s").
  void progress(const QString& what);
  /// A cancel() took effect (at once; the worker stops at its next price).
  void cancelled();

 private:
  QFutureWatcher<PlanOutcome>* m_watcher;
  QTimer* m_ticker;
  std::shared_ptr<PlanProgress> m_progress;
  quint64 m_generation = 0;
  bool m_busy = false;
  QString m_what;
  QElapsedTimer m_timer;
};

}  // namespace souffle::views
