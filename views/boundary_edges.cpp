#include "views/boundary_edges.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "views/graph_scene.h"
#include "views/theme.h"

namespace souffle::views {

namespace {
/// How much a boundary orders: flags order the producer blocks read, a grid barrier every
/// block, a launch everything before it.
int strength(BoundaryKind k) {
  switch (k) {
    case BoundaryKind::None:
      return 0;
    case BoundaryKind::Block:
      return 1;
    case BoundaryKind::Flags:
      return 2;
    case BoundaryKind::Grid:
      return 3;
    case BoundaryKind::Launch:
      return 4;
  }
  return 0;
}
}  // namespace

EdgeKinds boundaryEdgeKinds(const SceneGraph& g, const plan::FusionPlan& plan,
                            const std::vector<std::vector<BoxStages>>& stages) {
  EdgeKinds out;
  if (stages.size() != g.nodes.size()) return out;
  for (const SceneEdge& e : g.edges) {
    if (e.from < 0 || e.to < 0 || static_cast<size_t>(e.from) >= stages.size() ||
        static_cast<size_t>(e.to) >= stages.size())
      continue;
    bool found = false;
    BoundaryKind strongest = BoundaryKind::None;
    for (const BoxStages& a : stages[static_cast<size_t>(e.from)])
      for (const BoxStages& b : stages[static_cast<size_t>(e.to)]) {
        if (a.partition != b.partition || a.partition < 0 ||
            static_cast<size_t>(a.partition) >= plan.partitions.size() || a.last >= b.first)
          continue;
        const plan::Partition& p = plan.partitions[static_cast<size_t>(a.partition)];
        for (const plan::Boundary& bd : p.boundaries) {
          // Boundaries between stages after the producer's last, up to the consumer's first;
          // barriers between the phases of one stage order nothing between two stages.
          if (bd.from == bd.to || bd.to <= a.last || bd.to > b.first) continue;
          if (!found || strength(bd.order.kind) > strength(strongest)) strongest = bd.order.kind;
          found = true;
        }
      }
    if (found) out.insert(edgeKey(e.from, e.to), strongest);
  }
  return out;
}

QColor boundaryColor(BoundaryKind kind, bool dark) {
  switch (kind) {
    case BoundaryKind::None:
      return dark ? QColor(0x4d, 0xc3, 0x9a) : QColor(0x1b, 0x8a, 0x5a);
    case BoundaryKind::Block:
      return dark ? QColor(0xf0, 0xb4, 0x3c) : QColor(0xc7, 0x7c, 0x02);
    case BoundaryKind::Grid:
      return dark ? QColor(0xff, 0x6b, 0x6b) : QColor(0xd0, 0x21, 0x21);
    case BoundaryKind::Launch:
      return dark ? QColor(0xc0, 0x8c, 0xff) : QColor(0x7b, 0x3f, 0xc4);
    case BoundaryKind::Flags:
      return dark ? QColor(0xff, 0x9e, 0x5e) : QColor(0xd0, 0x5a, 0x10);
  }
  return {};
}

QPen boundaryPen(BoundaryKind kind, bool dark, bool highlighted) {
  QPen pen(boundaryColor(kind, dark));
  pen.setCapStyle(Qt::FlatCap);
  switch (kind) {
    case BoundaryKind::None:
      pen.setStyle(Qt::DotLine);
      pen.setWidthF(1.6);
      break;
    case BoundaryKind::Block:
      pen.setStyle(Qt::DashLine);
      pen.setWidthF(2.0);
      break;
    case BoundaryKind::Grid:
      pen.setStyle(Qt::SolidLine);
      pen.setWidthF(2.8);
      break;
    case BoundaryKind::Launch:
      pen.setStyle(Qt::DashDotLine);
      pen.setWidthF(2.4);
      break;
    case BoundaryKind::Flags:
      pen.setStyle(Qt::DashDotDotLine);
      pen.setWidthF(2.4);
      break;
  }
  if (highlighted) pen.setWidthF(pen.widthF() + 1.0);
  return pen;
}

QString boundaryLabel(BoundaryKind kind) {
  switch (kind) {
    case BoundaryKind::None:
      return QObject::tr("no barrier needed");
    case BoundaryKind::Block:
      return QObject::tr("block barrier (__syncthreads)");
    case BoundaryKind::Grid:
      return QObject::tr("grid barrier (grid.sync)");
    case BoundaryKind::Launch:
      return QObject::tr("another launch (rules/unfused)");
    case BoundaryKind::Flags:
      return QObject::tr("per-tile flags (release/acquire)");
  }
  return {};
}

namespace {
constexpr double kRow = 18, kPad = 8, kTitle = 18;
}  // namespace

double boundaryLegendHeight() {
  return 2 * kPad + kTitle + 5 * kRow;
}

void paintBoundaryLegend(QPainter& p, const QRectF& area, const BoundaryCounts& counts, bool dark) {
  p.save();
  p.setRenderHint(QPainter::Antialiasing, true);
  QColor bg = dark ? QColor(0x20, 0x22, 0x26) : QColor(0xff, 0xff, 0xff);
  bg.setAlphaF(0.92);
  p.setPen(QPen(dark ? QColor(0x55, 0x58, 0x5e) : QColor(0xc4, 0xc7, 0xcc), 1));
  p.setBrush(bg);
  p.drawRoundedRect(area, 5, 5);
  const QColor text = dark ? QColor(0xe6, 0xe6, 0xe6) : QColor(0x20, 0x20, 0x20);
  QFont f = GraphScene::edgeFont();
  f.setBold(true);
  p.setFont(f);
  p.setPen(text);
  p.drawText(QRectF(area.left() + kPad, area.top() + kPad, area.width() - 2 * kPad, kTitle),
             Qt::AlignLeft | Qt::AlignVCenter, QObject::tr("Stage boundaries in a kernel"));
  p.setFont(GraphScene::edgeFont());
  const BoundaryKind kinds[] = {BoundaryKind::None, BoundaryKind::Block, BoundaryKind::Grid,
                                BoundaryKind::Flags, BoundaryKind::Launch};
  double y = area.top() + kPad + kTitle;
  for (BoundaryKind k : kinds) {
    const double mid = y + kRow / 2;
    p.setPen(boundaryPen(k, dark, false));
    p.drawLine(QPointF(area.left() + kPad, mid), QPointF(area.left() + kPad + 36, mid));
    p.setPen(text);
    const int n = counts[static_cast<size_t>(k)];
    p.drawText(QRectF(area.left() + kPad + 44, y, area.width() - 2 * kPad - 44, kRow),
               Qt::AlignLeft | Qt::AlignVCenter,
               QObject::tr("%1 · %n edge(s)", nullptr, n).arg(boundaryLabel(k)));
    y += kRow;
  }
  p.restore();
}

BoundaryLegendWidget::BoundaryLegendWidget(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  setObjectName(QStringLiteral("boundaryLegend"));
  setFixedSize(290, static_cast<int>(std::ceil(boundaryLegendHeight())));
  hide();
}

void BoundaryLegendWidget::setCounts(const BoundaryCounts& counts) {
  m_counts = counts;
  update();
}

void BoundaryLegendWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paintBoundaryLegend(p, QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), m_counts,
                      isDark(palette()));
}

}  // namespace souffle::views
