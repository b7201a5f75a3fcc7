// The comparison model and the transformation/edit models: rows aligned by ONNX ops, merges
// and splits grouped into one row, totals compared; every model passes QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QSignalSpy>
#include <QtTest>

#include "views/comparison_model.h"
#include "views/comparison_view.h"
#include "views/edit_commands.h"
#include "views/model_loader.h"
#include "views/partition_table_model.h"
#include "views/plan_runner.h"
#include "views/table_model.h"
#include "views/transforms_panel.h"

using namespace souffle;
using namespace souffle::views;

namespace {

PlanDataPtr planOf(ModelDataPtr m, plan::Strategy s, const plan::Decisions& d = {}) {
  const PlanOutcome o = PlanRunner::runWith(m, s, QStringLiteral("A100"), d, nullptr);
  return o.data;
}

}  // namespace

class TestComparison : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void samePlanHasNoDifferences();
  void strategiesLineUpByOps();
  void mergeIsOneDifferingRow();
  void viewPlansBothSidesOffTheGuiThread();
  void transformAndEditModels();
  void editorUndoRedo();
  void editorSettlesAProposalWithItsPlan();

 private:
  ModelDataPtr m_model;
};

void TestComparison::initTestCase() {
  const LoadOutcome o =
      ModelLoader::run(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx"));
  QVERIFY2(o.ok(), qPrintable(o.error.message()));
  m_model = o.data;
}

void TestComparison::samePlanHasNoDifferences() {
  ComparisonModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  const PlanDataPtr a = planOf(m_model, plan::Strategy::Souffle);
  QVERIFY(a);
  model.setPlans(a, a, QStringLiteral("souffle"), QStringLiteral("souffle"));
  QVERIFY(model.rowCount() > 0);
  QCOMPARE(model.differingRows(), 0);
  QCOMPARE(model.totalsA().kernels, model.totalsB().kernels);
  QVERIFY(model.totalsHtml().contains(QStringLiteral("same")));
  QVERIFY(!model.totalsHtml().contains(QStringLiteral("0.00×")));
  // Numbers sort (and export as CSV) by the one SortRole of the table base; the status has a
  // role of its own.
  const ComparisonModel::Row& first = model.comparedRows().front();
  QCOMPARE(model.index(0, ComparisonModel::AStagesColumn).data(TableModel::SortRole).toInt(),
           first.aStages);
  QCOMPARE(model.index(0, ComparisonModel::DiffColumn).data(ComparisonModel::StatusRole).toInt(),
           int(ComparisonModel::Status::Same));
  const QStringList csv = tableCsv(model).split(QLatin1Char('\n'));
  QCOMPARE(csv.value(1).split(QLatin1Char(',')).value(ComparisonModel::AStagesColumn),
           QString::number(first.aStages));
  model.setPlans(nullptr, nullptr, {}, {});
  QCOMPARE(model.rowCount(), 0);
}

void TestComparison::strategiesLineUpByOps() {
  ComparisonModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  const PlanDataPtr a = planOf(m_model, plan::Strategy::Unfused);
  const PlanDataPtr b = planOf(m_model, plan::Strategy::Souffle);
  model.setPlans(a, b, QStringLiteral("unfused"), QStringLiteral("souffle"));
  QCOMPARE(model.totalsA().kernels, int(a->plan->kernels()));
  QCOMPARE(model.totalsB().kernels, int(b->plan->kernels()));
  QVERIFY(model.totalsA().kernels > model.totalsB().kernels);
  // Every kernel of each side is in exactly one row; rows never share an ONNX op.
  std::vector<int> seenA(a->plan->kernels()), seenB(b->plan->kernels());
  QSet<QString> ops;
  for (const ComparisonModel::Row& r : model.comparedRows()) {
    for (int k : r.a) ++seenA[size_t(k)];
    for (int k : r.b) ++seenB[size_t(k)];
    for (const QString& op : r.ops) {
      QVERIFY2(!ops.contains(op), qPrintable(op));
      ops.insert(op);
    }
  }
  for (int n : seenA) QCOMPARE(n, 1);
  for (int n : seenB) QCOMPARE(n, 1);
  QVERIFY(model.differingRows() > 0);
  // A fused row shows several unfused kernels against fewer souffle ones.
  bool grouped = false;
  for (const ComparisonModel::Row& r : model.comparedRows())
    grouped |= r.a.size() > r.b.size() && !r.b.empty();
  QVERIFY(grouped);
  QCOMPARE(model.index(0, ComparisonModel::DiffColumn).data(ComparisonModel::StatusRole).isValid(),
           true);
}

void TestComparison::mergeIsOneDifferingRow() {
  const PlanDataPtr a = planOf(m_model, plan::Strategy::Rules);
  const plan::FusionPlan& p = *a->plan;
  PlanDataPtr b;
  for (size_t k = 0; k + 1 < p.kernels() && !b; ++k) {
    plan::Decisions d;
    d.edits.push_back({plan::Edit::Kind::Merge, p.program.ops[size_t(p.partitions[k].tes[0])]->name,
                       p.program.ops[size_t(p.partitions[k + 1].tes[0])]->name});
    PlanDataPtr t = planOf(m_model, plan::Strategy::Rules, d);
    if (t && t->plan->refused.empty() && t->plan->kernels() + 1 == p.kernels()) b = t;
  }
  QVERIFY(b);
  ComparisonModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setPlans(a, b, QStringLiteral("rules"), QStringLiteral("rules + edits"));
  QCOMPARE(model.differingRows(), 1);
  for (int r = 0; r < model.rowCount(); ++r) {
    const auto& row = model.comparedRows()[size_t(r)];
    if (row.status == ComparisonModel::Status::Same) continue;
    QCOMPARE(row.a.size(), size_t(2));
    QCOMPARE(row.b.size(), size_t(1));
    QCOMPARE(model.index(r, ComparisonModel::DiffColumn).data().toString(),
             QStringLiteral("2 → 1 kernels"));
    QVERIFY(model.index(r, 0).data(Qt::BackgroundRole).isValid());
  }
}

void TestComparison::viewPlansBothSidesOffTheGuiThread() {
  ComparisonView view;
  QSignalSpy compared(&view, &ComparisonView::compared);
  view.setSides(view.sideIndex(QStringLiteral("rules"), false),
                view.sideIndex(QStringLiteral("souffle"), false));
  view.setContext(m_model, QStringLiteral("A100"), {});
  QVERIFY(view.isBusy());
  QTRY_VERIFY_WITH_TIMEOUT(compared.count() == 1, 60000);
  QVERIFY(view.model()->rowCount() > 0);
  QVERIFY(view.totalsText().contains(QStringLiteral("Kernels")));
  QCOMPARE(view.sideLabel(view.sideIndex(QStringLiteral("souffle"), true)),
           QStringLiteral("souffle + edits"));
}

void TestComparison::transformAndEditModels() {
  const PlanDataPtr p = planOf(m_model, plan::Strategy::Souffle);
  QVERIFY(!p->plan->transforms.empty());
  const std::string key = p->plan->transforms.front().key;
  plan::Decisions d;
  d.edits.push_back({plan::Edit::Kind::Forbid, key, ""});
  d.edits.push_back({plan::Edit::Kind::Split, "no_such_node", ""});
  const PlanDataPtr q = planOf(m_model, plan::Strategy::Souffle, d);
  QVERIFY(q);

  TransformsModel sites;
  QAbstractItemModelTester t1(&sites, QAbstractItemModelTester::FailureReportingMode::QtTest);
  sites.setPlan(q, d);
  QCOMPARE(sites.rowCount(), int(q->plan->transforms.size()));
  int row = -1;
  for (int r = 0; r < sites.rowCount(); ++r)
    if (sites.index(r, 0).data(TransformsModel::KeyRole).toString() == QString::fromStdString(key))
      row = r;
  QVERIFY(row >= 0);
  QCOMPARE(sites.index(row, TransformsModel::ChoiceColumn).data().toString(),
           QStringLiteral("forbid"));
  QCOMPARE(sites.index(row, TransformsModel::StateColumn).data().toString(),
           QStringLiteral("not applied"));

  EditsModel edits;
  QAbstractItemModelTester t2(&edits, QAbstractItemModelTester::FailureReportingMode::QtTest);
  edits.setState(q, d);
  QCOMPARE(edits.rowCount(), 2);
  QCOMPARE(edits.refusedCount(), 1);
  QCOMPARE(edits.index(1, EditsModel::StateColumn).data().toString(), QStringLiteral("refused"));
  QVERIFY(edits.index(1, EditsModel::ReasonColumn)
              .data()
              .toString()
              .contains(QStringLiteral("no_such_node")));
  edits.setState(nullptr, d);  // planning: pending
  QCOMPARE(edits.index(0, EditsModel::StateColumn).data().toString(), QStringLiteral("pending"));
}

void TestComparison::editorUndoRedo() {
  DecisionEditor editor;
  QSignalSpy changed(&editor, &DecisionEditor::changed);
  QSignalSpy proposed(&editor, &DecisionEditor::proposed);
  // An edit is proposed, planned, then accepted as a step (its plan is on screen: no re-plan).
  editor.push({{plan::Edit::Kind::Merge, "a", "b"}}, QStringLiteral("merge"));
  QCOMPARE(proposed.count(), 1);
  QVERIFY(editor.hasProposal());
  QCOMPARE(editor.planned().edits.size(), size_t(1));
  QVERIFY(editor.decisions().edits.empty());
  QCOMPARE(editor.proposedEdits().size(), size_t(1));
  editor.accept();
  QVERIFY(!editor.hasProposal());
  QCOMPARE(editor.undoStack()->count(), 1);
  QCOMPARE(editor.undoStack()->text(0), QStringLiteral("merge"));
  QCOMPARE(changed.count(), 0);
  editor.push({{plan::Edit::Kind::Merge, "a", "b"}}, QStringLiteral("again"));  // no-op
  QCOMPARE(proposed.count(), 1);
  // A refused proposal changes nothing and is no step.
  editor.push({{plan::Edit::Kind::Pin, "c", ""}}, QStringLiteral("pin"));
  QCOMPARE(proposed.count(), 2);
  editor.reject();
  QVERIFY(!editor.hasProposal());
  QCOMPARE(editor.undoStack()->count(), 1);
  QCOMPARE(editor.decisions().edits.size(), size_t(1));
  editor.setSiteDecision(QStringLiteral("h0"), plan::Edit::Kind::Force, false);
  editor.accept(QStringLiteral("force h0 (−1.0 µs)"));
  editor.setSiteDecision(QStringLiteral("h0"), plan::Edit::Kind::Forbid, false);
  editor.accept();
  plan::Edit::Kind k{};
  QVERIFY(editor.siteDecision(QStringLiteral("h0"), &k));
  QCOMPARE(k, plan::Edit::Kind::Forbid);
  QCOMPARE(editor.decisions().edits.size(), size_t(2));  // one choice per site
  QCOMPARE(editor.undoStack()->text(1), QStringLiteral("force h0 (−1.0 µs)"));
  editor.undoStack()->undo();
  QVERIFY(editor.siteDecision(QStringLiteral("h0"), &k));
  QCOMPARE(k, plan::Edit::Kind::Force);
  editor.undoStack()->undo();
  editor.undoStack()->undo();
  QVERIFY(editor.decisions().edits.empty());
  editor.undoStack()->redo();
  QCOMPARE(editor.decisions().edits.size(), size_t(1));
  // Undo while an edit is being planned drops the edit.
  editor.push({{plan::Edit::Kind::Pin, "c", ""}}, QStringLiteral("pin"));
  editor.undoStack()->undo();
  QVERIFY(!editor.hasProposal());
  QVERIFY(editor.decisions().edits.empty());
  editor.reset();
  QCOMPARE(editor.undoStack()->count(), 0);
  QCOMPARE(changed.count(), 6);  // 4 undos, 1 redo, the reset
}

void TestComparison::editorSettlesAProposalWithItsPlan() {
  DecisionEditor editor;
  const plan::Edit pin{plan::Edit::Kind::Pin, "c", ""};
  plan::FusionPlan before, after;
  before.est_time_us = 10;
  after.est_time_us = 8;
  // The plan made under the proposal refuses it: no step, the refusal named.
  editor.push({pin}, QStringLiteral("pin c"));
  plan::FusionPlan refusing = after;
  refusing.refused.push_back({pin, "c names nothing", false});
  QString message;
  QCOMPARE(editor.settle(refusing, &before, &message),
           QString::fromStdString(plan::describe(pin)) + QStringLiteral(" — c names nothing"));
  QVERIFY(!editor.hasProposal());
  QCOMPARE(editor.undoStack()->count(), 0);
  QVERIFY(message.isEmpty());
  // Taken: a step named with the change in estimated time.
  editor.push({pin}, QStringLiteral("pin c"));
  QCOMPARE(editor.settle(after, &before, &message), QString());
  QCOMPARE(editor.undoStack()->count(), 1);
  QCOMPARE(editor.undoStack()->text(0),
           QStringLiteral("pin c (") + estimateDelta(10, 8) + QLatin1Char(')'));
  QVERIFY(message.startsWith(QStringLiteral("pin c: est. 10.0 → 8.0 µs")));
  QCOMPARE(editor.decisions().edits.size(), size_t(1));
  // What a selection asks for: nothing selected says what to select, and proposes nothing.
  QVERIFY(!editor.push(splitRequest({})));
  QVERIFY(!splitRequest({}).hint.isEmpty());
  QVERIFY(mergeRequest(nullptr, {0, 1}).edits.empty());
  const EditRequest order = orderRequest(QStringLiteral("x"), BoundaryKind::Flags);
  QCOMPARE(order.edits.size(), size_t(1));
  QCOMPARE(order.edits[0].kind, plan::Edit::Kind::Sync);
  QCOMPARE(order.edits[0].b, std::string("flags"));
  QCOMPARE(pinRequest(QStringLiteral("x")).text, QStringLiteral("pin x"));
  QVERIFY(editor.push(pinRequest(QStringLiteral("x"))));
  QVERIFY(editor.hasProposal());
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  TestComparison test;
  return QTest::qExec(&test, argc, argv);
}
#include "test_comparison.moc"
