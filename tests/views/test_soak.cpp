// A soak: the explorer opens a sample model, plans it, makes an edit, undoes it and closes, for
// every sample model in turn, SOUFFLE_SOAK_ITERATIONS times (default 100), and the process's
// resident memory after the last round may exceed the memory after the warm-up rounds by no
// more than a stated bound. Leaked plans, kernels, scenes or windows grow it round after round.
#include <malloc.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QUndoStack>
#include <QtTest>
#include <algorithm>
#include <cstdio>

#include "views/edit_commands.h"
#include "views/main_window.h"
#include "views/project_controller.h"

using namespace souffle;
using namespace souffle::views;

namespace {

/// Resident set size of this process in MiB (VmRSS of /proc/self/status).
double residentMiB() {
  QFile f(QStringLiteral("/proc/self/status"));
  if (!f.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith("VmRSS:"))
      return line.mid(6).trimmed().split(' ').first().toDouble() / 1024;
  return -1;
}

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading();
}

}  // namespace

class TestSoak : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void openPlanEditCloseManyTimes();
};

void TestSoak::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_soak"));
}

void TestSoak::openPlanEditCloseManyTimes() {
  const QStringList models = QDir(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models"))
                                 .entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  QVERIFY(models.size() >= 6);
  const int rounds = qEnvironmentVariableIsSet("SOUFFLE_SOAK_ITERATIONS")
                         ? qEnvironmentVariableIntValue("SOUFFLE_SOAK_ITERATIONS")
                         : 100;
  const int warmup = std::min(int(models.size()) * 2, rounds / 2);
  // The bound: what one more round of every model may keep (caches of Qt, fonts, the thread
  // pool's arenas), not what a leak of a plan or a scene per round adds up to over 100 rounds.
  constexpr double kBoundMiB = 64;
  const char* strategies[] = {"souffle", "rules", "unfused"};
  const bool verbose = qEnvironmentVariableIsSet("SOUFFLE_SOAK_VERBOSE");
  double base = 0, peak = 0;
  int accepted = 0;  // rounds whose edit the plan accepted (and that undid it)
  QElapsedTimer clock;
  clock.start();
  for (int i = 0; i < rounds; ++i) {
    const QString model = models[i % models.size()];
    auto* w = new MainWindow;
    w->project()->setInteractive(false);
    w->project()->setAutosaveEnabled(false);
    w->resize(1280, 800);
    w->show();
    w->setStrategy(QString::fromLatin1(strategies[(i / models.size()) % 3]));
    w->openModel(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx").arg(model));
    QTRY_VERIFY_WITH_TIMEOUT(settled(*w), 120000);
    QVERIFY2(!w->isErrorShown(), qPrintable(model));
    // An edit, planned first: the plan accepts it (then undo: a re-plan each way) or refuses
    // it (a plan made and dropped).
    const plan::FusionPlan& p = *w->planData()->plan;
    const std::string te = p.program.ops[size_t(p.partitions.back().tes.back())]->name;
    const auto before = w->planData();
    const size_t edits = w->decisionEditor()->decisions().edits.size();
    w->decisionEditor()->push({{plan::Edit::Kind::Pin, te, ""}}, QStringLiteral("pin"));
    QTRY_VERIFY_WITH_TIMEOUT(settled(*w) && !w->decisionEditor()->hasProposal(), 120000);
    if (w->decisionEditor()->decisions().edits.size() > edits) {
      ++accepted;
      QTRY_VERIFY_WITH_TIMEOUT(settled(*w) && w->planData() != before, 120000);
      const auto edited = w->planData();
      w->decisionEditor()->undoStack()->undo();
      QTRY_VERIFY_WITH_TIMEOUT(settled(*w) && w->planData() != edited, 120000);
    }
    QVERIFY(w->close());
    delete w;
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QCoreApplication::processEvents();
    malloc_trim(0);
    const double rss = residentMiB();
    peak = std::max(peak, rss);
    if (i + 1 == warmup) base = rss;
    if (verbose || (i + 1) % 10 == 0)
      std::printf("soak: round %d (%s) resident %.1f MiB, %.1f s\n", i + 1, qPrintable(model), rss,
                  clock.elapsed() / 1000.0);
    std::fflush(stdout);
  }
  const double end = residentMiB();
  std::printf(
      "soak: %d rounds in %.1f s (%d edits accepted and undone); resident after warm-up (%d "
      "rounds) %.1f MiB, at the end %.1f MiB (growth %.1f MiB, bound %.0f), peak %.1f MiB\n",
      rounds, clock.elapsed() / 1000.0, accepted, warmup, base, end, end - base, kBoundMiB, peak);
  // Most rounds' edits are kept (souffle may refuse a pin that would break its one kernel).
  QVERIFY2(accepted * 3 >= rounds, qPrintable(QStringLiteral("%1 edits accepted").arg(accepted)));
  QVERIFY2(end - base <= kBoundMiB,
           qPrintable(QStringLiteral("resident memory grew by %1 MiB").arg(end - base)));
}

QTEST_MAIN(TestSoak)
#include "test_soak.moc"
