/// \file The open project of the explorer window: `.souffle` open/save, the modified mark in
/// the title, and a debounced autosave that the next start offers to restore after a crash.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include "core/session/project.h"
#include "views/model_loader.h"

namespace souffle::views {

class MainWindow;

class ProjectController : public QObject {
  Q_OBJECT
 public:
  explicit ProjectController(MainWindow* window);

  /// Where autosaves go (under the application's data folder).
  static QString autosavePath();
  static bool hasAutosave();
  /// Milliseconds between the last change and the autosave (default 2000).
  void setAutosaveDelay(int ms) { m_timer.setInterval(ms); }
  /// Off for screenshots: a run that exits without closing must not leave an autosave behind.
  void setAutosaveEnabled(bool on) { m_autosave = on; }
  /// False in tests and screenshots: no dialogs, no questions.
  void setInteractive(bool on) { m_interactive = on; }

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
  /// Restores the autosave as an unsaved project (its original path, if it had one, is kept).
  bool restoreAutosave();
  void discardAutosave();
  /// Called on a clean close: asks to save a modified project (when interactive), removes the
  /// autosave. False when the user cancels the close.
  bool closing();

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
  void writeAutosave();
  void updateTitle();

  MainWindow* m_window;
  QString m_path;
  Project m_saved;
  bool m_hasSaved = false;
  bool m_interactive = true;
  bool m_autosave = true;
  /// The model the current decisions were made for; opening another model starts afresh.
  QString m_decisionsModel;
  QTimer m_timer;
};

}  // namespace souffle::views
