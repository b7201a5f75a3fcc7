// End to end through the explorer window: open a sample model, switch strategy, merge two
// kernels, undo and redo, save the project and reopen it, export the plan JSON, compile, export
// the kernel bundle, and restore an autosave after a crash.
#include <QApplication>
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "core/session/project.h"
#include "views/comparison_model.h"
#include "views/comparison_view.h"
#include "views/edit_commands.h"
#include "views/main_window.h"
#include "views/panels.h"
#include "views/partition_table_model.h"
#include "views/project_controller.h"
#include "views/transforms_panel.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString modelPath() {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx");
}

int kernels(const MainWindow& w) {
  return w.planData() ? static_cast<int>(w.planData()->plan->kernels()) : -1;
}

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading();
}

/// Rows of the kernel table (sorted view) whose partitions are `a` and `b`.
void selectKernelRows(MainWindow& w, int a, int b) {
  QTableView* t = w.partitionTable();
  t->clearSelection();
  for (int r = 0; r < t->model()->rowCount(); ++r) {
    const int p = t->model()->index(r, 0).data(PartitionTableModel::PartitionRole).toInt();
    if (p == a || p == b)
      t->selectionModel()->select(t->model()->index(r, 0),
                                  QItemSelectionModel::Select | QItemSelectionModel::Rows);
  }
}

}  // namespace

class TestEndToEnd : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void editSaveReopenExport();
  void autosaveRestoresAfterACrash();
  void badProjectShowsTheErrorAndMissingModelKeepsDecisions();
};

void TestEndToEnd::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_end_to_end"));
  ProjectController::discardOrphanedAutosaves();
}

void TestEndToEnd::editSaveReopenExport() {
  QTemporaryDir dir;
  QString projectPath;
  plan::Decisions saved;
  {
    MainWindow w;
    w.project()->setInteractive(false);
    w.resize(1600, 1000);
    w.show();
    w.openModel(modelPath());
    QTRY_VERIFY_WITH_TIMEOUT(settled(w), 60000);
    QCOMPARE(w.planData()->strategy, QStringLiteral("souffle"));

    // Switch strategy; the plan follows.
    w.setStrategy(QStringLiteral("rules"));
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("rules"),
                             60000);
    const int before = kernels(w);
    QVERIFY(before > 2);

    // The first neighbouring pair the plan accepts to merge (found off screen, done on it).
    int pick = -1;
    const PlanDataPtr rules = w.planData();  // held: re-plans replace the window's plan
    const plan::FusionPlan& p = *rules->plan;
    for (int k = 0; k + 1 < before && pick < 0; ++k) {
      plan::Decisions d;
      d.edits.push_back({plan::Edit::Kind::Merge,
                         p.program.ops[size_t(p.partitions[size_t(k)].tes.front())]->name,
                         p.program.ops[size_t(p.partitions[size_t(k + 1)].tes.front())]->name});
      const PlanOutcome o =
          PlanRunner::runWith(w.modelData(), plan::Strategy::Rules, w.gpu(), d, w.planData());
      if (o.ok() && o.data->plan->refused.empty() && int(o.data->plan->kernels()) == before - 1)
        pick = k;
    }
    QVERIFY2(pick >= 0, "no neighbouring kernels of bert/rules can be merged");
    selectKernelRows(w, pick, pick + 1);
    QCOMPARE(w.partitionTable()->selectionModel()->selectedRows().size(), 2);
    w.mergeSelected();
    // Planned first, a step once the plan accepts it.
    QCOMPARE(w.decisionEditor()->planned().edits.size(), size_t(1));
    QVERIFY(w.decisionEditor()->decisions().edits.empty());
    QVERIFY(w.isPlanning());
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && kernels(w) == before - 1, 60000);
    QCOMPARE(w.decisionEditor()->decisions().edits.size(), size_t(1));
    // The step names the change in estimated time it brought.
    QVERIFY2(w.decisionEditor()->undoStack()->text(0).contains(QStringLiteral("µs")),
             qPrintable(w.decisionEditor()->undoStack()->text(0)));
    QCOMPARE(w.partitionModel()->rowCount(), before - 1);
    QCOMPARE(w.planData()->plan->applied.size(), size_t(1));
    QVERIFY(w.isWindowModified());
    QCOMPARE(w.transformsPanel()->editsModel()->rowCount(), 1);
    QCOMPARE(w.transformsPanel()->editsModel()->index(0, EditsModel::StateColumn).data(),
             QVariant(QStringLiteral("applied")));

    // Undo brings the count back; redo merges again.
    QUndoStack* stack = w.decisionEditor()->undoStack();
    QCOMPARE(stack->count(), 1);
    stack->undo();
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && kernels(w) == before, 60000);
    QVERIFY(w.decisionEditor()->decisions().edits.empty());
    stack->redo();
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && kernels(w) == before - 1, 60000);

    // A refused edit (merging a kernel with itself) changes nothing and is no undo step; the
    // window says why.
    const PlanDataPtr merged = w.planData();
    const std::string te = p.program.ops[size_t(p.partitions[0].tes.front())]->name;
    QSignalSpy planned(&w, &MainWindow::planned);
    w.decisionEditor()->push({{plan::Edit::Kind::Merge, te, te}}, QStringLiteral("self"));
    QTRY_VERIFY_WITH_TIMEOUT(planned.count() == 1 && !w.isPlanning(), 60000);
    QVERIFY(w.planData() == merged);
    QCOMPARE(stack->count(), 1);
    QCOMPARE(w.decisionEditor()->decisions().edits.size(), size_t(1));
    QVERIFY(!w.decisionEditor()->hasProposal());
    QVERIFY2(w.message().startsWith(QStringLiteral("Refused")), qPrintable(w.message()));
    QCOMPARE(w.transformsPanel()->editsModel()->refusedCount(), 0);

    // Save the project; the modified mark goes.
    projectPath = dir.filePath(QStringLiteral("bert.souffle"));
    QVERIFY(w.project()->save(projectPath));
    QVERIFY(!w.isWindowModified());
    QVERIFY(w.windowTitle().contains(QStringLiteral("bert.souffle")));
    saved = w.decisionEditor()->decisions();
    const Project onDisk = load_project(projectPath.toStdString());
    QCOMPARE(onDisk.strategy, std::string("rules"));
    QVERIFY(onDisk.decisions == saved);

    // Export the plan: the JSON parses back with the figures on screen.
    const QString jsonPath = dir.filePath(QStringLiteral("plan.json"));
    QVERIFY(w.exportPlanJson(jsonPath));
    QFile f(jsonPath);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(j["strategy"].get<std::string>(), std::string("rules"));
    QCOMPARE(j["kernels"].get<int>(), before - 1);
    QCOMPARE(int(j["partitions"].size()), before - 1);
    QCOMPARE(j["decisions_applied"].size(), size_t(1));

    // The comparison view lines up the plan before and after the edit.
    ComparisonView* cmp = w.comparisonView();
    QSignalSpy compared(cmp, &ComparisonView::compared);
    cmp->setContext(w.modelData(), w.gpu(), w.decisionEditor()->decisions());
    cmp->setSides(cmp->sideIndex(QStringLiteral("rules"), false),
                  cmp->sideIndex(QStringLiteral("rules"), true));
    QTRY_VERIFY_WITH_TIMEOUT(!cmp->isBusy() && compared.count() > 0, 60000);
    QCOMPARE(cmp->model()->totalsA().kernels, before);
    QCOMPARE(cmp->model()->totalsB().kernels, before - 1);
    QCOMPARE(cmp->model()->differingRows(), 1);

    // File > Export > Report: the plan before and after the edit, as the command line writes it.
    QSignalSpy reported(&w, &MainWindow::reportExported);
    const QString reportPath = dir.filePath(QStringLiteral("report.html"));
    QVERIFY(w.exportReport(reportPath));
    QTRY_VERIFY_WITH_TIMEOUT(reported.count() == 1, 120000);
    QVERIFY2(reported.at(0).at(0).toBool(), qPrintable(reported.at(0).at(1).toString()));
    QFile html(reportPath);
    QVERIFY(html.open(QIODevice::ReadOnly));
    const QString page = QString::fromUtf8(html.readAll());
    QVERIFY(page.contains(QStringLiteral("Plan: rules + edits")));
    QVERIFY(page.contains(QStringLiteral("Before and after the decisions file")));
    QVERIFY(w.exportWalkthrough(dir.filePath(QStringLiteral("steps.html"))));
    QTRY_VERIFY_WITH_TIMEOUT(reported.count() == 2, 120000);
    QVERIFY2(reported.at(1).at(0).toBool(), qPrintable(reported.at(1).at(1).toString()));
    QVERIFY(QFileInfo::exists(dir.filePath(QStringLiteral("steps-9-emit.html"))));

    // Compile (NVRTC, no GPU needed) and wait for the results; under souffle, whose few kernels
    // keep this quick (the rules plan's dozens of kernels take a minute here).
    w.setStrategy(QStringLiteral("souffle"));
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("souffle"),
                             60000);
    QSignalSpy compiled(&w, &MainWindow::compiled);
    w.compileKernels();
    QTRY_VERIFY_WITH_TIMEOUT(compiled.count() == 1, 120000);
    QVERIFY(w.compileData() != nullptr);
    // Export the kernel bundle: sources, PTX, weights, data, harness and its CMakeLists.txt.
    QSignalSpy exported(&w, &MainWindow::bundleExported);
    const QString bundleDir = dir.filePath(QStringLiteral("bundle"));
    QVERIFY(w.exportBundle(bundleDir));
    QTRY_VERIFY_WITH_TIMEOUT(exported.count() == 1, 120000);
    QVERIFY2(exported.at(0).at(0).toBool(), qPrintable(exported.at(0).at(1).toString()));
    for (const char* f : {"main.cu", "CMakeLists.txt", "weights.bin", "weights.txt"})
      QVERIFY2(QFileInfo::exists(bundleDir + QLatin1Char('/') + QLatin1String(f)), f);
    w.setStrategy(QStringLiteral("rules"));  // the project was saved under rules
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("rules"),
                             60000);
    w.close();
  }
  // Reopen: decisions, strategy and plan come back.
  MainWindow w;
  w.project()->setInteractive(false);
  w.show();
  w.openFile(projectPath);
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("rules") &&
                               !w.planData()->plan->applied.empty(),
                           60000);
  QVERIFY(w.decisionEditor()->decisions() == saved);
  QCOMPARE(w.modelPath(), QFileInfo(modelPath()).absoluteFilePath());
  QVERIFY(!w.isWindowModified());
  QVERIFY(!w.isErrorShown());
}

void TestEndToEnd::autosaveRestoresAfterACrash() {
  ProjectController::discardOrphanedAutosaves();
  plan::Decisions made;
  {
    // A session that never closes cleanly (its autosave stays behind).
    auto* w = new MainWindow;
    w->project()->setInteractive(false);
    w->project()->setAutosaveDelay(50);
    QSignalSpy autosaved(w->project(), &ProjectController::autosaved);
    w->setStrategy(QStringLiteral("rules"));
    w->openModel(modelPath());
    QTRY_VERIFY_WITH_TIMEOUT(settled(*w), 60000);
    const plan::FusionPlan& p = *w->planData()->plan;
    const std::string te = p.program.ops[size_t(p.partitions[1].tes.back())]->name;
    w->decisionEditor()->push({{plan::Edit::Kind::Pin, te, ""}}, QStringLiteral("pin"));
    made = w->decisionEditor()->planned();  // a step once its plan accepts it
    // Wait for the autosave that holds the edit (an earlier one, written when the model
    // opened, may land first on a loaded machine).
    auto holdsEdit = [&made, w] {
      try {
        const QString file = w->project()->autosavePath();
        return QFileInfo::exists(file) && read_project(file.toStdString()).decisions == made;
      } catch (const std::exception&) {
        return false;  // being written
      }
    };
    QTRY_VERIFY_WITH_TIMEOUT(autosaved.count() > 0 && settled(*w) && holdsEdit(), 60000);
    // Its own, which no other explorer offers to restore while it runs.
    QVERIFY(!ProjectController::hasAutosave());
    // Simulated crash: the window goes without its close event.
    delete w;
  }
  QVERIFY(ProjectController::hasAutosave());
  MainWindow w;
  w.project()->setInteractive(false);
  QVERIFY(w.project()->restoreAutosave());
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("rules"), 60000);
  QVERIFY(w.decisionEditor()->decisions() == made);
  QVERIFY(w.isWindowModified());  // restored but not saved anywhere
  // A clean close removes the autosave.
  w.close();
  QVERIFY(!ProjectController::hasAutosave());
}

void TestEndToEnd::badProjectShowsTheErrorAndMissingModelKeepsDecisions() {
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("bad.souffle"));
  {
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"version": 9, "model": "x.onnx"})");
  }
  MainWindow w;
  w.project()->setInteractive(false);
  w.show();
  QVERIFY(!w.project()->open(bad));
  QVERIFY(w.isErrorShown());
  QVERIFY(w.errorPanel()->text().contains(QStringLiteral("version")));

  // A project whose model is gone: the decisions stay, the error names the path looked for.
  Project p;
  p.model = dir.filePath(QStringLiteral("gone/model.onnx")).toStdString();
  p.decisions.edits.push_back({plan::Edit::Kind::Split, "MatMul_1", ""});
  const QString path = dir.filePath(QStringLiteral("gone.souffle"));
  save_project(p, path.toStdString());
  QSignalSpy failed(&w, &MainWindow::loadFailed);
  QVERIFY(w.project()->open(path));
  QTRY_VERIFY_WITH_TIMEOUT(failed.count() == 1, 30000);
  QVERIFY(w.decisionEditor()->decisions() == p.decisions);
  QVERIFY(w.errorPanel()->text().contains(QStringLiteral("gone/model.onnx")));
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  TestEndToEnd test;
  return QTest::qExec(&test, argc, argv);
}
#include "test_end_to_end.moc"
