/// \file The step-through mode (F6): the step-through page in front of the graph in the window's
/// central stack, the window's docks put away while it is shown and put back as they were.
#pragma once

#include <QByteArray>
#include <QObject>
#include <functional>

class QAction;
class QMainWindow;
class QStackedWidget;
class QWidget;

namespace souffle::views {

class ExplorerSession;
class StepThroughPanel;

class StepThroughMode : public QObject {
  Q_OBJECT
 public:
  /// Adds the page to `stack` and its previous/next keys to `window`. `pageOff` gives the page
  /// shown when the mode ends; `refresh` starts the walk-through of the plan on screen.
  StepThroughMode(QMainWindow* window, QStackedWidget* stack, ExplorerSession* session,
                  std::function<QWidget*()> pageOff, std::function<void()> refresh);

  StepThroughPanel* panel() const { return m_panel; }
  /// The checkable F6 action that shows and hides the mode.
  QAction* action() const { return m_action; }
  bool isShown() const;
  /// Shows the page (the docks put away) or puts it away (the docks back as they were); the
  /// session's stepping follows.
  void setShown(bool on);

 private:
  QMainWindow* m_window;
  QStackedWidget* m_stack;
  ExplorerSession* m_session;
  std::function<QWidget*()> m_pageOff;
  std::function<void()> m_refresh;
  StepThroughPanel* m_panel;
  QAction* m_action;
  QByteArray m_stateBefore;  ///< the docks as they were when the mode began
};

}  // namespace souffle::views
