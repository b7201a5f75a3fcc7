// End to end: the main window opens a sample model, draws its graph, selects, switches level,
// survives a corrupt model and a cancelled load.
#include <QApplication>
#include <QDockWidget>
#include <QMenuBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolBar>
#include <QtTest>
#include <set>

#include "core/session/load.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/node_table_model.h"
#include "views/panels.h"
#include "views/partition_table_model.h"

using namespace souffle;
using namespace souffle::views;

namespace {

/// One line per menu entry (nested menus indented), dock, tool-bar entry and context action.
void describeActions(const QList<QAction*>& actions, const QString& indent, QStringList& out) {
  for (QAction* a : actions) {
    if (a->isSeparator()) {
      out << indent + QStringLiteral("---");
      continue;
    }
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::PortableText);
    // Profiling on a GPU is enabled only where one is found.
    const bool gpuDependent = a->property("gpuAvailable").isValid();
    out << indent + a->text() + QStringLiteral(" [") + keys.join(QLatin1Char(',')) +
               QStringLiteral("]") +
               (gpuDependent     ? QString()
                : a->isEnabled() ? QStringLiteral("")
                                 : QStringLiteral(" (off)")) +
               (a->isCheckable()
                    ? (a->isChecked() ? QStringLiteral(" (on)") : QStringLiteral(" (unchecked)"))
                    : QString());
    // The recent files are the machine's.
    if (a->menu() && a->menu()->title() != QStringLiteral("Open &Recent"))
      describeActions(a->menu()->actions(), indent + QStringLiteral("  "), out);
  }
}

QString bertPath() {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx");
}

int nodeItems(QGraphicsScene* scene) {
  int n = 0;
  for (QGraphicsItem* item : scene->items()) n += item->type() == NodeItem::Type ? 1 : 0;
  return n;
}

}  // namespace

class TestExplorer : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void opensBertAndDrawsItsGraph();
  void corruptModelShowsTheErrorPanel();
  void unreadableKeptRunIsNamedAndDropped();
  void cancelDropsTheResult();
  void plansAndSelectsPartitions();
  void menusAndPanelsStayPut();

 private:
  LoadedModel m_expected;
};

void TestExplorer::initTestCase() {
  // Keep the user's settings and caches out of the tests.
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_explorer"));
  m_expected = load_model(bertPath().toStdString());
}

void TestExplorer::opensBertAndDrawsItsGraph() {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.openModel(bertPath());
  QVERIFY(w.isLoading());
  QTRY_VERIFY_WITH_TIMEOUT(w.modelData() != nullptr, 60000);
  QTRY_VERIFY_WITH_TIMEOUT(w.graphPanel()->isFinal(), 60000);
  QCOMPARE(loaded.count(), 1);
  QVERIFY(!w.isErrorShown());

  GraphScene* scene = w.graphPanel()->scene();
  const int ops = static_cast<int>(m_expected.graph.nodes.size());
  const int io = static_cast<int>(m_expected.graph.inputs.size() + m_expected.graph.outputs.size());
  QCOMPARE(scene->itemCount(SceneNode::Kind::Op), ops);
  QCOMPARE(nodeItems(scene), ops + io);
  QCOMPARE(w.nodeModel()->rowCount(), ops);
  QVERIFY(w.graphPanel()->layoutInfo().contains(QStringLiteral("dot")));
  QVERIFY(w.recentFiles().contains(QFileInfo(bertPath()).absoluteFilePath()));

  // Boxes of the final layout do not overlap.
  QList<QRectF> boxes;
  for (QGraphicsItem* item : scene->items())
    if (item->type() == NodeItem::Type) boxes << item->sceneBoundingRect().adjusted(3, 3, -3, -3);
  for (int i = 0; i < boxes.size(); ++i)
    for (int j = i + 1; j < boxes.size(); ++j) QVERIFY(!boxes[i].intersects(boxes[j]));

  // Search by op type finds every MatMul; selecting one fills the properties panel.
  w.graphPanel()->setSearchText(QStringLiteral("MatMul"));
  int matmuls = 0;
  for (const graph::Node& n : m_expected.graph.nodes) matmuls += n.op_type == "MatMul" ? 1 : 0;
  QVERIFY(matmuls > 0);
  QVERIFY(w.graphPanel()->matchCount() >= matmuls);
  w.graphPanel()->findNext();
  const int box = scene->selectedBox();
  QVERIFY(box >= 0);
  QCOMPARE(scene->graph()->nodes[box].title, QStringLiteral("MatMul"));
  const QString html = w.propertiesPanel()->html();
  QVERIFY(html.contains(QStringLiteral("Tensor expressions")));
  QVERIFY(html.contains(QStringLiteral("sum(")));
  // ...and the node table follows the selection.
  const QModelIndexList rows = w.nodeTable()->selectionModel()->selectedRows();
  QCOMPARE(rows.size(), 1);
  QCOMPARE(rows.front().siblingAtColumn(NodeTableModel::NameColumn).data().toString(),
           scene->graph()->nodes[box].subtitle);

  // The TE level shows one box per compute op.
  w.setTeLevel(true);
  QTRY_VERIFY_WITH_TIMEOUT(
      w.graphPanel()->isFinal() && w.graphPanel()->scene()->graph() == &w.modelData()->teGraph,
      60000);
  QCOMPARE(scene->itemCount(SceneNode::Kind::TeOp),
           static_cast<int>(m_expected.program.ops.size()));
  // Switching back uses the cached layout: drawn at once.
  w.setTeLevel(false);
  QVERIFY(w.graphPanel()->isFinal());
  QCOMPARE(scene->itemCount(SceneNode::Kind::Op), ops);

  // Exports write files.
  QTemporaryDir dir;
  w.exportSvg(dir.filePath(QStringLiteral("g.svg")));
  w.exportPng(dir.filePath(QStringLiteral("g.png")));
  QVERIFY(QFileInfo(dir.filePath(QStringLiteral("g.svg"))).size() > 1000);
  QVERIFY(!QImage(dir.filePath(QStringLiteral("g.png"))).isNull());
}

void TestExplorer::corruptModelShowsTheErrorPanel() {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("corrupt.onnx"));
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("\x08\x07\x12\xff\xff\xff\xff\x0fnot a model at all");
  f.close();

  MainWindow w;
  w.show();
  QSignalSpy failed(&w, &MainWindow::loadFailed);
  w.openModel(path);
  QTRY_VERIFY_WITH_TIMEOUT(w.isErrorShown(), 30000);
  QCOMPARE(failed.count(), 1);
  QVERIFY(w.errorPanel()->isVisible());
  QVERIFY(w.errorPanel()->error().file.endsWith(QStringLiteral("corrupt.onnx")));
  QVERIFY(!w.errorPanel()->error().reason.isEmpty());
  QVERIFY(w.errorPanel()->text().contains(QStringLiteral("corrupt.onnx")));
  QVERIFY(w.modelData() == nullptr);
  QVERIFY(!w.isLoading());

  // The window stays usable: a good model opens next and the error panel goes away.
  w.openModel(bertPath());
  QTRY_VERIFY_WITH_TIMEOUT(w.modelData() != nullptr, 60000);
  QVERIFY(!w.isErrorShown());
}

// A project's kept profile run of the plan on screen with a field of the wrong type (found by
// fuzz_project) is named in the problems panel, as a dropped run of the project, not as a model
// that could not be opened; the model and its plan stay.
void TestExplorer::unreadableKeptRunIsNamedAndDropped() {
  QTemporaryDir dir;
  QVERIFY(QFile::copy(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/mmoe/model.onnx"),
                      dir.filePath(QStringLiteral("model.onnx"))));
  const QString key = QStringLiteral(
      "souffle|A100-SXM4-40GB|fp32|{\\n  \\\"edits\\\": [],\\n  "
      "\\\"version\\\": 1\\n}\\n");
  const QString path = dir.filePath(QStringLiteral("p.souffle"));
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(QStringLiteral(R"({"version": 1, "model": "model.onnx", "strategy": "souffle",
    "gpu": "A100", "precision": "fp32", "decisions": {"version": 1, "edits": []},
    "measurements": [{"plan_key": "%1", "backend": "emulator", "graph_us": true,
      "kernels": [{"name": "kernel0", "partition": 0, "time_us": {"median": 12.5}}]}]})")
              .arg(key)
              .toUtf8());
  f.close();

  MainWindow w;
  w.show();
  w.openFile(path);
  QTRY_VERIFY_WITH_TIMEOUT(w.isErrorShown(), 60000);
  QVERIFY(w.modelData() != nullptr);
  QCOMPARE(w.errorPanel()->error().file, path);
  QVERIFY(w.errorPanel()->error().reason.contains(QStringLiteral("graph_us")));
  QVERIFY(w.errorPanel()->text().contains(QStringLiteral("A kept profile run was dropped")));
}

void TestExplorer::cancelDropsTheResult() {
  MainWindow w;
  w.show();
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.openModel(bertPath());
  w.cancelLoad();
  QVERIFY(!w.isLoading());
  // Long enough for the abandoned load to finish in the background; its result is dropped.
  QTest::qWait(4000);
  QCOMPARE(loaded.count(), 0);
  QVERIFY(w.modelData() == nullptr);
}

void TestExplorer::plansAndSelectsPartitions() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QSignalSpy planned(&w, &MainWindow::planned);
  w.setStrategy(QStringLiteral("rules"));
  w.openModel(bertPath());
  QTRY_VERIFY_WITH_TIMEOUT(w.planData() != nullptr && w.graphPanel()->isFinal(), 60000);
  QVERIFY(!w.isPlanning());
  QCOMPARE(w.planData()->strategy, QStringLiteral("rules"));
  const int rulesKernels = static_cast<int>(w.planData()->plan->kernels());
  QVERIFY(rulesKernels > 1);
  QCOMPARE(w.partitionModel()->rowCount(), rulesKernels);
  GraphScene* scene = w.graphPanel()->scene();
  // Every op box with TEs carries its kernel.
  const SceneGraph* g = scene->graph();
  for (size_t b = 0; b < g->nodes.size(); ++b)
    if (g->nodes[b].kind == SceneNode::Kind::Op && g->nodes[b].teCount > 0) {
      const std::vector<int>* ks = scene->kernelsOf(static_cast<int>(b));
      QVERIFY(ks && !ks->empty());
    }

  // A table row selects the partition's nodes in the graph and names its reasons.
  QTableView* table = w.partitionTable();
  const int row = rulesKernels / 2;
  table->selectRow(row);
  const QModelIndex src = static_cast<QSortFilterProxyModel*>(table->model())
                              ->mapToSource(table->model()->index(row, 0));
  const std::vector<int> boxes = w.planData()->boxesOf(false, src.row());
  QVERIFY(!boxes.empty());
  QCOMPARE(scene->selectedCount(), static_cast<int>(boxes.size()));
  QCOMPARE(scene->selectedBox(), boxes.front());
  QVERIFY(w.propertiesPanel()->html().contains(QStringLiteral("Partition")));
  QVERIFY(w.propertiesPanel()->html().contains(
      QStringLiteral("K%1").arg(w.planData()->plan->partitions[src.row()].id)));
  // The node's TEs as the analysis sees them: intensity and each input's access kind.
  QVERIFY(w.propertiesPanel()->html().contains(QStringLiteral("Characterization")));
  QVERIFY(w.propertiesPanel()->html().contains(QStringLiteral("one-relies-on-")));

  // ...and back: selecting a node selects its kernel's row.
  const std::vector<int> other = w.planData()->boxesOf(false, 0);
  QVERIFY(!other.empty());
  scene->selectBox(other.front());
  const QModelIndexList sel = table->selectionModel()->selectedRows();
  QCOMPARE(sel.size(), 1);
  QCOMPARE(sel.front().data(PartitionTableModel::PartitionRole).toInt(), 0);

  // Switching strategy re-plans off the GUI thread; the status bar follows.
  w.setStrategy(QStringLiteral("unfused"));
  QVERIFY(w.isPlanning());
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning() && w.planData()->strategy == QStringLiteral("unfused"),
                           60000);
  QVERIFY(w.partitionModel()->rowCount() > rulesKernels);
  QCOMPARE(w.partitionModel()->rowCount(), static_cast<int>(w.planData()->plan->kernels()));
  // Two quick changes: only the last plan lands.
  const int before = static_cast<int>(planned.count());
  w.setStrategy(QStringLiteral("rules"));
  w.setStrategy(QStringLiteral("souffle"));
  QTRY_VERIFY_WITH_TIMEOUT(!w.isPlanning(), 60000);
  QTest::qWait(200);
  QCOMPARE(static_cast<int>(planned.count()), before + 1);
  QCOMPARE(w.planData()->strategy, QStringLiteral("souffle"));
  QVERIFY(static_cast<int>(w.planData()->plan->kernels()) < rulesKernels);
  // The TE level colours its boxes too.
  w.setTeLevel(true);
  QTRY_VERIFY_WITH_TIMEOUT(
      w.graphPanel()->isFinal() && w.graphPanel()->scene()->graph() == &w.modelData()->teGraph,
      60000);
  const std::vector<int>* ks = scene->kernelsOf(0);
  QVERIFY(ks != nullptr);
}

// The menus (their entries, order, shortcuts and state), the Help list of shortcuts, the tool
// bars, the panels (title, area, tabbed with, shown) and the context menus, with BERT planned,
// are those listed in explorer_layout.txt (SOUFFLE_UPDATE_LAYOUT=1 rewrites it).
void TestExplorer::menusAndPanelsStayPut() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QSignalSpy planned(&w, &MainWindow::planned);
  w.openModel(bertPath());
  QTRY_VERIFY_WITH_TIMEOUT(planned.count() >= 1 && w.graphPanel()->isFinal(), 60000);
  QStringList out;
  for (QAction* m : w.menuBar()->actions()) {
    out << QStringLiteral("menu ") + m->text();
    if (m->menu()) describeActions(m->menu()->actions(), QStringLiteral("  "), out);
  }
  // Help > Keyboard shortcuts lists the menus under the menu bar, in the bar's order, each
  // entry once.
  std::set<QAction*> listed;
  for (QMenu* menu : w.menuBar()->findChildren<QMenu*>())
    for (QAction* a : menu->actions())
      if (menu->title() != QStringLiteral("Open &Recent"))
        if (!a->shortcut().isEmpty() && !a->menu() && listed.insert(a).second)
          out << QStringLiteral("help ") + a->text() + QStringLiteral(" ") +
                     a->shortcut().toString(QKeySequence::PortableText);
  for (QToolBar* bar : w.findChildren<QToolBar*>(Qt::FindDirectChildrenOnly)) {
    out << QStringLiteral("toolbar ") + bar->objectName() + QStringLiteral(" ") +
               QString::number(w.toolBarArea(bar));
    describeActions(bar->actions(), QStringLiteral("  "), out);
  }
  QList<QDockWidget*> docks = w.findChildren<QDockWidget*>();
  std::sort(docks.begin(), docks.end(),
            [](QDockWidget* a, QDockWidget* b) { return a->objectName() < b->objectName(); });
  for (QDockWidget* d : docks) {
    QStringList tabs;
    for (QDockWidget* t : w.tabifiedDockWidgets(d)) tabs << t->objectName();
    tabs.sort();
    out << QStringLiteral("dock %1 '%2' area %3 %4 tabbed with %5")
               .arg(d->objectName(), d->windowTitle())
               .arg(w.dockWidgetArea(d))
               .arg(d->isHidden() ? QStringLiteral("hidden") : QStringLiteral("shown"),
                    tabs.join(QLatin1Char(',')));
  }
  // Where each panel is, and where each hidden one appears when shown.
  const auto where = [&w, &docks, &out](const QString& when) {
    for (QDockWidget* d : docks)
      if (const QRect r = d->geometry(); d->isVisible() && r.x() >= 0 && r.y() >= 0) {
        // (a panel behind another's tab is off screen, anywhere)
        out << QStringLiteral("%1 %2 at %3,%4 %5x%6")
                   .arg(when, d->objectName())
                   .arg(r.x())
                   .arg(r.y())
                   .arg(r.width())
                   .arg(r.height());
      }
  };
  where(QStringLiteral("geometry"));
  for (QDockWidget* d : docks)
    if (d->isHidden()) d->show();
  QTest::qWait(50);
  where(QStringLiteral("all shown"));
  out << QStringLiteral("kernel table");
  describeActions(w.partitionTable()->actions(), QStringLiteral("  "), out);
  out << QStringLiteral("window");
  describeActions(w.actions(), QStringLiteral("  "), out);
  const QString golden = QStringLiteral(SOUFFLE_SOURCE_DIR "/tests/views/explorer_layout.txt");
  const QString actual = out.join(QLatin1Char('\n')) + QLatin1Char('\n');
  if (qEnvironmentVariableIsSet("SOUFFLE_UPDATE_LAYOUT")) {
    QFile f(golden);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(actual.toUtf8());
  }
  QFile f(golden);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QStringList expected = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
  const QStringList got = actual.split(QLatin1Char('\n'));
  for (int i = 0; i < std::max(expected.size(), got.size()); ++i)
    QCOMPARE(got.value(i), expected.value(i));
}

int main(int argc, char** argv) {
  // Runs headless by default, also when started by hand outside CTest.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  TestExplorer test;
  return QTest::qExec(&test, argc, argv);
}
#include "test_explorer.moc"
