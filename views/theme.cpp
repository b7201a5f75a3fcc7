#include "views/theme.h"

#include <QStyle>
#include <QStyleFactory>
#include <memory>

namespace souffle::views {

bool isDark(const QPalette& palette) {
  return palette.color(QPalette::Window).lightnessF() < 0.45;
}

GraphColors GraphColors::from(const QPalette& palette) {
  GraphColors c;
  c.dark = isDark(palette);
  c.background = palette.color(QPalette::Base);
  c.text = palette.color(QPalette::Text);
  c.subtext = c.dark ? QColor(190, 195, 205) : QColor(80, 84, 92);
  c.border = c.dark ? QColor(150, 155, 165) : QColor(110, 115, 125);
  c.edge = c.dark ? QColor(135, 140, 150) : QColor(120, 125, 135);
  c.edgeLabel = c.dark ? QColor(170, 175, 185) : QColor(95, 100, 110);
  c.accent = palette.color(QPalette::Highlight);
  c.match = c.dark ? QColor(255, 200, 60) : QColor(230, 140, 0);
  return c;
}

QColor GraphColors::fill(NodeCategory cat) const {
  // Pastels on light backgrounds, muted mid-tones on dark ones; hues match across themes.
  switch (cat) {
    case NodeCategory::Input:
      return dark ? QColor(0x6b, 0x4a, 0x2a) : QColor(0xfd, 0xe2, 0xc4);
    case NodeCategory::Output:
      return dark ? QColor(0x6b, 0x32, 0x32) : QColor(0xf9, 0xcd, 0xcd);
    case NodeCategory::Constant:
      return dark ? QColor(0x44, 0x44, 0x44) : QColor(0xee, 0xee, 0xee);
    case NodeCategory::Compute:
      return dark ? QColor(0x2f, 0x55, 0x38) : QColor(0xd8, 0xee, 0xd4);
    case NodeCategory::Reduce:
      return dark ? QColor(0x4f, 0x3d, 0x6e) : QColor(0xe6, 0xda, 0xf6);
    case NodeCategory::Matmul:
      return dark ? QColor(0x2c, 0x4a, 0x72) : QColor(0xcf, 0xe0, 0xf7);
    case NodeCategory::Conv:
      return dark ? QColor(0x23, 0x58, 0x6a) : QColor(0xc9, 0xe9, 0xf1);
    case NodeCategory::Norm:
      return dark ? QColor(0x6a, 0x55, 0x20) : QColor(0xf6, 0xe6, 0xb6);
    case NodeCategory::Shape:
      return dark ? QColor(0x48, 0x4b, 0x50) : QColor(0xe8, 0xe9, 0xeb);
  }
  return QColor(Qt::gray);
}

QPalette themePalette(const QString& theme, const QPalette& system) {
  if (theme == QLatin1String("light")) {
    std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
    return fusion ? fusion->standardPalette() : system;
  }
  if (theme != QLatin1String("dark")) return system;
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x31), base(0x1f, 0x21, 0x24), text(0xe6, 0xe7, 0xea);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, window);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x8e, 0xe8));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x93, 0x99));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
  return p;
}

}  // namespace souffle::views
