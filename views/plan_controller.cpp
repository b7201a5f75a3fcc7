#include "views/plan_controller.h"

#include <QDockWidget>

#include "views/charts_panel.h"
#include "views/comparison_view.h"
#include "views/edit_commands.h"
#include "views/explorer_session.h"
#include "views/graph_page.h"
#include "views/graph_view.h"
#include "views/kernel_runs.h"
#include "views/kernels_page.h"
#include "views/partition_table_model.h"
#include "views/plan_toolbar.h"
#include "views/project_controller.h"
#include "views/step_through.h"
#include "views/step_through_mode.h"
#include "views/strategies_page.h"

namespace souffle::views {

PlanController::PlanController(ExplorerSession* session, QObject* parent)
    : QObject(parent), m_session(session), m_runner(new PlanRunner(this)) {}

void PlanController::attach(const Parts& parts) {
  m_parts = parts;
  connect(m_runner, &PlanRunner::planned, this, &PlanController::onPlanned);
  connect(m_runner, &PlanRunner::progress, this,
          [this](const QString& what) { m_session->say(what); });
  connect(m_runner, &PlanRunner::cancelled, this, &PlanController::onCancelled);
  connect(m_runner, &PlanRunner::failed, this, &PlanController::onFailed);
  // Every change of the decisions re-plans at once (off the GUI thread); a new edit is planned
  // before it becomes a step.
  connect(m_session->editor(), &DecisionEditor::changed, this, [this] { startPlan(); });
  connect(m_session->editor(), &DecisionEditor::proposed, this, [this] { startPlan(); });
  connect(m_parts.bar, &PlanToolBar::settingsChanged, this, [this] { startPlan(); });

  // The docks that plan or compare only while they are shown.
  connect(m_parts.strategies, &StrategiesPage::strategyChosen, this, [this](const QString& name) {
    if (name != m_parts.bar->strategy()) m_parts.bar->setStrategy(name);
  });
  // A dock tabbed behind another still says isVisible(); "onScreen" follows its tab.
  QDockWidget* strategies = dockOf(m_parts.strategies);
  connect(strategies, &QDockWidget::visibilityChanged, this, [this, strategies](bool on) {
    strategies->setProperty("onScreen", on);
    if (on) refreshExplorerViews();
  });
  QDockWidget* compare = dockOf(m_parts.compare);
  connect(compare, &QDockWidget::visibilityChanged, this, [this, compare](bool visible) {
    compare->setProperty("onScreen", visible);
    if (visible) refreshCompare();
  });
}

void PlanController::startPlan() {
  if (!m_session->model()) return;
  const QString strategy = m_parts.bar->strategy(), gpu = m_parts.bar->gpu();
  m_runner->start(m_session->model(), m_parts.bar->strategyValue(), gpu,
                  m_session->editor()->planned(), m_session->plan(), m_parts.bar->precisionValue(),
                  m_parts.bar->syncValue());
  emit busyChanged(true, tr("Planning (%1 on %2)…").arg(strategy, gpu));
  emit statusChanged();
}

void PlanController::onPlanned(PlanDataPtr plan) {
  if (!plan || plan->model != m_session->model()) return;  // for a model no longer open
  QString editMessage;
  if (m_session->editor()->hasProposal()) {
    // A new edit was planned: refused, it changes nothing (no plan, no undo step); else it
    // becomes a step named with the change in estimated time it brought.
    const PlanDataPtr before = m_session->plan();
    const QString refused = m_session->editor()->settle(
        *plan->plan, before && before->plan ? before->plan.get() : nullptr, &editMessage);
    if (!refused.isEmpty()) {
      emit busyChanged(false, {});
      emit statusChanged();
      m_session->say(tr("Refused, nothing changed: %1").arg(refused), 20000);
      emit planned();
      return;
    }
  }
  m_parts.kernels->model()->setPlan(plan);
  refreshExplorerViews();
  // The last compile is dropped; a measurement of this very plan comes back.
  const QString dropped = m_parts.runs->setPlan(plan);
  // Properties, Transformations, the graph, code, charts, timeline, memory.
  m_session->setPlan(std::move(plan));
  if (ProfileDataPtr kept = m_parts.runs->profileData()) {
    m_parts.kernels->model()->setProfile(kept);
    m_parts.charts->setProfile(kept);
  }
  if (!dropped.isEmpty()) {
    // A kept run this build cannot read (a colleague's project, a hand edit) is named in the
    // problems panel; the plan and the user's edits stay.
    LoadError e;
    e.title = tr("A kept profile run was dropped");
    e.file = m_parts.project->path().isEmpty() ? m_parts.modelFile() : m_parts.project->path();
    e.reason = tr("a kept profile run of this plan cannot be read and is dropped: %1").arg(dropped);
    m_session->reportProblem(e);
    m_session->say(e.message(), 8000);
  }
  refreshCompare();
  m_parts.graph->applyPlan();
  emit busyChanged(!m_parts.graph->panel()->isFinal(), {});
  emit statusChanged();
  if (!editMessage.isEmpty())
    m_session->say(editMessage, 15000);
  else
    m_session->say(tr("Planned in %1 ms").arg(m_session->plan()->ms, 0, 'f', 0), 4000);
  // Kernels compiled before an edit keep their figures.
  m_parts.runs->compiler()->startCachedOnly(m_session->plan());
  emit planned();
}

void PlanController::onCancelled() {
  if (m_session->editor()->hasProposal()) m_session->editor()->reject();
  // The selectors show the plan that stays on screen.
  if (m_session->plan()) m_parts.bar->showPlan(*m_session->plan());
  emit busyChanged(false, {});
  emit statusChanged();
  m_session->say(tr("Planning cancelled: the plan on screen stays"), 8000);
}

void PlanController::onFailed(const QString& reason) {
  emit busyChanged(false, {});
  LoadError e;
  e.file = m_parts.modelFile();
  e.reason =
      tr("planning (%1 on %2) failed: %3").arg(m_parts.bar->strategy(), m_parts.bar->gpu(), reason);
  m_session->reportProblem(e);
  emit planFailed(reason);
}

void PlanController::refreshCompare() {
  QDockWidget* dock = dockOf(m_parts.compare);
  if (m_session->model() && dock->isVisible() && dock->property("onScreen").toBool())
    m_parts.compare->setContext(m_session->model(), m_parts.bar->gpu(),
                                m_session->editor()->decisions(), m_parts.bar->strategy(),
                                m_parts.bar->precisionValue());
}

void PlanController::refreshExplorerViews() {
  if (!m_parts.stepMode) return;  // not attached yet
  const PlanToolBar* bar = m_parts.bar;
  QDockWidget* dock = dockOf(m_parts.strategies);
  m_parts.strategies->refresh(m_session->model(), bar->strategy(), bar->gpu(),
                              bar->precisionValue(),
                              dock->isVisible() && dock->property("onScreen").toBool());
  StepThroughPanel* steps = m_parts.stepMode->panel();
  if (!m_session->model()) {
    steps->clear();
    return;
  }
  const QString path = QString::fromStdString(m_session->model()->model->path);
  // The step-through follows the plan on screen: its precision and decisions, as compile.
  const plan::Decisions& decisions = m_session->editor()->decisions();
  const QString strategy = bar->strategy(), gpu = bar->gpu(), precision = bar->precision();
  const ModelInputs inputs = m_session->inputs();
  if (m_parts.stepMode->isShown() &&
      steps->runKey() != StepThroughPanel::keyOf(path, strategy, gpu, precision, decisions, inputs))
    steps->start(path, strategy, gpu, precision, decisions, inputs);
}

}  // namespace souffle::views
