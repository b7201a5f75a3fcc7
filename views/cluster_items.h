/// \file Kernel clusters: a coloured, rounded outline under each connected group of a kernel's
/// boxes, labelled "K<id> · <n> stages · <syncs> syncs".
#pragma once

#include <QGraphicsItem>
#include <QHash>
#include <QPainterPath>
#include <QRectF>
#include <QString>
#include <vector>

#include "core/plan/plan.h"

namespace souffle::views {

class GraphScene;

/// One outline: a group of boxes of one kernel that touch once padded.
struct ClusterShape {
  int kernel = 0;  ///< kernel id (as the badges show it)
  /// Union of the padded box rectangles (and bridges between them) as one contour; empty for a
  /// group of more than kMaxOutlineBoxes boxes, which is drawn as its rectangles (a contour of
  /// thousands of rectangles costs seconds to make and to paint).
  QPainterPath outline;
  std::vector<QRectF> rects;  ///< the padded rectangles and bridges
  QRectF bounds;              ///< of the outline
  std::vector<int> boxes;     ///< the boxes it surrounds
  bool primary = false;       ///< the kernel's largest group: it carries the full label
  /// Whether `p` (scene coordinates) lies in the group's area.
  bool contains(const QPointF& p) const;
};

/// Groups of more boxes than this are drawn as their rectangles, not as one contour.
constexpr size_t kMaxOutlineBoxes = 48;

/// Padding around each box of a cluster, in scene units. Boxes of one kernel whose padded
/// rectangles touch (or nearly: up to `kClusterJoin` apart) form one group.
constexpr double kClusterPad = 15;
constexpr double kClusterJoin = 12;

/// Groups and outlines per kernel, from the boxes' rectangles (scene coordinates) and, per box,
/// the kernel ids it belongs to (a split box is in every kernel it lists). Pure; O(boxes²) per
/// kernel in the worst case, near-linear for the usual kernels of a few dozen boxes.
std::vector<ClusterShape> computeClusters(const std::vector<QRectF>& rects,
                                          const std::vector<std::vector<int>>& kernelIds);

/// "K<id> · <anchor> · <n> stages · <syncs> syncs" per kernel id of `plan` (the anchor as
/// `shortNames`, in partition order, names it; none when empty).
QHash<int, QString> clusterLabels(const plan::FusionPlan& plan,
                                  const std::vector<QString>& shortNames = {});

class ClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  ClusterItem(GraphScene* scene, ClusterShape shape, QString label);
  int type() const override { return Type; }
  int kernel() const { return m_shape.kernel; }
  const ClusterShape& cluster() const { return m_shape; }
  const QString& label() const { return m_label; }
  QRectF boundingRect() const override { return m_bounds; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  /// Where the label tab sits (above the outline's top-left corner).
  QRectF labelRect() const { return m_labelRect; }

 private:
  GraphScene* m_scene;
  ClusterShape m_shape;
  QString m_label;
  QRectF m_labelRect;
  QRectF m_bounds;
};

}  // namespace souffle::views
