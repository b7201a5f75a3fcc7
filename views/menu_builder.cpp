#include "views/menu_builder.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>

#include "views/explorer_session.h"

namespace souffle::views {

QList<QAction*> buildMenuBar(QMainWindow* window, std::initializer_list<MenuOffer> offers) {
  const char* const titles[] = {QT_TR_NOOP("&File"), QT_TR_NOOP("&Edit"),    QT_TR_NOOP("&View"),
                                QT_TR_NOOP("&Plan"), QT_TR_NOOP("&Kernels"), QT_TR_NOOP("&Help")};
  QList<QAction*> needModel;
  // Menus are made in the bar's order, each a child of the bar: Help's list of shortcuts walks
  // them in that order.
  for (int m = MenuOffer::File; m <= MenuOffer::Help; ++m) {
    QMenu* menu = window->menuBar()->addMenu(QMenuBar::tr(titles[m]));
    for (const MenuOffer& offer : offers) {
      if (offer.menu != m) continue;
      if (offer.separated) menu->addSeparator();
      needModel << offer.fill(menu);
    }
  }
  return needModel;
}

void addDockToggles(QMenu* menu, std::initializer_list<QWidget*> pages) {
  for (QWidget* page : pages) menu->addAction(dockOf(page)->toggleViewAction());
}

}  // namespace souffle::views
