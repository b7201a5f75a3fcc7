// souffle-explorer: the desktop explorer. `souffle-explorer MODEL --screenshot FILE.png` opens
// the model, waits until its graph is drawn with the final layout, saves the window and exits.
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QFileInfo>
#include <QMessageBox>
#include <QTimer>
#include <cstdio>

#include "views/code_panel.h"
#include "views/comparison_view.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/project_controller.h"

using souffle::views::LoadError;
using souffle::views::MainWindow;

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Souffle"));
  QApplication::setApplicationName(QStringLiteral("Souffle Explorer"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Explore how an ONNX model is compiled."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("ONNX model to open"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("Save the window to FILE once drawn, then exit."),
                                QStringLiteral("FILE"));
  QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size WxH."),
                          QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("system, light or dark."),
                           QStringLiteral("THEME"), QStringLiteral("system"));
  QCommandLineOption teLevel(QStringLiteral("te-level"),
                             QStringLiteral("Show the TE-level graph."));
  QCommandLineOption strategy(QStringLiteral("strategy"),
                              QStringLiteral("Fusion strategy: unfused, rules or souffle."),
                              QStringLiteral("S"), QStringLiteral("souffle"));
  QCommandLineOption gpuOpt(QStringLiteral("gpu"), QStringLiteral("GPU of the cost model."),
                            QStringLiteral("GPU"), QStringLiteral("A100"));
  QCommandLineOption select(QStringLiteral("select"),
                            QStringLiteral("Select the first node matching TEXT."),
                            QStringLiteral("TEXT"));
  QCommandLineOption timeout(QStringLiteral("timeout"),
                             QStringLiteral("Seconds to wait for the screenshot (default 120)."),
                             QStringLiteral("S"), QStringLiteral("120"));
  QCommandLineOption restore(
      QStringLiteral("restore"),
      QStringLiteral("After a crash: restore the autosaved project (yes), discard it (no), ask "
                     "(default) or leave it (skip; the default with --screenshot). Also "
                     "SOUFFLE_RESTORE."),
      QStringLiteral("yes|no|ask|skip"), QStringLiteral("ask"));
  QCommandLineOption panel(QStringLiteral("panel"),
                           QStringLiteral("Show and raise panels by title, comma-separated (e.g. "
                                          "\"Compare plans,Edit history\")."),
                           QStringLiteral("TITLE"));
  parser.addOptions({screenshot, size, theme, teLevel, strategy, gpuOpt, select, timeout});
  QCommandLineOption profile(
      QStringLiteral("profile"),
      QStringLiteral("Once planned, profile the kernels through souffle-runner on BACKEND: cuda "
                     "(a GPU) or emulator (CPU times, not GPU times)."),
      QStringLiteral("BACKEND"));
  parser.addOptions({restore, panel, profile});
  parser.process(app);

  const QStringList args = parser.positionalArguments();
  const QString shotPath = parser.value(screenshot);
  const bool shooting = parser.isSet(screenshot);
  if (shooting && args.isEmpty()) {
    std::fprintf(stderr, "souffle-explorer: --screenshot needs a MODEL\n");
    return 2;
  }

  MainWindow window;
  if (!shooting) window.restoreSettings();
  if (parser.value(theme) != QLatin1String("system")) window.setTheme(parser.value(theme));
  const QStringList wh = parser.value(size).split(QLatin1Char('x'));
  if (wh.size() == 2 && wh[0].toInt() > 0 && wh[1].toInt() > 0)
    window.resize(wh[0].toInt(), wh[1].toInt());
  else if (parser.isSet(size)) {
    std::fprintf(stderr, "souffle-explorer: --size wants WxH, e.g. 1600x1000\n");
    return 2;
  }
  if (parser.isSet(teLevel)) window.setTeLevel(true);
  window.setStrategy(parser.value(strategy));
  window.setGpu(parser.value(gpuOpt));
  window.show();

  const QString profileBackend = parser.value(profile);
  if (parser.isSet(profile) && profileBackend != QLatin1String("cuda") &&
      profileBackend != QLatin1String("emulator")) {
    std::fprintf(stderr, "souffle-explorer: --profile %s: cuda or emulator\n",
                 qPrintable(profileBackend));
    return 2;
  }
  bool profiled = !parser.isSet(profile);
  if (!profiled) {
    // Profile the first plan that arrives, once.
    auto started = std::make_shared<bool>(false);
    QObject::connect(
        &window, &MainWindow::planned, &window, [&window, &profiled, started, profileBackend] {
          if (*started) return;
          *started = true;
          QAction* a = profileBackend == QLatin1String("cuda") ? window.profileAction()
                                                               : window.profileEmulatorAction();
          if (a->isEnabled())
            a->trigger();
          else {
            std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(a->toolTip()));
            profiled = true;
          }
        });
    auto finish = [&profiled] { profiled = true; };
    QObject::connect(window.profileRunner(), &souffle::views::ProfileRunner::finished, &window,
                     finish);
    QObject::connect(window.profileRunner(), &souffle::views::ProfileRunner::cancelled, &window,
                     finish);
  }

  int exitCode = 0;
  if (shooting) {
    auto save = [&window, shotPath](int code) {
      const bool ok = window.grab().save(shotPath);
      if (!ok) std::fprintf(stderr, "souffle-explorer: cannot write %s\n", qPrintable(shotPath));
      QApplication::exit(ok ? code : 1);
    };
    // The picture is ready once dot's layout is on screen and the plan is drawn on it.
    // A shown Code panel must have its code too (big kernels take seconds to generate).
    auto ready = [&window, &profiled] {
      return profiled && window.graphPanel()->isFinal() && window.planData() &&
             !window.isPlanning() && !window.comparisonView()->isBusy() &&
             (!window.codePanel()->isVisible() || window.codePanel()->isReady());
    };
    bool done = false;
    auto shoot = [&, save, ready] {
      if (done || !ready()) return;
      done = true;
      if (parser.isSet(select)) {
        window.graphPanel()->scene()->clearSelection();
        const auto* g = window.graphPanel()->scene()->graph();
        const QString q = parser.value(select);
        for (size_t i = 0; g && i < g->nodes.size(); ++i)
          if (g->nodes[i].subtitle.contains(q, Qt::CaseInsensitive) ||
              g->nodes[i].title.contains(q, Qt::CaseInsensitive)) {
            window.graphPanel()->scene()->selectBox(static_cast<int>(i));
            window.graphPanel()->view()->reveal(static_cast<int>(i));
            break;
          }
      }
      // Let queued repaints (minimap, panels) land before grabbing.
      QTimer::singleShot(300, &window, [save] { save(0); });
    };
    QObject::connect(&window, &MainWindow::graphDrawn, &window, shoot);
    QObject::connect(&window, &MainWindow::planned, &window, shoot);
    QObject::connect(window.comparisonView(), &souffle::views::ComparisonView::compared, &window,
                     shoot);
    QObject::connect(window.codePanel(), &souffle::views::CodePanel::codeReady, &window, shoot);
    QObject::connect(window.profileRunner(), &souffle::views::ProfileRunner::finished, &window,
                     shoot, Qt::QueuedConnection);
    QObject::connect(&window, &MainWindow::planFailed, &window,
                     [&window, save](const QString& reason) {
                       std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(reason));
                       QTimer::singleShot(300, &window, [save] { save(1); });
                     });
    QObject::connect(&window, &MainWindow::loadFailed, &window, [&, save](const LoadError& e) {
      std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(e.message()));
      QTimer::singleShot(300, &window, [save] { save(1); });
    });
    QObject::connect(window.project(), &souffle::views::ProjectController::openFailed, &window,
                     [&, save](const LoadError& e) {
                       std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(e.message()));
                       QTimer::singleShot(300, &window, [save] { save(1); });
                     });
    QTimer::singleShot(parser.value(timeout).toInt() * 1000, &window, [] {
      std::fprintf(stderr, "souffle-explorer: timed out waiting for the graph\n");
      QApplication::exit(3);
    });
  }
  if (shooting) {
    window.project()->setInteractive(false);
    window.project()->setAutosaveEnabled(false);
  }
  for (const QString& title : parser.value(panel).split(QLatin1Char(','), Qt::SkipEmptyParts))
    for (QDockWidget* d : window.findChildren<QDockWidget*>())
      if (d->windowTitle().compare(title.trimmed(), Qt::CaseInsensitive) == 0) {
        d->show();
        d->raise();
      }
  // A crash left an autosave behind: restore it, discard it, ask, or (screenshots) skip.
  QString answer = parser.value(restore);
  if (!parser.isSet(restore) && qEnvironmentVariableIsSet("SOUFFLE_RESTORE"))
    answer = qEnvironmentVariable("SOUFFLE_RESTORE");
  if (shooting && !parser.isSet(restore)) answer = QStringLiteral("skip");
  if (souffle::views::ProjectController::hasAutosave() && answer != QLatin1String("skip")) {
    bool yes = answer == QLatin1String("yes");
    if (answer == QLatin1String("ask"))
      yes = QMessageBox::question(&window, QObject::tr("Restore unsaved work?"),
                                  QObject::tr("The explorer did not close cleanly last time. "
                                              "Restore the project it autosaved?"),
                                  QMessageBox::Yes | QMessageBox::No,
                                  QMessageBox::Yes) == QMessageBox::Yes;
    if (!yes || !window.project()->restoreAutosave()) window.project()->discardAutosave();
  }
  if (!args.isEmpty()) window.openFile(args.front());
  exitCode = app.exec();
  return exitCode;
}
