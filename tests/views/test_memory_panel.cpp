// The Memory panel: a stage of the sample BERT recorded on the emulator and drawn as heat maps
// (pixels that are not blank), labelled as the emulator's; stepping the animation changes the
// frame; colouring by reuse draws the same recording again.
#include <QDockWidget>
#include <QLabel>
#include <QStandardPaths>
#include <QToolButton>
#include <QtTest>

#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/memory_panel.h"

using namespace souffle;
using namespace souffle::views;

namespace {

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading() && w.graphPanel()->isFinal();
}

/// Pixels with colour in them (not white, not grey: the heat map's cells, not text or lines).
int colouredPixels(const QImage& img) {
  int n = 0;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) {
      const QColor c = img.pixelColor(x, y);
      if (c.hsvSaturation() > 40 && c.value() > 40) ++n;
    }
  return n;
}

}  // namespace

class TestMemoryPanel : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void stageOfSampleBertIsDrawnAndAnimated();
};

void TestMemoryPanel::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_memory_panel"));
}

void TestMemoryPanel::stageOfSampleBertIsDrawnAndAnimated() {
  MainWindow w;
  w.resize(1400, 1000);
  w.show();
  w.openModel(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx"));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w), 120000);
  MemoryPanel* panel = w.memoryPanel();
  QVERIFY(panel && w.memoryDock());
  QVERIFY(!w.memoryDock()->isVisible());

  // The stage that computes the first MatMul of the first kernel, asked for by selecting the
  // node in the graph: recorded once the panel is shown.
  const plan::Partition& k0 = w.planData()->plan->partitions.front();
  QString node;
  for (const std::string& op : k0.ops)
    if (node.isEmpty() && op.find("MatMul") != std::string::npos) node = QString::fromStdString(op);
  QVERIFY(!node.isEmpty());
  const SceneGraph* g = w.graphPanel()->scene()->graph();
  for (size_t b = 0; b < g->nodes.size(); ++b)
    if (g->nodes[b].onnxNode == node) w.graphPanel()->scene()->selectBox(int(b));
  QVERIFY(!panel->isReady());
  w.memoryDock()->show();
  w.memoryDock()->raise();
  QTRY_VERIFY_WITH_TIMEOUT(panel->isReady(), 120000);
  QVERIFY2(panel->error().isEmpty(), qPrintable(panel->error()));
  const MemoryPictureResult& r = panel->result();
  QVERIFY(r.picture && r.access);
  QVERIFY(r.stage >= 0);
  qInfo(
      "sample BERT %s stage %d (%s): recorded in %.1f ms, picture in %.1f ms, on screen in "
      "%.1f ms; %zu tensors, %zu frames",
      qPrintable(r.kernel), r.stage, qPrintable(r.stages.value(r.stage)), r.recordMs, r.pictureMs,
      panel->lastShowMs(), r.picture->tensors.size(), r.picture->frames.size());
  // The stage is the node's.
  const QString stageName = r.stages.value(r.stage);
  QVERIFY(!stageName.isEmpty());
  // Labelled as the emulator's.
  const QList<QLabel*> labels = panel->findChildren<QLabel*>();
  bool labelled = false;
  for (QLabel* l : labels)
    labelled |= l->text().contains(QStringLiteral("recorded on the CPU emulator")) &&
                l->text().contains(QStringLiteral("not measured on a GPU"));
  QVERIFY(labelled);

  // The heat maps are not blank.
  MemoryCanvas* canvas = panel->canvas();
  QVERIFY(canvas->width() > 100 && canvas->height() > 100);
  const QImage whole = canvas->grab().toImage();
  const int coloured = colouredPixels(whole);
  qInfo("whole recording: %d coloured pixels of %lld", coloured,
        qlonglong(whole.width()) * whole.height());
  QVERIFY(coloured > 200);

  // The animation: each step is another frame, drawn otherwise.
  QVERIFY(panel->frameCount() >= 2);
  panel->step();
  QCOMPARE(panel->frame(), 0);
  const QImage f0 = canvas->grab().toImage();
  QVERIFY(f0 != whole);
  // Each step is the next frame with its own label; the picture changes within a few
  // (blocks that touch only their own copy of a shared buffer draw alike).
  bool changed = false;
  QString label = panel->findChild<QLabel*>(QStringLiteral("memoryFrameLabel"))->text();
  for (int f = 1; f < std::min(panel->frameCount(), 12) && !changed; ++f) {
    panel->step();
    QCOMPARE(panel->frame(), f);
    const QString now = panel->findChild<QLabel*>(QStringLiteral("memoryFrameLabel"))->text();
    QVERIFY(now != label);
    label = now;
    changed = canvas->grab().toImage() != f0;
  }
  QVERIFY(changed);
  while (panel->frame() > 0) panel->step(-1);
  QCOMPARE(panel->frame(), 0);
  QCOMPARE(canvas->grab().toImage(), f0);
  // Playing moves on by itself.
  panel->play();
  QVERIFY(panel->isPlaying());
  QTRY_VERIFY_WITH_TIMEOUT(panel->frame() > 1, 5000);
  panel->pause();

  // MEMORY_PANEL_SCREENSHOT=FILE: the panel, floated and large, a third of the way through.
  if (qEnvironmentVariableIsSet("MEMORY_PANEL_SCREENSHOT")) {
    w.memoryDock()->setFloating(true);
    w.memoryDock()->resize(1100, 1000);
    panel->setFrame(panel->frameCount() / 3);
    QTest::qWait(500);
    QVERIFY(w.memoryDock()->grab().save(qEnvironmentVariable("MEMORY_PANEL_SCREENSHOT")));
  }
  // Another colouring: the same recording, drawn by reuse.
  const auto access = r.access;
  panel->setColouring(report::PictureColouring::Reuse);
  QTRY_VERIFY_WITH_TIMEOUT(panel->isReady(), 60000);
  QCOMPARE(panel->result().access, access);
  QCOMPARE(panel->result().picture->colouring, report::PictureColouring::Reuse);
  QVERIFY(colouredPixels(canvas->grab().toImage()) > 200);

  // Whether the stage fit the panel's time budget whole depends on the machine's load; a
  // sample offers the rest. With no time at all the recording holds a sample of the blocks,
  // and the picture's first note says which.
  QCOMPARE(panel->findChild<QToolButton*>(QStringLiteral("memoryAllBlocks"))->isVisible(),
           panel->isSampled());
  qInfo("the stage in the panel: %s", panel->isSampled()
                                          ? emulate::sample_note(*panel->result().access).c_str()
                                          : "every block recorded");
  const MemoryPictureResult some =
      MemoryPanel::record(w.planData(), panel->result().partition, QString(), panel->result().stage,
                          report::PictureColouring::Block, {}, 1e-9);
  QVERIFY2(some.error.isEmpty(), qPrintable(some.error));
  QVERIFY(some.access && !some.access->blocks.empty());
  QVERIFY(qint64(some.access->blocks.size()) < some.access->grid);
  QVERIFY(!some.picture->notes.empty());
  QVERIFY2(some.picture->notes.front().rfind("Sampled: ", 0) == 0,
           some.picture->notes.front().c_str());

  // The whole kernel (a stage recorded alone has no producer writes of earlier stages to
  // wait for): some frame after a grid barrier waits for producer blocks, named under the
  // picture and their tiles outlined.
  panel->showStage(-1);
  QTRY_VERIFY_WITH_TIMEOUT(panel->isReady() && panel->result().stage == -1, 300000);
  QVERIFY2(panel->error().isEmpty(), qPrintable(panel->error()));
  qInfo("whole %s: recorded in %.1f ms, %zu frames", qPrintable(panel->result().kernel),
        panel->result().recordMs, panel->result().picture->frames.size());
  int waiting = -1;
  const auto& frames = panel->result().picture->frames;
  for (size_t f = 0; f < frames.size() && waiting < 0; ++f)
    if (!frames[f].waits_for.empty()) waiting = int(f);
  QVERIFY2(waiting >= 0, "no frame of the sample BERT's kernel waits for another block");
  panel->setFrame(waiting > 0 ? waiting - 1 : 1);
  const QImage before = canvas->grab().toImage();
  panel->setFrame(waiting);
  const QString waitLabel = panel->findChild<QLabel*>(QStringLiteral("memoryFrameLabel"))->text();
  QVERIFY2(waitLabel.contains(QStringLiteral("Waits for producer block")), qPrintable(waitLabel));
  QVERIFY(canvas->grab().toImage() != before);

  // Another model: the panel forgets the plan.
  w.closeModel();
  QVERIFY(!panel->result().picture);
}

QTEST_MAIN(TestMemoryPanel)
#include "test_memory_panel.moc"
