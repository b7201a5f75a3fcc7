/// \file What the window offers besides its pages: the Help menu and the Model inputs dialog.
#pragma once

class QMainWindow;
class QMenu;
class QWidget;

namespace souffle::views {

class ExplorerSession;

/// Fills the Help menu `help` of `window`: the keyboard shortcuts of every menu under the menu
/// bar, in the bar's order, each entry once (F1), and About.
void fillHelpMenu(QMainWindow* window, QMenu* help);

/// Model inputs…: the session's input options, one "--dim|--bind|--shape NAME=VALUE" a line (a
/// bare NAME=VALUE binds an input), edited over `parent`; false when cancelled.
bool askInputOptions(QWidget* parent, ExplorerSession* session);

}  // namespace souffle::views
