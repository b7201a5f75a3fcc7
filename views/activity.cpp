#include "views/activity.h"

#include <QAction>

#include "views/kernel_runs.h"
#include "views/model_lifecycle.h"
#include "views/plan_controller.h"
#include "views/status_line.h"
#include "views/timeline_panel.h"

namespace souffle::views {

Activity::Activity(StatusLine* status, ModelLifecycle* models, PlanController* plans,
                   KernelRuns* runs, TimelinePanel* timeline, QObject* parent)
    : QObject(parent),
      m_status(status),
      m_cancel(new QAction(tr("Cancel (loading, planning, compiling)"), this)),
      m_models(models),
      m_plans(plans),
      m_runs(runs),
      m_timeline(timeline) {
  m_cancel->setShortcut(QKeySequence(Qt::Key_Escape));
  m_cancel->setEnabled(false);
  connect(m_cancel, &QAction::triggered, this, &Activity::cancel);
  connect(m_status, &StatusLine::cancelRequested, this, &Activity::cancelAny);
}

void Activity::setBusy(bool busy, const QString& what) {
  const bool compiling = m_runs->compiler()->isBusy();
  const bool planning = m_plans->isPlanning();
  m_status->setActivity(busy || planning || compiling, compiling,
                        (busy && m_models->isLoading()) || compiling || planning ||
                            m_runs->profiler()->isBusy() || m_timeline->isBusy());
  m_cancel->setEnabled(m_models->isLoading() || planning || compiling);
  if (busy && !what.isEmpty())
    m_status->say(what);
  else if (!busy)
    m_status->clearMessage();
}

void Activity::cancel() {
  if (m_models->isLoading())
    m_models->cancel();
  else if (m_runs->compiler()->isBusy())
    m_runs->cancelCompile();
  else if (m_plans->isPlanning())
    m_plans->cancel();
  setBusy(false);
}

void Activity::cancelAny() {
  if (m_runs->compiler()->isBusy())
    m_runs->cancelCompile();
  else if (m_runs->profiler()->isBusy())
    m_runs->profiler()->cancel();
  else if (m_models->isLoading())
    cancel();
  else if (m_timeline->isBusy())
    m_timeline->cancel();
  else
    m_plans->cancel();
}

}  // namespace souffle::views
