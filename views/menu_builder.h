/// \file The window's menu bar assembled from what its parts offer: the menus in the bar's
/// order (File, Edit, View, Plan, Kernels, Help), each filled by the offers made to it in the
/// order of the table, so no part finds another's entries by position or title.
#pragma once

#include <QList>
#include <functional>
#include <initializer_list>
#include <type_traits>

class QAction;
class QMainWindow;
class QMenu;
class QWidget;

namespace souffle::views {

/// A part's entries at the end of one menu of the bar.
struct MenuOffer {
  enum Menu { File, Edit, View, Plan, Kernels, Help };
  enum Spacing { Joined, Separated };
  /// Adds the part's entries to the menu; returns those that need a model open.
  using Fill = std::function<QList<QAction*>(QMenu*)>;

  /// `fill` may return nothing (its entries are enabled without a model) or the entries that
  /// need a model open; `Separated` puts a separator before them.
  template <class F>
  MenuOffer(Menu m, F f, Spacing spacing = Joined) : menu(m), separated(spacing == Separated) {
    if constexpr (std::is_void_v<std::invoke_result_t<F, QMenu*>>)
      fill = [f](QMenu* q) {
        f(q);
        return QList<QAction*>{};
      };
    else
      fill = f;
  }

  Menu menu;
  Fill fill;
  bool separated;
};

/// Builds `window`'s menu bar from `offers`; returns the entries that need a model open.
QList<QAction*> buildMenuBar(QMainWindow* window, std::initializer_list<MenuOffer> offers);

/// Adds the show/hide toggle of the dock of each of `pages` to `menu`, in order.
void addDockToggles(QMenu* menu, std::initializer_list<QWidget*> pages);

}  // namespace souffle::views
