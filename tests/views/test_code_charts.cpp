// Code views, charts and the compile flow of the explorer: a node selects its code lines and a
// line its node, roofline points are the kernels and select them, compiled resources land in the
// kernel table, a compile error is shown, and profiling says why it is off without a GPU.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QDockWidget>
#include <QScatterSeries>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QtTest>

#include "core/gpu/device.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/sass.h"
#include "core/session/kernel_cache.h"
#include "views/charts_panel.h"
#include "views/code_highlighter.h"
#include "views/code_panel.h"
#include "views/edit_commands.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/panels.h"
#include "views/partition_table_model.h"
#include "views/profile_runner.h"
#include "views/project_controller.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString samplePath(const char* name) {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx").arg(QLatin1String(name));
}

/// Opens `model` and waits until its plan and final layout are on screen.
bool openAndPlan(MainWindow& w, const char* model) {
  w.openModel(samplePath(model));
  return QTest::qWaitFor(
      [&] { return w.planData() && w.graphPanel()->isFinal() && !w.isPlanning(); }, 120000);
}

/// An op box (at op level) whose node has TEs in a kernel with more than one ONNX node, so a
/// click on another node's line must change the selection; any op box with a kernel otherwise.
int pickBox(const MainWindow& w) {
  const SceneGraph* g = w.graphPanel()->scene()->graph();
  const PlanData& p = *w.planData();
  int fallback = -1;
  for (size_t b = 0; b < g->nodes.size(); ++b) {
    if (g->nodes[b].kind != SceneNode::Kind::Op || p.opKernels[b].empty()) continue;
    if (fallback < 0) fallback = static_cast<int>(b);
    if (p.plan->partitions[p.opKernels[b].front()].ops.size() > 1) return static_cast<int>(b);
  }
  return fallback;
}

void saveShot(QWidget* w, const QString& name) {
  const QByteArray dir = qgetenv("SOUFFLE_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  QApplication::processEvents();
  QTest::qWait(300);
  w->grab().save(QDir(QString::fromLocal8Bit(dir)).filePath(name));
}

}  // namespace

class TestCodeCharts : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void highlighterColoursEachLanguage();
  void nodeHighlightsLinesAndLineSelectsNode();
  void rooflinePointsAreKernelsAndClickSelects();
  void compileFillsTheTableAndShowsErrors();
  void compileReportsProgressPerDistinctProgram();
  void kernelsAreBuiltOnDemandAndSurviveAnEdit();
  void profileIsOffWithoutAGpu();
  void profileOnTheEmulatorFillsTheTable();
  void screenshots();
};

void TestCodeCharts::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_code_charts"));
}

void TestCodeCharts::highlighterColoursEachLanguage() {
  auto formatsOf = [](CodeLanguage lang, const QString& text) {
    QTextDocument doc;
    doc.setPlainText(text);
    CodeHighlighter h(lang, &doc);
    h.rehighlight();
    QSet<QRgb> colours;
    for (const QTextLayout::FormatRange& r : doc.firstBlock().layout()->formats())
      colours.insert(r.format.foreground().color().rgb());
    return colours;
  };
  const CodeColors c = CodeColors::forTheme(false);
  const QSet<QRgb> cuda =
      formatsOf(CodeLanguage::Cuda, QStringLiteral("const float x = 2.0f; // blockIdx"));
  QVERIFY(cuda.contains(c.keyword.rgb()));
  QVERIFY(cuda.contains(c.type.rgb()));
  QVERIFY(cuda.contains(c.number.rgb()));
  QVERIFY(cuda.contains(c.comment.rgb()));
  QVERIFY(
      formatsOf(CodeLanguage::Cuda, QStringLiteral("a = threadIdx.x;")).contains(c.builtin.rgb()));
  const QSet<QRgb> ptx =
      formatsOf(CodeLanguage::Ptx, QStringLiteral("\tld.global.f32 \t%f1, [%rd4];"));
  QVERIFY(ptx.contains(c.opcode.rgb()));
  QVERIFY(ptx.contains(c.reg.rgb()));
  QVERIFY(formatsOf(CodeLanguage::Te, QStringLiteral("T[i0 < 4] = sum(k0 < 8; x[k0])  # n (Sum)"))
              .contains(c.comment.rgb()));
}

void TestCodeCharts::nodeHighlightsLinesAndLineSelectsNode() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QVERIFY(openAndPlan(w, "mmoe"));
  CodePanel* code = w.codePanel();
  QVERIFY(code->requestedPartitions().isEmpty());  // nothing is built before it is shown

  GraphScene* scene = w.graphPanel()->scene();
  const int box = pickBox(w);
  QVERIFY(box >= 0);
  const SceneNode node = scene->graph()->nodes[box];
  const int kernel = w.planData()->opKernels[box].front();
  scene->selectBox(box);
  QCOMPARE(code->partition(), kernel);
  QTRY_VERIFY_WITH_TIMEOUT(code->isReady(), 60000);

  // The CUDA lines of the node are highlighted, and they are its lines by the source map.
  CodeEditor* cuda = code->editor(CodePanel::CudaTab);
  code->setCurrentTab(CodePanel::CudaTab);
  const std::vector<int> lines = cuda->highlightedLines();
  QVERIFY(!lines.empty());
  QVERIFY(cuda->toPlainText().contains(QStringLiteral("__global__")));
  for (int l : lines) {
    const QString text = cuda->document()->findBlockByNumber(l - 1).text();
    QVERIFY2(!text.contains(QStringLiteral("#include")), qPrintable(text));
  }
  // The stage comment naming the node is among them.
  bool named = false;
  for (int l : lines)
    named |= cuda->document()->findBlockByNumber(l - 1).text().contains(node.onnxNode);
  QVERIFY(named);
  // The TE tab highlights the node's TEs too.
  QVERIFY(!code->editor(CodePanel::TeTab)->highlightedLines().empty());

  // Clicking a line of another node of the kernel (or, in a one-node kernel, the node's own
  // line after clearing the selection) selects that node in the graph.
  const plan::Partition& part = w.planData()->plan->partitions[kernel];
  QString target = node.onnxNode;
  for (const std::string& op : part.ops)
    if (QString::fromStdString(op) != node.onnxNode) target = QString::fromStdString(op);
  int targetLine = -1;
  for (int l = 1; l <= cuda->blockCount() && targetLine < 0; ++l) {
    const QString text = cuda->document()->findBlockByNumber(l - 1).text();
    if (text.contains(QStringLiteral("<- %1 (").arg(target))) targetLine = l;
  }
  QVERIFY(targetLine > 0);
  if (target == node.onnxNode) scene->clearSelection();
  cuda->verticalScrollBar()->setValue(std::max(0, targetLine - 3));
  QApplication::processEvents();
  QTest::mouseClick(cuda->viewport(), Qt::LeftButton, {}, cuda->linePosition(targetLine));
  const int selected = scene->selectedBox();
  QVERIFY(selected >= 0);
  QCOMPARE(scene->graph()->nodes[selected].onnxNode, target);
  QVERIFY(std::find(cuda->highlightedLines().begin(), cuda->highlightedLines().end(), targetLine) !=
          cuda->highlightedLines().end());

  // Loop IR and PTX map too (PTX needs NVRTC).
  QVERIFY(code->editor(CodePanel::LoopTab)->toPlainText().startsWith(QStringLiteral("kernel ")));
  if (gpu::nvrtc_available()) {
    code->setCurrentTab(CodePanel::PtxTab);
    QTRY_VERIFY_WITH_TIMEOUT(code->isPtxReady(), 60000);
    QVERIFY(code->editor(CodePanel::PtxTab)->toPlainText().contains(QStringLiteral(".entry")));
    code->highlightNode(target);
    QVERIFY(!code->editor(CodePanel::PtxTab)->highlightedLines().empty());
    // SASS of the same compile: the mix per stage, then the listing tied to the node's lines
    // (or why there is none: no nvdisasm).
    code->setCurrentTab(CodePanel::SassTab);
    const QString sass = code->editor(CodePanel::SassTab)->toPlainText();
    if (!gpu::find_nvdisasm().empty()) {
      QVERIFY2(sass.contains(QStringLiteral("sm_80 SASS (nvdisasm)")), qPrintable(sass.left(300)));
      QVERIFY(sass.contains(QStringLiteral("// function ")));
      QVERIFY(!code->editor(CodePanel::SassTab)->highlightedLines().empty());
    } else {
      QVERIFY(sass.contains(QStringLiteral("nvdisasm")));
    }
  }
}

void TestCodeCharts::rooflinePointsAreKernelsAndClickSelects() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QVERIFY(openAndPlan(w, "mmoe"));
  ChartsPanel* charts = w.chartsPanel();
  const int kernels = static_cast<int>(w.planData()->plan->kernels());
  QCOMPARE(charts->pointCount(), kernels);
  QCOMPARE(charts->timeBarCount(), std::min(kernels, 40));

  // Every partition appears exactly once on the roofline.
  QSet<int> seen;
  for (QScatterSeries* s : charts->kernelSeries())
    for (int i = 0; i < s->count(); ++i) seen.insert(charts->partitionOfPoint(s, i));
  QCOMPARE(seen.size(), kernels);

  // A GPU measurement of this plan puts each kernel also at its measured FLOP/s (squares, at
  // the intensity of its estimated bytes); the emulator's CPU times put none there.
  auto measuredSeries = [&]() -> QScatterSeries* {
    for (QAbstractSeries* s : charts->view(ChartsPanel::RooflineTab)->chart()->series())
      if (s->name().startsWith(QStringLiteral("measured"))) return qobject_cast<QScatterSeries*>(s);
    return nullptr;
  };
  QVERIFY(!measuredSeries());
  ProfileReport run;
  run.backend = "cuda";
  run.device = "NVIDIA H200";
  run.timer = "cupti";
  int withFlops = 0;
  for (const plan::Partition& p : w.planData()->plan->partitions) {
    KernelMeasurement k;
    k.partition = p.id;
    k.time_us.median = 2 * p.est_time_us;  // half the estimated speed
    run.kernels.push_back(k);
    withFlops += p.flops > 0;
  }
  charts->setProfile(makeProfileData(w.planData(), run));
  QScatterSeries* measured = measuredSeries();
  QVERIFY(measured);
  QVERIFY2(measured->name().contains(QStringLiteral("H200")), qPrintable(measured->name()));
  QCOMPARE(measured->count(), withFlops);
  for (int i = 0; i < measured->count(); ++i) {
    const int part = charts->partitionOfPoint(measured, i);
    QVERIFY(part >= 0);
    const plan::Partition& p = w.planData()->plan->partitions[static_cast<size_t>(part)];
    // GFLOP/s; the chart's floor (1e-2) for the kernels that barely compute.
    const double want = std::max(static_cast<double>(p.flops) / (2 * p.est_time_us * 1e3), 1e-2);
    QVERIFY2(std::abs(measured->at(i).y() / want - 1) < 1e-9,
             qPrintable(QString::number(measured->at(i).y())));
  }
  // With DRAM counters, a kernel sits at the intensity of the bytes it moved (a partition's
  // launches summed): here twice the estimate, so at half the estimated intensity.
  for (KernelMeasurement& k : run.kernels)
    for (const plan::Partition& p : w.planData()->plan->partitions)
      if (p.id == k.partition) {
        k.dram_read_bytes = 1.5 * static_cast<double>(p.dram_bytes);
        k.dram_write_bytes = 0.5 * static_cast<double>(p.dram_bytes);
        k.achieved_occupancy = 0.5;
      }
  charts->setProfile(makeProfileData(w.planData(), run));
  measured = measuredSeries();
  QVERIFY(measured);
  for (int i = 0; i < measured->count(); ++i) {
    const plan::Partition& p =
        w.planData()->plan->partitions[static_cast<size_t>(charts->partitionOfPoint(measured, i))];
    if (p.dram_bytes <= 0) continue;
    const double want = std::max(static_cast<double>(p.flops) / (2.0 * p.dram_bytes), 1e-3);
    QVERIFY2(std::abs(measured->at(i).x() / want - 1) < 1e-9,
             qPrintable(QString::number(measured->at(i).x()) + " vs " + QString::number(want)));
  }
  // The kernel table's measured cell tells the counters beside the estimate.
  PartitionTableModel* table = w.partitionModel();
  table->setProfile(makeProfileData(w.planData(), run));
  for (int r = 0; r < table->rowCount(); ++r) {
    const plan::Partition& p = w.planData()->plan->partitions[static_cast<size_t>(r)];
    const QString tip =
        table->data(table->index(r, PartitionTableModel::MeasuredColumn), Qt::ToolTipRole)
            .toString();
    QVERIFY2(tip.contains(QStringLiteral("achieved occupancy 50%")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("DRAM traffic measured %1, estimated %2")
                              .arg(compactBytes(2.0 * static_cast<double>(p.dram_bytes)))
                              .arg(compactBytes(static_cast<double>(p.dram_bytes)))),
             qPrintable(tip));
  }
  ProfileReport uncounted = run;
  for (KernelMeasurement& k : uncounted.kernels)
    k.dram_read_bytes = k.dram_write_bytes = k.achieved_occupancy = -1;
  uncounted.counters_note = "CUPTI's range profiler is not available: insufficient privileges";
  table->setProfile(makeProfileData(w.planData(), uncounted));
  QCOMPARE(
      table->data(table->index(0, PartitionTableModel::MeasuredColumn), Qt::ToolTipRole).toString(),
      QStringLiteral("no hardware counters: ") + QString::fromStdString(uncounted.counters_note));
  table->setProfile(nullptr);
  run.backend = "emulator";
  charts->setProfile(makeProfileData(w.planData(), run));
  QVERIFY(!measuredSeries());
  charts->setProfile(nullptr);

  // Clicking a point selects its partition in the table and its nodes in the graph.
  QScatterSeries* series = charts->kernelSeries().back();
  const int point = series->count() - 1;
  const int part = charts->partitionOfPoint(series, point);
  emit series->clicked(series->at(point));
  const QModelIndexList rows = w.partitionTable()->selectionModel()->selectedRows();
  QCOMPARE(rows.size(), 1);
  auto* proxy = static_cast<QSortFilterProxyModel*>(w.partitionTable()->model());
  QCOMPARE(proxy->mapToSource(rows.front()).row(), part);
  const std::vector<int> boxes = w.planData()->boxesOf(false, part);
  if (!boxes.empty()) QCOMPARE(w.graphPanel()->scene()->selectedCount(), int(boxes.size()));
  QCOMPARE(w.codePanel()->partition(), part);

  // Strategy totals (planned once the chart is shown): all four, the current one agreeing.
  QVERIFY(!charts->strategiesReady());
  charts->tabs()->setCurrentIndex(ChartsPanel::StrategiesTab);
  QTRY_VERIFY_WITH_TIMEOUT(charts->strategiesReady(), 120000);
  for (const StrategyTotals& t : charts->strategyTotals()) {
    QVERIFY2(t.ok, qPrintable(t.error));
    if (t.strategy == w.planData()->strategy) QCOMPARE(t.kernels, kernels);
  }

  // The plan changes: the charts follow.
  QSignalSpy planned(&w, &MainWindow::planned);
  w.setStrategy(QStringLiteral("unfused"));
  QTRY_VERIFY_WITH_TIMEOUT(planned.count() > 0 && !w.isPlanning(), 60000);
  QCOMPARE(charts->pointCount(), static_cast<int>(w.planData()->plan->kernels()));
  QVERIFY(charts->strategiesReady());  // same model and GPU: the totals stay

  // Themes: the charts follow.
  w.setTheme(QStringLiteral("dark"));
  QCOMPARE(charts->view(ChartsPanel::RooflineTab)->chart()->theme(), QChart::ChartThemeDark);
  w.setStrategy(QStringLiteral("souffle"));
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning() && w.planData()->strategy == "souffle", 60000);
  w.setTheme(QStringLiteral("light"));
  QCOMPARE(charts->view(ChartsPanel::RooflineTab)->chart()->theme(), QChart::ChartThemeLight);
}

void TestCodeCharts::compileFillsTheTableAndShowsErrors() {
  if (!gpu::nvrtc_available()) QSKIP("this build has no NVRTC");
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QVERIFY(openAndPlan(w, "mmoe"));
  QVERIFY(w.compileAction()->isEnabled());
  PartitionTableModel* model = w.partitionModel();
  QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(!model->data(model->index(0, PartitionTableModel::RegisterColumn)).isValid());

  QSignalSpy compiled(&w, &MainWindow::compiled);
  w.compileAction()->trigger();
  QVERIFY(w.compileRunner()->isBusy());
  QVERIFY(compiled.wait(300000));
  CompileDataPtr data = w.compileData();
  QVERIFY(data);
  QVERIFY2(data->error.isEmpty(), qPrintable(data->error));
  QCOMPARE(data->failures, 0);
  QVERIFY(!w.isErrorShown());
  const int rows = model->rowCount();
  for (int r = 0; r < rows; ++r) {
    if (data->kernels[r].archs.empty()) continue;  // a partition without a kernel
    QCOMPARE(int(data->kernels[r].archs.size()), 2);
    const ArchCompile* a = data->find(r, QStringLiteral("sm_90"));
    QVERIFY(a && a->ok && a->registers > 0);
    const QString regs =
        model->data(model->index(r, PartitionTableModel::RegisterColumn)).toString();
    QVERIFY2(regs.contains(QString::number(data->find(r, QStringLiteral("sm_80"))->registers)),
             qPrintable(regs));
    QVERIFY(model->data(model->index(r, PartitionTableModel::SpillColumn)).isValid());
  }
  QVERIFY(w.chartsPanel()->view(ChartsPanel::ResourcesTab)->chart()->series().size() > 0);

  // A planted error in the first kernel: the NVRTC log and the kernel in the problems panel,
  // the table says which kernel failed, the window stays usable.
  w.compileRunner()->setSourceFilter([](int partition, const std::string& source) {
    return partition == 0 ? source + "\nthis_is_not_cuda x;\n" : source;
  });
  compiled.clear();
  w.compileAction()->trigger();
  QVERIFY(compiled.wait(300000));
  QVERIFY(w.compileData());
  QCOMPARE(w.compileData()->failures, 2);
  QVERIFY(w.isErrorShown());
  const QString err = w.errorPanel()->text();
  QVERIFY2(err.contains(QStringLiteral("K%1").arg(w.planData()->plan->partitions[0].id)),
           qPrintable(err));
  QVERIFY2(err.contains(QStringLiteral("this_is_not_cuda")), qPrintable(err));
  QCOMPARE(model->data(model->index(0, PartitionTableModel::RegisterColumn)).toString(),
           QStringLiteral("error"));
  if (rows > 1)
    QVERIFY(model->data(model->index(rows - 1, PartitionTableModel::RegisterColumn)).toString() !=
            QStringLiteral("error"));

  // Cancel: a compile in flight is dropped and says so.
  w.compileRunner()->setSourceFilter({});
  compiled.clear();
  w.compileAction()->trigger();
  w.cancelCompile();
  QVERIFY(compiled.wait(300000));
  QVERIFY(!w.compileRunner()->isBusy());
}

void TestCodeCharts::compileReportsProgressPerDistinctProgram() {
  // One line per distinct program (launches of the same code count once), "program n of N",
  // the time so far and the slowest, ending at n == N; the summary says how many came from the
  // cache, and a second compile of the unchanged plan takes every one from it. The rules plan:
  // several kernels, the experts' of the same code.
  if (!gpu::nvrtc_available()) QSKIP("this build has no NVRTC");
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(openAndPlan(w, "mmoe"));
  for (int round = 0; round < 2; ++round) {
    QSignalSpy lines(w.compileRunner(), &CompileRunner::programProgress);
    QSignalSpy compiled(&w, &MainWindow::compiled);
    w.compileAction()->trigger();
    QVERIFY(compiled.wait(300000));
    CompileDataPtr data = w.compileData();
    QVERIFY(data);
    QCOMPARE(data->failures, 0);
    QVERIFY(data->programs > 0);
    QVERIFY(data->programs <= data->compiled + data->reused);
    QCOMPARE(lines.size(), data->programs);
    for (int i = 0; i < lines.size(); ++i) {
      const int done = lines[i][0].toInt(), total = lines[i][1].toInt();
      const QString line = lines[i][2].toString();
      QCOMPARE(done, i + 1);
      QCOMPARE(total, data->programs);
      QVERIFY2(line.startsWith(QStringLiteral("program %1 of %2, ").arg(done).arg(total)),
               qPrintable(line));
      QVERIFY2(line.contains(QStringLiteral(" s, slowest: ")), qPrintable(line));
    }
    QCOMPARE(lines.last()[0].toInt(), lines.last()[1].toInt());
    const QString summary = w.lastCompileSummary();
    qInfo("%s; last line: %s", qPrintable(summary), qPrintable(lines.last()[2].toString()));
    QVERIFY2(summary.contains(QStringLiteral("%1 from the cache").arg(data->programsFromCache)),
             qPrintable(summary));
    if (round == 1) QCOMPARE(data->programsFromCache, data->programs);
  }
}

void TestCodeCharts::kernelsAreBuiltOnDemandAndSurviveAnEdit() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  w.setStrategy(QStringLiteral("rules"));
  QVERIFY(openAndPlan(w, "mmoe"));
  const PlanDataPtr before = w.planData();
  const plan::FusionPlan& p = *before->plan;
  QVERIFY(p.partitions.size() > 4);
  // What the planner's pricing built is dropped, so that every build shows.
  KernelCache& cache = shared_kernel_cache();
  cache.clear();
  auto* proxy = static_cast<QSortFilterProxyModel*>(w.partitionTable()->model());
  auto selectRow = [&](int partition) {
    w.partitionTable()->selectionModel()->select(
        proxy->mapFromSource(w.partitionModel()->index(partition, 0)),
        QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  };
  // Selecting a kernel builds that one only.
  selectRow(3);
  QTRY_VERIFY_WITH_TIMEOUT(w.codePanel()->isReady(), 60000);
  QCOMPARE(w.codePanel()->requestedPartitions(), QList<int>{3});
  QCOMPARE(cache.stats().builds, size_t(1));
  for (size_t i = 0; i < p.partitions.size(); ++i) QCOMPARE(cache.has_kernels(p, i), i == 3);
  QVERIFY(w.codePanel()->editor(CodePanel::CudaTab)->toPlainText().contains("__global__"));
  if (!gpu::nvrtc_available()) return;

  // Compile: the shown kernel is not built again.
  QSignalSpy compiled(&w, &MainWindow::compiled);
  w.compileAction()->trigger();
  QVERIFY(compiled.wait(300000));
  QCOMPARE(cache.stats().builds, p.partitions.size());
  QCOMPARE(w.compileData()->compiled, int(p.partitions.size()));
  QVERIFY2(w.lastCompileSummary().startsWith(QStringLiteral("Compiled")),
           qPrintable(w.lastCompileSummary()));

  // An edit (the first neighbours the plan merges): the kernels it did not change keep their
  // figures at once, renumbered, and a compile compiles the merged kernel only.
  int pick = -1;
  for (int k = 0; k + 1 < int(p.partitions.size()) && pick < 0; ++k) {
    plan::Decisions d;
    d.edits.push_back({plan::Edit::Kind::Merge,
                       p.program.ops[size_t(p.partitions[size_t(k)].tes.front())]->name,
                       p.program.ops[size_t(p.partitions[size_t(k + 1)].tes.front())]->name});
    const PlanOutcome o =
        PlanRunner::runWith(w.modelData(), plan::Strategy::Rules, w.gpu(), d, before);
    if (o.ok() && o.data->plan->refused.empty() &&
        o.data->plan->kernels() + 1 == p.partitions.size())
      pick = k;
  }
  QVERIFY(pick >= 0);
  w.decisionEditor()->push(
      {{plan::Edit::Kind::Merge,
        p.program.ops[size_t(p.partitions[size_t(pick)].tes.front())]->name,
        p.program.ops[size_t(p.partitions[size_t(pick + 1)].tes.front())]->name}},
      QStringLiteral("merge"));
  QTRY_VERIFY_WITH_TIMEOUT(w.planData() != before && !w.isPlanning(), 60000);
  const int n = int(w.planData()->plan->partitions.size());
  QTRY_VERIFY_WITH_TIMEOUT(w.compileData() && w.compileData()->plan == w.planData(), 30000);
  QCOMPARE(w.compileData()->reused, n - 1);
  const int last = n - 1;  // renumbered by the merge
  QVERIFY(!w.partitionModel()
               ->data(w.partitionModel()->index(last, PartitionTableModel::RegisterColumn))
               .toString()
               .isEmpty());
  QVERIFY(w.partitionModel()
              ->data(w.partitionModel()->index(pick, PartitionTableModel::RegisterColumn))
              .toString()
              .isEmpty());
  compiled.clear();
  const size_t builds = cache.stats().builds;
  w.compileAction()->trigger();
  QVERIFY(compiled.wait(300000));
  QCOMPARE(w.compileData()->compiled, 1);
  QCOMPARE(w.compileData()->reused, n - 1);
  QVERIFY(cache.stats().builds <= builds + 1);  // the merged kernel, unless pricing built it
  QVERIFY2(w.lastCompileSummary().contains(QStringLiteral("1 compiled now")),
           qPrintable(w.lastCompileSummary()));
}

void TestCodeCharts::profileIsOffWithoutAGpu() {
  MainWindow w;
  const gpu::DeviceInfo& d = gpu::cuda_device();
  QAction* profile = w.profileAction();
  QVERIFY(profile);
  if (!d.available()) {
    QVERIFY(!profile->isEnabled());
    QVERIFY2(profile->toolTip().contains(QString::fromStdString(d.reason)),
             qPrintable(profile->toolTip()));
    QVERIFY(d.reason == "no CUDA device" || d.reason.find("libcuda.so.1") != std::string::npos);
  }
}

void TestCodeCharts::profileOnTheEmulatorFillsTheTable() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QVERIFY(openAndPlan(w, "mmoe"));
  w.setStrategy(QStringLiteral("rules"));
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning() && w.planData()->strategy == "rules", 60000);
  QAction* emu = w.profileEmulatorAction();
  QVERIFY(emu && emu->isEnabled());
  PartitionTableModel* model = w.partitionModel();
  QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(!model->data(model->index(0, PartitionTableModel::MeasuredColumn)).isValid());

  QSignalSpy done(w.profileRunner(), &ProfileRunner::finished);
  emu->trigger();
  QVERIFY(w.profileRunner()->isBusy());
  QVERIFY(done.wait(120000));
  ProfileDataPtr data = w.profileData();
  QVERIFY(data);
  QVERIFY2(data->report.error.empty(), data->report.error.c_str());
  QVERIFY(data->report.verified);
  QVERIFY(!data->gpuTime());
  QVERIFY(!w.isErrorShown());
  // Every kernel measured, and labelled as the emulator's CPU time, never as a GPU time.
  // CPU times run to millions of µs: three significant digits with their unit, never cut off.
  const QRegularExpression shown(QStringLiteral("^\\d+(\\.\\d+)? (s|ms|µs) \\(CPU\\)$"));
  for (int r = 0; r < model->rowCount(); ++r) {
    const QString t = model->data(model->index(r, PartitionTableModel::MeasuredColumn)).toString();
    QVERIFY2(shown.match(t).hasMatch(), qPrintable(t));
  }
  QCOMPARE(model->headerData(PartitionTableModel::MeasuredColumn, Qt::Horizontal).toString(),
           QStringLiteral("Emul. time"));
  QChart* time = w.chartsPanel()->view(ChartsPanel::TimeTab)->chart();
  bool labelled = false;
  for (QAbstractSeries* s : time->series())
    if (auto* bars = qobject_cast<QBarSeries*>(s))
      for (QBarSet* set : bars->barSets())
        labelled |= set->label().contains(QStringLiteral("no GPU"));
  QVERIFY(labelled);

  // A report exported now carries the measured times (and says whose).
  {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("mmoe-report.html"));
    QSignalSpy exported(&w, &MainWindow::reportExported);
    QVERIFY(w.exportReport(report));
    QVERIFY(exported.wait(300000));
    QVERIFY2(exported.front().front().toBool(), qPrintable(exported.front().back().toString()));
    QFile f(report);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    QVERIFY(!html.contains(QStringLiteral("No measured times were given")));
    QVERIFY(html.contains(QStringLiteral("Measured times are shown")));
  }

  // A runner that dies mid-run: the problems panel names the kernel, the window stays usable.
  qputenv("SOUFFLE_RUNNER_ABORT_AT", "kernel2");
  done.clear();
  emu->trigger();
  QVERIFY(done.wait(120000));
  qunsetenv("SOUFFLE_RUNNER_ABORT_AT");
  QVERIFY(w.isErrorShown());
  const QString err = w.errorPanel()->text();
  QVERIFY2(err.contains(QStringLiteral("kernel2")) && err.contains(QStringLiteral("died")),
           qPrintable(err));
  QVERIFY(w.profileData());  // the earlier measurements stay
  QVERIFY(emu->isEnabled());

  // The measurements are kept with the project: a reopened project shows them again.
  const QString path = QDir::temp().filePath(QStringLiteral("profiled_mmoe.souffle"));
  QVERIFY(w.project()->save(path));
  MainWindow again;
  again.project()->setInteractive(false);
  QVERIFY(again.project()->open(path));
  QTRY_VERIFY_WITH_TIMEOUT(
      again.planData() && !again.isPlanning() && again.planData()->strategy == "rules", 60000);
  QTRY_VERIFY_WITH_TIMEOUT(again.profileData() != nullptr, 10000);
  QCOMPARE(again.profileData()->report.date, data->report.date);
  const QString t =
      again.partitionModel()
          ->data(again.partitionModel()->index(0, PartitionTableModel::MeasuredColumn))
          .toString();
  QVERIFY2(t.endsWith(QStringLiteral("(CPU)")), qPrintable(t));
  QFile::remove(path);
}

// Pictures for the documentation, taken only when SOUFFLE_SCREENSHOT_DIR names a folder.
void TestCodeCharts::screenshots() {
  if (qEnvironmentVariableIsEmpty("SOUFFLE_SCREENSHOT_DIR"))
    QSKIP("SOUFFLE_SCREENSHOT_DIR not set");
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  w.setTheme(QStringLiteral("light"));
  QVERIFY(openAndPlan(w, "bert"));
  QTRY_VERIFY_WITH_TIMEOUT(w.codePanel()->isReady(), 60000);
  auto* codeDock = w.findChild<QDockWidget*>(QStringLiteral("codeDock"));
  auto* chartsDock = w.findChild<QDockWidget*>(QStringLiteral("chartsDock"));
  codeDock->raise();
  w.resizeDocks({codeDock}, {470}, Qt::Vertical);
  w.resizeDocks({chartsDock}, {640}, Qt::Horizontal);
  GraphScene* scene = w.graphPanel()->scene();
  const int box = pickBox(w);
  scene->selectBox(box);
  w.graphPanel()->view()->reveal(box);
  w.codePanel()->setCurrentTab(CodePanel::CudaTab);
  w.codePanel()->highlightNode(scene->graph()->nodes[box].onnxNode);
  saveShot(&w, QStringLiteral("code-light.png"));
  w.setTheme(QStringLiteral("dark"));
  saveShot(&w, QStringLiteral("code-dark.png"));

  chartsDock->raise();
  ChartsPanel* charts = w.chartsPanel();
  // The rules strategy has many kernels: a fuller roofline than souffle's one kernel.
  w.setStrategy(QStringLiteral("rules"));
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning() && w.planData()->strategy == "rules", 60000);
  charts->tabs()->setCurrentIndex(ChartsPanel::StrategiesTab);
  QTRY_VERIFY_WITH_TIMEOUT(charts->strategiesReady(), 120000);
  charts->tabs()->setCurrentIndex(ChartsPanel::RooflineTab);
  saveShot(&w, QStringLiteral("charts-roofline-dark.png"));
  w.setTheme(QStringLiteral("light"));
  saveShot(&w, QStringLiteral("charts-roofline-light.png"));
  charts->tabs()->setCurrentIndex(ChartsPanel::TimeTab);
  saveShot(&w, QStringLiteral("charts-time-light.png"));
  charts->tabs()->setCurrentIndex(ChartsPanel::StrategiesTab);
  saveShot(&w, QStringLiteral("charts-strategies-light.png"));
  if (gpu::nvrtc_available()) {
    QSignalSpy compiled(&w, &MainWindow::compiled);
    w.compileAction()->trigger();
    QVERIFY(compiled.wait(600000));
    saveShot(&w, QStringLiteral("charts-compiled-light.png"));
    w.setTheme(QStringLiteral("dark"));
    saveShot(&w, QStringLiteral("charts-compiled-dark.png"));
    w.setTheme(QStringLiteral("light"));
  }
  qInfo("bert: %d kernels (%s)", int(w.planData()->plan->kernels()),
        qPrintable(w.planData()->strategy));
}

QTEST_MAIN(TestCodeCharts)
#include "test_code_charts.moc"
