/// \file The open project of the explorer window: `.souffle` open/save, the modified mark in
/// the title, the save question before unsaved edits are left, and a debounced autosave of this
/// instance (its own file, locked while it runs) that a later start offers to restore once its
/// instance is gone.
#pragma once

#include <QLockFile>
#include <QMessageBox>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <functional>
#include <memory>

#include "core/session/project.h"
#include "views/model_loader.h"

class QAction;
class QMainWindow;
class QMenu;

namespace souffle::views {

class ExplorerSession;
class GraphPage;
class ModelLifecycle;
class PlanController;
class PlanToolBar;
class TimelinePanel;

class ProjectController : public QObject {
  Q_OBJECT
 public:
  /// What a project records and restores; all belong to the window.
  struct Parts {
    QMainWindow* window = nullptr;       ///< titled with the project; its dialogs' parent
    ExplorerSession* session = nullptr;  ///< input options, measurements, the edits
    ModelLifecycle* models = nullptr;    ///< opens the project's model, shows its problems
    PlanController* plans = nullptr;     ///< a plan arrived or failed
    PlanToolBar* bar = nullptr;          ///< strategy, GPU, precision, sync
    GraphPage* graph = nullptr;          ///< the TE level
    TimelinePanel* timeline = nullptr;   ///< the emulator run's records
  };

  explicit ProjectController(const Parts& parts);
  ~ProjectController() override;

  /// Where this instance autosaves (under the application's data folder, named by process id
  /// and instance; a lock file beside it says the instance still runs).
  QString autosavePath() const { return m_autosavePath; }
  /// The autosaves whose instance is gone (crashed or killed), newest first: an explorer that
  /// still runs keeps its own.
  static QStringList orphanedAutosaves();
  static bool hasAutosave() { return !orphanedAutosaves().isEmpty(); }
  /// Milliseconds between the last change and the autosave (default 2000).
  void setAutosaveDelay(int ms) { m_timer.setInterval(ms); }
  /// Off for screenshots: a run that exits without closing must not leave an autosave behind.
  void setAutosaveEnabled(bool on) { m_autosave = on; }
  /// False in tests and screenshots: no dialogs, no questions.
  void setInteractive(bool on) { m_interactive = on; }
  /// Answers the save question instead of a message box (tests); null: the message box.
  void setSaveQuestion(std::function<QMessageBox::StandardButton()> ask) { m_ask = std::move(ask); }

  /// File menu entries: Open Project… (Ctrl+Shift+O), Save Project (Ctrl+S) and Save Project
  /// As… (Ctrl+Shift+S); returns the two saves (they need a model open).
  QList<QAction*> addActions(QMenu* file);

  /// The window's state as a project (model, options, decisions).
  Project snapshot() const;
  QString path() const { return m_path; }
  bool isModified() const;

  /// Opens a project: its decisions and options, then its model. A bad project file is shown
  /// in the error panel; a model that fails to load keeps the decisions. False on a bad file.
  bool open(const QString& path);
  /// Writes the project to `path` (empty: the current path, or ask). False if not written.
  bool save(const QString& path = {});
  bool saveAs();
  void openDialog();
  /// Restores the newest orphaned autosave as an unsaved project (its original path, if it had
  /// one, is kept) and removes it: from now on it is this instance's.
  bool restoreAutosave();
  /// Removes this instance's autosave.
  void discardAutosave();
  /// Removes the autosaves of instances that are gone.
  static void discardOrphanedAutosaves();
  /// Before the edits of the model open are left (another model, a project, closing the
  /// model): asks to save them when they are unsaved (when interactive). False on Cancel, or
  /// when the save did not happen.
  bool confirmLeave();
  /// Called on a clean close: confirmLeave, then removes the autosave. False when the user
  /// cancels the close.
  bool closing();
  /// A new model session started: the project it was (path, saved state) is forgotten.
  void sessionStarted();

 signals:
  void saved(const QString& path);
  void opened(const QString& path);
  void autosaved(const QString& path);
  /// A project (or the autosave) could not be read; the problems panel shows why and nothing
  /// open was replaced.
  void openFailed(const souffle::views::LoadError& error);

 public slots:
  /// Something the project records changed: update the title and schedule an autosave.
  void touch();

 private:
  bool apply(const Project& p, const QString& path, bool asSaved);
  /// The emulator run's records (kept in a temporary folder of the Timeline panel) copied
  /// beside the project at `path`, into PROJECT.timeline/; false with the problem shown when
  /// they cannot be.
  bool keepTimeline(const QString& path);
  void adoptAutosaveRecords(const QString& file, Project* p);
  void writeAutosave();
  void updateTitle();
  /// Reads the project autosaved in `file` (its origin into `origin`); false with the problem
  /// shown when it cannot be read.
  bool readAutosave(const QString& file, Project* p, QString* origin);

  /// The model file opened last (also while it loads or after it failed to load).
  QString modelPath() const;

  Parts m_parts;
  QString m_path;
  Project m_saved;
  bool m_hasSaved = false;
  bool m_interactive = true;
  bool m_autosave = true;
  std::function<QMessageBox::StandardButton()> m_ask;
  QString m_autosavePath;
  /// Held from the first autosave to the end of the instance: its autosave is no orphan.
  std::unique_ptr<QLockFile> m_lock;
  QTimer m_timer;
};

}  // namespace souffle::views
