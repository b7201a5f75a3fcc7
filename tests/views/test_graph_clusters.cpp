// Kernel clusters, collapsed kernels and the strategies table: outlines per kernel after a
// plan, collapse and expand on the real window, and the item model under the model tester.
#include <QAbstractItemModelTester>
#include <QDockWidget>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QtTest>

#include "views/cluster_items.h"
#include "views/collapse.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/strategy_table_model.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString bertPath() {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx");
}

int nodeItems(QGraphicsScene* scene) {
  int n = 0;
  for (QGraphicsItem* item : scene->items()) n += item->type() == NodeItem::Type ? 1 : 0;
  return n;
}

/// Kernels (ids) that hold at least one drawn, non-kernel box of the scene.
QSet<int> kernelsWithBoxes(GraphScene* scene) {
  QSet<int> ids;
  const SceneGraph* g = scene->graph();
  for (size_t b = 0; g && b < g->nodes.size(); ++b) {
    if (g->nodes[b].kind == SceneNode::Kind::Kernel) continue;
    if (const std::vector<int>* ks = scene->kernelsOf(static_cast<int>(b)))
      for (int k : *ks) ids.insert(k);
  }
  return ids;
}

void openAndPlan(MainWindow& w, const QString& path) {
  w.resize(1400, 900);
  w.show();
  w.openModel(path);
  QTRY_VERIFY_WITH_TIMEOUT(w.planData() != nullptr && w.graphPanel()->isFinal() && !w.isPlanning(),
                           120000);
  // Kernel outlines are made off the GUI thread.
  QTRY_VERIFY_WITH_TIMEOUT(!w.graphPanel()->scene()->clustersPending(), 60000);
}

}  // namespace

class TestGraphClusters : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void groupsSplitWhereBoxesAreApart();
  void labelHangsAboveTheTopBox();
  void clustersExistPerKernelAfterAPlan();
  void collapseReducesItemsAndExpandRestoresThem();
  void strategyTableModel();
  void strategyRowSwitchesTheMainStrategy();
};

void TestGraphClusters::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_graph_clusters"));
}

void TestGraphClusters::groupsSplitWhereBoxesAreApart() {
  // Kernel 7: two boxes one above the other (one group) and one far away (a second group);
  // kernel 3: one box, also listed by the split box 1.
  const std::vector<QRectF> rects = {QRectF(0, 0, 100, 40), QRectF(0, 72, 100, 40),
                                     QRectF(900, 0, 100, 40), QRectF(300, 0, 100, 40)};
  const std::vector<std::vector<int>> ids = {{7}, {3, 7}, {7}, {3}};
  std::vector<ClusterShape> shapes = computeClusters(rects, ids);
  int seven = 0, three = 0, primaries = 0;
  for (const ClusterShape& s : shapes) {
    seven += s.kernel == 7;
    three += s.kernel == 3;
    primaries += s.primary;
    for (int b : s.boxes) QVERIFY(s.outline.contains(rects[b].center()));
  }
  QCOMPARE(seven, 2);
  QCOMPARE(three, 2);  // box 1 (at y 72) and box 3 (x 300) are apart
  QCOMPARE(primaries, 2);
  for (const ClusterShape& s : shapes)
    if (s.kernel == 7 && s.primary) QCOMPARE(s.boxes.size(), size_t(2));
  // The joined group is one contour: a point between the two boxes lies inside.
  for (const ClusterShape& s : shapes)
    if (s.kernel == 7 && s.primary) QVERIFY(s.outline.contains(QPointF(50, 56)));
}

void TestGraphClusters::labelHangsAboveTheTopBox() {
  // A kernel whose lower boxes reach further left than its top one: the label sits on the top
  // box's padded rectangle, not at the far left of the group's bounds.
  const std::vector<QRectF> rects = {QRectF(400, 0, 100, 40), QRectF(300, 72, 100, 40),
                                     QRectF(0, 144, 400, 40)};
  const std::vector<std::vector<int>> ids = {{4}, {4}, {4}};
  std::vector<ClusterShape> shapes = computeClusters(rects, ids);
  QCOMPARE(shapes.size(), size_t(1));
  ClusterItem item(nullptr, shapes[0], QStringLiteral("K4"));
  const QRectF label = item.labelRect();
  QVERIFY2(label.left() >= rects[0].left() - kClusterPad && label.right() <= rects[0].right(),
           qPrintable(QStringLiteral("label at x %1..%2").arg(label.left()).arg(label.right())));
  QVERIFY(qAbs(label.bottom() - (rects[0].top() - kClusterPad)) <= 2);
  QVERIFY(item.boundingRect().contains(label));
}

void TestGraphClusters::clustersExistPerKernelAfterAPlan() {
  MainWindow w;
  openAndPlan(w, bertPath());
  GraphScene* scene = w.graphPanel()->scene();
  const QSet<int> kernels = kernelsWithBoxes(scene);
  QVERIFY(!kernels.isEmpty());
  QCOMPARE(scene->clusterKernelCount(), static_cast<int>(kernels.size()));
  // One primary (fully labelled) outline per kernel, under the boxes.
  QHash<int, int> primaries;
  for (ClusterItem* c : scene->clusterItems()) {
    QVERIFY(c->zValue() < 0);
    if (c->cluster().primary) {
      ++primaries[c->kernel()];
      QVERIFY(c->label().startsWith(QStringLiteral("K%1 · ").arg(c->kernel())));
      QVERIFY(c->label().contains(QStringLiteral("stage")));
      QVERIFY(c->label().contains(QStringLiteral("sync")));
    }
  }
  for (int k : kernels) QCOMPARE(primaries.value(k), 1);
  // Toggling hides and shows them without rebuilding.
  const size_t count = scene->clusterItems().size();
  scene->setClustersVisible(false);
  for (ClusterItem* c : scene->clusterItems()) QVERIFY(!c->isVisible());
  scene->setClustersVisible(true);
  QCOMPARE(scene->clusterItems().size(), count);
  // A new plan redraws them for its kernels.
  w.setStrategy(QStringLiteral("unfused"));
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning() && w.planData()->strategy == QStringLiteral("unfused"),
                           60000);
  QTRY_VERIFY_WITH_TIMEOUT(!scene->clustersPending(), 60000);
  QCOMPARE(scene->clusterKernelCount(), static_cast<int>(kernelsWithBoxes(scene).size()));
}

void TestGraphClusters::collapseReducesItemsAndExpandRestoresThem() {
  MainWindow w;
  openAndPlan(w, bertPath());
  GraphPanel* panel = w.graphPanel();
  GraphScene* scene = panel->scene();
  const int fullItems = nodeItems(scene);
  const int fullBoxes = static_cast<int>(scene->graph()->nodes.size());

  // Collapse the kernel with the most boxes: one box replaces them.
  const PlanData& plan = *w.planData();
  int best = -1;
  size_t most = 0;
  for (size_t k = 0; k < plan.plan->partitions.size(); ++k) {
    const size_t n = plan.boxesOf(false, static_cast<int>(k)).size();
    if (n > most) most = n, best = static_cast<int>(k);
  }
  QVERIFY(most >= 2);
  QSignalSpy drawn(panel, &GraphPanel::drawn);
  panel->collapseKernel(best);
  QTRY_VERIFY_WITH_TIMEOUT(
      panel->isFinal() && scene->graph() && scene->graph()->count(SceneNode::Kind::Kernel) == 1,
      60000);
  QCOMPARE(nodeItems(scene), fullItems - static_cast<int>(most) + 1);
  QVERIFY(panel->isCollapsed());
  // The kernel box is coloured by its kernel, and the table selection finds it.
  int kernelBox = -1;
  for (size_t b = 0; b < scene->graph()->nodes.size(); ++b)
    if (scene->graph()->nodes[b].kind == SceneNode::Kind::Kernel) kernelBox = static_cast<int>(b);
  QVERIFY(kernelBox >= 0);
  QVERIFY(scene->kernelsOf(kernelBox) && !scene->kernelsOf(kernelBox)->empty());
  QCOMPARE(scene->kernelsOf(kernelBox)->front(), plan.plan->partitions[best].id);
  QCOMPARE(panel->shownBoxes(plan.boxesOf(false, best)), std::vector<int>{kernelBox});
  QVERIFY(scene->graph()->nodes[kernelBox].title.startsWith(
      QStringLiteral("K%1 · ").arg(plan.plan->partitions[best].id)));
  // No edge of the collapsed graph is a self loop; edges keep their shape labels.
  for (const SceneEdge& e : scene->graph()->edges) QVERIFY(e.from != e.to);

  // Double-clicking the kernel box expands it again.
  panel->toggleBox(kernelBox);
  QTRY_VERIFY_WITH_TIMEOUT(panel->isFinal() && scene->graph() &&
                               static_cast<int>(scene->graph()->nodes.size()) == fullBoxes,
                           60000);
  QCOMPARE(nodeItems(scene), fullItems);
  QVERIFY(!panel->isCollapsed());

  // Collapse all: one box per drawn kernel plus the boxes in none; expand all restores.
  const std::set<int> drawnKernels = drawnPartitions(plan, false);
  panel->collapseAll();
  QTRY_VERIFY_WITH_TIMEOUT(
      panel->isFinal() && scene->graph() &&
          scene->graph()->count(SceneNode::Kind::Kernel) == static_cast<int>(drawnKernels.size()),
      60000);
  QVERIFY(nodeItems(scene) < fullItems);
  QCOMPARE(scene->clusterKernelCount(), 0);  // kernel boxes need no outline
  panel->expandAll();
  QTRY_VERIFY_WITH_TIMEOUT(panel->isFinal() && scene->graph() &&
                               static_cast<int>(scene->graph()->nodes.size()) == fullBoxes,
                           60000);
  QCOMPARE(nodeItems(scene), fullItems);
  QTRY_VERIFY_WITH_TIMEOUT(!scene->clustersPending(), 60000);
  QVERIFY(scene->clusterKernelCount() > 0);
}

void TestGraphClusters::strategyTableModel() {
  MainWindow w;
  openAndPlan(w, bertPath());
  StrategyTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(model.rowCount(), 4);  // unfused, rules, souffle, souffle-paper
  QCOMPARE(model.columnCount(), int(StrategyTableModel::ColumnCount));
  QCOMPARE(model.data(model.index(0, StrategyTableModel::KernelColumn)).toString(),
           QStringLiteral("—"));
  QSignalSpy finished(&model, &StrategyTableModel::finished);
  model.start(w.modelData(), QStringLiteral("A100"));
  QVERIFY(model.isBusy());
  QCOMPARE(model.data(model.index(2, StrategyTableModel::TimeColumn)).toString(),
           QStringLiteral("planning…"));
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
  QVERIFY(model.error().isEmpty());
  for (int r = 0; r < model.rowCount(); ++r) {
    QVERIFY(model.planAt(r) != nullptr);
    QCOMPARE(model.planAt(r)->strategy, model.strategyAt(r));
    QCOMPARE(model.data(model.index(r, StrategyTableModel::KernelColumn)).toULongLong(),
             static_cast<qulonglong>(model.planAt(r)->plan->kernels()));
  }
  const int unfused = model.rowOf(QStringLiteral("unfused"));
  const int souffle = model.rowOf(QStringLiteral("souffle"));
  QCOMPARE(model.data(model.index(unfused, StrategyTableModel::RatioColumn)).toString(),
           QStringLiteral("1.00×"));
  // Souffle fuses: fewer kernels than unfused, and not slower by the estimate.
  QVERIFY(model.planAt(souffle)->plan->kernels() < model.planAt(unfused)->plan->kernels());
  QVERIFY(
      model
          .data(model.index(souffle, StrategyTableModel::RatioColumn), StrategyTableModel::SortRole)
          .toDouble() <= 1.0);
  model.setCurrentStrategy(QStringLiteral("rules"));
  QVERIFY(model.data(model.index(model.rowOf(QStringLiteral("rules")), 0), Qt::FontRole)
              .value<QFont>()
              .bold());
  model.clear();
  QCOMPARE(model.planAt(0), nullptr);
}

void TestGraphClusters::strategyRowSwitchesTheMainStrategy() {
  MainWindow w;
  openAndPlan(w, bertPath());
  w.strategyDock()->show();
  w.strategyDock()->raise();
  QTRY_VERIFY_WITH_TIMEOUT(!w.strategyModel()->isBusy() && w.strategyModel()->planAt(0), 120000);
  const int row = w.strategyModel()->rowOf(QStringLiteral("rules"));
  w.strategyTable()->selectRow(row);
  QCOMPARE(w.strategy(), QStringLiteral("rules"));
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning() && w.planData()->strategy == QStringLiteral("rules"),
                           60000);
}

QTEST_MAIN(TestGraphClusters)
#include "test_graph_clusters.moc"
