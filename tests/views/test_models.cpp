// Item models and view data of the explorer, checked without a window.
#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QtTest>

#include "core/session/load.h"
#include "core/support/error.h"
#include "views/graph_layout.h"
#include "views/model_loader.h"
#include "views/node_table_model.h"
#include "views/partition_table_model.h"
#include "views/plan_runner.h"
#include "views/scene_graph.h"

using namespace souffle;
using namespace souffle::views;

namespace {

QString samplePath(const char* name) {
  return QStringLiteral(SOUFFLE_SOURCE_DIR "/sample_models/%1/model.onnx").arg(QLatin1String(name));
}

}  // namespace

class TestViewsModels : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void nodeTableModel();
  void nodeTableSortedProxy();
  void opGraphMatchesTheModel();
  void teGraphMatchesTheProgram();
  void layoutsPlaceEveryNode();
  void loaderReportsUserErrors();
  void loaderReadsWeightsOnDemand();
  void partitionTableModel();
  void planCoversEveryBoxWithTes();
  void planRunnerReportsErrors();

 private:
  ModelDataPtr m_bert;
};

void TestViewsModels::initTestCase() {
  LoadOutcome out = ModelLoader::run(samplePath("bert"));
  QVERIFY2(out.ok(), qPrintable(out.error.message()));
  m_bert = out.data;
}

void TestViewsModels::nodeTableModel() {
  NodeTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(model.rowCount(), 0);
  model.setModelData(m_bert);
  const graph::Graph& g = m_bert->model->graph;
  QCOMPARE(model.rowCount(), static_cast<int>(g.nodes.size()));
  QCOMPARE(model.columnCount(), int(NodeTableModel::ColumnCount));
  int tes = 0;
  for (int r = 0; r < model.rowCount(); ++r) {
    QCOMPARE(model.index(r, NodeTableModel::NameColumn).data().toString(),
             QString::fromStdString(g.nodes[r].name));
    QCOMPARE(model.index(r, NodeTableModel::OpColumn).data().toString(),
             QString::fromStdString(g.nodes[r].op_type));
    QVERIFY(!model.index(r, NodeTableModel::OutputsColumn).data().toString().isEmpty());
    const int box = model.index(r, 0).data(NodeTableModel::BoxRole).toInt();
    QCOMPARE(model.rowOfBox(box), r);
    tes += model.index(r, NodeTableModel::TeColumn).data(NodeTableModel::SortRole).toInt();
  }
  // Every compute op comes from exactly one node of the folded graph.
  QCOMPARE(tes, static_cast<int>(m_bert->model->program.ops.size()));
  // A MatMul of bert [1,64,128] x [128,128] has one reduce TE and a 1×64×128 output.
  bool sawMatmul = false;
  for (int r = 0; r < model.rowCount(); ++r)
    if (model.index(r, NodeTableModel::OpColumn).data().toString() == QLatin1String("MatMul")) {
      sawMatmul = true;
      QVERIFY(model.index(r, NodeTableModel::TeColumn).data().toInt() >= 1);
    }
  QVERIFY(sawMatmul);
  model.setModelData(nullptr);
  QCOMPARE(model.rowCount(), 0);
  model.setModelData(m_bert);
  QCOMPARE(model.rowCount(), static_cast<int>(g.nodes.size()));
}

void TestViewsModels::nodeTableSortedProxy() {
  NodeTableModel model;
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(NodeTableModel::SortRole);
  QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setModelData(m_bert);
  proxy.sort(NodeTableModel::TeColumn, Qt::DescendingOrder);
  int last = INT_MAX;
  for (int r = 0; r < proxy.rowCount(); ++r) {
    const int tes = proxy.index(r, NodeTableModel::TeColumn).data(NodeTableModel::SortRole).toInt();
    QVERIFY(tes <= last);  // numeric, not lexicographic, order
    last = tes;
  }
  proxy.setFilterFixedString(QStringLiteral("MatMul"));
  proxy.setFilterKeyColumn(NodeTableModel::OpColumn);
  QVERIFY(proxy.rowCount() > 0);
  QVERIFY(proxy.rowCount() < model.rowCount());
}

void TestViewsModels::opGraphMatchesTheModel() {
  const graph::Graph& g = m_bert->model->graph;
  const SceneGraph& sg = m_bert->opGraph;
  QVERIFY(!sg.teLevel);
  QCOMPARE(sg.count(SceneNode::Kind::Op), static_cast<int>(g.nodes.size()));
  QCOMPARE(sg.count(SceneNode::Kind::Input), static_cast<int>(g.inputs.size()));
  QCOMPARE(sg.count(SceneNode::Kind::Output), static_cast<int>(g.outputs.size()));
  QVERIFY(sg.edges.size() >= g.nodes.size());  // a connected model has at least this many
  for (const SceneEdge& e : sg.edges) {
    QVERIFY(e.from >= 0 && e.from < static_cast<int>(sg.nodes.size()));
    QVERIFY(e.to >= 0 && e.to < static_cast<int>(sg.nodes.size()));
    QVERIFY(e.from != e.to);
    QVERIFY(!e.label.isEmpty());
  }
  // The model input [1,64,128] feeds the first layer: its edges carry that shape.
  int fromInput = 0;
  for (const SceneEdge& e : sg.edges)
    if (sg.nodes[e.from].kind == SceneNode::Kind::Input) {
      ++fromInput;
      QCOMPARE(e.label, QStringLiteral("1×64×128"));
    }
  QVERIFY(fromInput > 0);
  QCOMPARE(compactType(DType::Int64, {2, 3}), QStringLiteral("i64 · 2×3"));
  QCOMPARE(compactType(DType::Float32, {}), QStringLiteral("scalar"));
}

void TestViewsModels::teGraphMatchesTheProgram() {
  const te::TeProgram& p = m_bert->model->program;
  const SceneGraph& sg = m_bert->teGraph;
  QVERIFY(sg.teLevel);
  QCOMPARE(sg.count(SceneNode::Kind::TeOp), static_cast<int>(p.ops.size()));
  QCOMPARE(sg.count(SceneNode::Kind::Input), static_cast<int>(p.inputs.size()));
  // Edges follow the program's order (reads come from earlier ops or inputs).
  for (const SceneEdge& e : sg.edges) QVERIFY(e.from < e.to);
  QVERIFY(m_bert->teText.contains(QStringLiteral("sum(")));
}

void TestViewsModels::layoutsPlaceEveryNode() {
  LayoutInput in;
  in.sizes = {QSizeF(100, 40), QSizeF(120, 40), QSizeF(80, 40), QSizeF(90, 40)};
  in.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  const uint64_t h = in.hash();
  LayoutInput other = in;
  other.edges.pop_back();
  QVERIFY(other.hash() != h);
  QCOMPARE(LayoutInput(in).hash(), h);

  for (const LayoutResult& r : {layoutWithDot(in), layoutLayered(in)}) {
    QCOMPARE(r.centers.size(), in.sizes.size());
    QCOMPARE(r.edgePaths.size(), in.edges.size());
    // Top to bottom: every edge goes downward, and boxes of a rank do not overlap.
    for (auto [a, b] : in.edges)
      QVERIFY2(r.centers[a].y() < r.centers[b].y(), qPrintable(r.engine));
    QRectF b1(r.centers[1] - QPointF(60, 20), in.sizes[1]);
    QRectF b2(r.centers[2] - QPointF(40, 20), in.sizes[2]);
    QVERIFY2(!b1.intersects(b2), qPrintable(r.engine));
    for (const QPainterPath& p : r.edgePaths) QVERIFY(!p.isEmpty());
    QVERIFY(r.bounds.contains(r.centers[3]));
  }
  QCOMPARE(layoutWithDot(in).engine, QStringLiteral("dot"));
  QVERIFY(!layoutWithDot(LayoutInput{}).valid());
}

void TestViewsModels::loaderReportsUserErrors() {
  LoadOutcome missing = ModelLoader::run(QStringLiteral("/nonexistent/model.onnx"));
  QVERIFY(!missing.ok());
  QCOMPARE(missing.error.file, QStringLiteral("/nonexistent/model.onnx"));
  QVERIFY(!missing.error.internal);

  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("broken.onnx"));
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("this is not a protobuf \x01\x02\x03\xff\xff\xff\xff");
  f.close();
  LoadOutcome broken = ModelLoader::run(path);
  QVERIFY(!broken.ok());
  QVERIFY(!broken.error.internal);
  QVERIFY(!broken.error.reason.isEmpty());
  QVERIFY(broken.error.message().contains(QStringLiteral("broken.onnx")));
}

// The explorer's load leaves the weights unparsed until read, in a copy of the file it owns: the
// file cut short afterwards (a mapping would fault at the first read) changes nothing.
void TestViewsModels::loaderReadsWeightsOnDemand() {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("model.onnx"));
  QVERIFY(QFile::copy(samplePath("bert"), path));
  LoadOutcome out = ModelLoader::run(path);
  QVERIFY2(out.ok(), qPrintable(out.error.message()));
  const graph::Graph& mine = out.data->model->graph;
  const LoadedModel copied = load_model(samplePath("bert").toStdString());  // weights copied
  const graph::Graph& eager = copied.graph;
  std::vector<std::string> deferred;
  for (const auto& [name, v] : mine.values)
    if (v.constant && !v.constant->loaded()) deferred.push_back(name);
  QVERIFY(deferred.size() >= 2);
  // The first half read while the file is as it was: the copying load's bytes.
  const size_t half = deferred.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    QVERIFY(eager.values.count(deferred[i]));
    QVERIFY(*mine.value(deferred[i]).constant == *eager.value(deferred[i]).constant);
  }
  // Cut short under the explorer: a later read is an error naming the file, not a fault, and
  // what was read stays.
  QVERIFY(QFile::resize(path, 0));
  for (size_t i = half; i < deferred.size(); ++i) {
    const ConstTensorPtr& t = mine.value(deferred[i]).constant;
    try {
      (void)t->raw();
      QFAIL("a weight read from a file cut short");
    } catch (const UserError& e) {
      QCOMPARE(QString::fromStdString(e.file()), path);
      QVERIFY2(e.reason().find("changed on disk") != std::string::npos, e.what());
    }
    QVERIFY(!t->loaded());
  }
  for (size_t i = 0; i < half; ++i)
    QVERIFY(*mine.value(deferred[i]).constant == *eager.value(deferred[i]).constant);
}

void TestViewsModels::partitionTableModel() {
  PlanOutcome out = PlanRunner::run(m_bert, plan::Strategy::Rules, QStringLiteral("a100"));
  QVERIFY2(out.ok(), qPrintable(out.error));
  const plan::FusionPlan& p = *out.data->plan;
  QVERIFY(p.kernels() > 1);
  PartitionTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(model.rowCount(), 0);
  model.setPlan(out.data);
  QCOMPARE(model.rowCount(), static_cast<int>(p.kernels()));
  QCOMPARE(model.columnCount(), int(PartitionTableModel::ColumnCount));
  double total = 0;
  int tes = 0;
  for (int r = 0; r < model.rowCount(); ++r) {
    const plan::Partition& k = p.partitions[r];
    QCOMPARE(model.index(r, PartitionTableModel::KernelColumn).data().toString(),
             QStringLiteral("K%1").arg(k.id));
    QCOMPARE(model.index(r, PartitionTableModel::TeColumn).data().toInt(),
             static_cast<int>(k.tes.size()));
    // The built kernel's stages (the plan is priced), not the planner's grouping.
    QVERIFY(k.priced);
    QCOMPARE(model.index(r, PartitionTableModel::StageColumn).data().toInt(),
             static_cast<int>(k.built_stages.size()));
    QCOMPARE(model.index(r, PartitionTableModel::FlopColumn)
                 .data(PartitionTableModel::SortRole)
                 .toLongLong(),
             static_cast<qlonglong>(k.flops));
    total += model.index(r, PartitionTableModel::TimeColumn)
                 .data(PartitionTableModel::SortRole)
                 .toDouble();
    tes += model.index(r, PartitionTableModel::TeColumn).data().toInt();
  }
  QCOMPARE(tes, static_cast<int>(p.program.ops.size()));
  QVERIFY(std::abs(total - p.est_time_us) < 1e-6 * std::max(1.0, p.est_time_us) + 1e-3);
  // Sorted by time through a proxy, the slowest kernel comes first.
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(PartitionTableModel::SortRole);
  proxy.sort(PartitionTableModel::TimeColumn, Qt::DescendingOrder);
  double best = 0;
  for (const plan::Partition& k : p.partitions) best = std::max(best, k.est_time_us);
  QCOMPARE(proxy.index(0, PartitionTableModel::TimeColumn)
               .data(PartitionTableModel::SortRole)
               .toDouble(),
           best);
  model.setPlan(nullptr);
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(compactBytes(1536), QStringLiteral("1.5 KiB"));
  QCOMPARE(compactCount(68.5e6), QStringLiteral("68.5 M"));
}

void TestViewsModels::planCoversEveryBoxWithTes() {
  std::vector<size_t> kernels;
  for (plan::Strategy st : plan::all_strategies()) {
    PlanOutcome out = PlanRunner::run(m_bert, st, QStringLiteral("a100"));
    QVERIFY2(out.ok(), qPrintable(out.error));
    const PlanData& d = *out.data;
    QCOMPARE(d.strategy, QString::fromLatin1(plan::strategy_name(st)));
    // Every op box with TEs sits in a kernel (also after souffle's transformations replaced
    // its TEs); inputs and outputs sit in none.
    const SceneGraph& og = m_bert->opGraph;
    QCOMPARE(d.opKernels.size(), og.nodes.size());
    for (size_t b = 0; b < og.nodes.size(); ++b) {
      const SceneNode& n = og.nodes[b];
      if (n.kind == SceneNode::Kind::Op && n.teCount > 0)
        QVERIFY2(!d.opKernels[b].empty(), qPrintable(n.subtitle));
      if (n.kind != SceneNode::Kind::Op) QVERIFY(d.opKernels[b].empty());
    }
    const SceneGraph& tg = m_bert->teGraph;
    for (size_t b = 0; b < tg.nodes.size(); ++b)
      if (tg.nodes[b].kind == SceneNode::Kind::TeOp)
        QVERIFY2(d.teKernels[b].size() == 1, qPrintable(tg.nodes[b].subtitle));
    // Every kernel has boxes at both levels.
    for (size_t k = 0; k < d.plan->partitions.size(); ++k) {
      QVERIFY(!d.boxesOf(false, int(k)).empty());
      QVERIFY(!d.boxesOf(true, int(k)).empty());
    }
    kernels.push_back(d.plan->kernels());
  }
  // Unfused, rules, souffle: each fuses more.
  QCOMPARE(kernels.size(), size_t(3));
  QVERIFY(kernels[0] > kernels[1] && kernels[1] > kernels[2]);
  // The palette is stable and tells neighbours apart.
  QCOMPARE(kernelColor(3u, false), kernelColor(3u, false));
  QVERIFY(kernelColor(3u, false) != kernelColor(4u, false));
  QVERIFY(kernelColor(3u, true).lightnessF() < kernelColor(3u, false).lightnessF());
}

void TestViewsModels::planRunnerReportsErrors() {
  PlanOutcome out = PlanRunner::run(m_bert, plan::Strategy::Souffle, QStringLiteral("no-such-gpu"));
  QVERIFY(!out.ok());
  QVERIFY(!out.error.isEmpty());
}

QTEST_GUILESS_MAIN(TestViewsModels)
#include "test_models.moc"
