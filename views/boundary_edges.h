/// \file Stage boundaries on the graph: for each edge whose two ends compute in stages of one
/// kernel, what orders the consuming stage after the producing one (nothing, a block barrier, a
/// grid barrier, another launch), the pen it is drawn with, and the legend that explains it.
#pragma once

#include <QColor>
#include <QHash>
#include <QPen>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <array>
#include <vector>

#include "core/plan/plan.h"
#include "core/support/boundary.h"
#include "views/scene_graph.h"

class QPainter;

namespace souffle::views {

/// A box's place in one kernel: the first and last of the partition's built stages
/// (plan::Partition::built_stages) that compute its TEs.
struct BoxStages {
  int partition = -1;
  int first = 0, last = 0;
};

/// Edge kinds by (from box, to box) of a full scene graph; see boundaryEdgeKinds.
using EdgeKinds = QHash<quint64, BoundaryKind>;
inline quint64 edgeKey(int from, int to) {
  return (static_cast<quint64>(static_cast<quint32>(from)) << 32) | static_cast<quint32>(to);
}

/// The boundary kind of every edge of `g` whose producer box ends in a stage of a partition
/// before the stage its consumer box starts in: the strongest boundary of that partition
/// between the two stages (a launch over a grid barrier over per-tile flags over a block barrier
/// over none).
/// Edges within one stage, between kernels or of unpriced partitions get none. `stages` holds
/// per box of `g` its places (one per partition it computes in).
EdgeKinds boundaryEdgeKinds(const SceneGraph& g, const plan::FusionPlan& plan,
                            const std::vector<std::vector<BoxStages>>& stages);

/// How a boundary kind is drawn: its colour (readable on the light and the dark background),
/// its pen style and width, and its name in the legend.
QColor boundaryColor(BoundaryKind kind, bool dark);
QPen boundaryPen(BoundaryKind kind, bool dark, bool highlighted);
QString boundaryLabel(BoundaryKind kind);  ///< "no barrier", "block barrier", ...

/// Edges drawn per kind (indexed by BoundaryKind).
using BoundaryCounts = std::array<int, 5>;

/// Paints the legend (a line sample and the name per kind, with the edges drawn of it) into
/// `area`; its height for `rows` kinds is boundaryLegendHeight.
void paintBoundaryLegend(QPainter& p, const QRectF& area, const BoundaryCounts& counts, bool dark);
double boundaryLegendHeight();

/// The legend over the graph's bottom-left corner while stage boundaries are drawn.
class BoundaryLegendWidget : public QWidget {
  Q_OBJECT
 public:
  explicit BoundaryLegendWidget(QWidget* parent);
  void setCounts(const BoundaryCounts& counts);
  const BoundaryCounts& counts() const { return m_counts; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  BoundaryCounts m_counts{};
};

}  // namespace souffle::views
