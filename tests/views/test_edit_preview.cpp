// The cost what-if: hovering an edit shows, before it is applied, the change in estimated time,
// kernels and grid barriers that applying it then produces; a refused edit shows the planner's
// reason in the menu and the tooltip; a preview is planned once per plan and edit.
#include <QAction>
#include <QLabel>
#include <QMenu>
#include <QStandardPaths>
#include <QTableView>
#include <QtTest>

#include "views/edit_commands.h"
#include "views/edit_preview.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/partition_table_model.h"

using namespace souffle;
using namespace souffle::views;

namespace {

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading() && w.graphPanel()->isFinal();
}

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

QAction* actionNamed(MainWindow& w, const QString& text) {
  for (QAction* a : w.findChildren<QAction*>())
    if (a->text() == text) return a;
  return nullptr;
}

bool answered(const EditPreview* p) {
  const auto s = p->current().state;
  return s != EditPreviewResult::State::Pending && s != EditPreviewResult::State::None;
}

/// The preview line the Edit menu holds.
QLabel* menuLine(MainWindow& w) {
  for (QLabel* l : w.findChildren<QLabel*>(QStringLiteral("editPreviewLabel")))
    if (qobject_cast<QMenu*>(l->parentWidget())) return l;
  return nullptr;
}

}  // namespace

class TestEditPreview : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void hoveredMergeShowsWhatApplyingItGives();
};

void TestEditPreview::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_edit_preview"));
}

void TestEditPreview::hoveredMergeShowsWhatApplyingItGives() {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.openModel(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx"));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w), 120000);
  // A split on the souffle plan builds and prices new kernels: planned off the GUI thread.
  {
    QAction* split = actionNamed(w, QObject::tr("&Split at node"));
    QVERIFY(split);
    const plan::Partition& k0 = w.planData()->plan->partitions.front();
    QVERIFY(k0.ops.size() > 2);
    const QString node = QString::fromStdString(k0.ops[k0.ops.size() / 2]);
    const SceneGraph* g = w.graphPanel()->scene()->graph();
    for (size_t b = 0; b < g->nodes.size(); ++b)
      if (g->nodes[b].onnxNode == node) w.graphPanel()->scene()->selectBox(int(b));
    emit split->hovered();
    QCOMPARE(w.editPreview()->current().state, EditPreviewResult::State::Pending);
    QTRY_VERIFY_WITH_TIMEOUT(answered(w.editPreview()), 120000);
    const EditPreviewResult& r = w.editPreview()->current();
    QVERIFY2(
        r.state == EditPreviewResult::State::Ready || r.state == EditPreviewResult::State::Refused,
        qPrintable(r.text()));
    qInfo(
        "split preview on sample BERT (souffle plan, %zu kernels) at %s: re-planned in %.1f ms: "
        "%s",
        w.planData()->plan->kernels(), qPrintable(node), r.ms,
        qPrintable(r.text().replace(QLatin1Char('\n'), QLatin1Char(' '))));
  }
  // The rules plan: kernels to merge (souffle's plan of the sample is one or two kernels).
  w.setStrategy(QStringLiteral("rules"));
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData()->strategy == QStringLiteral("rules"), 120000);
  EditPreview* preview = w.editPreview();
  QVERIFY(preview);
  QAction* merge = actionNamed(w, QObject::tr("&Merge selected kernels"));
  QAction* byGrid = actionNamed(w, QObject::tr("Order stage by a &grid barrier"));
  QVERIFY(merge && byGrid);
  QLabel* line = menuLine(w);
  QVERIFY(line);

  // Nothing selected: the hover says what to select, and plans nothing.
  w.partitionTable()->clearSelection();
  w.graphPanel()->scene()->clearSelection();
  const int planned = preview->planCount();
  emit merge->hovered();
  QCOMPARE(preview->current().state, EditPreviewResult::State::Hint);
  QVERIFY2(line->text().startsWith(QStringLiteral("Select two or more kernels")),
           qPrintable(line->text()));
  QCOMPARE(preview->planCount(), planned);

  // The first neighbouring pair whose merge the planner takes, found by hovering.
  const PlanDataPtr before = w.planData();
  const int kernels = int(before->plan->kernels());
  QVERIFY(kernels > 2);
  EditPreviewResult shown;
  int pick = -1;
  for (int k = 0; k + 1 < kernels && pick < 0; ++k) {
    selectKernelRows(w, k, k + 1);
    emit merge->hovered();
    QTRY_VERIFY_WITH_TIMEOUT(answered(preview), 60000);
    if (preview->current().state == EditPreviewResult::State::Ready) {
      pick = k;
      shown = preview->current();
    }
  }
  QVERIFY2(pick >= 0, "no neighbouring kernels of sample BERT can be merged");
  qInfo("merge preview on sample BERT (%s plan, %d kernels): re-planned in %.1f ms",
        qPrintable(before->strategy), kernels, shown.ms);
  // Shown in the menu's line and the action's tooltip: the estimate labelled as such.
  QCOMPARE(line->text(), shown.text());
  QVERIFY2(line->text().contains(QStringLiteral("cost-model estimate")), qPrintable(line->text()));
  QVERIFY(line->text().contains(QStringLiteral("Δ kernels")));
  QVERIFY(line->text().contains(QStringLiteral("Δ grid barriers")));
  QVERIFY(merge->toolTip().endsWith(shown.text()));
  QVERIFY(merge->toolTip().startsWith(QObject::tr("Merge the selected kernels")));
  QCOMPARE(shown.beforeKernels, kernels);
  QCOMPARE(shown.beforeUs, before->plan->est_time_us);

  // Hovering it again plans nothing: the preview is kept for this plan and edit.
  const int plans = preview->planCount();
  emit merge->hovered();
  QCOMPARE(preview->current().state, EditPreviewResult::State::Ready);
  QCOMPARE(preview->planCount(), plans);

  // Applying it gives the figures the preview showed.
  w.mergeSelected();
  QTRY_VERIFY_WITH_TIMEOUT(settled(w) && w.planData() != before, 120000);
  const plan::FusionPlan& after = *w.planData()->plan;
  QCOMPARE(int(after.kernels()) - kernels, shown.deltaKernels());
  QCOMPARE(after.grid_syncs - before->plan->grid_syncs, shown.deltaBarriers());
  QCOMPARE(after.est_time_us, shown.afterUs);
  QCOMPARE(after.est_time_us - before->plan->est_time_us, shown.deltaUs());
  QCOMPARE(shown.deltaKernels(), -1);

  // A refused edit says why, right there: ordering the first node of a kernel after the
  // stages before it (there are none).
  const PlanDataPtr now = w.planData();
  const std::string first = now->plan->partitions.front().ops.front();
  const SceneGraph* g = w.graphPanel()->scene()->graph();
  QVERIFY(g);
  int box = -1;
  for (size_t b = 0; b < g->nodes.size() && box < 0; ++b)
    if (g->nodes[b].onnxNode == QString::fromStdString(first)) box = int(b);
  QVERIFY(box >= 0);
  w.graphPanel()->scene()->selectBox(box);
  emit byGrid->hovered();
  QTRY_VERIFY_WITH_TIMEOUT(answered(preview), 60000);
  QCOMPARE(preview->current().state, EditPreviewResult::State::Refused);
  QVERIFY2(line->text().contains(QStringLiteral("starts its kernel")), qPrintable(line->text()));
  QVERIFY2(line->text().startsWith(QStringLiteral("Refused")), qPrintable(line->text()));
  QVERIFY(byGrid->toolTip().contains(preview->current().reason));
  // Hovering did not touch the decisions or the plan.
  QCOMPARE(w.planData(), now);
  QCOMPARE(w.decisionEditor()->decisions().edits.size(), size_t(1));
  QVERIFY(!w.decisionEditor()->hasProposal());
}

QTEST_MAIN(TestEditPreview)
#include "test_edit_preview.moc"
