// The Timeline panel (docs/timeline.md): the sample BERT's souffle kernel profiled on the emulator
// with timeline records, off the GUI thread and labelled as the emulator's estimate; a click on a
// span selects its stage's nodes in the graph and its lines in the Code panel, a node selected in
// the graph highlights its stages' spans, the heat map colours by stage time and barrier wait;
// record files that are truncated, hold an unknown record kind or are no timeline at all are
// refused in the panel, naming the file. A saved project keeps the timeline's record files and
// reopens them (a missing one is named, the project still opens); the status bar's Cancel stops an
// emulator run, its runner killed, within a second.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "core/loop/timeline.h"
#include "core/session/kernel_cache.h"
#include "core/session/load.h"
#include "core/session/timeline.h"
#include "views/code_panel.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/project_controller.h"
#include "views/timeline_panel.h"
#include "views/timeline_scene.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString samplePath(const char* name) {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx").arg(QLatin1String(name));
}

/// A record file of one block and two stages with a wait between, as profile --timeline keeps.
std::string recordBytes(bool unknownKind) {
  loop::TimelineLayout l;
  l.grid = 1;
  l.rows = 1;
  l.stride = 1;
  l.slot_count = 6;
  std::vector<int64_t> w;
  auto rec = [&](int64_t t, loop::TimelineEvent e, loop::TimelineWait k, int stage) {
    w.insert(w.end(), {t, t, loop::timeline_tag(e, k, stage)});
  };
  using E = loop::TimelineEvent;
  using K = loop::TimelineWait;
  rec(1000, E::StageBegin, K::None, 0);
  rec(3000, E::StageEnd, K::None, 0);
  rec(3000, E::WaitBegin, K::GridBarrier, 1);
  rec(4000, E::WaitEnd, K::GridBarrier, 1);
  rec(4000, E::StageBegin, K::None, 1);
  rec(9000, E::StageEnd, K::None, 1);
  if (unknownKind) w[3 * 5 + 2] = 0xf;  // event 14: nobody decodes it
  std::string words(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(int64_t));
  return timeline_file_bytes(l, "globaltimer", 1410, words);
}

QString writeFile(const QTemporaryDir& dir, const QString& name, const std::string& bytes) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(bytes.data(), qint64(bytes.size()));
  return path;
}

}  // namespace

class TestTimeline : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void rasterSumsSpansNarrowerThanAPixel();
  void emulatorTimelineSelectsBothWays();
  void badRecordFilesAreShownNamed();
  void projectKeepsTheTimeline();
  void autosaveKeepsTheEmulatorRecords();
  void planChangeKeepsRecordsOfUnchangedKernels();
  void statusBarCancelStopsTheRun();
};

void TestTimeline::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_timeline"));
}

void TestTimeline::rasterSumsSpansNarrowerThanAPixel() {
  // 1,000 stages of 1 µs on one block: 100 pixels wide, ten stages to a pixel.
  KernelTimeline t;
  t.kernel = "kernel0";
  t.grid = t.rows = 1;
  t.emulated = true;
  for (int s = 0; s < 1000; ++s)
    t.spans.push_back({0, 0, s, loop::TimelineWait::None, s * 1.0, s + 1.0});
  TimelineDataPtr d = makeTimelineData(nullptr, {t}, true, QStringLiteral("test"));
  QCOMPARE(d->kernels.size(), size_t(1));
  const TimelineRows rows = makeTimelineRows(d->kernels[0].timeline, false);
  QCOMPARE(rows.keys.size(), size_t(1));
  TimelineRaster r;
  r.t0 = 0;
  r.t1 = 1000;
  r.size = QSize(100, 10);
  r.background = Qt::white;
  r.highlight = Qt::red;
  int64_t visited = 0;
  const QImage img = rasterTimeline(d->kernels[0], rows, r, &visited);
  QCOMPARE(visited, int64_t(1000));
  // Every pixel covered, none left in the background colour.
  for (int x = 0; x < 100; ++x) QVERIFY(img.pixel(x, 5) != QColor(Qt::white).rgb());
  // A window of stages 500..510: 11 spans read, not 1,000.
  r.t0 = 500;
  r.t1 = 510;
  rasterTimeline(d->kernels[0], rows, r, &visited);
  QVERIFY2(visited <= 12, qPrintable(QString::number(visited)));
  // The span under a time, and the selected stage drawn in the highlight colour.
  QCOMPARE(timelineSpanAt(d->kernels[0], rows, 0, 505.5, 0), 505);
  r.selected.assign(1000, 0);
  r.selected[505] = 1;
  const QImage sel = rasterTimeline(d->kernels[0], rows, r);
  QCOMPARE(sel.pixel(55, 5), QColor(Qt::red).rgb());
}

void TestTimeline::emulatorTimelineSelectsBothWays() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  w.openModel(samplePath("bert"));
  QVERIFY(QTest::qWaitFor(
      [&] { return w.planData() && w.graphPanel()->isFinal() && !w.isPlanning(); }, 120000));
  TimelinePanel* panel = w.timelinePanel();
  QVERIFY(panel);
  QVERIFY(panel->runAction()->isEnabled());
  // With a plan on screen and no timeline yet, the panel says how to get one.
  QVERIFY2(panel->infoText().contains(QStringLiteral("Run on the emulator")),
           qPrintable(panel->infoText()));
  w.timelineDock()->show();
  w.timelineDock()->raise();
  QSignalSpy done(panel, &TimelinePanel::finished);
  panel->runAction()->trigger();
  QVERIFY(panel->isBusy());  // off the GUI thread: the window is back before the run ends
  QVERIFY(done.wait(120000));
  QVERIFY2(panel->errorText().isEmpty(), qPrintable(panel->errorText()));
  TimelineDataPtr data = panel->data();
  QVERIFY(data);
  QVERIFY(data->emulated);
  QVERIFY(data->source.contains(QStringLiteral("emulator estimate, not GPU time")));
  QVERIFY(panel->infoText().contains(QStringLiteral("emulator estimate, not GPU time")));
  QVERIFY2(data->note.isEmpty(), qPrintable(data->note));
  const TimelineKernel& k = data->kernels[size_t(panel->currentKernel())];
  QVERIFY(k.partition >= 0);
  QVERIFY(!k.timeline.spans.empty());
  QCOMPARE(panel->kernelBox()->count(), int(data->kernels.size()));
  QApplication::processEvents();

  // A span of a stage with nodes, in the middle of the kernel, clicked.
  TimelineCanvas* canvas = panel->canvas();
  canvas->resize(1200, 300);
  int span = -1;
  for (size_t i = k.timeline.spans.size() / 2; i < k.timeline.spans.size() && span < 0; ++i) {
    const TimelineSpan& s = k.timeline.spans[i];
    if (s.wait == loop::TimelineWait::None && !k.stageNodes[size_t(s.stage)].isEmpty() &&
        canvas->spanAt(canvas->spanPosition(int(i))) >= 0)
      span = int(i);
  }
  QVERIFY(span >= 0);
  const TimelineSpan& s = k.timeline.spans[size_t(span)];
  // Zoom onto it so that it is wide enough to hit.
  canvas->setWindow(s.begin_us - s.us(), s.end_us + s.us());
  const QPoint at = canvas->spanPosition(span);
  QVERIFY(!at.isNull());
  const int hit = canvas->spanAt(at);
  QVERIFY(hit >= 0);
  const int stage = k.timeline.spans[size_t(hit)].stage;
  const QString tip = canvas->spanText(hit);
  QVERIFY(tip.contains(QStringLiteral("stage %1").arg(stage)));
  QVERIFY(tip.contains(QStringLiteral("block")));
  QVERIFY(tip.contains(QStringLiteral("nodes:")));
  QVERIFY(tip.contains(QStringLiteral("emulator estimate, not GPU time")));
  QSignalSpy activated(panel, &TimelinePanel::stageActivated);
  QTest::mouseClick(canvas, Qt::LeftButton, {}, at);
  QCOMPARE(activated.count(), 1);
  QCOMPARE(canvas->selectedStages().at(size_t(stage)), char(1));
  // The graph selects the stage's nodes.
  const QStringList nodes = k.stageNodes[size_t(stage)];
  const SceneGraph* g = w.graphPanel()->scene()->graph();
  int selectedNodes = 0;
  for (QGraphicsItem* item : w.graphPanel()->scene()->selectedItems())
    if (item->type() == NodeItem::Type) {
      const int box = static_cast<NodeItem*>(item)->box();
      QVERIFY2(nodes.contains(g->nodes[size_t(box)].onnxNode),
               qPrintable(g->nodes[size_t(box)].onnxNode));
      ++selectedNodes;
    }
  QVERIFY(selectedNodes > 0);
  // The Code panel shows the kernel with the stage's lines highlighted.
  CodePanel* code = w.codePanel();
  QCOMPARE(code->partition(), k.partition);
  QVERIFY(QTest::qWaitFor([&] { return code->isReady(); }, 60000));
  QVERIFY(!code->editor(CodePanel::LoopTab)->highlightedLines().empty());
  QVERIFY(!code->editor(CodePanel::CudaTab)->highlightedLines().empty());

  // The other way: a node of another stage selected in the graph highlights its stages.
  int other = -1;
  for (size_t b = 0; b < g->nodes.size() && other < 0; ++b)
    if (g->nodes[b].kind == SceneNode::Kind::Op && !nodes.contains(g->nodes[b].onnxNode))
      for (const QStringList& sn : k.stageNodes)
        if (sn.contains(g->nodes[b].onnxNode)) {
          other = int(b);
          break;
        }
  QVERIFY(other >= 0);
  w.graphPanel()->scene()->selectBox(other);
  QApplication::processEvents();
  int lit = 0;
  for (size_t st = 0; st < k.stageNodes.size(); ++st) {
    const bool has = k.stageNodes[st].contains(g->nodes[size_t(other)].onnxNode);
    QCOMPARE(canvas->selectedStages().at(st) != 0, has);
    lit += has;
  }
  QVERIFY(lit > 0);
  QCOMPARE(canvas->selectedStages().at(size_t(stage)) != 0,
           k.stageNodes[size_t(stage)].contains(g->nodes[size_t(other)].onnxNode));

  // The heat map's two timeline colourings.
  w.setHeatMetric(HeatMetric::StageTime);
  const HeatMap& heat = w.graphPanel()->heatMap();
  QVERIFY(heat.valid());
  QVERIFY(heat.legend.note.contains(QStringLiteral("emulator estimate")));
  QVERIFY(!std::isnan(heat.values[size_t(other)]));
  w.setHeatMetric(HeatMetric::BarrierWait);
  QVERIFY(w.graphPanel()->heatMap().valid());
  w.setHeatMetric(HeatMetric::None);

  // Zoom and pan by wheel and drag change the window; a double click fits it again.
  canvas->fit();
  const double whole = canvas->windowEnd() - canvas->windowStart();
  canvas->zoom(4, canvas->chartRect().center().x());
  QVERIFY(canvas->windowEnd() - canvas->windowStart() < whole / 3);
  const double t0 = canvas->windowStart();
  const QPoint mid = canvas->chartRect().center();
  QTest::mousePress(canvas, Qt::LeftButton, {}, mid);
  QMouseEvent move(QEvent::MouseMove, QPointF(mid + QPoint(-100, 0)),
                   canvas->mapToGlobal(QPointF(mid + QPoint(-100, 0))), Qt::NoButton,
                   Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(canvas, &move);
  QTest::mouseRelease(canvas, Qt::LeftButton, {}, mid + QPoint(-100, 0));
  QVERIFY(canvas->windowStart() > t0);
  QCOMPARE(activated.count(), 1);  // a drag is no click

  // Rows per block: the emulator's SM is the block, so as many rows.
  const size_t smRows = canvas->rows()->keys.size();
  panel->setPerBlock(true);
  QVERIFY(canvas->rows()->perBlock);
  QCOMPARE(canvas->rows()->keys.size(), smRows);

  const QByteArray shots = qgetenv("SOUFFLE_SCREENSHOT_DIR");
  if (!shots.isEmpty()) {
    panel->setPerBlock(false);
    canvas->fit();
    QTest::qWait(300);
    w.grab().save(
        QDir(QString::fromLocal8Bit(shots)).filePath(QStringLiteral("timeline_bert_sample.png")));
  }
}

void TestTimeline::badRecordFilesAreShownNamed() {
  TimelinePanel panel;
  panel.resize(900, 300);
  panel.show();
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  auto open = [&](const QString& path) {
    QSignalSpy done(&panel, &TimelinePanel::finished);
    panel.openFiles({path});
    return done.wait(30000);
  };

  // A good file of a GPU: read, labelled as measured on a GPU, not as the emulator's.
  const std::string good = recordBytes(false);
  const QString ok = writeFile(dir, QStringLiteral("souffle.kernel0.timeline"), good);
  QVERIFY(open(ok));
  QVERIFY2(panel.errorText().isEmpty(), qPrintable(panel.errorText()));
  QVERIFY(panel.data());
  QVERIFY(!panel.data()->emulated);
  QVERIFY(panel.data()->source.contains(QStringLiteral("measured on a GPU")));
  QVERIFY(panel.data()->source.contains(QStringLiteral("1410 MHz")));
  QCOMPARE(panel.data()->kernels.front().timeline.kernel, std::string("kernel0"));
  QCOMPARE(panel.data()->kernels.front().barrierUs.at(1), 3.0);

  // Two files at once: the header names the file of the kernel shown, not the first file.
  const QString other = writeFile(dir, QStringLiteral("souffle.kernel5.timeline"), good);
  {
    QSignalSpy done(&panel, &TimelinePanel::finished);
    panel.openFiles({ok, other});
    QVERIFY(done.wait(30000));
  }
  QCOMPARE(int(panel.data()->kernels.size()), 2);
  panel.setCurrentKernel(1);
  QVERIFY2(panel.infoText().contains(QStringLiteral("from souffle.kernel5.timeline")),
           qPrintable(panel.infoText()));
  panel.setCurrentKernel(0);
  QVERIFY2(panel.infoText().contains(QStringLiteral("from souffle.kernel0.timeline")),
           qPrintable(panel.infoText()));

  // Truncated: refused naming the file; what was shown stays.
  const QString cut =
      writeFile(dir, QStringLiteral("souffle.kernel1.timeline"), good.substr(0, good.size() - 20));
  QVERIFY(open(cut));
  QVERIFY(panel.errorText().contains(cut));
  QVERIFY(panel.errorText().contains(QStringLiteral("truncated")));
  QVERIFY(panel.data());

  // A record kind nobody decodes.
  const QString odd = writeFile(dir, QStringLiteral("souffle.kernel2.timeline"), recordBytes(true));
  QVERIFY(open(odd));
  QVERIFY(panel.errorText().contains(odd));
  QVERIFY(panel.errorText().contains(QStringLiteral("record kind")));

  // Not a timeline file at all, and a file that is not there.
  const QString json = writeFile(dir, QStringLiteral("bundle.json"), "{\"version\": 2}");
  QVERIFY(open(json));
  QVERIFY(panel.errorText().contains(json));
  const QString missing = dir.filePath(QStringLiteral("gone.timeline"));
  QVERIFY(open(missing));
  QVERIFY(panel.errorText().contains(missing));
}

namespace {

bool openAndPlan(MainWindow& w, const QString& model) {
  w.openModel(model);
  return QTest::qWaitFor(
      [&] { return w.planData() && w.graphPanel()->isFinal() && !w.isPlanning(); }, 120000);
}

}  // namespace

void TestTimeline::projectKeepsTheTimeline() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("bert.souffle"));
  std::string kernel;
  size_t spans = 0;
  int64_t blocks = 0;
  {
    MainWindow w;
    w.project()->setInteractive(false);
    w.project()->setAutosaveEnabled(false);
    QVERIFY(openAndPlan(w, samplePath("bert")));
    TimelinePanel* panel = w.timelinePanel();
    QSignalSpy done(panel, &TimelinePanel::finished);
    panel->runEmulator();
    QVERIFY(done.wait(120000));
    QVERIFY2(panel->errorText().isEmpty(), qPrintable(panel->errorText()));
    QVERIFY(panel->data());
    const TimelineKernel& k = panel->data()->kernels.at(size_t(panel->currentKernel()));
    kernel = k.timeline.kernel;
    spans = k.timeline.spans.size();
    blocks = k.timeline.grid;
    QVERIFY(spans > 0);
    // The run's records are kept by the panel, and copied beside the project when it is saved.
    QCOMPARE(panel->recordFiles().size(), qsizetype(panel->data()->kernels.size()));
    QVERIFY(panel->isKept(panel->recordFiles().front()));
    QVERIFY(w.project()->save(path));
    const QString copy = dir.filePath(
        QStringLiteral("bert.timeline/souffle.%1.timeline").arg(QString::fromStdString(kernel)));
    QVERIFY2(QFile::exists(copy), qPrintable(copy));
    QVERIFY(panel->recordFiles().contains(copy));
    QVERIFY(!w.isWindowModified());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY2(text.contains("\"timeline\"") && text.contains("bert.timeline/souffle."),
             text.constData());  // relative: the copy lies below the project's folder
  }
  {
    // Reopened: the same kernel and spans, read from the copy.
    MainWindow w;
    w.project()->setInteractive(false);
    w.project()->setAutosaveEnabled(false);
    TimelinePanel* panel = w.timelinePanel();
    QVERIFY(w.project()->open(path));
    QVERIFY(QTest::qWaitFor([&] { return panel->data() != nullptr; }, 120000));
    QVERIFY2(panel->errorText().isEmpty(), qPrintable(panel->errorText()));
    const TimelineKernel& k = panel->data()->kernels.at(size_t(panel->currentKernel()));
    QCOMPARE(k.timeline.kernel, kernel);
    QCOMPARE(k.timeline.spans.size(), spans);
    QCOMPARE(k.timeline.grid, blocks);
    QVERIFY(k.partition >= 0);  // tied to the reopened plan's kernel
    QVERIFY(!w.isWindowModified());
  }
  {
    // A record file gone: named in red, the project still opens (its model and plan).
    const QString copy = dir.filePath(
        QStringLiteral("bert.timeline/souffle.%1.timeline").arg(QString::fromStdString(kernel)));
    QVERIFY(QFile::remove(copy));
    MainWindow w;
    w.project()->setInteractive(false);
    w.project()->setAutosaveEnabled(false);
    TimelinePanel* panel = w.timelinePanel();
    QVERIFY(w.project()->open(path));
    QVERIFY(QTest::qWaitFor([&] { return !panel->errorText().isEmpty(); }, 120000));
    QVERIFY2(panel->errorText().contains(copy), qPrintable(panel->errorText()));
    QVERIFY(panel->errorText().contains(QStringLiteral("project opened without it")));
    QVERIFY(!panel->data());
    QVERIFY(w.planData());
    QCOMPARE(QFileInfo(w.modelPath()).canonicalFilePath(),
             QFileInfo(samplePath("bert")).canonicalFilePath());
  }
}

// An autosave names copies of the emulator run's records beside itself: a crash removes the
// panel's temporary folder, and the restore still finds them.
void TestTimeline::autosaveKeepsTheEmulatorRecords() {
  ProjectController::discardOrphanedAutosaves();
  QString autosave, kept;
  size_t spans = 0;
  {
    MainWindow w;
    w.project()->setInteractive(false);
    w.project()->setAutosaveDelay(50);
    QVERIFY(openAndPlan(w, samplePath("mmoe")));
    TimelinePanel* panel = w.timelinePanel();
    QSignalSpy done(panel, &TimelinePanel::finished);
    panel->runEmulator();
    QVERIFY(done.wait(120000));
    QVERIFY2(panel->errorText().isEmpty(), qPrintable(panel->errorText()));
    QVERIFY(panel->data());
    spans = panel->data()->kernels.at(size_t(panel->currentKernel())).timeline.spans.size();
    kept = panel->recordFiles().front();
    QVERIFY(panel->isKept(kept));
    autosave = w.project()->autosavePath();
    const QString dir = autosave.left(autosave.size() - 8) + QStringLiteral(".timeline/");
    // The autosave names the copy beside itself, not the panel's temporary file.
    QVERIFY(QTest::qWaitFor(
        [&] {
          QFile f(autosave);
          return f.open(QIODevice::ReadOnly) && f.readAll().contains(dir.toUtf8());
        },
        20000));
    QFile f(autosave);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(!f.readAll().contains(kept.toUtf8()));
    QVERIFY(QFile::exists(
        dir + QDir(QFileInfo(kept).absolutePath() + QStringLiteral("/..")).relativeFilePath(kept)));
    // Destroyed without closing, as a crash leaves it: the autosave stays, the panel's folder
    // goes.
  }
  QVERIFY(!QFile::exists(kept));
  QVERIFY(QFile::exists(autosave));
  MainWindow w;
  w.project()->setInteractive(false);
  TimelinePanel* panel = w.timelinePanel();
  QVERIFY(w.project()->restoreAutosave());
  QVERIFY(QTest::qWaitFor([&] { return panel->data() || !panel->errorText().isEmpty(); }, 120000));
  QVERIFY2(panel->errorText().isEmpty(), qPrintable(panel->errorText()));
  QCOMPARE(panel->data()->kernels.at(size_t(panel->currentKernel())).timeline.spans.size(), spans);
  // Taken over by this window's autosave, and gone with it when the window closes.
  const QString mine = w.project()->autosavePath();
  const QString dir = mine.left(mine.size() - 8) + QStringLiteral(".timeline/");
  QVERIFY(!panel->recordFiles().isEmpty());
  QVERIFY2(panel->recordFiles().front().startsWith(dir), qPrintable(panel->recordFiles().front()));
  QVERIFY(w.project()->closing());
  QVERIFY(!QFileInfo::exists(dir));
}

// A new plan keeps the records of every kernel whose code it did not change (same partition id,
// same content key); a changed kernel's records stay, marked stale and tied to nothing.
void TestTimeline::planChangeKeepsRecordsOfUnchangedKernels() {
  const LoadedModel m = load_model(samplePath("mmoe").toStdString());
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = gpu::gpu_spec("a100");
  auto planData = [](plan::FusionPlan p) {
    auto d = std::make_shared<PlanData>();
    d->plan = std::make_shared<const plan::FusionPlan>(std::move(p));
    return PlanDataPtr(d);
  };
  const plan::FusionPlan first = plan::plan(m.program, po);
  QVERIFY(first.partitions.size() > 2);
  const PlanDataPtr before = planData(first);
  // One block running stage 0 of each partition's first launch.
  std::vector<KernelTimeline> ts;
  for (size_t i = 0; i < first.partitions.size(); ++i) {
    PartitionKernelsPtr built = shared_kernel_cache().kernels(first, i);
    if (!built || built->kernels.empty()) continue;
    KernelTimeline t;
    t.kernel = built->kernels.front().name;
    t.emulated = true;
    t.grid = t.rows = 1;
    t.spans.push_back(TimelineSpan{0, 0, 0, loop::TimelineWait::None, 0, 1});
    ts.push_back(std::move(t));
  }
  const TimelineDataPtr old = makeTimelineData(before, ts, true, QStringLiteral("emulator"));
  const size_t n = old->kernels.size();
  QVERIFY(n > 2);
  for (const TimelineKernel& k : old->kernels) QVERIFY(k.partition >= 0);
  // The same plan again (a re-plan that changed nothing): every kernel kept, tied to it.
  int stale = -1;
  const PlanDataPtr same = planData(first);
  TimelineDataPtr carried = carryTimelineData(old, same, &stale);
  QCOMPARE(stale, 0);
  QCOMPARE(carried->plan, same);
  QCOMPARE(carried->kernels.size(), n);
  for (const TimelineKernel& k : carried->kernels) QVERIFY(k.partition >= 0 && !k.stale);
  // One partition's code changed (its rows split across blocks or not): that kernel is stale.
  plan::FusionPlan edited = first;
  edited.partitions[0].split_rows = !edited.partitions[0].split_rows;
  const PlanDataPtr changed = planData(edited);
  QVERIFY(shared_kernel_cache().key(edited, 0) != shared_kernel_cache().key(first, 0));
  carried = carryTimelineData(old, changed, &stale);
  QCOMPARE(stale, 1);
  QCOMPARE(carried->kernels.size(), n);
  int tied = 0;
  for (const TimelineKernel& k : carried->kernels) {
    if (k.stale) {
      QCOMPARE(k.partition, -1);
      QCOMPARE(QString::fromStdString(k.timeline.kernel),
               QStringLiteral("kernel%1").arg(first.partitions[0].id));
    } else {
      tied += k.partition >= 0 ? 1 : 0;
    }
  }
  QCOMPARE(tied, int(n) - 1);
  QVERIFY2(carried->note.contains(QStringLiteral("stale")), qPrintable(carried->note));
  // The panel carries its timeline over when the plan changes instead of dropping it.
  TimelinePanel panel;
  panel.setPlan(before);
  panel.setData(old);
  QSignalSpy done(&panel, &TimelinePanel::finished);
  panel.setPlan(changed);
  QVERIFY(done.wait(60000));
  QVERIFY(panel.data());
  QCOMPARE(panel.data()->plan, changed);
  QCOMPARE(panel.data()->kernels.size(), n);
}

void TestTimeline::statusBarCancelStopsTheRun() {
  MainWindow w;
  w.project()->setAutosaveEnabled(false);
  w.show();
  QVERIFY(openAndPlan(w, samplePath("bert")));
  TimelinePanel* panel = w.timelinePanel();
  QToolButton* cancel = nullptr;
  for (QToolButton* b : w.statusBar()->findChildren<QToolButton*>())
    if (b->text() == QStringLiteral("Cancel")) cancel = b;
  QVERIFY(cancel);
  QSignalSpy done(panel, &TimelinePanel::finished);
  panel->runEmulator();
  QVERIFY(cancel->isVisible());  // the status bar offers Cancel for the timeline run
  // Cancelled while the runner runs the kernel (its launch event has come back).
  QVERIFY(QTest::qWaitFor([&] { return panel->infoText().contains(QStringLiteral("running ")); },
                          120000));
  QVERIFY(panel->isJobRunning());
  QElapsedTimer clock;
  clock.start();
  cancel->click();
  QVERIFY(!panel->isBusy());
  QCOMPARE(done.count(), 1);
  QVERIFY2(w.message().contains(QStringLiteral("cancelled")), qPrintable(w.message()));
  QVERIFY(QTest::qWaitFor([&] { return !panel->isJobRunning(); }, 5000));
  QVERIFY2(clock.elapsed() < 1000, qPrintable(QString::number(clock.elapsed())));
  qInfo("the cancelled run's job ended %lld ms after Cancel", qint64(clock.elapsed()));
  QVERIFY(!panel->data());
  QVERIFY(panel->errorText().isEmpty());
  QVERIFY(panel->runAction()->isEnabled());
}

QTEST_MAIN(TestTimeline)
#include "test_timeline.moc"
