#include "views/recent_files.h"

#include <QMenu>
#include <QSettings>

namespace souffle::views {

namespace {

constexpr int kMaxRecent = 10;
const char* kRecentKey = "recentFiles";

}  // namespace

RecentFiles::RecentFiles(QMenu* menu) : QObject(menu), m_menu(menu) {
  rebuild();
}

QStringList RecentFiles::files() const {
  return QSettings().value(QLatin1String(kRecentKey)).toStringList();
}

void RecentFiles::add(const QString& path) {
  QSettings settings;
  QStringList list = settings.value(QLatin1String(kRecentKey)).toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  settings.setValue(QLatin1String(kRecentKey), list);
  rebuild();
}

void RecentFiles::rebuild() {
  m_menu->clear();
  const QStringList list = files();
  int i = 0;
  for (const QString& path : list) {
    QAction* a = m_menu->addAction(QStringLiteral("&%1  %2").arg((i + 1) % 10).arg(path));
    if (i < 9) a->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+%1").arg(i + 1)));
    connect(a, &QAction::triggered, this, [this, path] { emit openRequested(path); });
    ++i;
  }
  if (list.isEmpty()) m_menu->addAction(tr("(none)"))->setEnabled(false);
  m_menu->addSeparator();
  m_menu->addAction(tr("Clear list"), this, [this] {
    QSettings().remove(QLatin1String(kRecentKey));
    rebuild();
  });
}

}  // namespace souffle::views
