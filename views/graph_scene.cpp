#include "views/graph_scene.h"

#include <QFontMetricsF>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QPixmapCache>
#include <QStyleOptionGraphicsItem>
#include <QtMath>
#include <algorithm>

#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrent>

#include "views/heat_map.h"
#include "views/kernel_identity.h"

namespace souffle::views {

namespace {

constexpr double kPadX = 10, kMinWidth = 84, kMaxWidth = 230;
constexpr double kOpHeight = 40, kIoHeight = 32, kKernelHeight = 48;
constexpr double kArrow = 7;
/// Room above a box for its kernel badge.
constexpr double kBadge = 9;

double lodOf(const QStyleOptionGraphicsItem* option, const QPainter* painter) {
  return option->levelOfDetailFromTransform(painter->worldTransform());
}

}  // namespace

QFont GraphScene::titleFont() {
  QFont f;
  f.setPointSizeF(9.5);
  f.setBold(true);
  return f;
}

QFont GraphScene::subtitleFont() {
  QFont f;
  f.setPointSizeF(8);
  return f;
}

QFont GraphScene::edgeFont() {
  QFont f;
  f.setPointSizeF(7);
  return f;
}

double GraphScene::edgeLabelWidth(const QString& label) {
  auto it = m_labelWidths.constFind(label);
  if (it != m_labelWidths.constEnd()) return *it;
  const double w = QFontMetricsF(edgeFont()).horizontalAdvance(label);
  m_labelWidths.insert(label, w);
  return w;
}

// ------------------------------------------------------------------------------------- NodeItem

NodeItem::NodeItem(GraphScene* scene, int box, QSizeF size)
    : m_scene(scene), m_box(box), m_size(size) {
  setFlag(ItemIsSelectable);
  // No pixmap cache: a zoom would re-render every visible box into a new pixmap (thousands of
  // allocations per frame on a big graph), while painting by level of detail is cheap.
  setZValue(1);
}

QRectF NodeItem::boundingRect() const {
  return QRectF(-m_size.width() / 2 - 2, -m_size.height() / 2 - kBadge, m_size.width() + 4,
                m_size.height() + kBadge + 2);
}

void NodeItem::setMatch(bool match) {
  if (match == m_match) return;
  m_match = match;
  update();
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemSelectedHasChanged) update();
  return QGraphicsItem::itemChange(change, value);
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const SceneGraph* g = m_scene->graph();
  if (!g) return;
  const SceneNode& node = g->nodes[m_box];
  const GraphColors& c = m_scene->colors();
  const QRectF r(-m_size.width() / 2, -m_size.height() / 2, m_size.width(), m_size.height());
  const double lod = lodOf(option, painter);
  const std::vector<int>* kernels = m_scene->kernelsOf(m_box);
  const bool inKernel = kernels && !kernels->empty();
  const bool kernelBox = node.kind == SceneNode::Kind::Kernel;
  // Boxes by op type (their kernel is the area around them) or by the heat map's metric; a
  // collapsed kernel in its kernel's colour.
  QColor fill =
      kernelBox && inKernel ? m_scene->kernelFill(kernels->front()) : c.fill(node.category);
  if (m_scene->heatShown()) {
    const double h = m_scene->heatOf(m_box);
    fill = std::isnan(h) ? (c.dark ? QColor(0x3a, 0x3a, 0x3a) : QColor(0xf2, 0xf2, 0xf2))
                         : heatColor(h, c.dark);
  }
  if (lod < 0.2) {
    // Far away a box is a coloured rectangle; selection and matches still stand out.
    painter->fillRect(r, isSelected() ? c.accent : m_match ? c.match : fill);
    return;
  }
  painter->setRenderHint(QPainter::Antialiasing, true);
  QPen pen(isSelected() ? c.accent : m_match ? c.match : c.border);
  pen.setWidthF(isSelected() || m_match ? 2.5 : 1.0);
  const bool mixed = inKernel && kernels->size() > 1;
  if (mixed && !isSelected() && !m_match) {
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(1.6);
  }
  painter->setPen(pen);
  painter->setBrush(fill);
  const bool io = node.kind == SceneNode::Kind::Input || node.kind == SceneNode::Kind::Output;
  if (kernelBox && !isSelected() && !m_match) {
    // A collapsed kernel reads as a container: a heavier border in the kernel's own shade.
    pen.setColor(c.dark ? fill.lighter(160) : fill.darker(160));
    pen.setWidthF(2.2);
    painter->setPen(pen);
  }
  const double radius = io ? r.height() / 2 : kernelBox ? 9 : 5;
  painter->drawRoundedRect(r, radius, radius);
  if (lod < 0.45) return;
  const QRectF text = r.adjusted(kPadX, 3, -kPadX, -3);
  // Text on a heat colour takes the colour's own contrast.
  const QColor ink = m_scene->heatShown()
                         ? (fill.lightnessF() < 0.5 ? QColor(Qt::white) : QColor(Qt::black))
                         : c.text;
  painter->setPen(ink);
  painter->setFont(GraphScene::titleFont());
  QFontMetricsF tm(GraphScene::titleFont());
  QFontMetricsF sm(GraphScene::subtitleFont());
  QString title = tm.elidedText(node.title, Qt::ElideRight, text.width());
  QString sub = sm.elidedText(node.subtitle, Qt::ElideMiddle, text.width());
  const double th = tm.height(), sh = sm.height();
  const double top = r.center().y() - (th + sh) / 2;
  painter->drawText(QRectF(text.left(), top, text.width(), th), Qt::AlignCenter, title);
  painter->setFont(GraphScene::subtitleFont());
  painter->setPen(m_scene->heatShown() ? ink : c.subtext);
  painter->drawText(QRectF(text.left(), top + th, text.width(), sh), Qt::AlignCenter, sub);
  if (!inKernel || kernelBox) return;  // a kernel box names its kernel in its title
  // The kernel badge straddles the top-left corner; a split node names its first kernel and
  // how many more share it.
  QString badge = QStringLiteral("K%1").arg(kernels->front());
  if (mixed) badge += QStringLiteral("+%1").arg(kernels->size() - 1);
  const QFont bf = GraphScene::edgeFont();
  QFontMetricsF bm(bf);
  const QRectF br(r.left() + 4, r.top() - kBadge + 1, bm.horizontalAdvance(badge) + 8,
                  bm.height() + 1);
  const QColor kernelFill = m_scene->kernelFill(kernels->front());
  painter->setPen(QPen(c.border, 0.8));
  painter->setBrush(c.dark ? kernelFill.lighter(130) : kernelFill.darker(115));
  painter->drawRoundedRect(br, 3, 3);
  painter->setFont(bf);
  painter->setPen(c.text);
  painter->drawText(br, Qt::AlignCenter, badge);
}

// ------------------------------------------------------------------------------------- EdgeItem

EdgeItem::EdgeItem(GraphScene* scene, int edge, QPainterPath path)
    : m_scene(scene), m_edge(edge), m_path(std::move(path)) {
  setZValue(0);
  setAcceptedMouseButtons(Qt::NoButton);
  // The arrow lies within its length of the path's end, the label beside a point of the path:
  // both inside the control points' rectangle grown by their size, wherever they fall.
  const double arrow = kArrow * 1.4;
  double labelW = 0, labelH = 0;
  const SceneGraph* g = scene->graph();
  if (g && !g->edges[edge].label.isEmpty()) {
    labelW = 4 + scene->edgeLabelWidth(g->edges[edge].label) + 6;
    labelH = QFontMetricsF(GraphScene::edgeFont()).height() + 2;
  }
  const double vertical = std::max(arrow, labelH / 2);
  m_bounds =
      m_path.controlPointRect().adjusted(-arrow, -vertical, std::max(arrow, labelW), vertical);
  m_bounds.adjust(-3, -3, 3, 3);
}

void EdgeItem::ensureGeometry() const {
  if (m_geometry) return;
  m_geometry = true;
  if (m_path.elementCount() >= 2) {
    QPointF tip = m_path.pointAtPercent(1.0);
    QPointF before =
        m_path.pointAtPercent(std::max(0.0, 1.0 - 8.0 / std::max(8.0, m_path.length())));
    QLineF dir(tip, before);
    if (dir.length() < 1e-6) dir = QLineF(tip, tip - QPointF(0, 1));
    dir.setLength(kArrow * 1.4);
    QLineF left = dir, right = dir;
    left.setAngle(dir.angle() + 22);
    right.setAngle(dir.angle() - 22);
    m_arrow << tip << left.p2() << right.p2();
  }
  m_labelPos = m_path.pointAtPercent(0.5);
}

void EdgeItem::setHighlighted(bool on) {
  if (on == m_highlighted) return;
  m_highlighted = on;
  setZValue(on ? 0.5 : 0);
  update();
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphColors& c = m_scene->colors();
  const double lod = lodOf(option, painter);
  QPen pen(m_highlighted ? c.accent : c.edge);
  pen.setWidthF(m_highlighted ? 2.2 : 1.1);
  const int boundary = m_scene->edgeBoundary(m_edge);
  if (boundary >= 0) {
    // An edge inside a kernel: drawn by what orders its consumer's stage after its producer's.
    pen = boundaryPen(static_cast<BoundaryKind>(boundary), c.dark, m_highlighted);
    if (m_highlighted) pen.setColor(c.accent);
  }
  if (lod < 0.2) {
    pen.setCosmetic(true);
    pen.setWidthF(m_highlighted ? 2 : 1);
    painter->setPen(pen);
    painter->drawPath(m_path);
    return;
  }
  ensureGeometry();
  painter->setRenderHint(QPainter::Antialiasing, true);
  painter->setPen(pen);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(m_path);
  painter->setPen(Qt::NoPen);
  painter->setBrush(pen.color());
  painter->drawPolygon(m_arrow);
  const SceneGraph* g = m_scene->graph();
  if (lod < 0.6 || !g) return;
  const QString& label = g->edges[m_edge].label;
  if (label.isEmpty()) return;
  painter->setFont(GraphScene::edgeFont());
  QFontMetricsF fm(GraphScene::edgeFont());
  QRectF lr(m_labelPos + QPointF(4, -(fm.height() + 2) / 2),
            QSizeF(m_scene->edgeLabelWidth(label) + 6, fm.height() + 2));
  QColor bg = c.background;
  bg.setAlphaF(0.85);
  painter->setBrush(bg);
  painter->drawRoundedRect(lr, 3, 3);
  painter->setPen(m_highlighted ? c.accent : c.edgeLabel);
  painter->drawText(lr, Qt::AlignCenter, label);
}

// ----------------------------------------------------------------------------------- GraphScene

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) {
  // Thousands of cached boxes need more than the default 10 MB pixmap cache.
  QPixmapCache::setCacheLimit(std::max(QPixmapCache::cacheLimit(), 96 * 1024));
  connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::onSelectionChanged);
}

GraphScene::~GraphScene() {
  // Removing items changes the selection; no slot may see half-destroyed items.
  disconnect(this, nullptr, nullptr, nullptr);
  clearGraph();
}

std::vector<QSizeF> GraphScene::measure(const SceneGraph& graph) {
  QFontMetricsF tm(titleFont()), sm(subtitleFont());
  std::vector<QSizeF> sizes;
  sizes.reserve(graph.nodes.size());
  QHash<QString, double> titleWidths;  // a big graph has thousands of boxes per op type
  for (const SceneNode& n : graph.nodes) {
    const bool io = n.kind == SceneNode::Kind::Input || n.kind == SceneNode::Kind::Output;
    auto title = titleWidths.constFind(n.title);
    if (title == titleWidths.constEnd())
      title = titleWidths.insert(n.title, tm.horizontalAdvance(n.title));
    double w = std::max(*title, sm.horizontalAdvance(n.subtitle));
    w = std::clamp(w + 2 * kPadX + (io ? 12 : 0), kMinWidth, kMaxWidth);
    const bool kernel = n.kind == SceneNode::Kind::Kernel;
    sizes.emplace_back(std::ceil(w) + (kernel ? 16 : 0), io       ? kIoHeight
                                                         : kernel ? kKernelHeight
                                                                  : kOpHeight);
  }
  return sizes;
}

void GraphScene::clearGraph() {
  const QSignalBlocker block(this);
  clear();
  m_nodes.clear();
  m_edges.clear();
  m_edgesOfBox.clear();
  m_matches.clear();
  m_graph.reset();
  m_selected = -1;
  m_kernels.clear();
  m_heat.clear();
  m_edgeBoundaries.clear();
  m_clusters.clear();  // clear() deleted the items
  ++m_clusterGeneration;
  m_clustersPending = false;
}

void GraphScene::setGraph(std::shared_ptr<const SceneGraph> graph, const LayoutResult& layout,
                          const std::vector<QSizeF>& measured) {
  const int keep = graph == m_graph ? m_selected : -1;
  clearGraph();
  m_graph = std::move(graph);
  if (!m_graph) return;
  const SceneGraph& g = *m_graph;
  const std::vector<QSizeF> sizes = measured.size() == g.nodes.size() ? measured : measure(g);
  // Building thousands of items is much faster without the index being updated per insert.
  setItemIndexMethod(NoIndex);
  m_nodes.resize(g.nodes.size(), nullptr);
  m_edgesOfBox.assign(g.nodes.size(), {});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto* item = new NodeItem(this, static_cast<int>(i), sizes[i]);
    item->setPos(i < layout.centers.size() ? layout.centers[i] : QPointF());
    item->setToolTip(g.nodes[i].title + QStringLiteral("\n") + g.nodes[i].subtitle);
    addItem(item);
    m_nodes[i] = item;
  }
  m_edges.resize(g.edges.size(), nullptr);
  for (size_t i = 0; i < g.edges.size(); ++i) {
    QPainterPath path = i < layout.edgePaths.size() ? layout.edgePaths[i] : QPainterPath();
    auto* item = new EdgeItem(this, static_cast<int>(i), path);
    addItem(item);
    m_edges[i] = item;
    m_edgesOfBox[g.edges[i].from].push_back(static_cast<int>(i));
    m_edgesOfBox[g.edges[i].to].push_back(static_cast<int>(i));
  }
  setItemIndexMethod(BspTreeIndex);
  const QRectF margin = layout.bounds.adjusted(-40, -40, 40, 40);
  setSceneRect(margin.isValid() ? margin : itemsBoundingRect());
  if (keep >= 0) selectBox(keep);
}

int GraphScene::itemCount(SceneNode::Kind kind) const {
  if (!m_graph) return 0;
  int c = 0;
  for (const NodeItem* item : m_nodes) c += m_graph->nodes[item->box()].kind == kind ? 1 : 0;
  return c;
}

NodeItem* GraphScene::nodeItem(int box) const {
  return box >= 0 && static_cast<size_t>(box) < m_nodes.size() ? m_nodes[box] : nullptr;
}

void GraphScene::setColors(const GraphColors& colors) {
  m_colors = colors;
  setBackgroundBrush(colors.background);
  refreshItems();
}

void GraphScene::refreshItems() {
  update();
}

void GraphScene::setKernels(std::vector<std::vector<int>> kernelIds) {
  m_kernels =
      kernelIds.size() == m_nodes.size() ? std::move(kernelIds) : std::vector<std::vector<int>>();
  refreshItems();
  rebuildClusters();
}

void GraphScene::setClusterLabels(QHash<int, QString> labels) {
  m_clusterLabels = std::move(labels);
}

void GraphScene::setKernelColorKeys(QHash<int, quint32> keys) {
  m_colorKeys = std::move(keys);
}

QColor GraphScene::kernelFill(int id) const {
  auto it = m_colorKeys.constFind(id);
  return kernelColor(it == m_colorKeys.constEnd() ? qHash(id) : *it, m_colors.dark);
}

void GraphScene::setHeat(std::vector<double> values) {
  m_heat = values.size() == m_nodes.size() ? std::move(values) : std::vector<double>();
  update();
}

void GraphScene::setEdgeBoundaries(std::vector<int> kinds) {
  m_edgeBoundaries = kinds.size() == m_edges.size() ? std::move(kinds) : std::vector<int>();
  for (EdgeItem* e : m_edges) e->update();
}

int GraphScene::edgeBoundary(int edge) const {
  return edge >= 0 && static_cast<size_t>(edge) < m_edgeBoundaries.size() &&
                 m_edgeBoundaries.size() == m_edges.size()
             ? m_edgeBoundaries[static_cast<size_t>(edge)]
             : -1;
}

BoundaryCounts GraphScene::boundaryCounts() const {
  BoundaryCounts n{};
  if (m_edgeBoundaries.size() != m_edges.size()) return n;
  for (int k : m_edgeBoundaries)
    if (k >= 0 && static_cast<size_t>(k) < n.size()) ++n[static_cast<size_t>(k)];
  return n;
}

double GraphScene::heatOf(int box) const {
  return box >= 0 && static_cast<size_t>(box) < m_heat.size() ? m_heat[box] : std::nan("");
}

void GraphScene::setClustersVisible(bool on) {
  m_clustersVisible = on;
  for (ClusterItem* c : m_clusters) c->setVisible(on);
}

int GraphScene::clusterKernelCount() const {
  QSet<int> kernels;
  for (const ClusterItem* c : m_clusters) kernels.insert(c->kernel());
  return static_cast<int>(kernels.size());
}

void GraphScene::rebuildClusters() {
  for (ClusterItem* c : m_clusters) {
    removeItem(c);
    delete c;
  }
  m_clusters.clear();
  const quint64 generation = ++m_clusterGeneration;
  m_clustersPending = false;
  if (m_kernels.empty() || !m_graph) {
    emit clustersReady();
    return;
  }
  std::vector<QRectF> rects(m_nodes.size());
  std::vector<std::vector<int>> ids(m_nodes.size());
  for (size_t b = 0; b < m_nodes.size(); ++b) {
    // A collapsed kernel is its own outline already.
    if (m_graph->nodes[b].kind == SceneNode::Kind::Kernel) continue;
    rects[b] = m_nodes[b]->boxRect().translated(m_nodes[b]->pos());
    ids[b] = m_kernels[b];
  }
  // The outlines of big kernels take long to make: off the GUI thread, the newest kept.
  m_clustersPending = true;
  auto* watcher = new QFutureWatcher<std::vector<ClusterShape>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != m_clusterGeneration) return;  // kernels or graph changed meanwhile
    applyClusters(watcher->result());
  });
  watcher->setFuture(QtConcurrent::run(
      [rects = std::move(rects), ids = std::move(ids)] { return computeClusters(rects, ids); }));
}

void GraphScene::applyClusters(std::vector<ClusterShape> shapes) {
  m_clustersPending = false;
  m_clusters.reserve(shapes.size());
  for (ClusterShape& s : shapes) {
    const int kernel = s.kernel;
    QString label = m_clusterLabels.value(kernel, QStringLiteral("K%1").arg(kernel));
    auto* item = new ClusterItem(this, std::move(s), label);
    item->setVisible(m_clustersVisible);
    addItem(item);
    m_clusters.push_back(item);
  }
  emit clustersReady();
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  QGraphicsScene::mouseDoubleClickEvent(event);
  for (QGraphicsItem* it : items(event->scenePos())) {
    if (it->type() == NodeItem::Type) {
      emit boxDoubleClicked(static_cast<NodeItem*>(it)->box());
      event->accept();
      return;
    }
    if (it->type() == ClusterItem::Type && it->isVisible() &&
        static_cast<ClusterItem*>(it)->cluster().contains(event->scenePos())) {
      emit clusterDoubleClicked(static_cast<ClusterItem*>(it)->kernel());
      event->accept();
      return;
    }
  }
}

const std::vector<int>* GraphScene::kernelsOf(int box) const {
  return box >= 0 && static_cast<size_t>(box) < m_kernels.size() ? &m_kernels[box] : nullptr;
}

int GraphScene::selectedCount() const {
  int n = 0;
  for (QGraphicsItem* it : selectedItems()) n += it->type() == NodeItem::Type ? 1 : 0;
  return n;
}

void GraphScene::selectBoxes(const std::vector<int>& boxes) {
  {
    const QSignalBlocker block(this);
    clearSelection();
    for (int b : boxes)
      if (NodeItem* item = nodeItem(b)) item->setSelected(true);
  }
  setCurrent(boxes.empty() ? -1 : boxes.front());
}

void GraphScene::setMatches(const QSet<int>& boxes) {
  for (int b : std::as_const(m_matches))
    if (NodeItem* item = nodeItem(b)) item->setMatch(false);
  m_matches = boxes;
  for (int b : std::as_const(m_matches))
    if (NodeItem* item = nodeItem(b)) item->setMatch(true);
}

void GraphScene::selectBox(int box) {
  NodeItem* item = nodeItem(box);
  if (item && item->isSelected() && selectedItems().size() == 1) return;
  {
    const QSignalBlocker block(this);
    clearSelection();
    if (item) item->setSelected(true);
  }
  onSelectionChanged();
}

void GraphScene::onSelectionChanged() {
  int box = -1;
  const QList<QGraphicsItem*> items = selectedItems();
  for (QGraphicsItem* it : items)
    if (it->type() == NodeItem::Type) box = static_cast<NodeItem*>(it)->box();
  setCurrent(box);
}

void GraphScene::setCurrent(int box) {
  if (box == m_selected) return;
  if (m_selected >= 0 && static_cast<size_t>(m_selected) < m_edgesOfBox.size())
    for (int e : m_edgesOfBox[m_selected]) m_edges[e]->setHighlighted(false);
  m_selected = box;
  if (box >= 0)
    for (int e : m_edgesOfBox[box]) m_edges[e]->setHighlighted(true);
  emit boxSelected(box);
}

}  // namespace souffle::views
