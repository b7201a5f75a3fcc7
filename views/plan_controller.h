/// \file Planning the model open: the planner run off the GUI thread, a re-plan on every edit
/// and every change of the Plan tool bar, the hand-over of a new plan to the session and the
/// pages, and the docks that plan or compare only while they are on screen (Strategies, Compare
/// plans, the step-through).
#pragma once

#include <QObject>
#include <QString>
#include <functional>

#include "views/plan_runner.h"

namespace souffle::views {

class ChartsPanel;
class ComparisonView;
class DecisionEditor;
class ExplorerSession;
class GraphPage;
class KernelRuns;
class KernelsPage;
class PlanToolBar;
class ProjectController;
class StepThroughMode;
class StrategiesPage;

class PlanController : public QObject {
  Q_OBJECT
 public:
  /// What a plan is made with and handed to; all belong to the window.
  struct Parts {
    PlanToolBar* bar = nullptr;
    KernelsPage* kernels = nullptr;
    KernelRuns* runs = nullptr;
    ChartsPanel* charts = nullptr;
    GraphPage* graph = nullptr;
    StrategiesPage* strategies = nullptr;
    ComparisonView* compare = nullptr;
    StepThroughMode* stepMode = nullptr;
    ProjectController* project = nullptr;
    std::function<QString()> modelFile;  ///< the model file opened last (problems name it)
  };

  explicit PlanController(ExplorerSession* session, QObject* parent = nullptr);

  /// Connects the planner's outcomes, the edits, the tool bar and the docks that plan while
  /// shown.
  void attach(const Parts& parts);
  PlanRunner* runner() const { return m_runner; }
  bool isPlanning() const { return m_runner->isBusy(); }
  void cancel() { m_runner->cancel(); }
  /// Plans the model open with the tool bar's settings and the editor's decisions.
  void startPlan();
  /// Starts the strategies table and the step-through for the open model when their panels
  /// are visible and what they show is stale.
  void refreshExplorerViews();
  /// The comparison view, when shown, compares plans of the model, GPU, edits and precision.
  void refreshCompare();

 signals:
  /// Planning started (`what` says so) or a plan (or a refusal, or a cancel) arrived; `busy`
  /// false at the end unless the graph is still being laid out.
  void busyChanged(bool busy, const QString& what);
  /// The status bar's model and plan line is stale.
  void statusChanged();
  /// A plan arrived and its partitions are drawn (also after a refused edit).
  void planned();
  void planFailed(const QString& reason);

 private:
  void onPlanned(PlanDataPtr plan);
  void onCancelled();
  void onFailed(const QString& reason);

  ExplorerSession* m_session;
  PlanRunner* m_runner;
  Parts m_parts;
};

}  // namespace souffle::views
