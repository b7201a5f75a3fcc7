#include "views/cluster_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <map>
#include <numeric>

#include "views/graph_scene.h"
#include "views/kernel_identity.h"
#include "views/kernel_stages.h"

namespace souffle::views {

namespace {

int findRoot(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

/// The strip that closes the gap between two padded rectangles facing each other (empty when
/// they face only diagonally, or already overlap).
QRectF bridge(const QRectF& a, const QRectF& b) {
  const double l = std::max(a.left(), b.left()), r = std::min(a.right(), b.right());
  const double t = std::max(a.top(), b.top()), btm = std::min(a.bottom(), b.bottom());
  if (r - l > 1 && t > btm) return QRectF(l, btm - 1, r - l, t - btm + 2);  // one above
  if (btm - t > 1 && l > r) return QRectF(r - 1, t, l - r + 2, btm - t);    // side by side
  return {};
}

QFont labelFont() {
  QFont f = GraphScene::edgeFont();
  f.setBold(true);
  return f;
}

}  // namespace

std::vector<ClusterShape> computeClusters(const std::vector<QRectF>& rects,
                                          const std::vector<std::vector<int>>& kernelIds) {
  std::map<int, std::vector<int>> byKernel;
  for (size_t b = 0; b < kernelIds.size() && b < rects.size(); ++b)
    for (int k : kernelIds[b])
      if (rects[b].isValid()) byKernel[k].push_back(static_cast<int>(b));
  std::vector<ClusterShape> out;
  for (auto& [kernel, boxes] : byKernel) {
    const size_t n = boxes.size();
    std::vector<QRectF> padded(n);
    for (size_t i = 0; i < n; ++i)
      padded[i] = rects[boxes[i]].adjusted(-kClusterPad, -kClusterPad, kClusterPad, kClusterPad);
    // Sweep by top edge: only rectangles whose vertical spans come within the join distance
    // can touch, which keeps the pair test near-linear for tall kernels.
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return padded[a].top() < padded[b].top(); });
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    std::vector<std::pair<int, int>> bridged;
    for (size_t oi = 0; oi < n; ++oi) {
      const int i = order[oi];
      const QRectF grown = padded[i].adjusted(-kClusterJoin / 2, -kClusterJoin / 2,
                                              kClusterJoin / 2, kClusterJoin / 2);
      for (size_t oj = oi + 1; oj < n; ++oj) {
        const int j = order[oj];
        if (padded[j].top() > grown.bottom() + kClusterJoin / 2) break;
        const QRectF other = padded[j].adjusted(-kClusterJoin / 2, -kClusterJoin / 2,
                                                kClusterJoin / 2, kClusterJoin / 2);
        if (!grown.intersects(other)) continue;
        if (!padded[i].intersects(padded[j]) && bridge(padded[i], padded[j]).isEmpty())
          continue;  // near only diagonally: an outline could not join them cleanly
        const int ri = findRoot(parent, i), rj = findRoot(parent, j);
        if (!padded[i].intersects(padded[j])) bridged.push_back({i, j});
        if (ri != rj) parent[ri] = rj;
      }
    }
    std::map<int, std::vector<int>> groups;
    for (size_t i = 0; i < n; ++i) groups[findRoot(parent, static_cast<int>(i))].push_back(int(i));
    size_t first = out.size(), largest = out.size();
    for (auto& [root, members] : groups) {
      ClusterShape s;
      s.kernel = kernel;
      for (int m : members) {
        s.rects.push_back(padded[m]);
        s.boxes.push_back(boxes[m]);
        s.bounds |= padded[m];
      }
      for (auto [a, b] : bridged)
        if (findRoot(parent, a) == root) s.rects.push_back(bridge(padded[a], padded[b]));
      if (members.size() <= kMaxOutlineBoxes) {
        QPainterPath path;
        path.setFillRule(Qt::WindingFill);
        for (size_t r = 0; r < s.rects.size(); ++r) {
          if (r < members.size())
            path.addRoundedRect(s.rects[r], 6, 6);
          else
            path.addRect(s.rects[r]);
        }
        // One contour instead of overlapping rectangles: the outline is drawn once.
        s.outline = members.size() == 1 ? path : path.simplified();
        s.bounds = s.outline.boundingRect();
      }
      if (out.size() == first || s.boxes.size() > out[largest].boxes.size()) largest = out.size();
      out.push_back(std::move(s));
    }
    if (largest < out.size()) out[largest].primary = true;
  }
  return out;
}

bool ClusterShape::contains(const QPointF& p) const {
  if (!bounds.contains(p)) return false;
  if (!outline.isEmpty()) return outline.contains(p);
  return std::any_of(rects.begin(), rects.end(), [&](const QRectF& r) { return r.contains(p); });
}

QHash<int, QString> clusterLabels(const plan::FusionPlan& plan,
                                  const std::vector<QString>& shortNames) {
  QHash<int, QString> labels;
  for (size_t i = 0; i < plan.partitions.size(); ++i) {
    const plan::Partition& p = plan.partitions[i];
    const int stages = kernelStages(p);
    const QString name = i < shortNames.size() && !shortNames[i].isEmpty()
                             ? QStringLiteral(" · ") + shortNames[i]
                             : QString();
    labels.insert(p.id, QStringLiteral("K%1%2 · %3 stage%4 · %5 sync%6")
                            .arg(p.id)
                            .arg(name)
                            .arg(stages)
                            .arg(stages == 1 ? "" : "s")
                            .arg(p.grid_syncs)
                            .arg(p.grid_syncs == 1 ? "" : "s"));
  }
  return labels;
}

ClusterItem::ClusterItem(GraphScene* scene, ClusterShape shape, QString label)
    : m_scene(scene), m_shape(std::move(shape)), m_label(std::move(label)) {
  // Under edges (0) and boxes (1); clicks go through to the view so dragging still pans.
  setZValue(-1);
  setAcceptedMouseButtons(Qt::NoButton);
  setAcceptHoverEvents(false);
  setFlag(ItemUsesExtendedStyleOption);  // exposedRect: paint only the rectangles in view
  if (!m_shape.primary) m_label = QStringLiteral("K%1").arg(m_shape.kernel);
  QFontMetricsF fm(labelFont());
  const QSizeF ls(fm.horizontalAdvance(m_label) + 10, fm.height() + 2);
  // The tab hangs above the group's topmost rectangle (the leftmost of those at the top), clear
  // of the boxes' kernel badges: at the top-left corner of the outline's bounds it floated in
  // empty space wherever lower boxes reach further left than the top one.
  QRectF top = m_shape.bounds;
  for (const QRectF& r : m_shape.rects) {
    if (&r == m_shape.rects.data() || r.top() < top.top() ||
        (r.top() == top.top() && r.left() < top.left())) {
      top = r;
    }
  }
  m_labelRect = QRectF(QPointF(top.left() + 6, top.top() - ls.height() + 1), ls);
  m_bounds = m_shape.bounds.united(m_labelRect).adjusted(-2, -2, 2, 2);
  setToolTip(m_label);
}

QPainterPath ClusterItem::shape() const {
  if (!m_shape.outline.isEmpty()) return m_shape.outline;
  QPainterPath path;
  path.setFillRule(Qt::WindingFill);
  for (const QRectF& r : m_shape.rects) path.addRect(r);
  return path;
}

void ClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphColors& c = m_scene->colors();
  const double lod = option->levelOfDetailFromTransform(painter->worldTransform());
  // In a heat map the boxes carry the colour; the kernels are neutral areas.
  const QColor base = m_scene->heatShown()
                          ? (c.dark ? QColor(0x3a, 0x3d, 0x42) : QColor(0xd4, 0xd7, 0xdc))
                          : m_scene->kernelFill(m_shape.kernel);
  // Opaque (the base blended over the background): overlapping rectangles do not darken.
  const double alpha = c.dark ? 0.30 : 0.38;
  const QColor fill =
      QColor::fromRgbF(float(base.redF() * alpha + c.background.redF() * (1 - alpha)),
                       float(base.greenF() * alpha + c.background.greenF() * (1 - alpha)),
                       float(base.blueF() * alpha + c.background.blueF() * (1 - alpha)));
  const QColor line = c.dark ? base.lighter(150) : base.darker(150);
  if (m_shape.outline.isEmpty() || lod < 0.2) {
    // Far away, or a kernel of many boxes: its rectangles, filled, without an outline.
    painter->setPen(Qt::NoPen);
    painter->setBrush(fill);
    const QRectF visible = option->exposedRect.isValid() ? option->exposedRect : m_bounds;
    for (const QRectF& r : m_shape.rects)
      if (r.intersects(visible)) painter->drawRect(r);
  } else {
    painter->setRenderHint(QPainter::Antialiasing, true);
    painter->setPen(QPen(line, 1.4));
    painter->setBrush(fill);
    painter->drawPath(m_shape.outline);
  }
  if (lod < 0.35) return;
  painter->setRenderHint(QPainter::Antialiasing, true);
  painter->setPen(QPen(line, 1));
  painter->setBrush(c.dark ? base.darker(120) : base.lighter(104));
  painter->drawRoundedRect(m_labelRect, 3, 3);
  painter->setFont(labelFont());
  painter->setPen(c.text);
  painter->drawText(m_labelRect, Qt::AlignCenter, m_label);
}

}  // namespace souffle::views
