// The explorer takes a model's inputs as souffle-cli does (--dim, --bind, --shape): a model whose
// If depends on a sample-rate input opens once the rate is bound, the refusal says how to bind it
// otherwise, and a project keeps the binding.
#include <QAction>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "core/session/project.h"
#include "views/main_window.h"
#include "views/model_loader.h"
#include "views/panels.h"
#include "views/profile_runner.h"
#include "views/project_controller.h"

using namespace souffle;
using namespace souffle::views;

namespace {
QString ifModel() {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/data/exporters/if_on_input/model.onnx");
}
}  // namespace

class TestModelInputs : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void loaderTakesTheOptions();
  void windowBindsAndTheProjectKeepsIt();
};

void TestModelInputs::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_model_inputs"));
}

void TestModelInputs::loaderTakesTheOptions() {
  LoadOutcome unbound = ModelLoader::run(ifModel());
  QVERIFY(!unbound.ok());
  QVERIFY2(unbound.error.reason.contains(QStringLiteral("bind it with --bind sr=VALUE")),
           qPrintable(unbound.error.reason));
  LoadOutcome bound =
      ModelLoader::run(ifModel(), onnx_import::import_options({}, {"sr=16000"}, {}));
  QVERIFY2(bound.ok(), qPrintable(bound.error.message()));
}

void TestModelInputs::windowBindsAndTheProjectKeepsIt() {
  QTemporaryDir dir;
  const QString project = dir.filePath(QStringLiteral("vad.souffle"));
  {
    MainWindow w;
    w.show();
    w.openModel(ifModel());
    QTRY_VERIFY_WITH_TIMEOUT(w.isErrorShown(), 30000);
    QVERIFY(w.errorPanel()->text().contains(QStringLiteral("--bind sr=VALUE")));
    w.setInputOptions({}, {QStringLiteral("sr=16000")}, {});
    w.reload();
    QTRY_VERIFY_WITH_TIMEOUT(w.modelData() != nullptr && !w.isLoading(), 30000);
    QVERIFY(!w.isErrorShown());
    // Profiled on the emulator, which loads the model again with the same binding.
    QTRY_VERIFY_WITH_TIMEOUT(w.planData() != nullptr && !w.isPlanning(), 60000);
    QAction* emu = w.profileEmulatorAction();
    QTRY_VERIFY_WITH_TIMEOUT(emu && emu->isEnabled(), 30000);
    QSignalSpy done(w.profileRunner(), &ProfileRunner::finished);
    emu->trigger();
    QVERIFY(done.wait(120000));
    QVERIFY(w.profileData());
    QVERIFY2(w.profileData()->report.error.empty(), w.profileData()->report.error.c_str());
    QVERIFY(w.profileData()->report.verified);
    QVERIFY(w.project()->save(project));
  }
  Project p = read_project(project.toStdString());
  QCOMPARE(p.bind, std::vector<std::string>{"sr=16000"});
  MainWindow w;
  w.show();
  QVERIFY(w.project()->open(project));
  QCOMPARE(w.inputBinds(), QStringList{QStringLiteral("sr=16000")});
  QTRY_VERIFY_WITH_TIMEOUT(w.modelData() != nullptr && !w.isLoading(), 30000);
  QVERIFY(!w.isErrorShown());
}

QTEST_MAIN(TestModelInputs)
#include "test_model_inputs.moc"
