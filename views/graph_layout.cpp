#include "views/graph_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/report/graphviz.h"

namespace souffle::views {

namespace {

constexpr double kPointsPerInch = 72.0;

// Graphviz keeps global state (symbol tables, error handlers), so at most one layout runs at a
// time; the GUI never waits on this lock because layouts run on worker threads.
void mix(uint64_t& h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
}

QPainterPath straightEdge(QPointF from, QPointF to) {
  QPainterPath p(from);
  double dy = std::max(20.0, (to.y() - from.y()) / 2);
  p.cubicTo(from + QPointF(0, dy), to - QPointF(0, dy), to);
  return p;
}

}  // namespace

uint64_t LayoutInput::hash() const {
  uint64_t h = 1469598103934665603ULL;
  mix(h, sizes.size());
  for (const QSizeF& s : sizes) {
    mix(h, static_cast<uint64_t>(std::lround(s.width() * 4)));
    mix(h, static_cast<uint64_t>(std::lround(s.height() * 4)));
  }
  mix(h, edges.size());
  for (auto [a, b] : edges) mix(h, (static_cast<uint64_t>(a) << 32) ^ static_cast<uint64_t>(b));
  return h;
}

LayoutResult layoutWithDot(const LayoutInput& in) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult out;
  out.engine = QStringLiteral("dot");
  const size_t n = in.sizes.size();
  if (n == 0) return out;

  report::with_graphviz([&](GVC_t* gvc) {
    Agraph_t* g = agopen(const_cast<char*>("g"), Agdirected, report::stable_disc());
    auto graphAttr = [&](const char* key, const char* value) {
      agattr(g, AGRAPH, const_cast<char*>(key), const_cast<char*>(value));
    };
    const bool large = n > 1500;
    graphAttr("rankdir", "TB");
    graphAttr("nodesep", "0.3");
    graphAttr("ranksep", "0.45");
    // Spline routing dominates dot's time on big graphs; polylines keep edges clear of boxes at a
    // fraction of the cost. The iteration limits trade a few crossings for predictable time.
    graphAttr("splines", large ? "polyline" : "spline");
    if (large) {
      graphAttr("nslimit", "2");
      graphAttr("nslimit1", "2");
      graphAttr("mclimit", "0.3");
      graphAttr("searchsize", "10");
    }
    agattr(g, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
    agattr(g, AGNODE, const_cast<char*>("fixedsize"), const_cast<char*>("true"));
    agattr(g, AGNODE, const_cast<char*>("label"), const_cast<char*>(""));
    Agsym_t* wSym = agattr(g, AGNODE, const_cast<char*>("width"), const_cast<char*>("1"));
    Agsym_t* hSym = agattr(g, AGNODE, const_cast<char*>("height"), const_cast<char*>("0.5"));
    agattr(g, AGEDGE, const_cast<char*>("arrowhead"), const_cast<char*>("none"));

    std::vector<Agnode_t*> nodes(n);
    for (size_t i = 0; i < n; ++i) {
      char name[32], w[32], h[32];
      std::snprintf(name, sizeof name, "n%zu", i);
      std::snprintf(w, sizeof w, "%.4f", in.sizes[i].width() / kPointsPerInch);
      std::snprintf(h, sizeof h, "%.4f", in.sizes[i].height() / kPointsPerInch);
      nodes[i] = agnode(g, name, 1);
      agxset(nodes[i], wSym, w);
      agxset(nodes[i], hSym, h);
    }
    std::vector<Agedge_t*> edges(in.edges.size(), nullptr);
    for (size_t i = 0; i < in.edges.size(); ++i) {
      auto [a, b] = in.edges[i];
      if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n) continue;
      edges[i] = agedge(g, nodes[a], nodes[b], nullptr, 1);
    }

    if (gvLayout(gvc, g, "dot") == 0) {
      boxf bb = GD_bb(g);
      auto toScene = [&](pointf p) { return QPointF(p.x, bb.UR.y - p.y); };
      out.bounds = QRectF(QPointF(bb.LL.x, 0), QPointF(bb.UR.x, bb.UR.y - bb.LL.y));
      out.centers.resize(n);
      for (size_t i = 0; i < n; ++i) out.centers[i] = toScene(ND_coord(nodes[i]));
      out.edgePaths.resize(in.edges.size());
      for (size_t i = 0; i < edges.size(); ++i) {
        splines* spl = edges[i] ? ED_spl(edges[i]) : nullptr;
        if (!spl || spl->size == 0 || spl->list[0].size == 0) {
          auto [a, b] = in.edges[i];
          out.edgePaths[i] = straightEdge(out.centers[a], out.centers[b]);
          continue;
        }
        const bezier& bz = spl->list[0];
        QPainterPath path(toScene(bz.sflag ? bz.sp : bz.list[0]));
        if (bz.sflag) path.lineTo(toScene(bz.list[0]));
        for (int k = 1; k + 2 < bz.size; k += 3)
          path.cubicTo(toScene(bz.list[k]), toScene(bz.list[k + 1]), toScene(bz.list[k + 2]));
        if (bz.eflag) path.lineTo(toScene(bz.ep));
        out.edgePaths[i] = path;
      }
      gvFreeLayout(gvc, g);
    }
    agclose(g);
  });
  out.ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return out;
}

LayoutResult layoutLayered(const LayoutInput& in) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult out;
  out.engine = QStringLiteral("layered");
  const size_t n = in.sizes.size();
  if (n == 0) return out;

  std::vector<std::vector<int>> preds(n), succs(n);
  for (auto [a, b] : in.edges) {
    if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n) continue;
    preds[b].push_back(a);
    succs[a].push_back(b);
  }
  // Kahn's order; nodes left on a cycle (not expected) are appended so every node is placed.
  std::vector<int> indeg(n), order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) indeg[i] = static_cast<int>(preds[i].size());
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) order.push_back(static_cast<int>(i));
  for (size_t k = 0; k < order.size(); ++k)
    for (int s : succs[order[k]])
      if (--indeg[s] == 0) order.push_back(s);
  std::vector<char> placed(n, 0);
  for (int v : order) placed[v] = 1;
  for (size_t i = 0; i < n; ++i)
    if (!placed[i]) order.push_back(static_cast<int>(i));

  std::vector<int> layer(n, 0);
  int maxLayer = 0;
  for (int v : order) {
    for (int p : preds[v]) layer[v] = std::max(layer[v], layer[p] + 1);
    maxLayer = std::max(maxLayer, layer[v]);
  }
  std::vector<std::vector<int>> layers(maxLayer + 1);
  for (int v : order) layers[layer[v]].push_back(v);

  constexpr double kGapX = 24, kGapY = 36;
  out.centers.assign(n, QPointF());
  double y = 0;
  for (auto& row : layers) {
    // Barycentre of the already placed predecessors keeps chains roughly vertical.
    std::vector<std::pair<double, int>> keyed;
    keyed.reserve(row.size());
    for (size_t k = 0; k < row.size(); ++k) {
      int v = row[k];
      double sum = 0;
      for (int p : preds[v]) sum += out.centers[p].x();
      keyed.push_back(
          {preds[v].empty() ? static_cast<double>(k) * 1e-3 : sum / preds[v].size(), v});
    }
    std::stable_sort(keyed.begin(), keyed.end());
    double rowH = 0, total = 0;
    for (auto& kv : keyed) {
      rowH = std::max(rowH, in.sizes[kv.second].height());
      total += in.sizes[kv.second].width() + kGapX;
    }
    // Centre the row on its barycentres, then push boxes right until none overlap.
    double x = keyed.empty() ? 0 : keyed.front().first - total / 2;
    for (auto& kv : keyed) {
      double w = in.sizes[kv.second].width();
      double want = kv.first - w / 2;
      x = std::max(x, want);
      out.centers[kv.second] = QPointF(x + w / 2, y + rowH / 2);
      x += w + kGapX;
    }
    y += rowH + kGapY;
  }
  QRectF bounds;
  for (size_t i = 0; i < n; ++i) {
    QRectF r(out.centers[i] - QPointF(in.sizes[i].width() / 2, in.sizes[i].height() / 2),
             in.sizes[i]);
    bounds = bounds.united(r);
  }
  out.bounds = bounds;
  out.edgePaths.reserve(in.edges.size());
  for (auto [a, b] : in.edges) {
    if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n) {
      out.edgePaths.emplace_back();
      continue;
    }
    QPointF from = out.centers[a] + QPointF(0, in.sizes[a].height() / 2);
    QPointF to = out.centers[b] - QPointF(0, in.sizes[b].height() / 2);
    out.edgePaths.push_back(straightEdge(from, to));
  }
  out.ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return out;
}

}  // namespace souffle::views
