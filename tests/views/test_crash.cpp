// Crash safety proven by killing: this binary starts itself again as a child explorer session
// (SOUFFLE_CRASH_CHILD=edit|compile|profile) that opens a sample model, makes edits, waits for
// the autosave that holds them and, for compile and profile, starts that work; the test kills
// the child with SIGKILL in the middle of it, then restores the autosave in a new window and
// checks every edit is back. A killed session leaves no souffle-runner behind. A runner that
// dies mid-profile loses none of the user's edits either.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QThread>
#include <QUuid>
#include <QtTest>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/plan/decisions.h"
#include "core/session/project.h"
#include "views/edit_commands.h"
#include "views/main_window.h"
#include "views/panels.h"
#include "views/profile_runner.h"
#include "views/project_controller.h"

using namespace souffle;
using namespace souffle::views;

namespace {

constexpr const char* kChildRole = "SOUFFLE_CRASH_CHILD";
constexpr const char* kMark = "SOUFFLE_CRASH_MARK";

QString modelPath() {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx");
}

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading();
}

void sameApplication() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_crash"));
}

/// `w`'s own autosave (an instance's, not offered to others while it runs) holds `made`.
bool autosaveHolds(const MainWindow& w, const plan::Decisions& made) {
  try {
    const QString file = w.project()->autosavePath();
    return QFileInfo::exists(file) && read_project(file.toStdString()).decisions == made;
  } catch (const std::exception&) {
    return false;  // being written
  }
}

/// Runs `until` in the event loop for up to `ms`; false on time out.
template <typename F>
bool spinUntil(F until, int ms) {
  QElapsedTimer t;
  t.start();
  while (!until()) {
    if (t.elapsed() > ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    QThread::msleep(5);
  }
  return true;
}

/// Two pins, on the last TE of the second and third partitions: edits the plan keeps. An edit
/// becomes part of the session once its plan accepts it, so each is waited for in turn.
plan::Decisions makeEdits(MainWindow& w) {
  const plan::FusionPlan& p = *w.planData()->plan;
  const std::string a = p.program.ops[size_t(p.partitions[1].tes.back())]->name;
  const std::string b = p.program.ops[size_t(p.partitions[2].tes.back())]->name;
  for (const std::string& te : {a, b}) {
    const size_t before = w.decisionEditor()->decisions().edits.size();
    w.decisionEditor()->push({{plan::Edit::Kind::Pin, te, ""}}, QStringLiteral("pin"));
    if (!spinUntil(
            [&] { return settled(w) && w.decisionEditor()->decisions().edits.size() > before; },
            120000))
      break;
  }
  return w.decisionEditor()->decisions();
}

/// The child session: everything a user does before the crash. Prints "READY <decisions JSON>"
/// once the autosave holds the edits and the asked-for work is under way, then keeps working
/// until it is killed. Exit codes other than death by the parent's SIGKILL are failures.
int runChild(const QString& role) {
  auto* w = new MainWindow;
  w->project()->setInteractive(false);
  w->project()->setAutosaveDelay(50);
  w->resize(1200, 800);
  w->show();
  w->setStrategy(QStringLiteral("rules"));
  w->openModel(modelPath());
  if (!spinUntil([&] { return settled(*w); }, 120000)) return 10;
  const plan::Decisions made = makeEdits(*w);
  if (!spinUntil([&] { return settled(*w) && autosaveHolds(*w, made); }, 120000)) return 11;
  if (role == QLatin1String("compile")) {
    bool going = false;
    QObject::connect(w->compileRunner(), &CompileRunner::progress, w,
                     [&going](int done, int) { going |= done > 0; });
    w->compileKernels();
    if (!spinUntil([&] { return going; }, 120000)) return 12;
  } else if (role == QLatin1String("profile")) {
    bool going = false;
    QObject::connect(
        w->profileRunner(), &ProfileRunner::progress, w,
        [&going](const QString& what) { going |= what.startsWith(QLatin1String("running")); });
    w->profileEmulatorAction()->trigger();
    if (!spinUntil([&] { return going; }, 120000)) return 13;
  }
  std::printf("READY %s\n", nlohmann::json::parse(plan::to_json(made)).dump().c_str());
  std::fflush(stdout);
  return QApplication::exec();  // until killed
}

/// souffle-runner processes started by a child carrying `mark` in their environment.
QList<int> runnersMarked(const QString& mark) {
  QList<int> pids;
  const QByteArray needle = QByteArray(kMark) + '=' + mark.toUtf8();
  for (const QString& d : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
    bool ok = false;
    const int pid = d.toInt(&ok);
    if (!ok) continue;
    QFile env(QStringLiteral("/proc/%1/environ").arg(pid));
    if (!env.open(QIODevice::ReadOnly)) continue;
    const QList<QByteArray> vars = env.readAll().split('\0');
    if (!vars.contains(needle)) continue;
    QFile cmd(QStringLiteral("/proc/%1/cmdline").arg(pid));
    if (cmd.open(QIODevice::ReadOnly) && cmd.readAll().contains("souffle-runner")) pids << pid;
  }
  return pids;
}

}  // namespace

class TestCrash : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void killedAfterEditsRestoresThem_data();
  void killedAfterEditsRestoresThem();
  void runnerDeathKeepsTheEdits();
};

void TestCrash::initTestCase() {
  ProjectController::discardOrphanedAutosaves();
}

void TestCrash::killedAfterEditsRestoresThem_data() {
  QTest::addColumn<QString>("role");
  QTest::newRow("editing") << QStringLiteral("edit");
  QTest::newRow("compiling") << QStringLiteral("compile");
  QTest::newRow("profiling") << QStringLiteral("profile");
}

void TestCrash::killedAfterEditsRestoresThem() {
  QFETCH(QString, role);
  ProjectController::discardOrphanedAutosaves();
  const QString mark = QUuid::createUuid().toString(QUuid::WithoutBraces);
  QProcess child;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QString::fromLatin1(kChildRole), role);
  env.insert(QString::fromLatin1(kMark), mark);
  child.setProcessEnvironment(env);
  child.setProcessChannelMode(QProcess::SeparateChannels);
  child.start(QCoreApplication::applicationFilePath(), {});
  QVERIFY(child.waitForStarted(30000));
  QByteArray line;
  QElapsedTimer t;
  t.start();
  while (!line.startsWith("READY") && t.elapsed() < 240000) {
    if (!child.canReadLine() && !child.waitForReadyRead(1000)) {
      QVERIFY2(child.state() == QProcess::Running,
               qPrintable(QStringLiteral("child exited with %1: %2")
                              .arg(child.exitCode())
                              .arg(QString::fromUtf8(child.readAllStandardError().right(2000)))));
      continue;
    }
    line = child.readLine().trimmed();
  }
  QVERIFY2(line.startsWith("READY"), "the child session never got its edits autosaved");
  const plan::Decisions made = plan::parse_decisions(line.mid(6).toStdString(), "child");
  QCOMPARE(made.edits.size(), size_t(2));
  if (role == QLatin1String("profile")) QVERIFY(!runnersMarked(mark).isEmpty());

  // The crash: no close event, no chance to clean up.
  child.kill();  // SIGKILL
  QVERIFY(child.waitForFinished(30000));
  QCOMPARE(child.exitStatus(), QProcess::CrashExit);

  // Its runner notices the closed pipe and goes too.
  QTRY_VERIFY_WITH_TIMEOUT(runnersMarked(mark).isEmpty(), 120000);

  QVERIFY(ProjectController::hasAutosave());
  MainWindow w;
  w.project()->setInteractive(false);
  QVERIFY(w.project()->restoreAutosave());
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("rules"), 120000);
  QVERIFY(w.decisionEditor()->decisions() == made);
  QCOMPARE(w.modelPath(), QFileInfo(modelPath()).absoluteFilePath());
  QVERIFY(w.isWindowModified());
  QVERIFY(!w.isErrorShown());
  w.close();
  QVERIFY(!ProjectController::hasAutosave());
}

void TestCrash::runnerDeathKeepsTheEdits() {
  ProjectController::discardOrphanedAutosaves();
  MainWindow w;
  w.project()->setInteractive(false);
  w.project()->setAutosaveDelay(50);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  w.openModel(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/mmoe/model.onnx"));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w), 120000);
  const plan::Decisions made = makeEdits(w);
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && autosaveHolds(w, made), 120000);
  // The runner dies as it launches the second kernel.
  qputenv("SOUFFLE_RUNNER_ABORT_AT", "kernel1");
  QSignalSpy done(w.profileRunner(), &ProfileRunner::finished);
  w.profileEmulatorAction()->trigger();
  QVERIFY(done.wait(120000));
  qunsetenv("SOUFFLE_RUNNER_ABORT_AT");
  QVERIFY(w.isErrorShown());
  QVERIFY2(w.errorPanel()->text().contains(QStringLiteral("died")),
           qPrintable(w.errorPanel()->text()));
  QVERIFY(w.decisionEditor()->decisions() == made);
  QVERIFY(autosaveHolds(w, made));
  QVERIFY(w.isWindowModified());
  w.close();
}

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  sameApplication();
  const QString role = qEnvironmentVariable(kChildRole);
  if (!role.isEmpty()) return runChild(role);
  TestCrash t;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&t, argc, argv);
}

#include "test_crash.moc"
