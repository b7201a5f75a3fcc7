/// \file Plans a loaded model on a worker thread (strategy x GPU) and maps the kernels onto the
/// boxes of both graphs; stale results are dropped like the model loader's.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "core/plan/plan.h"
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
  double ms = 0;

  const std::vector<std::vector<int>>& kernelsOf(bool teLevel) const {
    return teLevel ? teKernels : opKernels;
  }
  /// Boxes of `graph` (op or TE level) that hold a TE of partition `kernel`.
  std::vector<int> boxesOf(bool teLevel, int kernel) const;
};
using PlanDataPtr = std::shared_ptr<const PlanData>;

struct PlanOutcome {
  PlanDataPtr data;
  QString error;
  bool ok() const { return data != nullptr; }
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
  static PlanOutcome run(ModelDataPtr model, plan::Strategy strategy, const QString& gpu);

  /// Starts planning under the user's decisions; when `previous` planned the same model, it is
  /// re-planned (its transformed program and analysis reused when the options allow).
  void start(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
             const plan::Decisions& decisions, PlanDataPtr previous = {},
             gpu::Precision precision = gpu::Precision::FP32);
  /// The synchronous body of a plan with decisions (refused ones are in plan->refused).
  static PlanOutcome runWith(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
                             const plan::Decisions& decisions, PlanDataPtr previous,
                             gpu::Precision precision = gpu::Precision::FP32);
  /// The plan options every view plans with (the pipeline's, priced from built kernels whose
  /// builds the session's kernel cache keeps). Throws UserError for an unknown GPU.
  static plan::PlanOptions options(plan::Strategy strategy, const QString& gpu,
                                   const plan::Decisions& decisions,
                                   gpu::Precision precision = gpu::Precision::FP32);

 signals:
  void planned(souffle::views::PlanDataPtr data);
  void failed(const QString& reason);

 private:
  QFutureWatcher<PlanOutcome>* m_watcher;
  quint64 m_generation = 0;
  bool m_busy = false;
  QElapsedTimer m_timer;
};

/// The fill colour of kernel `id`: a stable hue per id (golden-ratio steps, so neighbours
/// differ), light pastels or dark mid-tones.
QColor kernelColor(int id, bool dark);

}  // namespace souffle::views
