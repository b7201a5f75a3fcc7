// The step-through mode: a run over a sample model visits every pipeline step, each with text
// before and after and a sentence, it shows the kernel of the plan's precision, and the window
// rings the nodes a step changed.
#include <QDockWidget>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/step_through.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString bertPath() {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx");
}

}  // namespace

class TestStepThrough : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void visitsEveryStep();
  void aBadModelSaysWhy();
  void followsThePlansPrecision();
  void windowHighlightsWhatAStepChanged();
};

void TestStepThrough::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_step_through"));
}

void TestStepThrough::visitsEveryStep() {
  StepThroughPanel panel;
  panel.resize(1200, 500);
  panel.show();
  QSignalSpy ready(&panel, &StepThroughPanel::ready);
  QSignalSpy shown(&panel, &StepThroughPanel::stepShown);
  panel.start(bertPath(), QStringLiteral("souffle"), QStringLiteral("A100"));
  QVERIFY(panel.isBusy());
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 120000);
  QCOMPARE(panel.stepCount(), static_cast<int>(pipeline_step_names().size()));
  QCOMPARE(panel.currentStep(), 0);
  QVERIFY(!panel.previousAction()->isEnabled());
  QStringList seen;
  for (int i = 0; i < panel.stepCount(); ++i) {
    if (i > 0) panel.nextAction()->trigger();
    QCOMPARE(panel.currentStep(), i);
    const PipelineStep* s = panel.step(i);
    QVERIFY(s);
    seen << QString::fromStdString(s->name);
    QVERIFY2(!panel.beforeText().isEmpty(), s->name.c_str());
    QVERIFY2(!panel.afterText().isEmpty(), s->name.c_str());
    QVERIFY(!s->sentence.empty());
    QVERIFY(panel.sentence().contains(QString::fromStdString(s->sentence).toHtmlEscaped()));
  }
  QCOMPARE(shown.count(), panel.stepCount());
  QVERIFY(!panel.nextAction()->isEnabled());
  QStringList expected;
  for (const std::string& n : pipeline_step_names()) expected << QString::fromStdString(n);
  QCOMPARE(seen, expected);
  panel.previous();
  QCOMPARE(panel.currentStep(), panel.stepCount() - 2);
  QVERIFY(panel.afterText().contains(QStringLiteral("for")));  // loop IR of the build kernels step
}

void TestStepThrough::aBadModelSaysWhy() {
  StepThroughPanel panel;
  QSignalSpy failed(&panel, &StepThroughPanel::failed);
  panel.start(QStringLiteral("/nonexistent/model.onnx"), QStringLiteral("souffle"),
              QStringLiteral("A100"));
  QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
  QCOMPARE(panel.stepCount(), 0);
  QVERIFY(panel.sentence().contains(QStringLiteral("stopped")));
}

void TestStepThrough::followsThePlansPrecision() {
  // Under fp16 the kernel compile builds keeps its GEMMs in tensor-core fragments: the
  // step-through shows that kernel, not the fp32 one.
  StepThroughPanel panel;
  QSignalSpy ready(&panel, &StepThroughPanel::ready);
  const plan::Decisions none;
  panel.start(bertPath(), QStringLiteral("souffle"), QStringLiteral("A100"), QStringLiteral("fp16"),
              none);
  QCOMPARE(panel.runKey(),
           StepThroughPanel::keyOf(bertPath(), QStringLiteral("souffle"), QStringLiteral("A100"),
                                   QStringLiteral("fp16"), none));
  QVERIFY(panel.runKey() != StepThroughPanel::keyOf(bertPath(), QStringLiteral("souffle"),
                                                    QStringLiteral("A100"), QStringLiteral("fp32"),
                                                    none));
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 120000);
  const PipelineStep* build = nullptr;
  for (int i = 0; i < panel.stepCount(); ++i)
    if (panel.step(i)->name == "build kernels") build = panel.step(i);
  QVERIFY(build);
  QVERIFY2(build->after.find("fragment") != std::string::npos, build->sentence.c_str());
}

void TestStepThrough::windowHighlightsWhatAStepChanged() {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.openModel(bertPath());
  QTRY_VERIFY_WITH_TIMEOUT(w.planData() != nullptr && w.graphPanel()->isFinal() && !w.isPlanning(),
                           120000);
  w.stepThroughDock()->show();
  w.stepThroughDock()->raise();  // tabbed with the TE program: on top, so it runs
  QTRY_VERIFY_WITH_TIMEOUT(w.stepThrough()->stepCount() > 0, 120000);
  // The horizontal step names the projections it merged: the graph rings their boxes.
  const int h = static_cast<int>(
      std::find(pipeline_step_names().begin(), pipeline_step_names().end(), "horizontal") -
      pipeline_step_names().begin());
  w.stepThrough()->setCurrentStep(h);
  QVERIFY(!w.stepThrough()->step(h)->nodes.empty());
  QVERIFY(w.graphPanel()->matchCount() == 0);  // rings are not search matches
  int rung = 0;
  for (QGraphicsItem* item : w.graphPanel()->scene()->items())
    if (item->type() == NodeItem::Type) rung += static_cast<NodeItem*>(item)->isMatch();
  QVERIFY(rung > 0);
  // Before the partition step the graph draws no kernels (no clusters, badges or boundary-
  // styled edges); from it on, and once the panel closes, it draws the plan again.
  GraphScene* scene = w.graphPanel()->scene();
  // 1: boxes in kernels and edges styled by boundary; 0: neither; -1: one without the other.
  auto kernelsDrawn = [&] {
    int boxes = 0;
    for (size_t b = 0; b < scene->graph()->nodes.size(); ++b)
      if (const std::vector<int>* ks = scene->kernelsOf(static_cast<int>(b)); ks && !ks->empty())
        ++boxes;
    int edges = 0;
    for (int n : scene->boundaryCounts()) edges += n;
    return boxes > 0 && edges > 0 ? 1 : boxes == 0 && edges == 0 ? 0 : -1;
  };
  QCOMPARE(kernelsDrawn(), 0);
  const int part = static_cast<int>(
      std::find(pipeline_step_names().begin(), pipeline_step_names().end(), "partition") -
      pipeline_step_names().begin());
  w.stepThrough()->setCurrentStep(part);
  QCOMPARE(kernelsDrawn(), 1);
  w.stepThrough()->setCurrentStep(0);
  QCOMPARE(kernelsDrawn(), 0);
  w.stepThroughDock()->hide();
  QCOMPARE(kernelsDrawn(), 1);
  rung = 0;
  for (QGraphicsItem* item : w.graphPanel()->scene()->items())
    if (item->type() == NodeItem::Type) rung += static_cast<NodeItem*>(item)->isMatch();
  QCOMPARE(rung, 0);
}

QTEST_MAIN(TestStepThrough)
#include "test_step_through.moc"
