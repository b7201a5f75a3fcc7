#include "views/export_actions.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QWidget>
#include <nlohmann/json.hpp>

#include "core/session/profile.h"
#include "views/edit_commands.h"
#include "views/explorer_session.h"
#include "views/kernel_runs.h"
#include "views/plan_export.h"

namespace souffle::views {

ExportActions::ExportActions(ExplorerSession* session, DecisionEditor* editor, KernelRuns* runs,
                             QWidget* window)
    : QObject(window), m_session(session), m_editor(editor), m_runs(runs), m_window(window) {}

QList<QAction*> ExportActions::addTo(QMenu* menu) {
  QAction* planJson = menu->addAction(tr("Plan &JSON…"), this, [this] { exportPlanJson(); });
  planJson->setShortcut(QKeySequence(tr("Ctrl+Shift+J")));
  QAction* bundle = menu->addAction(tr("Kernel &bundle…"), this, [this] { exportBundle(); });
  bundle->setStatusTip(
      tr("Compile the plan's kernels and write .cu/.ptx files, the weights, "
         "the test data and a host harness that builds with nvcc"));
  QAction* report =
      menu->addAction(tr("&Report (HTML, JSON, CSV, DOT)…"), this, [this] { exportReport(); });
  report->setStatusTip(
      tr("A report of the plan to share: kernels, reasons, figures, graph, "
         "charts and CUDA, before and after your edits"));
  QAction* walk =
      menu->addAction(tr("&Walk-through (HTML pages)…"), this, [this] { exportWalkthrough(); });
  return {planJson, bundle, report, walk};
}

QString ExportActions::beside() const {
  const QFileInfo model(m_session->modelPath());
  return model.absolutePath() + QLatin1Char('/') + model.baseName();
}

bool ExportActions::exportPlanJson(const QString& given) {
  const PlanDataPtr plan = m_session->plan();
  if (!plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(m_window, tr("Export plan as JSON"),
                                        beside() + QStringLiteral("-%1.json").arg(plan->strategy),
                                        tr("JSON (*.json)"));
  if (path.isEmpty()) return false;
  const ExportOutcome o = writePlanJson(*plan->plan, m_session->modelPath().toStdString(), path);
  m_session->say(o.message, o.ok ? 4000 : 8000);
  return o.ok;
}

bool ExportActions::exportBundle(const QString& given) {
  const PlanDataPtr plan = m_session->plan();
  if (!plan || !plan->plan) return false;
  QString dir = given;
  if (dir.isEmpty())
    dir = QFileDialog::getExistingDirectory(m_window, tr("Export the kernel bundle into"),
                                            QFileInfo(m_session->modelPath()).absolutePath());
  if (dir.isEmpty()) return false;
  m_session->say(tr("Exporting the kernel bundle to %1…").arg(dir));
  runExport(
      this,
      [plan = plan->plan, model = m_session->modelPath().toStdString(), out = dir.toStdString()] {
        return writeBundle(*plan, model, out);
      },
      [this](const ExportOutcome& o) {
        m_session->say(o.message, o.ok ? 8000 : 0);
        emit bundleExported(o.ok, o.message);
      });
  return true;
}

bool ExportActions::exportReport(const QString& given) {
  const PlanDataPtr plan = m_session->plan();
  if (!plan || !plan->plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(
        m_window, tr("Export a report"),
        beside() + QStringLiteral("-%1-report.html").arg(plan->strategy),
        tr("HTML (*.html);;JSON (*.json);;CSV (*.csv);;Graphviz DOT (*.dot)"));
  if (path.isEmpty()) return false;
  m_session->say(tr("Writing the report %1…").arg(QFileInfo(path).fileName()));
  // The profile run of the plan on screen goes with it (with edits: on the plan after them).
  std::string measured;
  if (ProfileDataPtr p = m_runs->profileData(); p && p->plan == plan)
    measured = nlohmann::json{{"strategies", {profile_report_json(p->report)}}}.dump();
  runExport(
      this,
      [plan = plan->plan, edits = m_editor->decisions(),
       model = m_session->modelPath().toStdString(), out = path.toStdString(),
       measured] { return writeReport(*plan, edits, model, out, measured); },
      [this](const ExportOutcome& o) {
        m_session->say(o.message, o.ok ? 8000 : 0);
        emit reportExported(o.ok, o.message);
      });
  return true;
}

bool ExportActions::exportWalkthrough(const QString& given) {
  const PlanDataPtr plan = m_session->plan();
  if (!plan || !plan->plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(
        m_window, tr("Export the walk-through (the first page; the others go beside it)"),
        beside() + QStringLiteral("-steps.html"), tr("HTML (*.html)"));
  if (path.isEmpty()) return false;
  m_session->say(tr("Writing the walk-through %1…").arg(QFileInfo(path).fileName()));
  runExport(
      this,
      [plan = plan->plan, decisions = m_editor->decisions(),
       model = m_session->modelPath().toStdString(),
       out = path.toStdString()] { return writeWalkthrough(*plan, decisions, model, out); },
      [this](const ExportOutcome& o) {
        m_session->say(o.message, o.ok ? 8000 : 0);
        emit reportExported(o.ok, o.message);
      });
  return true;
}

}  // namespace souffle::views
