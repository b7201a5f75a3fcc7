// The explorer as a daily tool: boxes coloured by a metric with a legend (on screen and in the
// SVG export), imported profiles (a PyTorch trace and an Nsight Compute CSV from tests/data) on
// the graph and in the kernel table with unmatched entries listed, stable kernel identities
// across an edit, share of total and CSV export, cancel answered within a second, and bad
// command-line options refused with exit code 2.
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "views/edit_commands.h"
#include "views/graph_view.h"
#include "views/imported_profile.h"
#include "views/main_window.h"
#include "views/panels.h"
#include "views/partition_table_model.h"
#include "views/project_controller.h"
#include "views/table_model.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString sample(const char* name) {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx").arg(QLatin1String(name));
}

QString data(const char* name) {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/data/%1").arg(QLatin1String(name));
}

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading() && w.graphPanel()->isFinal();
}

/// Opens `model` under `strategy` and waits for its plan on the final layout.
bool open(MainWindow& w, const char* model, const char* strategy) {
  w.resize(1600, 1000);
  w.show();
  w.setStrategy(QString::fromLatin1(strategy));
  w.openModel(sample(model));
  return QTest::qWaitFor([&] { return settled(w) && w.planData()->strategy == strategy; }, 120000);
}

int boxOfNode(const MainWindow& w, const QString& node) {
  const SceneGraph* g = w.graphPanel()->scene()->graph();
  for (size_t b = 0; b < g->nodes.size(); ++b)
    if (g->nodes[b].onnxNode == node) return static_cast<int>(b);
  return -1;
}

}  // namespace

class TestDailyTool : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void heatMapByMetricWithALegend();
  void importedProfilesOnTheGraph();
  void stableKernelIdentitiesAcrossAnEdit();
  void shareOfTotalAndCsvExport();
  void cancelAnswersWithinASecond();
  void badOptionsExitWithTwo();
  void syncSelectorReplansWithFlags();
  void orderingASelectedStageIsADecision();
  void calibrationPricesThePlanAndSaysSo();
};

void TestDailyTool::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_daily_tool"));
}

void TestDailyTool::heatMapByMetricWithALegend() {
  MainWindow w;
  QVERIFY(open(w, "mmoe", "rules"));
  GraphScene* scene = w.graphPanel()->scene();
  QVERIFY(!scene->heatShown());
  w.setHeatMetric(HeatMetric::EstimatedTime);
  QVERIFY(scene->heatShown());
  QVERIFY(w.graphPanel()->legend()->isVisible());
  QVERIFY(w.graphPanel()->legend()->legend().title.contains(QStringLiteral("Estimated time")));
  // The slowest kernel's boxes are the hottest, a kernel's boxes share its value.
  const plan::FusionPlan& p = *w.planData()->plan;
  size_t slowest = 0;
  for (size_t k = 0; k < p.partitions.size(); ++k)
    if (p.partitions[k].est_time_us > p.partitions[slowest].est_time_us) slowest = k;
  const std::vector<int> boxes = w.planData()->boxesOf(false, int(slowest));
  QVERIFY(!boxes.empty());
  for (int b : boxes) QCOMPARE(scene->heatOf(b), 1.0);
  for (size_t b = 0; b < scene->graph()->nodes.size(); ++b) {
    const double h = scene->heatOf(int(b));
    QVERIFY(std::isnan(h) || (h >= 0 && h <= 1));
  }
  // Per node metrics: FLOPs.
  w.setHeatMetric(HeatMetric::Flops);
  QVERIFY(w.graphPanel()->legend()->legend().title.contains(QStringLiteral("FLOPs per node")));
  // The SVG export carries the legend.
  QTemporaryDir dir;
  const QString svg = dir.filePath(QStringLiteral("heat.svg"));
  w.exportSvg(svg);
  QFile f(svg);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QVERIFY(QString::fromUtf8(f.readAll()).contains(QStringLiteral("FLOPs per node")));
  // Back to colours by op type.
  w.setHeatMetric(HeatMetric::None);
  QVERIFY(!scene->heatShown());
  QVERIFY(!w.graphPanel()->legend()->isVisible());
}

void TestDailyTool::importedProfilesOnTheGraph() {
  {
    // An Nsight Compute CSV of the rules plan's kernels: the measured column and the heat map.
    MainWindow w;
    QVERIFY(open(w, "mmoe", "rules"));
    QVERIFY(w.importProfile(data("nsight_compute_mmoe_rules_handwritten.csv")));
    ExternalProfileDataPtr imported = w.importedProfile();
    QVERIFY(imported);
    QCOMPARE(imported->match.unmatched, size_t(1));
    QCOMPARE(w.heatMetric(), HeatMetric::MeasuredTime);
    PartitionTableModel* kernels = w.partitionModel();
    QCOMPARE(kernels->data(kernels->index(0, PartitionTableModel::MeasuredColumn)).toString(),
             QStringLiteral("2.05"));
    QVERIFY(!std::isnan(w.graphPanel()->scene()->heatOf(w.planData()->boxesOf(false, 0).front())));
    QVERIFY(w.graphPanel()->legend()->legend().note.contains(QStringLiteral("Nsight Compute")));
    // The unmatched entry is listed with why.
    ImportedProfileModel* model = w.importedProfilePanel()->model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    int unmatched = 0;
    for (int r = 0; r < model->rowCount(); ++r)
      if (!model->data(model->index(r, 0), ImportedProfileModel::MatchedRole).toBool()) {
        ++unmatched;
        QVERIFY(model->data(model->index(r, ImportedProfileModel::MatchColumn))
                    .toString()
                    .contains(QStringLiteral("not a kernel of this plan")));
      }
    QCOMPARE(unmatched, 1);
    QVERIFY(w.importedProfilePanel()->summary().contains(QStringLiteral("1 unmatched")));
    // It follows the plan: another strategy's kernels are other kernels.
    w.setStrategy(QStringLiteral("souffle"));
    QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == "souffle", 60000);
    QVERIFY(w.importedProfile()->plan == w.planData());
    // A file it cannot read: the problems panel says why, the window stays as it was.
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.csv"));
    QFile out(bad);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write("name,time\nkernel0,quick\n");
    out.close();
    QVERIFY(!w.importProfile(bad));
    QVERIFY(w.isErrorShown());
    QVERIFY(w.errorPanel()->text().contains(QStringLiteral("line 2")));
  }
  {
    // A PyTorch profiler trace of the sample BERT's module: per node, by module path.
    MainWindow w;
    QVERIFY(open(w, "bert", "souffle"));
    QVERIFY(w.importProfile(data("pytorch_trace_bert_sample_cpu.json")));
    const int softmax = boxOfNode(w, QStringLiteral("/layers.0/Softmax"));
    const int query = boxOfNode(w, QStringLiteral("/layers.1/query/MatMul"));
    QVERIFY(softmax >= 0 && query >= 0);
    QVERIFY(!std::isnan(w.graphPanel()->scene()->heatOf(softmax)));
    QVERIFY(!std::isnan(w.graphPanel()->scene()->heatOf(query)));
    QVERIFY(w.graphPanel()->legend()->legend().title.contains(QStringLiteral("per node")));
    QVERIFY(w.graphPanel()->legend()->legend().note.contains(QStringLiteral("CPU time")));
  }
  {
    // ONNX Runtime's own profile of the sample BERT: its node names are the model's (a node its
    // optimizer fused, the node it starts with).
    MainWindow w;
    QVERIFY(open(w, "bert", "souffle"));
    QVERIFY(w.importProfile(data("onnxruntime_profile_bert_sample_cpu.json")));
    QVERIFY(!w.isErrorShown());
    const int softmax = boxOfNode(w, QStringLiteral("/layers.0/Softmax"));
    const int key = boxOfNode(w, QStringLiteral("/layers.0/key/MatMul"));
    QVERIFY(softmax >= 0 && key >= 0);
    QVERIFY(!std::isnan(w.graphPanel()->scene()->heatOf(softmax)));
    QVERIFY(!std::isnan(w.graphPanel()->scene()->heatOf(key)));
    QVERIFY(w.graphPanel()->legend()->legend().note.contains(QStringLiteral("ONNX Runtime")));
    QVERIFY(w.importedProfilePanel()->summary().contains(QStringLiteral("ONNX Runtime")));
    // A JSON file that is no profile: refused as a profile, naming the file and what was
    // expected; the model on screen was opened and stays.
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("events.json"));
    QFile out(bad);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(R"([{"cat": "Session", "name": "model_run", "ph": "X", "ts": 0, "dur": 1}])");
    out.close();
    QVERIFY(!w.importProfile(bad));
    QVERIFY(w.isErrorShown());
    const QString text = w.errorPanel()->text();
    QVERIFY2(text.startsWith(QStringLiteral("The profile could not be imported")),
             qPrintable(text));
    QVERIFY(!text.contains(QStringLiteral("The model could not be opened")));
    QVERIFY(text.contains(QStringLiteral("events.json")));
    QVERIFY(text.contains(QStringLiteral("ONNX Runtime profile")));
    QVERIFY(w.planData());
  }
}

void TestDailyTool::stableKernelIdentitiesAcrossAnEdit() {
  MainWindow w;
  QVERIFY(open(w, "bert", "rules"));
  const PlanDataPtr before = w.planData();
  const plan::FusionPlan& p = *before->plan;
  const int n = static_cast<int>(p.partitions.size());
  // The first neighbours in the middle the plan merges.
  int pick = -1;
  for (int k = n / 3; k + 1 < n && pick < 0; ++k) {
    plan::Decisions d;
    d.edits.push_back({plan::Edit::Kind::Merge,
                       p.program.ops[size_t(p.partitions[size_t(k)].tes.front())]->name,
                       p.program.ops[size_t(p.partitions[size_t(k + 1)].tes.front())]->name});
    const PlanOutcome o =
        PlanRunner::runWith(w.modelData(), plan::Strategy::Rules, w.gpu(), d, before);
    if (o.ok() && o.data->plan->refused.empty() && int(o.data->plan->kernels()) == n - 1) pick = k;
  }
  QVERIFY(pick > 0);
  w.decisionEditor()->push(
      {{plan::Edit::Kind::Merge,
        p.program.ops[size_t(p.partitions[size_t(pick)].tes.front())]->name,
        p.program.ops[size_t(p.partitions[size_t(pick + 1)].tes.front())]->name}},
      QStringLiteral("merge"));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData() != before, 60000);
  const PlanData& after = *w.planData();
  QCOMPARE(int(after.identities.size()), n - 1);
  // Before the merge: the same kernels, names and colours; after it: renumbered, same too.
  for (int k = 0; k < pick; ++k) {
    QCOMPARE(after.identities[size_t(k)].anchor, before->identities[size_t(k)].anchor);
    QCOMPARE(after.identities[size_t(k)].colorKey, before->identities[size_t(k)].colorKey);
  }
  for (int k = pick + 2; k < n; ++k) {
    QCOMPARE(after.identities[size_t(k - 1)].anchor, before->identities[size_t(k)].anchor);
    QCOMPARE(after.identities[size_t(k - 1)].colorKey, before->identities[size_t(k)].colorKey);
  }
  // The merged kernel keeps the identity of the part that holds its anchor (its first
  // compute-intensive TE).
  const quint32 merged = after.identities[size_t(pick)].colorKey;
  QVERIFY(merged == before->identities[size_t(pick)].colorKey ||
          merged == before->identities[size_t(pick + 1)].colorKey);
  // The scene paints kernels by identity: a renumbered kernel keeps its fill.
  const int moved = n - 1;  // was n
  QCOMPARE(w.graphPanel()->scene()->kernelFill(after.plan->partitions[size_t(moved - 1)].id),
           kernelColor(before->identities[size_t(moved)].colorKey,
                       w.graphPanel()->scene()->colors().dark));
}

void TestDailyTool::shareOfTotalAndCsvExport() {
  MainWindow w;
  QVERIFY(open(w, "mmoe", "rules"));
  PartitionTableModel* m = w.partitionModel();
  double sum = 0;
  for (int r = 0; r < m->rowCount(); ++r)
    sum += m->data(m->index(r, PartitionTableModel::ShareColumn), PartitionTableModel::SortRole)
               .toDouble();
  QVERIFY(std::abs(sum - 100) < 0.01);
  QVERIFY(m->data(m->index(0, PartitionTableModel::ShareColumn)).toString().endsWith('%'));
  // CSV of the table as shown: a header and one line per kernel, numbers unformatted.
  const QString csv = tableCsv(*w.partitionTable()->model());
  const QStringList lines = csv.trimmed().split(QLatin1Char('\n'));
  QCOMPARE(lines.size(), m->rowCount() + 1);
  QVERIFY(lines.front().startsWith(QStringLiteral("Kernel,Kind,TEs")));
  QVERIFY(lines.front().contains(QStringLiteral("Share")));
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("kernels.csv"));
  QVERIFY(exportCsv(w.partitionTable(), QStringLiteral("kernels"), path));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(QString::fromUtf8(f.readAll()), csv);
}

void TestDailyTool::cancelAnswersWithinASecond() {
  MainWindow w;
  QVERIFY(open(w, "bert", "souffle"));
  // Planning: another strategy, cancelled at once.
  QSignalSpy planCancelled(w.findChild<PlanRunner*>(), &PlanRunner::cancelled);
  const PlanDataPtr shown = w.planData();
  w.setStrategy(QStringLiteral("unfused"));
  QVERIFY(w.isPlanning());
  QElapsedTimer t;
  t.start();
  w.cancelLoad();  // Esc
  QVERIFY(planCancelled.wait(1000));
  QVERIFY(t.elapsed() < 1000);
  QVERIFY(!w.isPlanning());
  QVERIFY(w.planData() == shown);
  // Compile: answered within a second, whatever NVRTC is doing.
  QSignalSpy compiled(&w, &MainWindow::compiled);
  w.compileKernels();
  QVERIFY(w.compileRunner()->isBusy());
  t.restart();
  w.cancelCompile();
  QVERIFY(compiled.wait(1000));
  QVERIFY(t.elapsed() < 1000);
  QVERIFY(!w.compileRunner()->isBusy());
  QVERIFY(w.message().contains(QStringLiteral("cancelled")));
}

void TestDailyTool::badOptionsExitWithTwo() {
  const QString explorer = QStringLiteral(SOUFFLE_EXPLORER);
  auto run = [&](const QStringList& args) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(explorer, args);
    if (!p.waitForFinished(60000)) {
      p.kill();
      return std::make_pair(-1, QString());
    }
    return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
  };
  auto [gpu, gpuWhy] = run({QStringLiteral("--gpu"), QStringLiteral("h300")});
  QCOMPARE(gpu, 2);
  QVERIFY2(gpuWhy.contains(QStringLiteral("h300")), qPrintable(gpuWhy));
  auto [strategy, strategyWhy] = run({QStringLiteral("--strategy"), QStringLiteral("fast")});
  QCOMPARE(strategy, 2);
  QVERIFY2(strategyWhy.contains(QStringLiteral("fast")) &&
               strategyWhy.contains(QStringLiteral("souffle-paper")),
           qPrintable(strategyWhy));
  auto [unknown, unknownWhy] = run({QStringLiteral("--no-such-option")});
  QCOMPARE(unknown, 2);
  QVERIFY2(unknownWhy.contains(QStringLiteral("no-such-option")), qPrintable(unknownWhy));
  auto [precision, precisionWhy] = run({QStringLiteral("--precision"), QStringLiteral("fp8")});
  QCOMPARE(precision, 2);
  QVERIFY2(precisionWhy.contains(QStringLiteral("fp8")), qPrintable(precisionWhy));
  auto [sync, syncWhy] = run({QStringLiteral("--sync"), QStringLiteral("barrier")});
  QCOMPARE(sync, 2);
  QVERIFY2(syncWhy.contains(QStringLiteral("barrier")), qPrintable(syncWhy));
  auto [cal, calWhy] =
      run({QStringLiteral("--calibration"), QStringLiteral("/nonexistent/calibration.json")});
  QCOMPARE(cal, 2);
  QVERIFY2(calWhy.contains(QStringLiteral("/nonexistent/calibration.json")), qPrintable(calWhy));
  auto [missing, missingWhy] =
      run({QStringLiteral("/nonexistent/model.onnx"), QStringLiteral("--screenshot"),
           QDir::temp().filePath(QStringLiteral("never.png"))});
  QCOMPARE(missing, 2);
  QVERIFY2(missingWhy.contains(QStringLiteral("nonexistent")), qPrintable(missingWhy));
}

// The toolbar's sync mode re-plans: under auto the cost model puts per-tile flags where they
// price cheaper (the sample ResNeXt has such boundaries; the sample LSTM, its layers side by
// side in waves, keeps grid barriers), the plan is never dearer than with grid barriers, and the
// graph draws the flags boundaries.
void TestDailyTool::syncSelectorReplansWithFlags() {
  MainWindow w;
  QVERIFY(open(w, "resnext", "souffle"));
  QCOMPARE(w.sync(), QStringLiteral("grid"));
  const PlanDataPtr grid = w.planData();
  QCOMPARE(grid->plan->sync, SyncMode::Grid);
  w.setSync(QStringLiteral("auto"));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData() != grid, 120000);
  const plan::FusionPlan& p = *w.planData()->plan;
  QCOMPARE(p.sync, SyncMode::Auto);
  QVERIFY(p.est_time_us <= grid->plan->est_time_us + 1e-6);
  int flags = 0;
  for (const plan::Partition& k : p.partitions)
    for (const plan::Boundary& b : k.boundaries) flags += b.order.kind == BoundaryKind::Flags;
  QVERIFY2(flags > 0, "the sample ResNeXt has boundaries where flags price cheaper");
  QVERIFY(p.grid_syncs < grid->plan->grid_syncs);
  // At TE level the edges ordered by flags are drawn and counted in the legend as such, beside
  // those behind grid barriers.
  w.setTeLevel(true);
  QTRY_VERIFY_WITH_TIMEOUT(
      settled(w) &&
          w.graphPanel()->boundaryLegend()->counts()[static_cast<size_t>(BoundaryKind::Flags)] > 0,
      120000);
  QVERIFY(w.graphPanel()->boundaryLegend()->counts()[static_cast<size_t>(BoundaryKind::Grid)] > 0);
}

// Edit > Order stage by per-tile flags on a TE of the sample LSTM (grid mode): a sync decision
// that re-plans with that boundary forced to flags; asking it of a stage that reads only what
// its own threads wrote is refused with the reason and leaves the plan and the undo stack alone.
void TestDailyTool::orderingASelectedStageIsADecision() {
  MainWindow w;
  QVERIFY(open(w, "lstm", "souffle"));
  w.setTeLevel(true);
  QTRY_VERIFY_WITH_TIMEOUT(settled(w), 120000);
  auto selectTe = [&](const QString& te) {
    const SceneGraph* g = w.graphPanel()->scene()->graph();
    for (size_t b = 0; b < g->nodes.size(); ++b)
      if (g->nodes[b].subtitle == te) {
        w.graphPanel()->scene()->selectBox(int(b));
        return true;
      }
    return false;
  };
  const PlanDataPtr before = w.planData();
  QVERIFY(selectTe(QStringLiteral("/lstm/LSTM/d0/t1/gates")));
  w.orderSelected(BoundaryKind::Flags);
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData() != before, 120000);
  const plan::FusionPlan& p = *w.planData()->plan;
  QCOMPARE(p.applied.size(), size_t(1));
  QCOMPARE(p.applied.front().kind, plan::Edit::Kind::Sync);
  int forced = 0;
  for (const plan::Partition& k : p.partitions)
    for (const plan::Boundary& b : k.boundaries)
      forced += b.order.forced && b.order.kind == BoundaryKind::Flags;
  QCOMPARE(forced, 1);
  const int steps = w.decisionEditor()->undoStack()->count();
  const PlanDataPtr accepted = w.planData();
  QVERIFY(selectTe(QStringLiteral("/lstm/LSTM/d0/t3/h")));
  w.orderSelected(BoundaryKind::Flags);
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && !w.isPlanning(), 120000);
  QTest::qWait(200);
  QCOMPARE(w.decisionEditor()->undoStack()->count(), steps);
}

// Plan > Load calibration: the plans are priced with the file's measured constants (a slower
// launch makes every estimate larger), the status line says so and names the file; a bad file
// is refused with its name and the constants in use stay; the spec's constants come back.
void TestDailyTool::calibrationPricesThePlanAndSaysSo() {
  MainWindow w;
  QVERIFY(open(w, "mmoe", "rules"));
  const PlanDataPtr spec = w.planData();
  QVERIFY(QString::fromStdString(spec->plan->cost_constants).startsWith(QLatin1String("spec")));
  QTemporaryDir dir;
  const QString file = dir.filePath(QStringLiteral("h100.json"));
  {
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"json({"version": 1, "device": "NVIDIA H100 (recorded)",
      "date": "2026-12-05T00:00:00Z", "launch_overhead_us": 25.0, "dram_bandwidth_gbps": 1000})json");
  }
  QString error;
  QVERIFY2(w.loadCalibration(file, &error), qPrintable(error));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData() != spec, 120000);
  const plan::FusionPlan& p = *w.planData()->plan;
  const QString constants = QString::fromStdString(p.cost_constants);
  QVERIFY2(constants.startsWith(QLatin1String("calibration ")) && constants.contains(file) &&
               constants.contains(QLatin1String("launch")),
           qPrintable(constants));
  QVERIFY(p.est_time_us > spec->plan->est_time_us);
  auto* label = w.statusBar()->findChild<QLabel*>(QStringLiteral("planLabel"));
  QVERIFY(label);
  QVERIFY2(label->text().contains(QLatin1String("(calibrated)")), qPrintable(label->text()));
  QVERIFY2(label->toolTip().contains(file), qPrintable(label->toolTip()));
  QCOMPARE(QString::fromStdString(w.project()->snapshot().calibration), file);  // kept by projects
  {
    // A saved project opens calibrated; one whose calibration cannot be read opens with the
    // spec's constants and the problems panel says why.
    const QString saved = dir.filePath(QStringLiteral("calibrated.souffle"));
    QVERIFY(w.project()->save(saved));
    MainWindow again;
    again.project()->setInteractive(false);
    QVERIFY(again.project()->open(saved));
    QTRY_VERIFY_WITH_TIMEOUT(settled(again) && again.planData(), 120000);
    QVERIFY(QString::fromStdString(again.planData()->plan->cost_constants).contains(file));
    QFile::remove(file);
    MainWindow third;
    third.show();
    third.project()->setInteractive(false);
    QVERIFY(third.project()->open(saved));
    QTRY_VERIFY_WITH_TIMEOUT(settled(third) && third.planData(), 120000);
    QVERIFY(QString::fromStdString(third.planData()->plan->cost_constants)
                .startsWith(QLatin1String("spec")));
    QVERIFY(third.isErrorShown());
    QVERIFY2(third.errorPanel()->text().contains(file), qPrintable(third.errorPanel()->text()));
  }

  const PlanDataPtr calibrated = w.planData();
  const QString bad = dir.filePath(QStringLiteral("bad.json"));
  {
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"json({"version": 1, "device": "x", "launch_overhead_us": -3})json");
  }
  QVERIFY(!w.loadCalibration(bad, &error));
  QVERIFY2(error.contains(bad) && error.contains(QLatin1String("launch_overhead_us")),
           qPrintable(error));
  QCOMPARE(w.planData(), calibrated);  // nothing re-planned

  w.clearCalibration();
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData() != calibrated, 120000);
  QVERIFY(
      QString::fromStdString(w.planData()->plan->cost_constants).startsWith(QLatin1String("spec")));
  QCOMPARE(w.planData()->plan->est_time_us, spec->plan->est_time_us);
  QVERIFY(!label->text().contains(QLatin1String("(calibrated)")));
}

QTEST_MAIN(TestDailyTool)
#include "test_daily_tool.moc"
