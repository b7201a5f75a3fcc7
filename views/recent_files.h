/// \file The "Open Recent" menu: the last ten files opened, kept in the settings, newest first,
/// Ctrl+Shift+1 … 9 for the first nine; "Clear list" empties it.
#pragma once

#include <QObject>
#include <QStringList>

class QMenu;

namespace souffle::views {

class RecentFiles : public QObject {
  Q_OBJECT
 public:
  /// Fills `menu` (and refills it whenever the list changes).
  explicit RecentFiles(QMenu* menu);
  QStringList files() const;
  /// Puts `path` first (once), dropping the oldest beyond ten.
  void add(const QString& path);

 signals:
  void openRequested(const QString& path);

 private:
  void rebuild();
  QMenu* m_menu;
};

}  // namespace souffle::views
