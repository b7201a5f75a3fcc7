#include "views/page_docks.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>

#include "views/explorer_session.h"

namespace souffle::views {

void placePages(QMainWindow* window, std::initializer_list<PageDock> table) {
  for (const PageDock& s : table) {
    auto* dock = new QDockWidget(s.title, window);
    dock->setObjectName(QLatin1String(s.name));
    dock->setWidget(s.page);
    window->addDockWidget(s.area, dock);
    if (s.place == PageDock::Tabbed) window->tabifyDockWidget(dockOf(s.with), dock);
    if (s.place == PageDock::Below) window->splitDockWidget(dockOf(s.with), dock, Qt::Vertical);
    if (s.front) dockOf(s.front)->raise();
    if (s.hidden) dock->hide();
    if (s.shortcut) dock->toggleViewAction()->setShortcut(QKeySequence(QLatin1String(s.shortcut)));
  }
}

}  // namespace souffle::views
