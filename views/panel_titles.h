/// \file The titles of the explorer's panels (its docks), known without a window: the command
/// line checks `--panel` against them before a display is opened. test_explorer_session checks
/// that they are the titles of the docks a MainWindow builds.
#pragma once

#include <QCoreApplication>
#include <QStringList>

namespace souffle::views {

inline QStringList panelTitles() {
  auto tr = [](const char* s) {
    return QCoreApplication::translate("souffle::views::MainWindow", s);
  };
  return {tr("Properties"),   tr("Nodes"),         tr("TE program"),
          tr("Kernels"),      tr("Problems"),      tr("Transformations"),
          tr("Edit history"), tr("Compare plans"), tr("Memory (emulator)"),
          tr("Code"),         tr("Charts"),        tr("Imported profile"),
          tr("Strategies"),   tr("Timeline")};
}

}  // namespace souffle::views
