// Stage boundaries in the explorer: edges inside a kernel drawn by the boundary between their
// stages (with the legend), and the CUDA C barrier lines painted and explained by kind.
#include <QLabel>
#include <QStandardPaths>
#include <QTextBlock>
#include <QTextDocument>
#include <QtTest>

#include "views/boundary_edges.h"
#include "views/code_panel.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/panels.h"

using namespace souffle;
using namespace souffle::views;

namespace {

bool openAndPlan(MainWindow& w, const char* model) {
  w.openModel(QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx")
                  .arg(QString::fromLatin1(model)));
  return QTest::qWaitFor(
      [&] { return w.planData() && w.graphPanel()->isFinal() && !w.isPlanning(); }, 120000);
}

plan::Boundary boundary(int from, int to, BoundaryKind kind) {
  plan::Boundary b;
  b.from = from;
  b.to = to;
  b.order.before = from;
  b.order.after = to;
  b.order.kind = kind;
  return b;
}

}  // namespace

class TestBoundaries : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void edgeKindIsTheStrongestBoundaryBetweenTheStages();
  void graphAndCodeShowTheKinds();
  void propertiesSayWhereAGemmKeepsItsWeights();
};

void TestBoundaries::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("SouffleTest"));
  QCoreApplication::setApplicationName(QStringLiteral("test_views_boundaries"));
}

void TestBoundaries::edgeKindIsTheStrongestBoundaryBetweenTheStages() {
  // Boxes 0..3 compute in stages 0, 1, 2 and 2 of kernel 0; box 4 in kernel 1. Stage 1 follows
  // stage 0 after a block barrier, stage 2 follows stage 1 after a grid barrier, and stage 2
  // has a grid barrier between its own phases, which orders no two stages.
  SceneGraph g;
  g.nodes.resize(5);
  g.edges = {{0, 1, {}}, {1, 2, {}}, {0, 2, {}}, {2, 3, {}}, {3, 4, {}}};
  plan::FusionPlan p;
  p.partitions.resize(2);
  p.partitions[0].built_stages.resize(3);
  p.partitions[0].boundaries = {boundary(0, 1, BoundaryKind::Block),
                                boundary(1, 2, BoundaryKind::Grid),
                                boundary(2, 2, BoundaryKind::Grid)};
  p.partitions[1].built_stages.resize(1);
  std::vector<std::vector<BoxStages>> stages = {
      {{0, 0, 0}}, {{0, 1, 1}}, {{0, 2, 2}}, {{0, 2, 2}}, {{1, 0, 0}}};
  const EdgeKinds kinds = boundaryEdgeKinds(g, p, stages);
  QCOMPARE(kinds.value(edgeKey(0, 1), BoundaryKind::Launch), BoundaryKind::Block);
  QCOMPARE(kinds.value(edgeKey(1, 2), BoundaryKind::Launch), BoundaryKind::Grid);
  QCOMPARE(kinds.value(edgeKey(0, 2), BoundaryKind::Launch), BoundaryKind::Grid);
  QVERIFY(!kinds.contains(edgeKey(2, 3)));  // one stage: nothing orders them
  QVERIFY(!kinds.contains(edgeKey(3, 4)));  // two kernels
  // A stage boundary with no barrier still styles the edge, as "none".
  p.partitions[0].boundaries[0].order.kind = BoundaryKind::None;
  QCOMPARE(boundaryEdgeKinds(g, p, stages).value(edgeKey(0, 1), BoundaryKind::Launch),
           BoundaryKind::None);
  // A box list that does not match the graph styles nothing.
  stages.pop_back();
  QVERIFY(boundaryEdgeKinds(g, p, stages).isEmpty());
}

void TestBoundaries::graphAndCodeShowTheKinds() {
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QVERIFY(openAndPlan(w, "mmoe"));
  GraphPanel* panel = w.graphPanel();
  GraphScene* scene = panel->scene();
  const SceneGraph* g = scene->graph();
  QVERIFY(g);

  // Edges inside the kernel carry a kind, each between two boxes of one kernel, and the
  // legend counts them.
  const BoundaryCounts counts = scene->boundaryCounts();
  int styled = 0;
  for (size_t e = 0; e < g->edges.size(); ++e) {
    const int kind = scene->edgeBoundary(static_cast<int>(e));
    if (kind < 0) continue;
    ++styled;
    const std::vector<int>* a = scene->kernelsOf(g->edges[e].from);
    const std::vector<int>* b = scene->kernelsOf(g->edges[e].to);
    QVERIFY(a && b);
    bool shared = false;
    for (int k : *a) shared |= std::find(b->begin(), b->end(), k) != b->end();
    QVERIFY(shared);
  }
  QVERIFY(styled > 0);
  QCOMPARE(counts[0] + counts[1] + counts[2] + counts[3], styled);
  QVERIFY(counts[static_cast<size_t>(BoundaryKind::Grid)] > 0);  // souffle's one MMoE kernel
  QVERIFY(panel->boundaryLegend()->isVisible());
  QCOMPARE(panel->boundaryLegend()->counts(), counts);

  // The code of that kernel: its barrier lines between stages painted, each explained.
  const plan::Partition& part = w.planData()->plan->partitions.front();
  QVERIFY(!part.boundaries.empty());
  int withLine = 0;
  for (const plan::Boundary& b : part.boundaries) withLine += b.order.has_statement();
  int box = -1;
  for (size_t b = 0; b < g->nodes.size() && box < 0; ++b)
    if (!w.planData()->opKernels[b].empty() && w.planData()->opKernels[b].front() == 0)
      box = static_cast<int>(b);
  QVERIFY(box >= 0);
  scene->selectBox(box);
  CodePanel* code = w.codePanel();
  QTRY_VERIFY_WITH_TIMEOUT(code->isReady(), 60000);
  code->setCurrentTab(CodePanel::CudaTab);
  CodeEditor* cuda = code->editor(CodePanel::CudaTab);
  const std::vector<CodeEditor::LineNote>& notes = cuda->lineNotes();
  QCOMPARE(static_cast<int>(notes.size()), withLine);
  for (const CodeEditor::LineNote& n : notes) {
    const QString text = cuda->document()->findBlockByNumber(n.line - 1).text().trimmed();
    QVERIFY2(text.startsWith(QStringLiteral("grid.sync();  // grid: ")) ||
                 text.startsWith(QStringLiteral("__syncthreads();  // block: ")),
             qPrintable(text));
    QVERIFY(n.text.startsWith(QStringLiteral("grid: ")) ||
            n.text.startsWith(QStringLiteral("block: ")));
  }
  // The properties of a node whose stage follows a grid barrier say so, with the reason.
  std::string gridNode, gridStage;
  for (const plan::Boundary& b : part.boundaries) {
    if (b.order.kind != BoundaryKind::Grid || b.from == b.to || b.to < 0) continue;
    const plan::BuiltStage& to = part.built_stages[static_cast<size_t>(b.to)];
    if (to.nodes.empty()) continue;
    const std::string& node = to.nodes.front();
    if (b.from >= 0) {
      const std::vector<std::string>& before = part.built_stages[static_cast<size_t>(b.from)].nodes;
      if (std::find(before.begin(), before.end(), node) != before.end()) continue;
    }
    gridNode = node;
    gridStage = to.name;
    break;
  }
  QVERIFY(!gridNode.empty());
  // The Properties text of the box of ONNX node `node` once selected (empty: no such box).
  auto propertiesOf = [&](const std::string& node) {
    for (size_t b = 0; b < g->nodes.size(); ++b)
      if (g->nodes[b].onnxNode == QString::fromStdString(node)) {
        scene->selectBox(static_cast<int>(b));
        QTextDocument doc;
        doc.setHtml(w.propertiesPanel()->html());
        return doc.toPlainText();
      }
    return QString();
  };
  const QString props = propertiesOf(gridNode);
  QVERIFY2(props.contains(QStringLiteral("What orders its stages")), qPrintable(props));
  QVERIFY2(props.contains(QStringLiteral("grid before stage ") + QString::fromStdString(gridStage)),
           qPrintable(props));
  QVERIFY(props.contains(QStringLiteral("read across blocks")));

  // A node whose stage runs beside others of its wave (MMoE's gates beside its experts) says so.
  std::string besideNode;
  for (const plan::BuiltStage& st : part.built_stages)
    if (st.wave >= 0 && st.block_offset > 0 && !st.nodes.empty() && besideNode.empty())
      besideNode = st.nodes.front();
  QVERIFY(!besideNode.empty());
  const QString waves = propertiesOf(besideNode);
  QVERIFY2(waves.contains(QStringLiteral("Side by side in waves")), qPrintable(waves));
  QVERIFY2(waves.contains(QStringLiteral("from block ")), qPrintable(waves));

  // The header counts the kernel's boundaries by kind.
  bool counted = false;
  for (QLabel* l : code->findChildren<QLabel*>())
    counted |= l->text().contains(QStringLiteral("boundaries: ")) &&
               l->text().contains(QStringLiteral(" grid</span>"));
  QVERIFY(counted);
}

void TestBoundaries::propertiesSayWhereAGemmKeepsItsWeights() {
  // The sample LSTM's gate GEMMs keep each layer's weights in shared memory: the first step on
  // a layer's blocks loads them, the later steps read them there.
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QVERIFY(openAndPlan(w, "lstm"));
  const SceneGraph* g = w.graphPanel()->scene()->graph();
  QVERIFY(g);
  int box = -1;
  for (size_t b = 0; b < g->nodes.size() && box < 0; ++b)
    if (g->nodes[b].onnxNode == QStringLiteral("/lstm/LSTM")) box = static_cast<int>(b);
  QVERIFY(box >= 0);
  w.graphPanel()->scene()->selectBox(box);
  QTextDocument doc;
  doc.setHtml(w.propertiesPanel()->html());
  const QString props = doc.toPlainText();
  QVERIFY2(props.contains(QStringLiteral("Weights kept in shared memory for the whole kernel")),
           qPrintable(props));
  QVERIFY2(props.contains(QStringLiteral("loads its weights into kernel0_weights")),
           qPrintable(props));
  QVERIFY2(props.contains(QStringLiteral("reads its weights from kernel0_weights")),
           qPrintable(props));
}

QTEST_MAIN(TestBoundaries)
#include "test_boundaries.moc"
