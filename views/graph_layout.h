/// \file Layout of a directed graph of boxes: Graphviz dot (libgvc), a ranked layout of our own for
/// graphs too big for dot, and a fast layered first picture.
#pragma once

#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <cstdint>
#include <vector>

namespace souffle::views {

/// What a layout needs to know: box sizes (in scene units, 1 unit = 1 point) and edges.
struct LayoutInput {
  std::vector<QSizeF> sizes;
  std::vector<std::pair<int, int>> edges;  ///< (from, to) node indices
  /// A stable hash of sizes and edges, the key of the layout caches.
  uint64_t hash() const;
};

/// Positions in scene coordinates (y grows downward, as on screen).
struct LayoutResult {
  std::vector<QPointF> centers;         ///< one per node
  std::vector<QPainterPath> edgePaths;  ///< one per edge, from the tail box to the head box
  QRectF bounds;
  QString engine;  ///< "dot", "ranked" or "layered"
  double ms = 0;
  bool valid() const { return !centers.empty() || bounds.isValid(); }
};

/// Graphviz dot, ranked top to bottom. Safe to call from any thread (calls are serialized,
/// Graphviz keeps global state). For large inputs the spline router is replaced by polylines,
/// which cuts dot's time (it still grows faster than the graph: see kRankedLayoutAbove).
LayoutResult layoutWithDot(const LayoutInput& in);

/// Above this many boxes the final layout is layoutRanked: dot's time grows much faster than the
/// graph (1.5 s at 2,000 boxes, 9.5 s at 4,000, not done in 10 minutes at 20,000 on a 2-core
/// machine). At and below it dot is kept, so the pictures of ordinary models do not change.
inline constexpr size_t kRankedLayoutAbove = 3000;

/// A layered layout for big graphs in near-linear time: longest-path ranks, long edges routed
/// through lanes (virtual boxes on each rank they cross), barycentre ordering sweeps that keep the
/// order with the fewest crossings, and least-squares placement of each rank towards the boxes'
/// neighbours with no two boxes of a rank overlapping. Pure; any thread.
LayoutResult layoutRanked(const LayoutInput& in);

/// Longest-path layering with one barycentre ordering sweep: O(nodes + edges), used to show a
/// first picture at once while dot still runs on a large graph.
LayoutResult layoutLayered(const LayoutInput& in);

}  // namespace souffle::views
