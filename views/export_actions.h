/// \file The File › Export entries for the plan on screen: the plan JSON, the kernel bundle, the
/// report and the teaching walk-through, each asked for a place and written off the GUI thread
/// where it takes long (plan_export.h writes them).
#pragma once

#include <QList>
#include <QObject>
#include <QString>

class QAction;
class QMenu;
class QWidget;

namespace souffle::views {

class DecisionEditor;
class ExplorerSession;
class KernelRuns;

class ExportActions : public QObject {
  Q_OBJECT
 public:
  /// Dialogs open over `window`; the plan, the model and messages come from `session`, the
  /// user's edits from `editor` and the measurements shown from `runs`.
  ExportActions(ExplorerSession* session, DecisionEditor* editor, KernelRuns* runs,
                QWidget* window);

  /// Adds the four entries to `menu`; they need a model (returned to be enabled with one).
  QList<QAction*> addTo(QMenu* menu);

  /// Writes the plan on screen as the JSON `souffle-cli plan --json` prints.
  bool exportPlanJson(const QString& path = {});
  /// Compiles the plan's kernels and writes them as a bundle (.cu, .ptx, weights, data, host
  /// harness, CMakeLists.txt) into `dir` (asked for when empty), off the GUI thread; false when
  /// nothing was started. bundleExported reports the outcome.
  bool exportBundle(const QString& dir = {});
  /// Writes a report of the plan on screen (HTML, JSON, CSV or DOT by the file's extension; with
  /// the user's edits, the plan before and after them), off the GUI thread; false when nothing
  /// was started. reportExported reports the outcome.
  bool exportReport(const QString& path = {});
  /// Writes the teaching walk-through (one HTML page per pipeline step) beside `path`.
  bool exportWalkthrough(const QString& path = {});

 signals:
  void bundleExported(bool ok, const QString& message);
  void reportExported(bool ok, const QString& message);

 private:
  /// "DIR/BASE" of the model open, where the dialogs propose to write.
  QString beside() const;

  ExplorerSession* m_session;
  DecisionEditor* m_editor;
  KernelRuns* m_runs;
  QWidget* m_window;
};

}  // namespace souffle::views
