/// \file The explorer's theme: follow the system, light or dark (View > Theme, --theme), kept
/// in the settings between runs.
#pragma once

#include <QObject>
#include <QPalette>
#include <QString>

class QMenu;
class QSettings;
class QWidget;

namespace souffle::views {

class ThemeChooser : public QObject {
  Q_OBJECT
 public:
  /// Remembers the system's palette as it is now; `window`'s checkable actions whose data
  /// names a theme follow the theme chosen.
  explicit ThemeChooser(QWidget* window);

  /// "system", "light" or "dark".
  QString theme() const { return m_theme; }
  void setTheme(const QString& theme);
  /// Adds the Theme menu (Ctrl+Alt+1..3) to `menu`.
  void addMenu(QMenu* menu);
  /// The theme saved by the last run (set when it differs from the one in use).
  void restore(const QSettings& settings);
  void save(QSettings& settings) const;

 signals:
  /// The application's palette changed: the pages pick their colours again.
  void changed();

 private:
  QWidget* m_window;
  QString m_theme = QStringLiteral("system");
  QPalette m_systemPalette;
};

}  // namespace souffle::views
