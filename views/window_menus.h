/// \file What the window offers besides its pages: the Help menu and the Model inputs dialog.
#pragma once

class QMainWindow;
class QWidget;

namespace souffle::views {

class ExplorerSession;

/// Adds Help to `window`'s menu bar: the keyboard shortcuts of every menu under the menu bar
/// (F1) and About.
void addHelpMenu(QMainWindow* window);

/// Model inputs…: the session's input options, one "--dim|--bind|--shape NAME=VALUE" a line (a
/// bare NAME=VALUE binds an input), edited over `parent`; false when cancelled.
bool askInputOptions(QWidget* parent, ExplorerSession* session);

}  // namespace souffle::views
