/// \file What the window is busy with (a load, a plan, a compile, a profile, a timeline run):
/// the status bar's activity, the Cancel entry, and which work a cancel stops.
#pragma once

#include <QObject>
#include <QString>

class QAction;

namespace souffle::views {

class KernelRuns;
class ModelLifecycle;
class PlanController;
class StatusLine;
class TimelinePanel;

class Activity : public QObject {
  Q_OBJECT
 public:
  Activity(StatusLine* status, ModelLifecycle* models, PlanController* plans, KernelRuns* runs,
           TimelinePanel* timeline, QObject* parent = nullptr);
  /// The File menu's Cancel entry (Esc; enabled while a load, plan or compile runs).
  QAction* cancelAction() const { return m_cancel; }

  /// Work started (`what` is shown) or ended (the message is cleared); the activity shown
  /// follows everything that still runs.
  void setBusy(bool busy, const QString& what = {});
  /// Esc: stops a load, else a compile, else a plan.
  void cancel();
  /// The status bar's Cancel: stops a compile, else a profile, a load, a timeline run, a plan.
  void cancelAny();

 private:
  StatusLine* m_status;
  QAction* m_cancel;
  ModelLifecycle* m_models;
  PlanController* m_plans;
  KernelRuns* m_runs;
  TimelinePanel* m_timeline;
};

}  // namespace souffle::views
