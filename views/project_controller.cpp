#include "views/project_controller.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QStandardPaths>
#include <QStatusBar>
#include <nlohmann/json.hpp>

#include "core/gpu/calibration.h"
#include "core/support/error.h"
#include "views/edit_commands.h"
#include "views/explorer_session.h"
#include "views/graph_page.h"
#include "views/model_lifecycle.h"
#include "views/panels.h"
#include "views/plan_controller.h"
#include "views/plan_runner.h"
#include "views/plan_toolbar.h"
#include "views/timeline_panel.h"

namespace souffle::views {

namespace {

const char* kFilter = "Souffle projects (*.souffle);;All files (*)";

/// The path stored inside an autosave: the project it was saved from, so a restore can keep it.
const char* kOriginKey = "autosave_of";

QString autosaveFolder() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
}

/// This process's instances so far: tests open several windows in one process.
int nextInstance() {
  static int n = 0;
  return n++;
}

QString lockPathOf(const QString& autosave) {
  return autosave + QStringLiteral(".lock");
}

/// Where an autosave keeps the emulator run's timeline records (autosave-1-0.timeline/).
QString recordsDirOf(const QString& autosave) {
  return autosave.left(autosave.size() - qsizetype(QStringLiteral(".souffle").size())) +
         QStringLiteral(".timeline");
}

LoadError projectError(const QString& file, const UserError& e) {
  LoadError err;
  err.file = file;
  err.node = QString::fromStdString(e.node());
  err.reason = QString::fromStdString(e.reason());
  return err;
}

}  // namespace

ProjectController::ProjectController(const Parts& parts)
    : QObject(parts.window),
      m_parts(parts),
      m_autosavePath(autosaveFolder() + QStringLiteral("/autosave-%1-%2.souffle")
                                            .arg(QCoreApplication::applicationPid())
                                            .arg(nextInstance())) {
  m_timer.setSingleShot(true);
  m_timer.setInterval(2000);
  connect(&m_timer, &QTimer::timeout, this, &ProjectController::writeAutosave);
  connect(parts.session->editor(), &DecisionEditor::changed, this, &ProjectController::touch);
  connect(parts.plans, &PlanController::planned, this, &ProjectController::touch);
  connect(parts.plans, &PlanController::planFailed, this, &ProjectController::touch);
  connect(parts.models, &ModelLifecycle::modelLoaded, this, &ProjectController::touch);
  // A timeline arrived or went (the project remembers its record files).
  connect(parts.session, &ExplorerSession::measuredChanged, this, &ProjectController::touch);
  // A profile run arrived (the project keeps the runs).
  connect(parts.session, &ExplorerSession::profiled, this, &ProjectController::touch);
}

QList<QAction*> ProjectController::addActions(QMenu* file) {
  file->addAction(tr("Open &Project…"), this, &ProjectController::openDialog)
      ->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
  QAction* save = file->addAction(tr("&Save Project"), this, [this] { this->save(); });
  save->setShortcut(QKeySequence::Save);
  QAction* saveAs = file->addAction(tr("Save Project &As…"), this, &ProjectController::saveAs);
  saveAs->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
  return {save, saveAs};
}

QString ProjectController::modelPath() const {
  return m_parts.models->lastPath();
}

ProjectController::~ProjectController() {
  m_timer.stop();
}

QStringList ProjectController::orphanedAutosaves() {
  QStringList out;
  const QDir dir(autosaveFolder());
  for (const QFileInfo& f :
       dir.entryInfoList({QStringLiteral("autosave*.souffle")}, QDir::Files, QDir::Time)) {
    // The instance that wrote it holds its lock while it runs. A lock left behind by a process
    // that is gone is stale, whatever its age (0: never stale by age alone).
    QLockFile lock(lockPathOf(f.absoluteFilePath()));
    lock.setStaleLockTime(0);
    if (!lock.tryLock(0)) continue;
    lock.unlock();
    out << f.absoluteFilePath();
  }
  return out;
}

void ProjectController::discardOrphanedAutosaves() {
  for (const QString& f : orphanedAutosaves()) {
    QFile::remove(f);
    QFile::remove(lockPathOf(f));  // stale: its instance is gone
    QDir(recordsDirOf(f)).removeRecursively();
  }
}

void ProjectController::sessionStarted() {
  m_path.clear();
  m_saved = Project{};
  m_hasSaved = false;
  updateTitle();
}

Project ProjectController::snapshot() const {
  Project p;
  p.model = modelPath().toStdString();
  p.strategy = m_parts.bar->strategy().toStdString();
  p.gpu = m_parts.bar->gpu().toStdString();
  p.precision = m_parts.bar->precision().toStdString();
  p.sync = m_parts.bar->sync().toStdString();
  p.te_level = m_parts.graph->isTeLevel();
  p.decisions = m_parts.session->editor()->decisions();
  p.measurements = m_parts.session->measurements();
  if (std::optional<gpu::Calibration> c = PlanRunner::calibration()) p.calibration = c->file;
  for (const QString& d : m_parts.session->inputDims()) p.dims.push_back(d.toStdString());
  for (const QString& b : m_parts.session->inputBinds()) p.bind.push_back(b.toStdString());
  for (const QString& s : m_parts.session->inputShapes()) p.shapes.push_back(s.toStdString());
  if (const TimelinePanel* t = m_parts.timeline) {
    for (const QString& f : t->recordFiles()) p.timeline.push_back(f.toStdString());
    if (!p.timeline.empty()) p.timeline_plan = t->recordPlanKey().toStdString();
  }
  return p;
}

bool ProjectController::isModified() const {
  const Project now = snapshot();
  if (m_hasSaved) return !(now == m_saved);
  // Never saved: modified once it records anything beyond a plain model.
  return !now.decisions.edits.empty();
}

void ProjectController::touch() {
  updateTitle();
  if (m_autosave && !modelPath().isEmpty()) m_timer.start();
}

void ProjectController::updateTitle() {
  const QString model = QFileInfo(modelPath()).fileName();
  QString name = m_path.isEmpty() ? model : QFileInfo(m_path).fileName();
  if (name.isEmpty()) {
    m_parts.window->setWindowTitle(tr("Souffle Explorer"));
  } else {
    if (!m_path.isEmpty() && !model.isEmpty()) name += QStringLiteral(" (%1)").arg(model);
    m_parts.window->setWindowTitle(tr("%1[*] — Souffle Explorer").arg(name));
  }
  m_parts.window->setWindowModified(isModified());
}

void ProjectController::writeAutosave() {
  Project p = snapshot();
  if (p.model.empty()) return;
  // The emulator run's records live in the panel's temporary folder, which a crash removes:
  // the autosave names copies beside itself.
  if (const TimelinePanel* t = m_parts.timeline; t && !p.timeline.empty()) {
    p.timeline.clear();
    for (const QString& f : t->copyKeptRecords(recordsDirOf(autosavePath())))
      p.timeline.push_back(f.toStdString());
  }
  QDir().mkpath(QFileInfo(autosavePath()).absolutePath());
  if (!m_lock) {
    // Locked before the first write: another instance never takes it for an orphan.
    m_lock = std::make_unique<QLockFile>(lockPathOf(autosavePath()));
    m_lock->setStaleLockTime(0);
    if (!m_lock->tryLock(0)) {
      m_lock.reset();
      return;
    }
  }
  QSaveFile f(autosavePath());
  if (!f.open(QIODevice::WriteOnly)) return;
  // Absolute model path (no project folder to be relative to), plus where it came from.
  nlohmann::json j = nlohmann::json::parse(project_to_json(p, ""));
  if (!m_path.isEmpty()) j[kOriginKey] = m_path.toStdString();
  const std::string text = j.dump(2) + "\n";
  f.write(text.data(), qint64(text.size()));
  if (f.commit()) emit autosaved(autosavePath());
}

bool ProjectController::apply(const Project& p, const QString& path, bool asSaved) {
  const QString model = QString::fromStdString(p.model);
  // The project is a session of its own, even of the model open (its state replaces it).
  m_parts.models->beginSession(model, true);
  m_path = path;
  m_saved = p;
  m_hasSaved = asSaved;
  m_parts.session->editor()->reset(p.decisions);
  m_parts.session->setMeasurements(p.measurements);
  // The project's calibration prices its plans; one that cannot be read is reported and the
  // spec's constants stand (the rest of the project opens).
  PlanRunner::setCalibration(std::nullopt);
  if (!p.calibration.empty()) {
    try {
      PlanRunner::setCalibration(gpu::load_calibration(p.calibration));
    } catch (const UserError& e) {
      LoadError err = projectError(QString::fromStdString(p.calibration), e);
      err.title =
          tr("The project's calibration could not be read: the GPU spec's constants "
             "price its plans");
      m_parts.models->showErrorAfterLoad(err);
    }
  }
  m_parts.bar->setStrategy(QString::fromStdString(p.strategy));
  m_parts.bar->setGpu(QString::fromStdString(p.gpu));
  m_parts.bar->setPrecision(QString::fromStdString(p.precision));
  m_parts.bar->setSync(QString::fromStdString(p.sync));
  m_parts.graph->setTeLevel(p.te_level);
  auto list = [](const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v) out << QString::fromStdString(s);
    return out;
  };
  m_parts.session->setInputOptions(list(p.dims), list(p.bind), list(p.shapes));
  // The timeline's records are read once the project's plan is on screen, if it is their plan.
  if (TimelinePanel* t = m_parts.timeline; t && !p.timeline.empty())
    t->restoreRecords(list(p.timeline), QString::fromStdString(p.timeline_plan));
  // A model that fails to load keeps the decisions; the error panel names the path tried.
  m_parts.models->openModel(model);
  updateTitle();
  return true;
}

bool ProjectController::open(const QString& given) {
  const QString path = QFileInfo(given).absoluteFilePath();
  Project p;
  try {
    p = read_project(path.toStdString());
  } catch (const UserError& e) {
    m_parts.models->showError(projectError(path, e));
    emit openFailed(projectError(path, e));
    return false;
  }
  if (!confirmLeave()) return false;  // Cancel: what is open stays
  apply(p, path, true);
  emit opened(path);
  return true;
}

bool ProjectController::save(const QString& given) {
  QString path = given.isEmpty() ? m_path : given;
  if (path.isEmpty()) {
    if (!m_interactive) return false;
    return saveAs();
  }
  if (!path.endsWith(QLatin1String(".souffle"))) path += QStringLiteral(".souffle");
  path = QFileInfo(path).absoluteFilePath();
  if (!keepTimeline(path)) return false;
  const Project p = snapshot();
  try {
    save_project(p, path.toStdString());
  } catch (const UserError& e) {
    m_parts.models->showError(projectError(path, e));
    return false;
  }
  m_path = path;
  m_saved = p;
  m_hasSaved = true;
  updateTitle();
  m_parts.window->statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), 4000);
  emit saved(path);
  return true;
}

bool ProjectController::keepTimeline(const QString& path) {
  TimelinePanel* t = m_parts.timeline;
  if (!t) return true;
  QStringList files = t->recordFiles();
  bool moved = false;
  const QFileInfo project(path);
  const QString dir =
      project.absolutePath() + QLatin1Char('/') + project.completeBaseName() + ".timeline";
  const QString autosaved = recordsDirOf(autosavePath()) + QLatin1Char('/');
  for (QString& f : files) {
    if (!t->isKept(f) && !f.startsWith(autosaved)) continue;
    const QString to = dir + QLatin1Char('/') + QFileInfo(f).fileName();
    QFile::remove(to);
    if (!QDir().mkpath(dir) || !QFile::copy(f, to)) {
      LoadError err;
      err.file = to;
      err.title = tr("The project was not saved");
      err.reason = tr("cannot copy the timeline's records %1 beside the project").arg(f);
      m_parts.models->showError(err);
      return false;
    }
    f = to;
    moved = true;
  }
  if (moved) t->relocateRecords(files);
  return true;
}

bool ProjectController::saveAs() {
  QString dir =
      m_path.isEmpty() ? QFileInfo(modelPath()).absolutePath() : QFileInfo(m_path).absolutePath();
  const QString suggested =
      m_path.isEmpty()
          ? dir + QLatin1Char('/') + QFileInfo(modelPath()).baseName() + QStringLiteral(".souffle")
          : m_path;
  const QString path =
      QFileDialog::getSaveFileName(m_parts.window, tr("Save project"), suggested, tr(kFilter));
  return !path.isEmpty() && save(path);
}

void ProjectController::openDialog() {
  const QString path = QFileDialog::getOpenFileName(m_parts.window, tr("Open project"),
                                                    QFileInfo(m_path).absolutePath(), tr(kFilter));
  if (!path.isEmpty()) open(path);
}

bool ProjectController::readAutosave(const QString& file, Project* p, QString* origin) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return false;
  const std::string text = f.readAll().toStdString();
  try {
    *p = parse_project(text, file.toStdString());
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() && j.contains(kOriginKey) && j[kOriginKey].is_string())
      *origin = QString::fromStdString(j[kOriginKey].get<std::string>());
  } catch (const UserError& e) {
    m_parts.models->showError(projectError(file, e));
    emit openFailed(projectError(file, e));
    return false;
  }
  return true;
}

void ProjectController::adoptAutosaveRecords(const QString& file, Project* p) {
  // The restored autosave's records become this instance's (its autosave names them there).
  const QString from = recordsDirOf(file), to = recordsDirOf(autosavePath());
  if (!QFileInfo::exists(from)) return;
  QDir(to).removeRecursively();
  if (!QDir().rename(from, to)) return;
  for (std::string& f : p->timeline) {
    const QString q = QString::fromStdString(f);
    if (q.startsWith(from + QLatin1Char('/'))) f = (to + q.mid(from.size())).toStdString();
  }
}

bool ProjectController::restoreAutosave() {
  const QStringList orphans = orphanedAutosaves();
  if (orphans.isEmpty()) return false;
  const QString file = orphans.front();
  Project p;
  QString origin;
  if (!readAutosave(file, &p, &origin)) return false;
  QFile::remove(file);  // this instance autosaves it from now on, under its own name
  QFile::remove(lockPathOf(file));
  adoptAutosaveRecords(file, &p);
  apply(p, origin, false);
  updateTitle();
  touch();
  return true;
}

void ProjectController::discardAutosave() {
  m_timer.stop();
  QFile::remove(autosavePath());
  QDir(recordsDirOf(autosavePath())).removeRecursively();
}

bool ProjectController::confirmLeave() {
  if (!m_interactive || modelPath().isEmpty() || !isModified()) return true;
  const QMessageBox::StandardButton answer =
      m_ask
          ? m_ask()
          : QMessageBox::question(
                m_parts.window, tr("Unsaved decisions"),
                tr("Save the project of %1 before leaving it?")
                    .arg(QFileInfo(m_path.isEmpty() ? modelPath() : m_path).fileName()),
                QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  return answer != QMessageBox::Save || save();
}

bool ProjectController::closing() {
  if (!confirmLeave()) return false;
  discardAutosave();
  return true;
}

}  // namespace souffle::views
