/// \file The window's pages placed in docks from a table: each page's area, the dock it is
/// tabbed with or split from, the one in front afterwards, whether it starts hidden, and the
/// shortcut of its show/hide toggle.
#pragma once

#include <QString>
#include <Qt>
#include <initializer_list>

class QMainWindow;
class QWidget;

namespace souffle::views {

struct PageDock {
  enum Place { Alone, Tabbed, Beside, Below };
  QWidget* page;
  const char* name;  ///< the dock's object name (saved layouts find it by it)
  QString title;
  Qt::DockWidgetArea area;
  const char* shortcut = nullptr;  ///< of the dock's show/hide toggle
  Place place = Alone;
  QWidget* with = nullptr;   ///< the page tabbed with or split from
  QWidget* front = nullptr;  ///< the page in front of its tabs afterwards
  bool hidden = false;
};

/// Puts each page of `table` into a dock of `window`, in order.
void placePages(QMainWindow* window, std::initializer_list<PageDock> table);

}  // namespace souffle::views
