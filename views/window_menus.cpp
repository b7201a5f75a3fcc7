#include "views/window_menus.h"

#include <QAction>
#include <QInputDialog>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSet>

#include "views/explorer_session.h"

namespace souffle::views {

void fillHelpMenu(QMainWindow* window, QMenu* help) {
  QMenuBar* bar = window->menuBar();
  QAction* keys = help->addAction(QObject::tr("&Keyboard shortcuts"), window, [window, bar] {
    QString text = QStringLiteral("<table>");
    QSet<QAction*> listed;  // a dock's toggle may be in two menus
    for (QMenu* menu : bar->findChildren<QMenu*>()) {
      for (QAction* a : menu->actions()) {
        if (a->shortcut().isEmpty() || a->menu() || listed.contains(a)) continue;
        listed.insert(a);
        text += QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>")
                    .arg(a->text().remove(QLatin1Char('&')),
                         a->shortcut().toString(QKeySequence::NativeText));
      }
    }
    QMessageBox::information(window, QObject::tr("Keyboard shortcuts"),
                             text + QStringLiteral("</table>"));
  });
  keys->setShortcut(QKeySequence::HelpContents);
  help->addAction(QObject::tr("&About"), window, [window] {
    QMessageBox::about(window, QObject::tr("About Souffle Explorer"),
                       QObject::tr("<b>Souffle Explorer</b><p>Explores how an ONNX model becomes "
                                   "tensor expressions and fused GPU kernels.</p>"));
  });
}

bool askInputOptions(QWidget* parent, ExplorerSession* session) {
  const QStringList lines = session->inputs().arguments();
  bool ok = false;
  const QString text = QInputDialog::getMultiLineText(
      parent, QObject::tr("Model inputs"),
      QObject::tr("One a line, as souffle-cli takes them:\n--dim NAME=VALUE (a symbolic dim)\n"
                  "--bind NAME=VALUE (an input fixed as a constant, e.g. one that decides an "
                  "If)\n--shape NAME=D0,D1,... (an input's dims declared without a size)"),
      lines.join(QLatin1Char('\n')), &ok);
  if (!ok) return false;
  QStringList dims, binds, shapes;
  for (QString line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
    line = line.trimmed();
    if (line.startsWith(QStringLiteral("--dim ")))
      dims << line.mid(6).trimmed();
    else if (line.startsWith(QStringLiteral("--bind ")))
      binds << line.mid(7).trimmed();
    else if (line.startsWith(QStringLiteral("--shape ")))
      shapes << line.mid(8).trimmed();
    else if (!line.isEmpty())
      binds << line;  // a bare NAME=VALUE binds an input
  }
  session->setInputOptions(dims, binds, shapes);
  return true;
}

}  // namespace souffle::views
