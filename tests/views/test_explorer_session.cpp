// What belongs to one model stays with it (its ExplorerSession): an imported profile, unsaved
// edits (asked about before another model opens), the step-through mode and each instance's
// autosave; compiled figures come back from the cache when an undo returns to the compiled plan;
// the command line refuses values it cannot take and prints its help without a display.
#include <QDockWidget>
#include <QFileInfo>
#include <QMessageBox>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "core/gpu/nvrtc.h"
#include "core/session/profile.h"
#include "core/session/project.h"
#include "views/edit_commands.h"
#include "views/explorer_session.h"
#include "views/graph_view.h"
#include "views/heat_map.h"
#include "views/kernel_runs.h"
#include "views/main_window.h"
#include "views/panel_titles.h"
#include "views/partition_table_model.h"
#include "views/profile_runner.h"
#include "views/project_controller.h"
#include "views/step_through.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString sample(const char* name) {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx").arg(QLatin1String(name));
}

/// The plan of `model` is on screen, its graph drawn with the final layout.
bool settledOn(const MainWindow& w, const char* model) {
  return w.planData() && !w.isPlanning() && !w.isLoading() && w.graphPanel()->isFinal() &&
         w.modelData() && w.planData()->model == w.modelData() &&
         w.modelPath() == QFileInfo(sample(model)).absoluteFilePath();
}

bool open(MainWindow& w, const char* model) {
  w.openModel(sample(model));
  return QTest::qWaitFor([&] { return settledOn(w, model); }, 120000);
}

/// A pin the plan keeps (the last TE of the second kernel), once its plan accepted it.
bool pinOne(MainWindow& w, const char* model) {
  const plan::FusionPlan& p = *w.planData()->plan;
  const size_t before = w.decisionEditor()->decisions().edits.size();
  const std::string te = p.program.ops[size_t(p.partitions[1].tes.back())]->name;
  w.decisionEditor()->push({{plan::Edit::Kind::Pin, te, ""}}, QStringLiteral("pin"));
  return QTest::qWaitFor(
      [&] { return settledOn(w, model) && w.decisionEditor()->decisions().edits.size() > before; },
      120000);
}

std::pair<int, QString> runExplorer(const QStringList& args, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(SOUFFLE_EXPLORER), args);
  if (!p.waitForFinished(120000)) {
    p.kill();
    return {-1, QString()};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2,
          QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError())};
}

QProcessEnvironment offscreen() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  return env;
}

}  // namespace

class TestExplorerSession : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void importedProfileStaysWithItsModel();
  void openingAnotherModelAsksToSave();
  void stepThroughEndsWithItsModel();
  void eachInstanceHasItsOwnAutosave();
  void undoToTheCompiledPlanShowsItsFigures();
  void badOptionsNameTheAcceptedValues();
  void helpNeedsNoDisplay();
  void panelTitlesAreTheDocks();
  void timesShowTheirUnit();
  void reportOfAnEditedPlanCarriesItsRun();
};

void TestExplorerSession::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_explorer_session"));
  ProjectController::discardOrphanedAutosaves();
}

void TestExplorerSession::importedProfileStaysWithItsModel() {
  MainWindow w;
  w.project()->setInteractive(false);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(open(w, "mmoe"));
  QVERIFY(w.importProfile(
      QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/data/nsight_compute_mmoe_rules_handwritten.csv")));
  QVERIFY(w.importedProfile());
  QVERIFY(w.session()->importedProfile());
  PartitionTableModel* kernels = w.partitionModel();
  QVERIFY(
      !kernels->data(kernels->index(0, PartitionTableModel::MeasuredColumn)).toString().isEmpty());
  // Another model: its kernels are not the profile's kernel0, kernel1, …
  QVERIFY(open(w, "lstm"));
  QVERIFY(!w.importedProfile());
  QVERIFY(!w.session()->importedProfile());
  for (int r = 0; r < kernels->rowCount(); ++r)
    QVERIFY(
        kernels->data(kernels->index(r, PartitionTableModel::MeasuredColumn)).toString().isEmpty());
  QVERIFY(w.importedProfilePanel()->summary().isEmpty());
  // The same model reloaded keeps its session.
  QVERIFY(w.importProfile(
      QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/data/nsight_compute_mmoe_rules_handwritten.csv")));
  ExplorerSession* session = w.session();
  w.reload();
  QTRY_VERIFY_WITH_TIMEOUT(settledOn(w, "lstm") && !w.isLoading(), 120000);
  QCOMPARE(w.session(), session);
  QVERIFY(w.importedProfile());
}

void TestExplorerSession::openingAnotherModelAsksToSave() {
  MainWindow w;
  w.project()->setInteractive(true);
  w.project()->setAutosaveEnabled(false);
  int asked = 0;
  QMessageBox::StandardButton answer = QMessageBox::Cancel;
  w.project()->setSaveQuestion([&] {
    ++asked;
    return answer;
  });
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(open(w, "mmoe"));
  QCOMPARE(asked, 0);  // nothing to save: no question
  QVERIFY(pinOne(w, "mmoe"));
  const plan::Decisions made = w.decisionEditor()->decisions();
  QVERIFY(w.project()->isModified());

  // Cancel: the model on screen stays, with its edits.
  w.openModel(sample("lstm"));
  QCOMPARE(asked, 1);
  QVERIFY(!w.isLoading());
  QVERIFY(settledOn(w, "mmoe"));
  QVERIFY(w.decisionEditor()->decisions() == made);

  // Save (to the project it was saved as): written, then the other model opens afresh.
  QTemporaryDir dir;
  const QString project = dir.filePath(QStringLiteral("mmoe.souffle"));
  QVERIFY(w.project()->save(project));
  QVERIFY(pinOne(w, "mmoe"));
  const plan::Decisions more = w.decisionEditor()->decisions();
  QCOMPARE(more.edits.size(), size_t(2));
  answer = QMessageBox::Save;
  QVERIFY(open(w, "lstm"));
  QCOMPARE(asked, 2);
  QVERIFY(read_project(project.toStdString()).decisions == more);
  QVERIFY(w.decisionEditor()->decisions().edits.empty());
  QCOMPARE(w.decisionEditor()->undoStack()->count(), 0);
  QVERIFY(w.project()->path().isEmpty());  // the project was mmoe's

  // Back to the first model: nothing to save, no question.
  QVERIFY(open(w, "mmoe"));
  QCOMPARE(asked, 2);
  // Discard: the edits go, the other model opens.
  QVERIFY(pinOne(w, "mmoe"));
  answer = QMessageBox::Discard;
  QVERIFY(open(w, "lstm"));
  QCOMPARE(asked, 3);
  QVERIFY(w.decisionEditor()->decisions().edits.empty());
  QVERIFY(!w.project()->isModified());
}

void TestExplorerSession::stepThroughEndsWithItsModel() {
  MainWindow w;
  w.project()->setInteractive(false);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(open(w, "mmoe"));
  // A profile imported before the mode: its panel is among the docks the mode puts away.
  QVERIFY(w.importProfile(
      QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/data/nsight_compute_mmoe_rules_handwritten.csv")));
  QVERIFY(dockOf(w.importedProfilePanel())->isVisible());
  w.setStepThroughShown(true);
  StepThroughPanel* steps = w.stepThrough();
  QTRY_VERIFY_WITH_TIMEOUT(!steps->isBusy() && steps->stepCount() > 0, 120000);
  QVERIFY(w.session()->isStepping());
  steps->setCurrentStep(0);  // the import: no kernels yet, its graph draws none
  QTRY_VERIFY_WITH_TIMEOUT(steps->isDrawn(), 60000);
  QVERIFY(!steps->graph(true)->scene()->kernelsOf(0));

  QVERIFY(open(w, "lstm"));
  QTRY_VERIFY_WITH_TIMEOUT(!steps->isBusy() && !w.graphPanel()->scene()->clustersPending(), 120000);
  QVERIFY(!w.isStepThroughShown());
  QVERIFY(!steps->isVisible());
  QVERIFY(!w.session()->isStepping());
  QCOMPARE(steps->stepCount(), 0);
  // The docks came back, but not the panel of the model before's profile.
  QVERIFY(!dockOf(w.importedProfilePanel())->isVisible());
  // The new model's kernels are drawn: every box of its first kernel is in a cluster.
  const std::vector<int> boxes = w.planData()->boxesOf(false, 0);
  QVERIFY(!boxes.empty());
  for (int b : boxes) {
    const std::vector<int>* ks = w.graphPanel()->scene()->kernelsOf(b);
    QVERIFY(ks && !ks->empty());
  }
}

void TestExplorerSession::eachInstanceHasItsOwnAutosave() {
  ProjectController::discardOrphanedAutosaves();
  auto* first = new MainWindow;
  first->project()->setInteractive(false);
  first->show();
  first->project()->setAutosaveDelay(50);
  first->setStrategy(QStringLiteral("rules"));
  QVERIFY(open(*first, "mmoe"));
  QVERIFY(pinOne(*first, "mmoe"));
  const plan::Decisions made = first->decisionEditor()->decisions();
  const QString file = first->project()->autosavePath();
  QTRY_VERIFY_WITH_TIMEOUT(
      QFileInfo::exists(file) && read_project(file.toStdString()).decisions == made, 60000);
  // A second explorer while the first runs: its own file, and nothing to restore.
  {
    MainWindow second;
    second.project()->setInteractive(false);
    QVERIFY(second.project()->autosavePath() != file);
    QVERIFY(!ProjectController::hasAutosave());
    QVERIFY(!second.project()->restoreAutosave());
    QVERIFY(QFileInfo::exists(file));
  }
  // The first goes without closing (a crash): now its autosave is offered, and restored once.
  delete first;
  QCOMPARE(ProjectController::orphanedAutosaves(), QStringList{file});
  MainWindow third;
  third.project()->setInteractive(false);
  third.show();
  QVERIFY(third.project()->restoreAutosave());
  QTRY_VERIFY_WITH_TIMEOUT(settledOn(third, "mmoe"), 120000);
  QVERIFY(third.decisionEditor()->decisions() == made);
  QVERIFY(!ProjectController::hasAutosave());
  third.close();
}

void TestExplorerSession::undoToTheCompiledPlanShowsItsFigures() {
  if (!gpu::nvrtc_available()) QSKIP("NVRTC is not available: nothing compiles");
  MainWindow w;
  w.project()->setInteractive(false);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(open(w, "mmoe"));
  const std::string compiledKey = souffle::plan_key(*w.planData()->plan);
  QSignalSpy compiled(&w, &MainWindow::compiled);
  w.compileAction()->trigger();
  QVERIFY(compiled.wait(600000));
  QVERIFY(w.compileData() && w.compileData()->plan == w.planData());
  PartitionTableModel* kernels = w.partitionModel();
  auto registers = [&](int row) {
    return kernels->data(kernels->index(row, PartitionTableModel::RegisterColumn)).toString();
  };
  // Kernels with nothing to launch have no figures.
  QList<int> withFigures;
  for (int r = 0; r < kernels->rowCount(); ++r)
    if (!registers(r).isEmpty()) withFigures << r;
  QVERIFY(!withFigures.isEmpty());

  QVERIFY(pinOne(w, "mmoe"));
  // Undo: the compiled plan again, whose kernels are all in the cache.
  w.decisionEditor()->undoStack()->undo();
  QTRY_VERIFY_WITH_TIMEOUT(
      settledOn(w, "mmoe") && souffle::plan_key(*w.planData()->plan) == compiledKey, 120000);
  QTRY_VERIFY_WITH_TIMEOUT(w.compileData() && w.compileData()->plan == w.planData(), 30000);
  QCOMPARE(w.compileData()->compiled, 0);
  QCOMPARE(w.compileData()->reused, int(withFigures.size()));
  for (int r : withFigures) QVERIFY(!registers(r).isEmpty());
  // Redo: the kernels the pin did not change keep their figures too.
  w.decisionEditor()->undoStack()->redo();
  QTRY_VERIFY_WITH_TIMEOUT(
      settledOn(w, "mmoe") && souffle::plan_key(*w.planData()->plan) != compiledKey, 120000);
  QTRY_VERIFY_WITH_TIMEOUT(w.compileData() && w.compileData()->plan == w.planData(), 30000);
  QVERIFY(w.compileData()->reused > 0);
  QVERIFY(!registers(withFigures.front()).isEmpty());
}

void TestExplorerSession::badOptionsNameTheAcceptedValues() {
  auto [theme, themeWhy] =
      runExplorer({QStringLiteral("--theme"), QStringLiteral("purple")}, offscreen());
  QCOMPARE(theme, 2);
  QVERIFY2(themeWhy.contains(QStringLiteral("--theme purple")) &&
               themeWhy.contains(QStringLiteral("dark")),
           qPrintable(themeWhy));
  auto [panel, panelWhy] =
      runExplorer({QStringLiteral("--panel"), QStringLiteral("Kernels,Nope")}, offscreen());
  QCOMPARE(panel, 2);
  QVERIFY2(panelWhy.contains(QStringLiteral("--panel Nope")) &&
               panelWhy.contains(QStringLiteral("Imported profile")),
           qPrintable(panelWhy));
  // --colour takes every metric of the Colour-by menu by its key, the timeline's two too.
  auto [colour, colourWhy] =
      runExplorer({QStringLiteral("--colour"), QStringLiteral("stage_time")}, offscreen());
  QCOMPARE(colour, 2);
  QVERIFY2(colourWhy.contains(QStringLiteral("--colour stage_time")) &&
               colourWhy.contains(QStringLiteral("stage-time")) &&
               colourWhy.contains(QStringLiteral("barrier-wait")),
           qPrintable(colourWhy));
  for (souffle::views::HeatMetric m : souffle::views::heatMetrics()) {
    souffle::views::HeatMetric back = souffle::views::HeatMetric::None;
    QVERIFY(souffle::views::parseHeatMetric(souffle::views::heatMetricKey(m), back));
    QCOMPARE(back, m);
  }
  // --select with a screenshot: the node must be there, else no picture and exit 2.
  QTemporaryDir dir;
  const QString shot = dir.filePath(QStringLiteral("shot.png"));
  auto [select, selectWhy] = runExplorer(
      {sample("mmoe"), QStringLiteral("--select"), QStringLiteral("NoSuchNodeAnywhere"),
       QStringLiteral("--screenshot"), shot, QStringLiteral("--restore"), QStringLiteral("skip")},
      offscreen());
  QCOMPARE(select, 2);
  QVERIFY2(selectWhy.contains(QStringLiteral("--select NoSuchNodeAnywhere")),
           qPrintable(selectWhy));
  QVERIFY(!QFileInfo::exists(shot));
}

void TestExplorerSession::helpNeedsNoDisplay() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
    env.remove(QString::fromLatin1(v));
  auto [help, helpText] = runExplorer({QStringLiteral("--help")}, env);
  QCOMPARE(help, 0);
  QVERIFY2(helpText.contains(QStringLiteral("--screenshot")), qPrintable(helpText));
  auto [version, versionText] = runExplorer({QStringLiteral("--version")}, env);
  QCOMPARE(version, 0);
  QVERIFY2(versionText.contains(QStringLiteral("0.1.0")), qPrintable(versionText));
  // Bad usage too is answered without a display.
  auto [bad, badWhy] = runExplorer({QStringLiteral("--theme"), QStringLiteral("purple")}, env);
  QCOMPARE(bad, 2);
  QVERIFY2(badWhy.contains(QStringLiteral("purple")), qPrintable(badWhy));
  // A panel's title too: the panels are known before a window exists.
  auto [panel, panelWhy] =
      runExplorer({QStringLiteral("--panel"), QStringLiteral("Kernels,Nope")}, env);
  QCOMPARE(panel, 2);
  QVERIFY2(panelWhy.contains(QStringLiteral("--panel Nope")) &&
               panelWhy.contains(QStringLiteral("Compare plans")),
           qPrintable(panelWhy));
}

// The titles --panel is checked against without a window are those of the window's docks.
void TestExplorerSession::panelTitlesAreTheDocks() {
  MainWindow w;
  QStringList docks;
  for (QDockWidget* d : w.findChildren<QDockWidget*>()) docks << d->windowTitle();
  QStringList known = panelTitles();
  docks.sort();
  known.sort();
  QCOMPARE(known, docks);
}

// The emulator's CPU times (millions of µs) in the kernel table: three digits and the unit.
void TestExplorerSession::timesShowTheirUnit() {
  QCOMPARE(timeWithUnit(12345678), QStringLiteral("12.3 s"));
  QCOMPARE(timeWithUnit(845123), QStringLiteral("845 ms"));
  QCOMPARE(timeWithUnit(1234.5), QStringLiteral("1.23 ms"));
  QCOMPARE(timeWithUnit(12.34), QStringLiteral("12.3 µs"));
  QCOMPARE(timeWithUnit(0.5), QStringLiteral("0.500 µs"));
  // The unit follows the value as rounded: never "1000 µs" or "100.0 ms".
  QCOMPARE(timeWithUnit(999.96), QStringLiteral("1.00 ms"));
  QCOMPARE(timeWithUnit(99.996), QStringLiteral("100 µs"));
  QCOMPARE(timeWithUnit(99996), QStringLiteral("100 ms"));
  QCOMPARE(timeWithUnit(9.996), QStringLiteral("10.0 µs"));
  QCOMPARE(timeWithUnit(0.9996), QStringLiteral("1.00 µs"));
  QCOMPARE(timeWithUnit(999999999), QStringLiteral("1000 s"));
  // The status line's summary of an emulator run says its CPU time the same way.
  ProfileData emulated;
  emulated.report.backend = "emulator";
  emulated.report.kernels_us = 12345678;
  emulated.report.est_total_us = 113.3;
  const QString summary = profileSummary(emulated);
  QVERIFY2(summary.contains(QStringLiteral("12.3 s of CPU time")), qPrintable(summary));
}

// A profile run of a plan with edits goes into the report exported after it, on the edited plan
// (the report holds the plan before the edits too, which was not measured).
void TestExplorerSession::reportOfAnEditedPlanCarriesItsRun() {
  MainWindow w;
  w.project()->setInteractive(false);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(open(w, "mmoe"));
  QVERIFY(pinOne(w, "mmoe"));
  QAction* emu = w.profileEmulatorAction();
  QVERIFY(emu && emu->isEnabled());
  QSignalSpy done(w.profileRunner(), &ProfileRunner::finished);
  emu->trigger();
  QVERIFY(done.wait(120000));
  QVERIFY(w.profileData() && w.profileData()->plan == w.planData());
  QTemporaryDir dir;
  const QString report = dir.filePath(QStringLiteral("mmoe-report.json"));
  QSignalSpy exported(&w, &MainWindow::reportExported);
  QVERIFY(w.exportReport(report));
  QVERIFY(exported.wait(300000));
  QVERIFY2(exported.front().front().toBool(), qPrintable(exported.front().back().toString()));
  QFile f(report);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString());
  QCOMPARE(j.at("plans").size(), size_t(2));
  // The plan before the edits was not measured; the edited one was, every kernel of it.
  QVERIFY(!j["plans"][0].contains("measurement") || j["plans"][0]["measurement"].is_null());
  const nlohmann::json& edited = j["plans"][1];
  QVERIFY2(edited.contains("measurement") && edited["measurement"].is_object(),
           edited.dump().substr(0, 400).c_str());
  QVERIFY(edited["measurement"].value("total_us", 0.0) > 0);
}

QTEST_MAIN(TestExplorerSession)
#include "test_explorer_session.moc"
