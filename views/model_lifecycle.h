/// \file The model's life in the window: open (a model or a project), load off the GUI thread,
/// reload, close, and the session each model starts (the save question first, so nothing of one
/// model reaches the next). The window only puts on what a model open or none shows (the page,
/// the title, the entries that need a model).
#pragma once

#include <QObject>
#include <QString>
#include <optional>

#include "views/model_loader.h"

class QAction;
class QMenu;
class QWidget;

namespace souffle::views {

class DecisionEditor;
class RecentFiles;
class ErrorPanel;
class ExplorerSession;
class GraphPage;
class ImportedProfilePanel;
class KernelRuns;
class KernelsPage;
class PlanController;
class ProjectController;
class StepThroughMode;

class ModelLifecycle : public QObject {
  Q_OBJECT
 public:
  /// What a model's session starts and ends; all belong to the window.
  struct Parts {
    ProjectController* project = nullptr;
    PlanController* plans = nullptr;
    KernelRuns* runs = nullptr;
    KernelsPage* kernels = nullptr;
    ImportedProfilePanel* imported = nullptr;
    StepThroughMode* stepMode = nullptr;
    ErrorPanel* error = nullptr;
    GraphPage* graph = nullptr;
    QWidget* dialogParent = nullptr;
  };

  explicit ModelLifecycle(ExplorerSession* session, QObject* parent = nullptr);

  /// Connects the loader's outcomes.
  void attach(const Parts& parts);
  bool isLoading() const { return m_loader->isBusy(); }
  void cancel() { m_loader->cancel(); }
  /// Adds Open…, Open Recent, Reload and Model inputs… to `file`. Reload is enabled once a
  /// model was opened.
  void addOpenActions(QMenu* file);
  /// Adds Close model to `file` and returns it (it needs a model open).
  QAction* addCloseAction(QMenu* file);
  QStringList recentFiles() const;
  /// The model file opened last (also while it loads or after it failed to load).
  QString lastPath() const { return m_lastPath; }

  /// Starts loading `path` (off the GUI thread); a load in progress is dropped. Another model
  /// than the one open first asks to save its unsaved edits (Cancel keeps it) and starts a new
  /// session.
  void openModel(const QString& path);
  /// Opens a model (.onnx) or a project (.souffle).
  void openFile(const QString& path);
  void openDialog();
  void reload();
  /// Model inputs…: asks for the input options, then reloads.
  void editInputOptions();
  /// Asks to save unsaved edits, then closes the model (the welcome page).
  void closeModel();
  /// Ends the session of the model open and starts one for `modelPath` (empty: no model),
  /// unless it is that model's and `fresh` is false. Asks nothing.
  void beginSession(const QString& modelPath, bool fresh = false);
  /// Shows `error` in the problems panel and the status bar.
  void showError(const LoadError& error);
  /// Shows `error` once the model being opened has loaded (a load clears the problems panel).
  void showErrorAfterLoad(const LoadError& error) { m_afterLoad = error; }

 signals:
  /// Loading started (`what` says so) or ended.
  void busyChanged(bool busy, const QString& what);
  /// The model was loaded in `ms` and is in the session: the window shows it (page, title,
  /// entries) and draws its graph; planning starts after this.
  void shown(double ms);
  /// The model was closed: the window shows the welcome page.
  void closed();
  void modelLoaded();
  void loadFailed(const souffle::views::LoadError& error);

 private:
  void onLoaded(ModelDataPtr data, double ms);
  void onFailed(const LoadError& error);

  ExplorerSession* m_session;
  ModelLoader* m_loader;
  Parts m_parts;
  QString m_lastPath;
  RecentFiles* m_recent = nullptr;
  QAction* m_reload = nullptr;
  std::optional<LoadError> m_afterLoad;  ///< showErrorAfterLoad
};

}  // namespace souffle::views
