#include "views/model_lifecycle.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>

#include "core/onnx/importer.h"
#include "core/support/error.h"
#include "views/edit_commands.h"
#include "views/explorer_session.h"
#include "views/graph_page.h"
#include "views/kernel_runs.h"
#include "views/kernels_page.h"
#include "views/panels.h"
#include "views/partition_table_model.h"
#include "views/plan_controller.h"
#include "views/project_controller.h"
#include "views/recent_files.h"
#include "views/step_through.h"
#include "views/step_through_mode.h"
#include "views/window_menus.h"

namespace souffle::views {

ModelLifecycle::ModelLifecycle(ExplorerSession* session, QObject* parent)
    : QObject(parent), m_session(session), m_loader(new ModelLoader(this)) {}

void ModelLifecycle::attach(const Parts& parts) {
  m_parts = parts;
  connect(m_loader, &ModelLoader::loaded, this, &ModelLifecycle::onLoaded);
  connect(m_loader, &ModelLoader::failed, this, &ModelLifecycle::onFailed);
  connect(m_loader, &ModelLoader::cancelled, this, [this](const QString& path) {
    emit busyChanged(false, {});
    m_session->say(tr("Cancelled loading %1").arg(QFileInfo(path).fileName()), 5000);
  });
}

void ModelLifecycle::addOpenActions(QMenu* file) {
  QAction* open = file->addAction(tr("&Open…"), this, &ModelLifecycle::openDialog);
  open->setShortcut(QKeySequence::Open);
  m_recent = new RecentFiles(file->addMenu(tr("Open &Recent")));
  connect(m_recent, &RecentFiles::openRequested, this, &ModelLifecycle::openModel);
  m_reload = file->addAction(tr("&Reload"), this, &ModelLifecycle::reload);
  m_reload->setShortcuts({QKeySequence(Qt::Key_F5), QKeySequence(tr("Ctrl+R"))});
  m_reload->setEnabled(false);
  file->addAction(tr("Model &inputs…"), this, &ModelLifecycle::editInputOptions)
      ->setToolTip(tr("Symbolic dims, input shapes and inputs fixed as constants (one that "
                      "decides an If), as souffle-cli's --dim, --shape and --bind"));
}

QAction* ModelLifecycle::addCloseAction(QMenu* file) {
  QAction* close = file->addAction(tr("&Close model"), this, &ModelLifecycle::closeModel);
  close->setShortcut(QKeySequence(tr("Ctrl+W")));
  return close;
}

QStringList ModelLifecycle::recentFiles() const {
  return m_recent->files();
}

void ModelLifecycle::openDialog() {
  QString dir = m_lastPath.isEmpty() ? QString() : QFileInfo(m_lastPath).absolutePath();
  QString path = QFileDialog::getOpenFileName(m_parts.dialogParent, tr("Open model"), dir,
                                              tr("ONNX models (*.onnx);;All files (*)"));
  if (!path.isEmpty()) openModel(path);
}

void ModelLifecycle::openFile(const QString& path) {
  if (path.endsWith(QLatin1String(".souffle"), Qt::CaseInsensitive))
    m_parts.project->open(path);
  else
    openModel(path);
}

void ModelLifecycle::openModel(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  if (!m_session->isFor(absolute)) {
    if (!m_parts.project->confirmLeave()) return;  // Cancel: the model on screen stays, edits too
    beginSession(absolute);
  }
  m_lastPath = absolute;
  m_reload->setEnabled(true);
  onnx_import::ImportOptions options;
  try {
    options = m_session->inputs().importOptions();
  } catch (const UserError& e) {
    LoadError err;
    err.file = absolute;
    err.reason = QString::fromStdString(e.reason());
    err.title = tr("The model inputs are malformed (File > Model inputs…)");
    showError(err);
    return;
  }
  emit busyChanged(true, tr("Loading %1…").arg(QFileInfo(path).fileName()));
  m_loader->load(m_lastPath, options);
}

void ModelLifecycle::editInputOptions() {
  if (!askInputOptions(m_parts.dialogParent, m_session)) return;
  m_parts.project->touch();
  reload();
}

void ModelLifecycle::reload() {
  if (!m_lastPath.isEmpty()) openModel(m_lastPath);
}

void ModelLifecycle::beginSession(const QString& modelPath, bool fresh) {
  const QString path = modelPath.isEmpty() ? QString() : QFileInfo(modelPath).absoluteFilePath();
  if (!fresh && m_session->isFor(path)) return;
  // A mode chosen on the welcome page (step-through before any model) is kept for the first
  // model; the state of a model never reaches the next one.
  m_session->begin(path, m_session->modelPath().isEmpty());
  m_parts.runs->setPlan(nullptr);  // the compile and the measurements shown were the model's
  if (!m_session->isStepping()) {
    m_parts.stepMode->setShown(false);  // the docks come back as they were before the mode
    m_parts.stepMode->panel()->clear();
  }
  dockOf(m_parts.imported)->hide();  // after the docks came back: it showed the model's profile
  m_session->editor()->reset();
  m_parts.project->sessionStarted();
}

void ModelLifecycle::closeModel() {
  if (!m_parts.project->confirmLeave()) return;  // Cancel: the model stays open
  m_loader->cancel();
  m_parts.plans->cancel();
  m_session->setPlan(nullptr);
  m_parts.kernels->model()->setPlan(nullptr);
  m_parts.runs->dropCompile();
  m_session->setModel(nullptr);
  beginSession(QString());
  m_parts.plans->refreshExplorerViews();
  m_parts.graph->clear();
  emit closed();
}

void ModelLifecycle::showError(const LoadError& error) {
  m_session->reportProblem(error);
  m_session->say(error.message(), 8000);
}

void ModelLifecycle::onLoaded(ModelDataPtr data, double ms) {
  m_session->setModel(std::move(data));  // Nodes, Properties, TE program; the plan is dropped
  m_parts.kernels->model()->setPlan(nullptr);
  dockOf(m_parts.error)->hide();
  if (m_afterLoad) {
    showError(*m_afterLoad);
    m_afterLoad.reset();
  }
  m_recent->add(QString::fromStdString(m_session->model()->model->path));
  emit shown(ms);
  m_parts.plans->startPlan();
  emit modelLoaded();
}

void ModelLifecycle::onFailed(const LoadError& error) {
  emit busyChanged(false, {});
  m_session->reportProblem(error);
  m_session->say(tr("Could not open %1").arg(QFileInfo(error.file).fileName()), 8000);
  emit loadFailed(error);
}

}  // namespace souffle::views
