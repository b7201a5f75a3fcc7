#include "views/step_through_mode.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QStackedWidget>

#include "views/explorer_session.h"
#include "views/step_through.h"

namespace souffle::views {

StepThroughMode::StepThroughMode(QMainWindow* window, QStackedWidget* stack,
                                 ExplorerSession* session, std::function<QWidget*()> pageOff,
                                 std::function<void()> refresh)
    : QObject(window),
      m_window(window),
      m_stack(stack),
      m_session(session),
      m_pageOff(std::move(pageOff)),
      m_refresh(std::move(refresh)) {
  m_panel = new StepThroughPanel(stack);
  stack->addWidget(m_panel);
  window->addAction(m_panel->previousAction());
  window->addAction(m_panel->nextAction());
  m_action = new QAction(tr("&Step-through mode"), window);
  m_action->setCheckable(true);
  m_action->setShortcut(QKeySequence(Qt::Key_F6));
  m_action->setShortcutContext(Qt::ApplicationShortcut);
  connect(m_action, &QAction::toggled, this, &StepThroughMode::setShown);
}

bool StepThroughMode::isShown() const {
  return m_action->isChecked();
}

void StepThroughMode::setShown(bool on) {
  if (m_action->isChecked() != on) {
    m_action->setChecked(on);  // toggled comes back here
    return;
  }
  const bool shown = m_stack->currentWidget() == m_panel;
  if (m_session) m_session->setStepping(on);
  if (on && !shown) {
    // The page takes the window: the docks are put away and come back as they were.
    m_stateBefore = m_window->saveState();
    for (QDockWidget* d : m_window->findChildren<QDockWidget*>())
      if (d->parentWidget() == m_window) d->hide();
    m_stack->setCurrentWidget(m_panel);
    m_refresh();
    m_panel->focusSteps();
  } else if (!on && shown) {
    m_stack->setCurrentWidget(m_pageOff());
    if (!m_stateBefore.isEmpty()) m_window->restoreState(m_stateBefore);
    m_stateBefore.clear();
  }
}

}  // namespace souffle::views
