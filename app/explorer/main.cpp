// souffle-explorer: the desktop explorer. `souffle-explorer MODEL --screenshot FILE.png` opens
// the model, waits until its graph is drawn with the final layout, saves the window and exits.
#include <unistd.h>
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QFileInfo>
#include <QMessageBox>
#include <QPixmap>
#include <QStatusBar>
#include <QTimer>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/schedule/price_store.h"
#include "core/session/pipeline_steps.h"
#include "core/support/error.h"
#include "views/code_panel.h"
#include "views/comparison_view.h"
#include "views/graph_view.h"
#include "views/heat_map.h"
#include "views/main_window.h"
#include "views/memory_panel.h"
#include "views/panel_titles.h"
#include "views/project_controller.h"
#include "views/step_through.h"

using souffle::views::LoadError;
using souffle::views::MainWindow;

namespace {

/// Selects and shows the first box whose name or op type contains `text`; false when none does.
bool selectFirstMatch(MainWindow& window, const QString& text) {
  window.graphPanel()->scene()->clearSelection();
  const auto* g = window.graphPanel()->scene()->graph();
  for (size_t i = 0; g && i < g->nodes.size(); ++i)
    if (g->nodes[i].subtitle.contains(text, Qt::CaseInsensitive) ||
        g->nodes[i].title.contains(text, Qt::CaseInsensitive)) {
      window.graphPanel()->scene()->selectBox(static_cast<int>(i));
      window.graphPanel()->view()->reveal(static_cast<int>(i));
      return true;
    }
  return false;
}

QString noMatch(const QString& text, const MainWindow& window) {
  const auto* g = window.graphPanel()->scene()->graph();
  return QStringLiteral("--select %1: no node's name or op type contains it (%2 nodes looked at)")
      .arg(text)
      .arg(g ? g->nodes.size() : 0);
}

/// Runs `fn` once the events queued now, and those they queue in turn (a few rounds deep), are
/// handled.
void afterQueuedEvents(QObject* context, std::function<void()> fn, int rounds = 4) {
  QTimer::singleShot(0, context, [context, fn = std::move(fn), rounds]() mutable {
    QCoreApplication::sendPostedEvents();
    if (rounds <= 1)
      fn();
    else
      afterQueuedEvents(context, std::move(fn), rounds - 1);
  });
}

/// --timings: each step of a start, in milliseconds since the process started, on stderr. The
/// start is the kernel's record of it (10 ms resolution; the dynamic loader's time included),
/// or, where that cannot be read, main's entry.
class StartTimings {
 public:
  StartTimings() : m_origin(now_ms()) {
    std::ifstream stat("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // Field 22 (starttime, clock ticks since boot); fields count from 3 after the command
    // name's closing ')'.
    const size_t close = text.rfind(')');
    if (close == std::string::npos) return;
    std::istringstream fields(text.substr(close + 1));
    std::string field;
    for (int i = 3; i < 22; ++i) fields >> field;
    double ticks = 0;
    if (!(fields >> ticks)) return;
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    if (ticks > 0 && hz > 0) m_origin = ticks / hz * 1000.0;
  }
  void enable() { m_enabled = true; }
  void mark(const char* step, double extra_ms = -1) const {
    if (!m_enabled) return;
    if (extra_ms >= 0)
      std::fprintf(stderr, "timings: %8.1f ms  %s (%.1f ms)\n", now_ms() - m_origin, step,
                   extra_ms);
    else
      std::fprintf(stderr, "timings: %8.1f ms  %s\n", now_ms() - m_origin, step);
  }

 private:
  /// CLOCK_BOOTTIME: the clock the kernel counts a process's start on.
  static double now_ms() {
    timespec t{};
    clock_gettime(CLOCK_BOOTTIME, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  }
  double m_origin;
  bool m_enabled = false;
};

}  // namespace

int main(int argc, char** argv) {
  StartTimings timings;
  // The arguments are parsed and checked before a QApplication exists: --help, --version and
  // bad usage need no display.
  QCoreApplication::setOrganizationName(QStringLiteral("Souffle"));
  QCoreApplication::setApplicationName(QStringLiteral("Souffle Explorer"));
  QCoreApplication::setApplicationVersion(QStringLiteral("0.1.0"));

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
  QCommandLineOption strategy(
      QStringLiteral("strategy"),
      QStringLiteral("Fusion strategy: unfused, rules, souffle or souffle-paper."),
      QStringLiteral("S"), QStringLiteral("souffle"));
  QCommandLineOption precisionOpt(QStringLiteral("precision"),
                                  QStringLiteral("Compute type: fp32, tf32, fp16 or bf16."),
                                  QStringLiteral("P"), QStringLiteral("fp32"));
  QCommandLineOption calibrationOpt(
      QStringLiteral("calibration"),
      QStringLiteral("Price the plans with this calibration file (souffle-cli calibrate) instead "
                     "of the GPU spec's constants."),
      QStringLiteral("FILE"));
  QCommandLineOption syncOpt(
      QStringLiteral("sync"),
      QStringLiteral("Order of dependent stages across blocks: grid (Souffle's grid barriers), "
                     "auto (per-tile flags where the cost model prices them cheaper) or flags."),
      QStringLiteral("MODE"), QStringLiteral("grid"));
  QCommandLineOption colour(
      QStringLiteral("colour"),
      QStringLiteral("Colour the boxes by: op (type), time (estimated), measured, dram, flops, "
                     "intensity, stage-time or barrier-wait (the last two from a timeline)."),
      QStringLiteral("METRIC"), QStringLiteral("op"));
  QCommandLineOption importOpt(QStringLiteral("import-profile"),
                               QStringLiteral("Once planned, import a timing file (CSV of name "
                                              "and time, Nsight Compute CSV, PyTorch trace)."),
                               QStringLiteral("FILE"));
  QCommandLineOption gpuOpt(QStringLiteral("gpu"), QStringLiteral("GPU of the cost model."),
                            QStringLiteral("GPU"), QStringLiteral("A100"));
  QCommandLineOption select(
      QStringLiteral("select"),
      QStringLiteral("Select the first node whose name or op type contains TEXT "
                     "(none: with --screenshot exit 2, else said in the "
                     "status bar)."),
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
  QCommandLineOption timingsOpt(
      QStringLiteral("timings"),
      QStringLiteral("Print each step of the start (Qt, window, load, graph, plan, picture) in "
                     "milliseconds since the process started, on stderr."));
  parser.addOption(timingsOpt);
  QCommandLineOption profile(
      QStringLiteral("profile"),
      QStringLiteral("Once planned, profile the kernels through souffle-runner on BACKEND: cuda "
                     "(a GPU) or emulator (CPU times, not GPU times)."),
      QStringLiteral("BACKEND"));
  // The step-through's steps, as the pipeline names them.
  QStringList stepNames;
  for (const std::string& n : souffle::pipeline_step_names())
    stepNames << QString::fromStdString(n);
  QCommandLineOption stepOpt(QStringLiteral("step"),
                             QStringLiteral("Show the step-through at the step of this name (%1).")
                                 .arg(stepNames.join(QStringLiteral(", "))),
                             QStringLiteral("NAME"));
  parser.addOptions(
      {restore, panel, profile, precisionOpt, syncOpt, colour, importOpt, stepOpt, calibrationOpt});
  // How the model's inputs are given, as souffle-cli takes them (File > Model inputs… later).
  QCommandLineOption dimOpt(QStringLiteral("dim"), QStringLiteral("Bind a symbolic dimension."),
                            QStringLiteral("NAME=VALUE"));
  QCommandLineOption bindOpt(
      QStringLiteral("bind"),
      QStringLiteral("Fix a model input as a constant, e.g. one that decides an If (numbers, "
                     "comma-separated, or a .pb file)."),
      QStringLiteral("NAME=VALUE"));
  QCommandLineOption shapeOpt(
      QStringLiteral("shape"),
      QStringLiteral("An input's shape, sizing its dims declared without one (unnamed or -1)."),
      QStringLiteral("NAME=D0,D1,..."));
  parser.addOptions({dimOpt, bindOpt, shapeOpt});
  // Bad usage exits with 2, as the command-line tool does (QCommandLineParser::process would
  // exit with 1): an unknown option, or a value the explorer cannot take.
  auto usage = [](const QString& why) {
    std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(why));
    return 2;
  };
  // The options' values the explorer cannot take (0: none).
  auto check = [&]() -> int {
    const QStringList themes = {QStringLiteral("system"), QStringLiteral("light"),
                                QStringLiteral("dark")};
    if (!themes.contains(parser.value(theme)))
      return usage(QStringLiteral("--theme %1: one of %2")
                       .arg(parser.value(theme), themes.join(QStringLiteral(", "))));
    QStringList names;
    bool known = false;
    for (souffle::plan::Strategy s : souffle::plan::every_strategy()) {
      names << QString::fromLatin1(souffle::plan::strategy_name(s));
      known |= names.back() == parser.value(strategy);
    }
    if (!known)
      return usage(QStringLiteral("--strategy %1: not a strategy (%2)")
                       .arg(parser.value(strategy), names.join(QStringLiteral(", "))));
    try {
      souffle::gpu::gpu_spec(parser.value(gpuOpt).toStdString());
    } catch (const std::exception& e) {
      return usage(
          QStringLiteral("--gpu %1: %2").arg(parser.value(gpuOpt), QString::fromUtf8(e.what())));
    }
    try {
      souffle::gpu::parse_precision(parser.value(precisionOpt).toStdString());
    } catch (const std::exception& e) {
      return usage(QStringLiteral("--precision %1: %2")
                       .arg(parser.value(precisionOpt), QString::fromUtf8(e.what())));
    }
    if (souffle::SyncMode m; !souffle::parse_sync_mode(parser.value(syncOpt).toStdString(), m))
      return usage(QStringLiteral("--sync %1: grid, auto or flags").arg(parser.value(syncOpt)));
    QStringList metrics;
    for (souffle::views::HeatMetric m : souffle::views::heatMetrics())
      metrics << souffle::views::heatMetricKey(m);
    if (parser.isSet(stepOpt) &&
        !stepNames.contains(parser.value(stepOpt).trimmed(), Qt::CaseInsensitive))
      return usage(QStringLiteral("--step %1: one of %2")
                       .arg(parser.value(stepOpt), stepNames.join(QStringLiteral(", "))));
    if (souffle::views::HeatMetric m; !souffle::views::parseHeatMetric(parser.value(colour), m))
      return usage(QStringLiteral("--colour %1: one of %2")
                       .arg(parser.value(colour), metrics.join(QStringLiteral(", "))));
    const QStringList restores = {QStringLiteral("yes"), QStringLiteral("no"),
                                  QStringLiteral("ask"), QStringLiteral("skip")};
    if (!restores.contains(parser.value(restore)))
      return usage(QStringLiteral("--restore %1: yes, no, ask or skip").arg(parser.value(restore)));
    bool ok = false;
    if (parser.value(timeout).toInt(&ok) <= 0 || !ok)
      return usage(
          QStringLiteral("--timeout %1: seconds, a positive number").arg(parser.value(timeout)));
    if (parser.positionalArguments().size() > 1)
      return usage(QStringLiteral("one MODEL or PROJECT at most (got %1)")
                       .arg(parser.positionalArguments().join(QLatin1Char(' '))));
    if (!parser.positionalArguments().isEmpty() &&
        !QFileInfo::exists(parser.positionalArguments().front()))
      return usage(QStringLiteral("%1: no such file").arg(parser.positionalArguments().front()));
    // --panel: checked here against the titles the window's docks take, so a bad title is
    // answered without a display too.
    const QStringList panels = souffle::views::panelTitles();
    for (const QString& title : parser.value(panel).split(QLatin1Char(','), Qt::SkipEmptyParts))
      if (!panels.contains(title.trimmed(), Qt::CaseInsensitive))
        return usage(QStringLiteral("--panel %1: no such panel (%2)")
                         .arg(title.trimmed(), panels.join(QStringLiteral(", "))));
    if (parser.isSet(importOpt) && !QFileInfo::exists(parser.value(importOpt)))
      return usage(
          QStringLiteral("--import-profile %1: no such file").arg(parser.value(importOpt)));
    return 0;
  };
  // Qt's own options (-platform, -style…) are known only once QApplication took them out: a
  // command line with one is parsed again then.
  QStringList raw;
  for (int i = 0; i < argc; ++i) raw << QString::fromLocal8Bit(argv[i]);
  const bool parsedEarly = parser.parse(raw);
  if (parsedEarly) {
    if (parser.isSet(QStringLiteral("help")) || parser.isSet(QStringLiteral("version"))) {
      QCoreApplication core(argc, argv);
      if (parser.isSet(QStringLiteral("help"))) parser.showHelp(0);
      parser.showVersion();
    }
    if (const int code = check()) return code;
  }
  if (parsedEarly && parser.isSet(timingsOpt)) timings.enable();
  timings.mark("main");
  QApplication app(argc, argv);
  if (!parsedEarly) {
    if (!parser.parse(QCoreApplication::arguments())) return usage(parser.errorText());
    if (parser.isSet(QStringLiteral("help"))) parser.showHelp(0);
    if (parser.isSet(QStringLiteral("version"))) parser.showVersion();
    if (const int code = check()) return code;
  }

  const QStringList args = parser.positionalArguments();
  const QString shotPath = parser.value(screenshot);
  const bool shooting = parser.isSet(screenshot);
  if (shooting && args.isEmpty()) {
    std::fprintf(stderr, "souffle-explorer: --screenshot needs a MODEL\n");
    return 2;
  }

  if (parser.isSet(timingsOpt)) timings.enable();
  timings.mark("Qt started");
  // Partition prices kept between runs in the user's cache folder (beside compiled kernels):
  // opening a model planned before builds only what changed.
  souffle::schedule::set_default_price_store(
      souffle::schedule::open_user_price_store([](const std::string& w) {
        std::fprintf(stderr, "souffle-explorer: warning: %s\n", w.c_str());
      }));
  MainWindow window;
  timings.mark("window built");
  QObject::connect(&window, &MainWindow::modelLoaded, &window,
                   [&timings] { timings.mark("model loaded"); });
  QObject::connect(&window, &MainWindow::graphDrawn, &window, [&timings](bool final) {
    timings.mark(final ? "graph drawn (final layout)" : "graph drawn (first layout)");
  });
  QObject::connect(&window, &MainWindow::planned, &window, [&timings] { timings.mark("planned"); });
  QObject::connect(window.graphPanel()->scene(), &souffle::views::GraphScene::clustersReady,
                   &window, [&timings] { timings.mark("kernel outlines drawn"); });
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
  window.setPrecision(parser.value(precisionOpt));
  window.setSync(parser.value(syncOpt));
  // --calibration: checked now, taken after a project is opened (it wins over the project's).
  if (parser.isSet(calibrationOpt)) {
    try {
      souffle::gpu::load_calibration(parser.value(calibrationOpt).toStdString());
    } catch (const souffle::UserError& e) {
      return usage(QStringLiteral("--calibration: %1").arg(QString::fromUtf8(e.what())));
    }
  }
  {
    souffle::views::HeatMetric metric = souffle::views::HeatMetric::None;
    souffle::views::parseHeatMetric(parser.value(colour), metric);
    window.setHeatMetric(metric);
  }
  if (parser.isSet(importOpt)) {
    // Import once the first plan is there (it maps onto that plan's kernels).
    auto imported = std::make_shared<bool>(false);
    const QString file = parser.value(importOpt);
    QObject::connect(&window, &MainWindow::planned, &window, [&window, imported, file] {
      if (*imported || !window.planData()) return;
      *imported = true;
      if (!window.importProfile(file))
        std::fprintf(stderr, "souffle-explorer: cannot import %s (Problems panel)\n",
                     qPrintable(file));
    });
  }
  window.show();
  timings.mark("window shown");

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
    auto save = [&window, shotPath, &timings](int code) {
      timings.mark("grabbing the picture");
      const QPixmap picture = window.grab();
      timings.mark("window painted");
      const bool ok = picture.save(shotPath);
      timings.mark("picture saved");
      if (!ok) std::fprintf(stderr, "souffle-explorer: cannot write %s\n", qPrintable(shotPath));
      QApplication::exit(ok ? code : 1);
    };
    // The picture is ready once the final layout is on screen and the plan (with its kernel
    // outlines) is drawn on it.
    // A shown Code panel must have its code too (big kernels take seconds to generate).
    auto ready = [&window, &profiled] {
      return profiled && window.graphPanel()->isFinal() && window.planData() &&
             !window.isPlanning() && !window.comparisonView()->isBusy() &&
             !window.graphPanel()->scene()->clustersPending() &&
             (!window.codePanel()->isVisible() || window.codePanel()->isReady()) &&
             (!window.isStepThroughShown() ||
              (!window.stepThrough()->isBusy() && window.stepThrough()->stepCount() > 0 &&
               window.stepThrough()->isDrawn()));
    };
    bool done = false;
    auto shoot = [&, save, ready] {
      if (done || !ready()) return;
      done = true;
      timings.mark("ready for the picture");
      // A picture without the node asked for would pass for the one wanted: bad usage (2), no
      // picture.
      if (parser.isSet(select) && !selectFirstMatch(window, parser.value(select))) {
        std::fprintf(stderr, "souffle-explorer: %s\n",
                     qPrintable(noMatch(parser.value(select), window)));
        QApplication::exit(2);
        return;
      }
      // Let what is queued (signals, layout requests, panels filled) land before grabbing (the
      // grab paints the window itself); a shown Memory panel records the selected node's stage
      // first, and a shown Code panel builds the selected node's kernel's code first (the
      // selection above may have asked for another kernel's).
      auto memory_then_save = [&window, save] {
        souffle::views::MemoryPanel* memory = window.memoryPanel();
        if (!memory->isVisible() || !memory->isBusy()) return save(0);
        QObject::connect(memory, &souffle::views::MemoryPanel::ready, &window,
                         [&window, save] { afterQueuedEvents(&window, [save] { save(0); }); });
      };
      afterQueuedEvents(&window, [&window, memory_then_save] {
        souffle::views::CodePanel* code = window.codePanel();
        if (!code->isVisible() || code->isReady()) return memory_then_save();
        QObject::connect(
            code, &souffle::views::CodePanel::codeReady, &window,
            [&window, memory_then_save] { afterQueuedEvents(&window, memory_then_save); },
            Qt::SingleShotConnection);
      });
    };
    QObject::connect(&window, &MainWindow::graphDrawn, &window, shoot);
    QObject::connect(&window, &MainWindow::planned, &window, shoot);
    QObject::connect(window.comparisonView(), &souffle::views::ComparisonView::compared, &window,
                     shoot);
    QObject::connect(window.codePanel(), &souffle::views::CodePanel::codeReady, &window, shoot);
    QObject::connect(window.stepThrough(), &souffle::views::StepThroughPanel::ready, &window, shoot,
                     Qt::QueuedConnection);
    for (bool after : {false, true})
      QObject::connect(window.stepThrough()->graph(after), &souffle::views::GraphPanel::drawn,
                       &window, shoot, Qt::QueuedConnection);
    // The kernel outlines are made off the GUI thread (seconds on a 20,000-node graph).
    QObject::connect(window.graphPanel()->scene(), &souffle::views::GraphScene::clustersReady,
                     &window, shoot);
    QObject::connect(window.profileRunner(), &souffle::views::ProfileRunner::finished, &window,
                     shoot, Qt::QueuedConnection);
    QObject::connect(&window, &MainWindow::planFailed, &window,
                     [&window, save](const QString& reason) {
                       std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(reason));
                       QTimer::singleShot(300, &window, [save] { save(1); });
                     });
    QObject::connect(&window, &MainWindow::loadFailed, &window, [&, save](const LoadError& e) {
      std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(e.message()));
      QTimer::singleShot(300, &window, [save] { save(2); });
    });
    QObject::connect(window.project(), &souffle::views::ProjectController::openFailed, &window,
                     [&, save](const LoadError& e) {
                       std::fprintf(stderr, "souffle-explorer: %s\n", qPrintable(e.message()));
                       QTimer::singleShot(300, &window, [save] { save(2); });
                     });
    QTimer::singleShot(parser.value(timeout).toInt() * 1000, &window, [] {
      std::fprintf(stderr, "souffle-explorer: timed out waiting for the graph\n");
      QApplication::exit(3);
    });
  }
  if (parser.isSet(select) && !shooting) {
    // On screen the window stays for the person using it: a node that is not there is said in
    // the status line, once the graph is drawn.
    auto selected = std::make_shared<bool>(false);
    QObject::connect(&window, &MainWindow::graphDrawn, &window,
                     [&window, selected, text = parser.value(select)](bool final) {
                       if (!final || *selected) return;
                       *selected = true;
                       if (!selectFirstMatch(window, text))
                         window.statusBar()->showMessage(noMatch(text, window), 20000);
                     });
  }
  if (shooting) {
    window.project()->setInteractive(false);
    window.project()->setAutosaveEnabled(false);
  }
  // --step: the step-through shown, at that step once its run is done.
  if (parser.isSet(stepOpt)) {
    const QString name = parser.value(stepOpt).trimmed();
    window.setStepThroughShown(true);
    souffle::views::StepThroughPanel* steps = window.stepThrough();
    QObject::connect(steps, &souffle::views::StepThroughPanel::ready, steps, [steps, name] {
      for (int i = 0; i < steps->stepCount(); ++i)
        if (QString::fromStdString(steps->step(i)->name).compare(name, Qt::CaseInsensitive) == 0)
          steps->setCurrentStep(i);
    });
  }
  for (const QString& title : parser.value(panel).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    QDockWidget* dock = nullptr;
    QStringList titles;
    for (QDockWidget* d : window.findChildren<QDockWidget*>()) {
      titles << d->windowTitle();
      if (d->windowTitle().compare(title.trimmed(), Qt::CaseInsensitive) == 0) dock = d;
    }
    if (!dock)
      return usage(QStringLiteral("--panel %1: no such panel (%2)")
                       .arg(title.trimmed(), titles.join(QStringLiteral(", "))));
    dock->show();
    dock->raise();
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
    if (!yes || !window.project()->restoreAutosave())
      souffle::views::ProjectController::discardOrphanedAutosaves();
  }
  window.setInputOptions(parser.values(dimOpt), parser.values(bindOpt), parser.values(shapeOpt));
  if (!args.isEmpty()) window.openFile(args.front());
  timings.mark("model file opened, event loop entered");
  if (parser.isSet(calibrationOpt)) window.loadCalibration(parser.value(calibrationOpt));
  exitCode = app.exec();
  return exitCode;
}
