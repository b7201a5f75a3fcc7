/// \file Colours of the explorer, derived from the application palette so both light and dark
/// system themes read well.
#pragma once

#include <QColor>
#include <QPalette>

#include "views/scene_graph.h"

namespace souffle::views {

/// True when the palette's window colour is dark (a dark system theme or --theme dark).
bool isDark(const QPalette& palette);

struct GraphColors {
  bool dark = false;
  QColor background, text, subtext, border, edge, edgeLabel, accent, match;
  QColor fill(NodeCategory c) const;
  static GraphColors from(const QPalette& palette);
};

/// A Fusion palette for an explicitly chosen theme ("light" / "dark"); the system palette
/// otherwise.
QPalette themePalette(const QString& theme, const QPalette& system);

}  // namespace souffle::views
