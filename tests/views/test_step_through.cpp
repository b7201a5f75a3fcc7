// The step-through mode: a run over a sample model visits every pipeline step, each with text
// before and after and a sentence, it shows the kernel of the plan's precision; in the window F6
// brings its page to the front, the arrow keys walk the steps, a step lists the changes its pass
// record holds, rings what it removed and made, marks the changed lines, and another model ends
// the mode.
#include <QDockWidget>
#include <QListWidget>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include "core/support/line_diff.h"
#include "views/graph_scene.h"
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
  void importsWithTheModelsInputs();
  void f6BringsTheModeToTheFront();
  void anotherModelLeavesTheMode();
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
  panel.setShowUnchanged(true);  // every step, those that change nothing too
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

void TestStepThrough::importsWithTheModelsInputs() {
  // A model whose If is decided by an input walks only with that input bound (File > Model
  // inputs), as it loads; the run key tells the bound run from the unbound one.
  const QString path =
      QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/data/exporters/if_on_input/model.onnx");
  StepThroughPanel unbound;
  QSignalSpy failed(&unbound, &StepThroughPanel::failed);
  unbound.start(path, QStringLiteral("souffle"), QStringLiteral("A100"));
  QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);

  StepThroughPanel bound;
  QSignalSpy ready(&bound, &StepThroughPanel::ready);
  const ModelInputs inputs{{}, {QStringLiteral("sr=16000")}, {}};
  bound.start(path, QStringLiteral("souffle"), QStringLiteral("A100"), QStringLiteral("fp32"), {},
              inputs);
  QVERIFY(bound.runKey() != unbound.runKey());
  QCOMPARE(bound.runKey(),
           StepThroughPanel::keyOf(path, QStringLiteral("souffle"), QStringLiteral("A100"),
                                   QStringLiteral("fp32"), {}, inputs));
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60000);
  QCOMPARE(bound.stepCount(), static_cast<int>(pipeline_step_names().size()));
  // The fold step lists what folding removed: the graph as imported is the pipeline's.
  QVERIFY(bound.walk() && bound.walk()->graph_of(StepGraph::Imported));
}

void TestStepThrough::f6BringsTheModeToTheFront() {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.openModel(bertPath());
  QTRY_VERIFY_WITH_TIMEOUT(w.planData() != nullptr && w.graphPanel()->isFinal() && !w.isPlanning(),
                           120000);
  QDockWidget* properties = w.findChild<QDockWidget*>(QStringLiteral("propertiesDock"));
  QVERIFY(properties);
  const bool propertiesShown = properties->isVisible();
  QTest::keyClick(&w, Qt::Key_F6);
  QVERIFY(w.isStepThroughShown());
  StepThroughPanel* steps = w.stepThrough();
  QVERIFY(steps->isVisible());
  QVERIFY(!w.graphPanel()->isVisible());  // the page is in front of the graph
  for (QDockWidget* d : w.findChildren<QDockWidget*>())
    QVERIFY2(!d->isVisible(), qPrintable(d->objectName()));
  QVERIFY(w.session()->isStepping());
  QTRY_VERIFY_WITH_TIMEOUT(!steps->isBusy() && steps->stepCount() > 0, 120000);
  QVERIFY(steps->walk());

  // Steps that change nothing are hidden unless asked: with no edits, the decisions step.
  const auto at = [&](const char* name) {
    for (int i = 0; i < steps->stepCount(); ++i)
      if (steps->step(i)->name == name) return i;
    return -1;
  };
  const int decisions = at("decisions");
  QVERIFY(decisions >= 0 && !steps->step(decisions)->changed);
  auto listed = [&](int i) {
    return std::find(steps->listedSteps().begin(), steps->listedSteps().end(), i) !=
           steps->listedSteps().end();
  };
  QVERIFY(!listed(decisions));
  steps->setShowUnchanged(true);
  QVERIFY(listed(decisions));
  steps->setShowUnchanged(false);
  QVERIFY(!listed(decisions));

  // The arrow keys walk the listed steps.
  QCOMPARE(steps->currentStep(), steps->listedSteps()[0]);
  QTest::keyClick(steps->stepList(), Qt::Key_Down);
  QCOMPARE(steps->currentStep(), steps->listedSteps()[1]);
  QTest::keyClick(steps->stepList(), Qt::Key_Down);
  QCOMPARE(steps->currentStep(), steps->listedSteps()[2]);
  QTest::keyClick(steps->stepList(), Qt::Key_Up);
  QCOMPARE(steps->currentStep(), steps->listedSteps()[1]);

  // Before the partition step there are no kernels: the import's graph draws none.
  steps->setCurrentStep(0);
  QTRY_VERIFY_WITH_TIMEOUT(steps->isDrawn(), 60000);
  QVERIFY(steps->graph(true)->scene()->graph());
  for (size_t b = 0; b < steps->graph(true)->scene()->graph()->nodes.size(); ++b)
    QVERIFY(!steps->graph(true)->scene()->kernelsOf(static_cast<int>(b)));

  // The horizontal step: its changed sites are the plan's applied horizontal sites, one line
  // each with the reason; what it removed is ringed before, what it made after.
  const int h = at("horizontal");
  QVERIFY(h >= 0);
  steps->setCurrentStep(h);
  const PipelineWalk& walk = *steps->walk();
  QStringList expected;
  for (const plan::TransformSite& site : walk.result.plan.transforms)
    if (site.kind == plan::TransformKind::Horizontal && site.applied)
      expected << QString::fromStdString(site.reason);
  const QStringList lines = steps->siteLines();
  QVERIFY(!expected.isEmpty());
  QCOMPARE(lines.size(), expected.size());
  for (int i = 0; i < lines.size(); ++i) {
    QVERIFY2(
        lines[i].contains(QStringLiteral(" ∥ ")) && lines[i].contains(QStringLiteral("→ batched")),
        qPrintable(lines[i]));
    QVERIFY2(lines[i].contains(expected[i]), qPrintable(lines[i]));
  }
  QTRY_VERIFY_WITH_TIMEOUT(steps->isDrawn(), 60000);
  QSet<QString> removed, made;
  {
    QSet<QString> after, before;
    for (const te::Op& op : walk.program_of(StepGraph::Horizontal)->ops)
      after << QString::fromStdString(op->name);
    for (const te::Op& op : walk.result.model.program.ops)
      before << QString::fromStdString(op->name);
    for (const QString& n : before)
      if (!after.contains(n)) removed << n;
    for (const QString& n : after)
      if (!before.contains(n)) made << n;
  }
  QVERIFY(!removed.isEmpty() && !made.isEmpty());
  const QStringList ringedBefore = steps->ringedBoxes(false),
                    ringedAfter = steps->ringedBoxes(true);
  QCOMPARE(QSet<QString>(ringedBefore.begin(), ringedBefore.end()), removed);
  QCOMPARE(QSet<QString>(ringedAfter.begin(), ringedAfter.end()), made);
  // A site clicked is selected in both graphs: its members before, its result after.
  steps->selectSite(0);
  const StepSite& first = steps->step(h)->sites[0];
  const QStringList selBefore = steps->selectedBoxes(false), selAfter = steps->selectedBoxes(true);
  for (const std::string& n : first.before) QVERIFY(selBefore.contains(QString::fromStdString(n)));
  QCOMPARE(selAfter, QStringList{QString::fromStdString(first.after.at(0))});

  // The text panes mark the lines the step removed and added, as the line diff has them.
  const LineDiff d = diff_texts(steps->step(h)->before, steps->step(h)->after);
  std::vector<int> wantRemoved, wantAdded;
  for (size_t i = 0; i < d.removed.size(); ++i)
    if (d.removed[i]) wantRemoved.push_back(static_cast<int>(i));
  for (size_t i = 0; i < d.added.size(); ++i)
    if (d.added[i]) wantAdded.push_back(static_cast<int>(i));
  QVERIFY(!wantRemoved.empty() && !wantAdded.empty());
  QCOMPARE(steps->markedLines(false), wantRemoved);
  QCOMPARE(steps->markedLines(true), wantAdded);

  // F6 again: the graph and the docks are back as they were.
  QTest::keyClick(&w, Qt::Key_F6);
  QVERIFY(!w.isStepThroughShown());
  QVERIFY(w.graphPanel()->isVisible());
  QCOMPARE(properties->isVisible(), propertiesShown);
  QVERIFY(!w.session()->isStepping());
}

void TestStepThrough::anotherModelLeavesTheMode() {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.openModel(bertPath());
  QTRY_VERIFY_WITH_TIMEOUT(w.planData() != nullptr && !w.isPlanning(), 120000);
  w.setStepThroughShown(true);
  QTRY_VERIFY_WITH_TIMEOUT(w.stepThrough()->stepCount() > 0, 120000);
  w.openModel(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/lstm/model.onnx"));
  QTRY_VERIFY_WITH_TIMEOUT(
      w.planData() != nullptr && !w.isPlanning() &&
          QString::fromStdString(w.planData()->model->model->path).contains(QStringLiteral("lstm")),
      120000);
  QVERIFY(!w.isStepThroughShown());
  QVERIFY(!w.stepThroughAction()->isChecked());
  QVERIFY(!w.stepThrough()->isVisible());
  QVERIFY(w.graphPanel()->isVisible());
  QCOMPARE(w.stepThrough()->stepCount(), 0);
}

QTEST_MAIN(TestStepThrough)
#include "test_step_through.moc"
