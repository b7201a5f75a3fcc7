// The layout of big graphs: the ranked layout on a generated model of a few thousand nodes (every
// box placed, no two boxes of a rank overlapping, edges from the tail box's bottom to the head
// box's top through no other box, ranks following the edges, reproducible, quick), on degenerate
// input, and the graph panel switching to it above kRankedLayoutAbove boxes while smaller graphs
// keep dot.
#include <QElapsedTimer>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/session/load.h"
#include "tests/bench/big_model.h"
#include "views/graph_layout.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/scene_graph.h"

using namespace souffle;
using namespace souffle::views;

namespace {

constexpr int kNodes = 4000;  // above kRankedLayoutAbove boxes, a second or so to load

/// The op-level graph of the generated model (loaded once per binary).
const SceneGraph& bigGraph() {
  static const SceneGraph graph = [] {
    std::string bytes;
    bench::make_big_model(kNodes).SerializeToString(&bytes);
    const LoadedModel model = load_model_bytes(bytes, "big.onnx");
    return buildOpGraph(model.graph, model.program);
  }();
  return graph;
}

LayoutInput inputOf(const SceneGraph& g) {
  LayoutInput in{GraphScene::measure(g), {}};
  for (const SceneEdge& e : g.edges) in.edges.push_back({e.from, e.to});
  return in;
}

QRectF boxOf(const LayoutInput& in, const LayoutResult& r, size_t i) {
  const QSizeF s = in.sizes[i];
  return QRectF(r.centers[i] - QPointF(s.width() / 2, s.height() / 2), s);
}

/// Checks a layout of `in`: every box placed at a finite point inside the bounds, boxes of one
/// rank (one centre line) apart, and every drawn edge from its tail's bottom to its head's top.
/// Returns an empty string or what is wrong.
QString checkLayout(const LayoutInput& in, const LayoutResult& r) {
  const size_t n = in.sizes.size();
  if (r.centers.size() != n)
    return QStringLiteral("%1 centres for %2 boxes").arg(r.centers.size()).arg(n);
  if (r.edgePaths.size() != in.edges.size()) return QStringLiteral("edge paths missing");
  std::map<double, std::vector<size_t>> ranks;
  for (size_t i = 0; i < n; ++i) {
    const QPointF c = r.centers[i];
    if (!std::isfinite(c.x()) || !std::isfinite(c.y()))
      return QStringLiteral("box %1 has no position").arg(i);
    if (!r.bounds.adjusted(-0.5, -0.5, 0.5, 0.5).contains(boxOf(in, r, i)))
      return QStringLiteral("box %1 outside the bounds").arg(i);
    ranks[c.y()].push_back(i);
  }
  for (auto& [y, boxes] : ranks) {
    std::sort(boxes.begin(), boxes.end(),
              [&](size_t a, size_t b) { return r.centers[a].x() < r.centers[b].x(); });
    for (size_t k = 1; k < boxes.size(); ++k) {
      const QRectF left = boxOf(in, r, boxes[k - 1]), right = boxOf(in, r, boxes[k]);
      if (left.right() > right.left())
        return QStringLiteral("boxes %1 and %2 overlap in the rank at y %3")
            .arg(boxes[k - 1])
            .arg(boxes[k])
            .arg(y);
    }
  }
  for (size_t e = 0; e < in.edges.size(); ++e) {
    auto [a, b] = in.edges[e];
    if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n || a == b)
      continue;
    const QPainterPath& p = r.edgePaths[e];
    if (p.elementCount() < 2) return QStringLiteral("edge %1 is not drawn").arg(e);
    const QRectF tail = boxOf(in, r, static_cast<size_t>(a));
    const QRectF head = boxOf(in, r, static_cast<size_t>(b));
    const QPointF from = p.elementAt(0), to = p.currentPosition();
    if (QLineF(from, QPointF(tail.center().x(), tail.bottom())).length() > 0.5)
      return QStringLiteral("edge %1 does not leave its tail box %2").arg(e).arg(a);
    if (QLineF(to, QPointF(head.center().x(), head.top())).length() > 0.5)
      return QStringLiteral("edge %1 does not end on its head box %2").arg(e).arg(b);
  }
  return {};
}

}  // namespace

class TestBigGraph : public QObject {
  Q_OBJECT
 private slots:
  void rankedLayoutOfAGeneratedModel();
  void edgesRouteAroundBoxes();
  void rankedLayoutTakesAnyInput();
  void panelUsesTheRankedLayoutAboveTheThreshold();
};

void TestBigGraph::rankedLayoutOfAGeneratedModel() {
  const SceneGraph& g = bigGraph();
  QVERIFY(g.nodes.size() > kRankedLayoutAbove);
  const LayoutInput in = inputOf(g);
  QElapsedTimer t;
  t.start();
  const LayoutResult r = layoutRanked(in);
  // It finishes, and fast: dot takes ~10 s on this graph on a 2-core machine, this ~10 ms.
  QVERIFY2(t.elapsed() < 5000, qPrintable(QStringLiteral("%1 ms").arg(t.elapsed())));
  QCOMPARE(r.engine, QStringLiteral("ranked"));
  const QString problem = checkLayout(in, r);
  QVERIFY2(problem.isEmpty(), qPrintable(problem));
  // Ranks follow the edges: every head lies below its tail.
  for (auto [a, b] : in.edges) QVERIFY(r.centers[b].y() > r.centers[a].y());
  // The chain of blocks stays a narrow column (a few boxes wide), not a spread-out band.
  QVERIFY2(r.bounds.width() < 1500, qPrintable(QString::number(r.bounds.width())));
  // Reproducible: the same input gives the same picture.
  const LayoutResult again = layoutRanked(in);
  QCOMPARE(again.centers, r.centers);
  QCOMPARE(again.bounds, r.bounds);
}

void TestBigGraph::edgesRouteAroundBoxes() {
  // Points along every edge (every 8 units of a straight run, nine per curve) lie outside every
  // box but the edge's own two: long edges (the residual and every eighth block's skip) run in
  // lanes beside the boxes they bypass.
  const SceneGraph& g = bigGraph();
  const LayoutInput in = inputOf(g);
  const LayoutResult r = layoutRanked(in);
  std::map<double, std::vector<size_t>> ranks;  // boxes by centre line
  for (size_t i = 0; i < in.sizes.size(); ++i) ranks[r.centers[i].y()].push_back(i);
  int longEdges = 0;
  for (size_t e = 0; e < in.edges.size(); ++e) {
    auto [a, b] = in.edges[e];
    const QPainterPath& p = r.edgePaths[e];
    longEdges += r.centers[b].y() - r.centers[a].y() > 200 ? 1 : 0;
    std::vector<QPointF> samples;
    QPointF at = p.elementAt(0);
    for (int k = 1; k < p.elementCount(); ++k) {
      const QPainterPath::Element el = p.elementAt(k);
      if (el.isLineTo()) {
        const QPointF to = el;
        const int steps = std::max(1, static_cast<int>(QLineF(at, to).length() / 8));
        for (int s = 1; s <= steps; ++s) samples.push_back(at + (to - at) * (double(s) / steps));
        at = to;
      } else if (el.isCurveTo() && k + 2 < p.elementCount()) {
        const QPointF c1 = el, c2 = p.elementAt(k + 1), to = p.elementAt(k + 2);
        for (int s = 1; s <= 9; ++s) {
          const double t = s / 10.0, u = 1 - t;
          samples.push_back(u * u * u * at + 3 * u * u * t * c1 + 3 * u * t * t * c2 +
                            t * t * t * to);
        }
        at = to;
        k += 2;
      }
    }
    for (const QPointF& pt : samples)
      for (auto it = ranks.lower_bound(pt.y() - 30); it != ranks.end() && it->first < pt.y() + 30;
           ++it)
        for (size_t i : it->second) {
          if (static_cast<int>(i) == a || static_cast<int>(i) == b) continue;
          QVERIFY2(
              !boxOf(in, r, i).adjusted(1, 1, -1, -1).contains(pt),
              qPrintable(
                  QStringLiteral("edge %1 (%2 -> %3) crosses box %4").arg(e).arg(a).arg(b).arg(i)));
        }
  }
  QVERIFY(longEdges > kNodes / 100);  // the check saw long edges, not only neighbours
}

void TestBigGraph::rankedLayoutTakesAnyInput() {
  // A cycle, a self loop, an edge out of range, a duplicate edge, a box without edges, and boxes
  // of different sizes in one rank: every box placed, none overlapping, no crash.
  LayoutInput in;
  in.sizes = {{84, 40}, {200, 40}, {120, 32}, {84, 48}, {230, 40}, {90, 40}};
  in.edges = {{0, 1}, {1, 2}, {2, 1}, {3, 3}, {0, 7}, {-1, 2}, {0, 2}, {0, 2}, {0, 4}, {4, 2}};
  const LayoutResult r = layoutRanked(in);
  const QString problem = checkLayout(in, r);
  QVERIFY2(problem.isEmpty(), qPrintable(problem));
  for (size_t i = 0; i < in.sizes.size(); ++i)
    for (size_t j = i + 1; j < in.sizes.size(); ++j)
      QVERIFY(!boxOf(in, r, i).intersects(boxOf(in, r, j)));
  QVERIFY(!layoutRanked(LayoutInput{}).valid());
}

void TestBigGraph::panelUsesTheRankedLayoutAboveTheThreshold() {
  GraphPanel panel;
  panel.resize(1200, 800);
  panel.show();
  auto graph = std::make_shared<const SceneGraph>(bigGraph());
  panel.showGraph(graph);
  QTRY_VERIFY_WITH_TIMEOUT(panel.isFinal(), 60000);
  QVERIFY2(panel.layoutInfo().startsWith(QStringLiteral("ranked")), qPrintable(panel.layoutInfo()));
  // The scene shows the layout: one box item per box, where the layout put it.
  const LayoutInput in = inputOf(*graph);
  const LayoutResult r = layoutRanked(in);
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    NodeItem* item = panel.scene()->nodeItem(static_cast<int>(i));
    QVERIFY(item);
    QCOMPARE(item->pos(), r.centers[i]);
  }
  // A graph at or below the threshold keeps dot (the pictures of ordinary models do not change).
  auto small = std::make_shared<SceneGraph>();
  small->nodes.resize(3);
  small->nodes[0].title = QStringLiteral("a");
  small->nodes[1].title = QStringLiteral("b");
  small->nodes[2].title = QStringLiteral("c");
  small->edges = {{0, 1, {}}, {1, 2, {}}};
  panel.showGraph(small);
  QTRY_VERIFY_WITH_TIMEOUT(panel.isFinal(), 60000);
  QVERIFY2(panel.layoutInfo().startsWith(QStringLiteral("dot")), qPrintable(panel.layoutInfo()));
}

QTEST_MAIN(TestBigGraph)
#include "test_big_graph.moc"
