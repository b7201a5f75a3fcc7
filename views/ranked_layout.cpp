// The ranked layout for graphs too big for dot: a layered (Sugiyama) layout in linear-ish time.
//   1. ranks by longest path (sources pulled down next to their first consumer),
//   2. long edges split into lanes (one virtual box per rank crossed) so they route around boxes,
//   3. order within ranks by barycentre sweeps, keeping the order with the fewest crossings,
//   4. x by alternating passes that move each box towards the mean of its neighbours, the overlaps
//      resolved per rank as a least-squares problem (pool adjacent violators: O(boxes) per pass),
//   5. edges as vertical runs through the ranks they cross, joined by S-curves between ranks.
#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "views/graph_layout.h"

namespace souffle::views {

namespace {

constexpr double kGapReal = 24;   // between two boxes in a rank
constexpr double kGapLane = 10;   // between a lane and anything else
constexpr double kLaneWidth = 4;  // a lane is drawn as one line; it only needs room
constexpr double kRankGap = 34;   // between ranks (dot's ranksep is 0.45 in = 32 pt)
/// An edge spanning more ranks than this is drawn directly, not given lanes: lanes cost memory and
/// ordering time per rank crossed, and an edge that long crosses the picture anyway.
constexpr int kMaxLaneSpan = 400;
/// At most this many lanes per box (and at least kMinLaneBudget in all): a graph whose edges
/// span many ranks would otherwise make millions of them.
constexpr size_t kLanesPerBox = 16;
constexpr size_t kMinLaneBudget = 100000;
/// Ordering iterations (a down and an up sweep each); stops early when crossings stop falling.
constexpr int kMaxSweeps = 6;
constexpr int kCoordinatePasses = 4;
/// How much more a box's wish counts than a lane's when they are in each other's way.
constexpr double kBoxWeight = 1000;

QPainterPath directEdge(QPointF from, QPointF to) {
  QPainterPath p(from);
  const double dy = std::max(20.0, (to.y() - from.y()) / 2);
  p.cubicTo(from + QPointF(0, dy), to - QPointF(0, dy), to);
  return p;
}

/// Boxes and lanes in ranks, with the links between adjacent ranks.
struct Ranked {
  int real = 0;                        // vertices [0, real) are boxes, the rest lanes
  std::vector<int> rank;               // per vertex
  std::vector<double> width;           // per vertex
  std::vector<std::vector<int>> up;    // neighbours one rank above
  std::vector<std::vector<int>> down;  // neighbours one rank below
  std::vector<std::vector<int>> layers;
  std::vector<int> pos;  // index of a vertex in its layer

  bool lane(int v) const { return v >= real; }
  int add(int r, double w) {
    rank.push_back(r);
    width.push_back(w);
    up.emplace_back();
    down.emplace_back();
    return static_cast<int>(rank.size()) - 1;
  }
  void link(int a, int b) {
    down[a].push_back(b);
    up[b].push_back(a);
  }
  double gap(int a, int b) const { return lane(a) || lane(b) ? kGapLane : kGapReal; }
};

/// Crossings between layer r and r + 1 (inversions of the lower ends, by a Fenwick tree).
long long crossingsBelow(const Ranked& g, size_t r) {
  const std::vector<int>& top = g.layers[r];
  const size_t m = g.layers[r + 1].size();
  std::vector<int> ends;
  for (int v : top) {
    const size_t start = ends.size();
    for (int w : g.down[v]) ends.push_back(g.pos[w]);
    std::sort(ends.begin() + static_cast<long>(start), ends.end());
  }
  std::vector<int> tree(m + 1, 0);
  long long crossings = 0;
  long long seen = 0;
  for (int e : ends) {
    // Ends already seen that lie strictly to the right of e cross this edge.
    long long notRight = 0;
    for (int i = e + 1; i > 0; i -= i & -i) notRight += tree[i];
    crossings += seen - notRight;
    for (int i = e + 1; i <= static_cast<int>(m); i += i & -i) ++tree[i];
    ++seen;
  }
  return crossings;
}

long long totalCrossings(const Ranked& g) {
  long long c = 0;
  for (size_t r = 0; r + 1 < g.layers.size(); ++r) c += crossingsBelow(g, r);
  return c;
}

/// Reorders layer r by the mean position of each vertex's neighbours in `nbrs`; a vertex without
/// neighbours there keeps its place.
void sortLayer(Ranked& g, size_t r, const std::vector<std::vector<int>>& nbrs) {
  std::vector<int>& layer = g.layers[r];
  std::vector<std::pair<double, int>> keyed;
  keyed.reserve(layer.size());
  for (int v : layer) {
    const std::vector<int>& ns = nbrs[v];
    double key = g.pos[v];
    if (!ns.empty()) {
      double sum = 0;
      for (int w : ns) sum += g.pos[w];
      key = sum / static_cast<double>(ns.size());
    }
    keyed.push_back({key, v});
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) {
    layer[i] = keyed[i].second;
    g.pos[layer[i]] = static_cast<int>(i);
  }
}

void orderLayers(Ranked& g) {
  auto setPositions = [&] {
    for (const std::vector<int>& layer : g.layers)
      for (size_t i = 0; i < layer.size(); ++i) g.pos[layer[i]] = static_cast<int>(i);
  };
  setPositions();
  // Initial order: one sweep down from the order the vertices were made in.
  for (size_t r = 1; r < g.layers.size(); ++r) sortLayer(g, r, g.up);
  long long best = totalCrossings(g);
  std::vector<std::vector<int>> bestLayers = g.layers;
  for (int it = 0; it < kMaxSweeps && best > 0; ++it) {
    for (size_t r = g.layers.size() - 1; r-- > 0;) sortLayer(g, r, g.down);
    for (size_t r = 1; r < g.layers.size(); ++r) sortLayer(g, r, g.up);
    const long long c = totalCrossings(g);
    if (c < best) {
      best = c;
      bestLayers = g.layers;
    } else {
      break;  // sweeps from here on mostly oscillate
    }
  }
  g.layers = std::move(bestLayers);
  setPositions();
}

/// Places one layer: x as close as possible (least squares, weighted) to `want`, in layer order,
/// boxes at least their gap apart. Pool adjacent violators on x minus the minimal offsets.
void placeLayer(const Ranked& g, const std::vector<int>& layer, const std::vector<double>& want,
                std::vector<double>& x) {
  const size_t k = layer.size();
  if (k == 0) return;
  std::vector<double> offset(k, 0.0);
  for (size_t i = 1; i < k; ++i)
    offset[i] = offset[i - 1] + (g.width[layer[i - 1]] + g.width[layer[i]]) / 2 +
                g.gap(layer[i - 1], layer[i]);
  struct Block {
    double sum, weight;
    size_t count;
  };
  std::vector<Block> blocks;
  blocks.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    // A lane gives way to a box: were they equal, a lane beside a chain of boxes would push the
    // chain aside by half their distance on every rank, and the column would drift sideways.
    const double w = g.lane(layer[i]) ? 1.0 : kBoxWeight;
    blocks.push_back({w * (want[i] - offset[i]), w, 1});
    while (blocks.size() > 1) {
      const Block& b = blocks.back();
      const Block& a = blocks[blocks.size() - 2];
      if (a.sum / a.weight <= b.sum / b.weight) break;
      Block merged{a.sum + b.sum, a.weight + b.weight, a.count + b.count};
      blocks.pop_back();
      blocks.back() = merged;
    }
  }
  size_t i = 0;
  for (const Block& b : blocks) {
    const double level = b.sum / b.weight;
    for (size_t j = 0; j < b.count; ++j, ++i) x[layer[i]] = level + offset[i];
  }
}

void assignX(const Ranked& g, std::vector<double>& x) {
  // Start packed, each layer centred on 0.
  for (const std::vector<int>& layer : g.layers) {
    double total = 0;
    for (size_t i = 0; i < layer.size(); ++i)
      total += g.width[layer[i]] + (i ? g.gap(layer[i - 1], layer[i]) : 0);
    double at = -total / 2;
    for (size_t i = 0; i < layer.size(); ++i) {
      if (i) at += g.gap(layer[i - 1], layer[i]);
      x[layer[i]] = at + g.width[layer[i]] / 2;
      at += g.width[layer[i]];
    }
  }
  std::vector<double> want;
  auto pass = [&](size_t r, bool useUp, bool useDown) {
    const std::vector<int>& layer = g.layers[r];
    want.assign(layer.size(), 0);
    for (size_t i = 0; i < layer.size(); ++i) {
      // A box lines up with the boxes next to it, and with lanes only when it has no such box: a
      // lane runs beside the chain it bypasses, and counting it would pull the chain sideways on
      // every rank it passes.
      const int v = layer[i];
      double sum = 0, laneSum = 0;
      size_t count = 0, lanes = 0;
      auto add = [&](int w) {
        if (g.lane(w) && !g.lane(v))
          laneSum += x[w], ++lanes;
        else
          sum += x[w], ++count;
      };
      if (useUp)
        for (int w : g.up[v]) add(w);
      if (useDown)
        for (int w : g.down[v]) add(w);
      want[i] = count   ? sum / static_cast<double>(count)
                : lanes ? laneSum / static_cast<double>(lanes)
                        : x[v];
    }
    placeLayer(g, layer, want, x);
  };
  const size_t layers = g.layers.size();
  for (int p = 0; p < kCoordinatePasses; ++p) {
    for (size_t r = 1; r < layers; ++r) pass(r, true, false);
    for (size_t r = layers - 1; r-- > 0;) pass(r, false, true);
  }
  // A last pass that balances a box between what feeds it and what it feeds.
  for (size_t r = 0; r < layers; ++r) pass(r, true, true);
}

}  // namespace

LayoutResult layoutRanked(const LayoutInput& in) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult out;
  out.engine = QStringLiteral("ranked");
  const size_t n = in.sizes.size();
  if (n == 0) return out;
  const int ni = static_cast<int>(n);

  // Edges that can be drawn (ends in range, not a loop), and a topological order (Kahn's; boxes
  // on a cycle, not expected, are appended so every box is placed).
  std::vector<char> usable(in.edges.size(), 0);
  std::vector<std::vector<int>> preds(n), succs(n);
  for (size_t e = 0; e < in.edges.size(); ++e) {
    auto [a, b] = in.edges[e];
    if (a < 0 || b < 0 || a >= ni || b >= ni || a == b) continue;
    usable[e] = 1;
    preds[b].push_back(a);
    succs[a].push_back(b);
  }
  std::vector<int> indeg(n), order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) indeg[i] = static_cast<int>(preds[i].size());
  for (int i = 0; i < ni; ++i)
    if (indeg[i] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k)
    for (int s : succs[order[k]])
      if (--indeg[s] == 0) order.push_back(s);
  {
    std::vector<char> placed(n, 0);
    for (int v : order) placed[v] = 1;
    for (int i = 0; i < ni; ++i)
      if (!placed[i]) order.push_back(i);
  }
  std::vector<int> topo(n);
  for (size_t k = 0; k < n; ++k) topo[order[k]] = static_cast<int>(k);
  auto forward = [&](int a, int b) { return topo[a] < topo[b]; };

  // 1. Ranks.
  Ranked g;
  g.real = ni;
  g.rank.assign(n, 0);
  for (int v : order)
    for (int p : preds[v])
      if (forward(p, v)) g.rank[v] = std::max(g.rank[v], g.rank[p] + 1);
  for (size_t k = n; k-- > 0;) {
    const int v = order[k];
    bool source = true;
    for (int p : preds[v]) source = source && !forward(p, v);
    if (!source) continue;
    int below = -1;
    for (int s : succs[v])
      if (forward(v, s)) below = below < 0 ? g.rank[s] : std::min(below, g.rank[s]);
    if (below > 0) g.rank[v] = std::max(g.rank[v], below - 1);
  }
  g.width.resize(n);
  for (size_t i = 0; i < n; ++i) g.width[i] = in.sizes[i].width();
  g.up.resize(n);
  g.down.resize(n);

  // 2. Lanes: each edge's chain of vertices, from its tail to its head (empty: drawn directly).
  // The shortest edges get lanes first, as long as the lanes stay within the budget.
  auto spanOf = [&](size_t e) {
    auto [a, b] = in.edges[e];
    return usable[e] && forward(a, b) ? g.rank[b] - g.rank[a] : 0;
  };
  std::vector<char> laned(in.edges.size(), 0);
  {
    std::vector<std::pair<int, size_t>> bySpan;
    for (size_t e = 0; e < in.edges.size(); ++e)
      if (spanOf(e) >= 1 && spanOf(e) <= kMaxLaneSpan) bySpan.push_back({spanOf(e), e});
    std::sort(bySpan.begin(), bySpan.end());
    const size_t budget = std::max<size_t>(kMinLaneBudget, kLanesPerBox * n);
    size_t lanes = 0;
    for (auto [span, e] : bySpan) {
      lanes += static_cast<size_t>(span - 1);
      if (lanes > budget) break;
      laned[e] = 1;
    }
  }
  std::vector<int> chainStart(in.edges.size() + 1, 0);
  std::vector<int> chains;
  for (size_t e = 0; e < in.edges.size(); ++e) {
    chainStart[e] = static_cast<int>(chains.size());
    if (!laned[e]) continue;
    auto [a, b] = in.edges[e];
    chains.push_back(a);
    int prev = a;
    for (int r = g.rank[a] + 1; r < g.rank[b]; ++r) {
      const int lane = g.add(r, kLaneWidth);
      g.link(prev, lane);
      chains.push_back(lane);
      prev = lane;
    }
    g.link(prev, b);
    chains.push_back(b);
  }
  chainStart[in.edges.size()] = static_cast<int>(chains.size());
  const size_t total = g.rank.size();
  g.pos.assign(total, 0);

  // 3. Order within ranks: boxes in topological order first, then lanes in edge order.
  const int maxRank = *std::max_element(g.rank.begin(), g.rank.end());
  g.layers.assign(static_cast<size_t>(maxRank) + 1, {});
  for (int v : order) g.layers[g.rank[v]].push_back(v);
  for (size_t v = n; v < total; ++v) g.layers[g.rank[v]].push_back(static_cast<int>(v));
  orderLayers(g);

  // 4. Coordinates.
  std::vector<double> x(total, 0.0);
  assignX(g, x);
  std::vector<double> rowTop(g.layers.size()), rowHeight(g.layers.size(), 0.0);
  for (size_t i = 0; i < n; ++i)
    rowHeight[g.rank[i]] = std::max(rowHeight[g.rank[i]], in.sizes[i].height());
  double y = 0;
  for (size_t r = 0; r < g.layers.size(); ++r) {
    rowTop[r] = y;
    y += rowHeight[r] + kRankGap;
  }
  out.centers.resize(n);
  QRectF bounds;
  for (size_t i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(g.rank[i]);
    out.centers[i] = QPointF(x[i], rowTop[r] + rowHeight[r] / 2);
    bounds |= QRectF(out.centers[i] - QPointF(in.sizes[i].width() / 2, in.sizes[i].height() / 2),
                     in.sizes[i]);
  }
  for (size_t v = n; v < total; ++v)
    bounds |= QRectF(x[v] - kLaneWidth, rowTop[g.rank[v]], 2 * kLaneWidth, 1);

  // 5. Edges: down each rank crossed as a vertical run, an S-curve in each gap between ranks.
  out.edgePaths.resize(in.edges.size());
  for (size_t e = 0; e < in.edges.size(); ++e) {
    if (!usable[e]) continue;
    auto [a, b] = in.edges[e];
    const QPointF tail = out.centers[a] + QPointF(0, in.sizes[a].height() / 2);
    const QPointF head = out.centers[b] - QPointF(0, in.sizes[b].height() / 2);
    const int first = chainStart[e], last = chainStart[e + 1];
    if (first == last) {
      out.edgePaths[e] = directEdge(tail, head);
      continue;
    }
    QPainterPath path(tail);
    QPointF at = tail;
    auto lineTo = [&](QPointF p) {
      if (p == at) return;
      // A vertical run continuing a vertical line extends it (long lanes stay one element).
      const int lastElement = path.elementCount() - 1;
      if (lastElement > 0 && path.elementAt(lastElement).isLineTo() && p.x() == at.x() &&
          path.elementAt(lastElement - 1).x == at.x()) {
        path.setElementPositionAt(lastElement, p.x(), p.y());
      } else {
        path.lineTo(p);
      }
      at = p;
    };
    // Leave the tail's rank straight down, then per next vertex: curve into its rank's top, run
    // through the rank (lanes), and end on the head box's top.
    lineTo(QPointF(x[a], rowTop[g.rank[a]] + rowHeight[g.rank[a]]));
    for (int c = first + 1; c < last; ++c) {
      const int v = chains[c];
      const size_t r = static_cast<size_t>(g.rank[v]);
      const QPointF into(x[v], rowTop[r]);
      if (std::abs(into.x() - at.x()) < 0.5) {
        lineTo(QPointF(at.x(), into.y()));
      } else {
        const double dy = (into.y() - at.y()) / 2;
        path.cubicTo(at + QPointF(0, dy), into - QPointF(0, dy), into);
        at = into;
      }
      lineTo(c + 1 < last ? QPointF(x[v], rowTop[r] + rowHeight[r]) : head);
    }
    out.edgePaths[e] = path;
  }
  out.bounds = bounds;
  out.ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return out;
}

}  // namespace souffle::views
