#include "views/theme_chooser.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QMenu>
#include <QSettings>
#include <QStyleFactory>
#include <QWidget>

#include "views/theme.h"

namespace souffle::views {

ThemeChooser::ThemeChooser(QWidget* window)
    : QObject(window), m_window(window), m_systemPalette(qApp->palette()) {}

void ThemeChooser::setTheme(const QString& theme) {
  m_theme = theme;
  if (theme == QLatin1String("system")) {
    qApp->setPalette(m_systemPalette);
  } else {
    qApp->setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    qApp->setPalette(themePalette(theme, m_systemPalette));
  }
  for (QAction* a : m_window->findChildren<QAction*>())
    if (a->isCheckable() && a->data().toString() == theme) a->setChecked(true);
  emit changed();
}

void ThemeChooser::addMenu(QMenu* menu) {
  QMenu* theme = menu->addMenu(tr("T&heme"));
  auto* group = new QActionGroup(m_window);
  const std::pair<const char*, const char*> themes[] = {
      {"system", "Follow the &system"}, {"light", "&Light"}, {"dark", "&Dark"}};
  int themeKey = 1;
  for (auto [id, label] : themes) {
    QAction* a = theme->addAction(tr(label));
    a->setCheckable(true);
    a->setData(QString::fromLatin1(id));
    a->setChecked(m_theme == QLatin1String(id));
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+Alt+%1").arg(themeKey++)));
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, a] { setTheme(a->data().toString()); });
  }
}

void ThemeChooser::restore(const QSettings& settings) {
  const QString theme =
      settings.value(QStringLiteral("theme"), QStringLiteral("system")).toString();
  if (theme != m_theme) setTheme(theme);
}

void ThemeChooser::save(QSettings& settings) const {
  settings.setValue(QStringLiteral("theme"), m_theme);
}

}  // namespace souffle::views
