#include "views/graph_view.h"

#include <QDataStream>
#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPainter>
#include <QSaveFile>
#include <QScrollBar>
#include <QStandardPaths>
#include <QToolButton>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>
#include <cmath>

#include "views/theme.h"

namespace souffle::views {

namespace {

constexpr quint32 kCacheMagic = 0x534c4f31;  // "SLO1"
constexpr quint32 kCacheVersion = 1;
// dot gets this long to finish before a preliminary layered picture is shown (showing it for a
// graph dot lays out at once would only flicker).
constexpr int kQuickDelayMs = 600;
// The narrowest the minimap draws a graph (pixels), however tall it is.
constexpr double kMinimapStrip = 24;

QString cacheDir() {
  return QStandardPaths::writableLocation(QStandardPaths::CacheLocation) +
         QStringLiteral("/layouts");
}

QString cacheFile(const QString& dir, uint64_t key) {
  return dir + QStringLiteral("/") + QString::number(key, 16) + QStringLiteral(".layout");
}

bool readCached(const QString& path, const LayoutInput& in, LayoutResult* out) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return false;
  QDataStream s(&f);
  quint32 magic = 0, version = 0;
  s >> magic >> version;
  if (magic != kCacheMagic || version != kCacheVersion) return false;
  QList<QPointF> centers;
  QList<QPainterPath> paths;
  QRectF bounds;
  s >> centers >> paths >> bounds;
  if (s.status() != QDataStream::Ok || static_cast<size_t>(centers.size()) != in.sizes.size() ||
      static_cast<size_t>(paths.size()) != in.edges.size())
    return false;
  out->centers.assign(centers.begin(), centers.end());
  out->edgePaths.assign(paths.begin(), paths.end());
  out->bounds = bounds;
  out->engine = QStringLiteral("dot, cached");
  return true;
}

void writeCached(const QString& path, const LayoutResult& r) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return;  // a cache that cannot be written is no error
  QDataStream s(&f);
  s << kCacheMagic << kCacheVersion;
  s << QList<QPointF>(r.centers.begin(), r.centers.end());
  s << QList<QPainterPath>(r.edgePaths.begin(), r.edgePaths.end());
  s << r.bounds;
  f.commit();
}

// Runs on a worker thread: the disk cache first, dot otherwise (and the result is cached, even
// when the user has moved on by then, so the next visit is instant). A graph too big for dot gets
// the ranked layout, which is faster to make again than to read back, so it is not cached.
LayoutResult dotTask(LayoutInput in, QString dir) {
  if (in.sizes.size() > kRankedLayoutAbove) return layoutRanked(in);
  const QString path = cacheFile(dir, in.hash());
  LayoutResult r;
  if (readCached(path, in, &r)) return r;
  r = layoutWithDot(in);
  if (r.valid()) writeCached(path, r);
  return r;
}

}  // namespace

// ------------------------------------------------------------------------------------ GraphView

GraphView::GraphView(GraphScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
  setDragMode(ScrollHandDrag);
  setTransformationAnchor(AnchorUnderMouse);
  setResizeAnchor(AnchorViewCenter);
  setViewportUpdateMode(SmartViewportUpdate);
  setOptimizationFlags(DontSavePainterState | DontAdjustForAntialiasing);
  setCacheMode(CacheBackground);
  setRenderHint(QPainter::Antialiasing, true);
  setRenderHint(QPainter::TextAntialiasing, true);
  setFrameShape(QFrame::NoFrame);
  setFocusPolicy(Qt::StrongFocus);
}

void GraphView::zoomBy(double factor) {
  const double z = zoom() * factor;
  if (z < 0.01 || z > 8) return;
  scale(factor, factor);
  emit viewportChanged();
}

void GraphView::resetZoom() {
  setTransform(QTransform());
  emit viewportChanged();
}

void GraphView::fit() {
  if (!scene()) return;
  QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return;
  fitInView(r, Qt::KeepAspectRatio);
  // A tall graph fitted whole is unreadable; fit its width instead, capped to a legible scale,
  // and start at its top where the inputs are.
  const double minReadable = 0.5;
  if (zoom() < minReadable) {
    double widthFit = viewport()->width() / r.width();
    double z = std::clamp(widthFit, minReadable, 1.0);
    setTransform(QTransform::fromScale(z, z));
    // Centre on the boxes of the top band, not on the scene: long skip edges that dot routes
    // far to one side widen the scene, and its centre can then be empty space.
    const double bandHeight = viewport()->height() / z;
    QRectF boxes;
    for (QGraphicsItem* item : scene()->items(QRectF(r.left(), r.top(), r.width(), bandHeight)))
      if (item->type() == NodeItem::Type) boxes |= item->sceneBoundingRect();
    const double x = boxes.isValid() ? boxes.center().x() : r.center().x();
    centerOn(x, r.top() + bandHeight / 2);
  } else if (zoom() > 1.2) {
    setTransform(QTransform::fromScale(1.2, 1.2));
    centerOn(r.center());
  }
  emit viewportChanged();
}

void GraphView::reveal(int box) {
  auto* s = static_cast<GraphScene*>(scene());
  NodeItem* item = s ? s->nodeItem(box) : nullptr;
  if (!item) return;
  if (zoom() < 0.6) setTransform(QTransform::fromScale(0.9, 0.9));
  centerOn(item);
  emit viewportChanged();
}

void GraphView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ShiftModifier) {
    QGraphicsView::wheelEvent(event);  // Shift+wheel scrolls
    return;
  }
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  zoomBy(std::pow(1.15, steps));
  event->accept();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  emit viewportChanged();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  emit viewportChanged();
}

// -------------------------------------------------------------------------------------- Minimap

Minimap::Minimap(GraphView* view, QWidget* parent) : QWidget(parent), m_view(view) {
  setFixedSize(sizeHint());
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move the view"));
  connect(view, &GraphView::viewportChanged, this, qOverload<>(&QWidget::update));
}

QRectF Minimap::targetRect() const {
  QRectF area = QRectF(rect()).adjusted(4, 4, -4, -4);
  if (m_sceneRect.isEmpty()) return area;
  QSizeF s = m_sceneRect.size().scaled(area.size(), Qt::KeepAspectRatio);
  // A graph thousands of ranks tall would be a hairline (or nothing) to scale: it gets a strip
  // wide enough to see and to click, stretched across.
  s = s.expandedTo(
      QSizeF(std::min(area.width(), kMinimapStrip), std::min(area.height(), kMinimapStrip)));
  return QRectF(area.center() - QPointF(s.width() / 2, s.height() / 2), s);
}

void Minimap::rebuild() {
  QGraphicsScene* scene = m_view->scene();
  m_sceneRect = scene ? scene->sceneRect() : QRectF();
  const QRectF t = targetRect();
  const qreal dpr = devicePixelRatioF();
  m_pixmap = QPixmap((t.size() * dpr).toSize());
  m_pixmap.setDevicePixelRatio(dpr);
  m_pixmap.fill(Qt::transparent);
  if (scene && !m_sceneRect.isEmpty() && !m_pixmap.isNull()) {
    QPainter p(&m_pixmap);
    const double aspect = m_sceneRect.width() / m_sceneRect.height();
    const bool stretched = std::abs(t.width() / t.height() - aspect) > 0.01 * aspect;
    scene->render(&p, QRectF(QPointF(), t.size()), m_sceneRect,
                  stretched ? Qt::IgnoreAspectRatio : Qt::KeepAspectRatio);
  }
  update();
}

void Minimap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette& pal = palette();
  // Opaque: graph lines showing through the overview read as part of it.
  const QColor bg = pal.color(QPalette::AlternateBase);
  p.setPen(QPen(pal.color(QPalette::Mid), 1));
  p.setBrush(bg);
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
  const QRectF t = targetRect();
  p.drawPixmap(t.topLeft(), m_pixmap);
  if (m_sceneRect.isEmpty()) return;
  QRectF visible = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
  const double sx = t.width() / m_sceneRect.width(), sy = t.height() / m_sceneRect.height();
  QRectF frame(t.left() + (visible.left() - m_sceneRect.left()) * sx,
               t.top() + (visible.top() - m_sceneRect.top()) * sy, visible.width() * sx,
               visible.height() * sy);
  frame = frame.intersected(t);
  QColor hl = pal.color(QPalette::Highlight);
  p.setPen(QPen(hl, 1.5));
  hl.setAlphaF(0.15);
  p.setBrush(hl);
  p.drawRect(frame);
}

void Minimap::moveViewTo(QPointF pos) {
  const QRectF t = targetRect();
  if (m_sceneRect.isEmpty() || t.isEmpty()) return;
  QPointF scenePos(m_sceneRect.left() + (pos.x() - t.left()) / t.width() * m_sceneRect.width(),
                   m_sceneRect.top() + (pos.y() - t.top()) / t.height() * m_sceneRect.height());
  m_view->centerOn(scenePos);
  update();
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  moveViewTo(event->position());
}

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) moveViewTo(event->position());
}

// ----------------------------------------------------------------------------- HeatLegendWidget

HeatLegendWidget::HeatLegendWidget(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  hide();
}

void HeatLegendWidget::setLegend(const HeatLegend& legend) {
  m_legend = legend;
  setFixedSize(300, static_cast<int>(std::ceil(legendHeight(legend))));
  update();
}

void HeatLegendWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paintHeatLegend(p, QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), m_legend, isDark(palette()));
}

// ----------------------------------------------------------------------------------- GraphPanel

GraphPanel::GraphPanel(QWidget* parent)
    : QWidget(parent),
      m_scene(new GraphScene(this)),
      m_dotWatcher(new QFutureWatcher<LayoutResult>(this)),
      m_quickWatcher(new QFutureWatcher<LayoutResult>(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);

  m_searchBar = new QWidget(this);
  auto* bar = new QHBoxLayout(m_searchBar);
  bar->setContentsMargins(6, 4, 6, 4);
  m_search = new QLineEdit(m_searchBar);
  m_search->setPlaceholderText(tr("Find node by name or op type (Ctrl+F)"));
  m_search->setClearButtonEnabled(true);
  m_searchCount = new QLabel(m_searchBar);
  m_searchCount->setMinimumWidth(90);
  auto* prev = new QToolButton(m_searchBar);
  prev->setText(QStringLiteral("▲"));
  prev->setToolTip(tr("Previous match (Shift+Enter)"));
  auto* next = new QToolButton(m_searchBar);
  next->setText(QStringLiteral("▼"));
  next->setToolTip(tr("Next match (Enter)"));
  bar->addWidget(m_search, 1);
  bar->addWidget(m_searchCount);
  bar->addWidget(prev);
  bar->addWidget(next);
  layout->addWidget(m_searchBar);

  m_view = new GraphView(m_scene, this);
  layout->addWidget(m_view, 1);
  m_minimap = new Minimap(m_view, m_view);
  m_legend = new HeatLegendWidget(m_view);
  m_boundaryLegend = new BoundaryLegendWidget(m_view);

  connect(m_search, &QLineEdit::textChanged, this, &GraphPanel::updateSearch);
  connect(m_search, &QLineEdit::returnPressed, this,
          [this] { step(QGuiApplication::keyboardModifiers() & Qt::ShiftModifier ? -1 : 1); });
  connect(prev, &QToolButton::clicked, this, &GraphPanel::findPrevious);
  connect(next, &QToolButton::clicked, this, &GraphPanel::findNext);
  connect(m_scene, &GraphScene::boxSelected, this, &GraphPanel::boxSelected);
  connect(m_scene, &GraphScene::boxDoubleClicked, this, &GraphPanel::toggleBox);
  connect(m_scene, &GraphScene::clusterDoubleClicked, this, [this](int kernelId) {
    if (!m_plan) return;
    for (size_t k = 0; k < m_plan->plan->partitions.size(); ++k)
      if (m_plan->plan->partitions[k].id == kernelId) collapseKernel(static_cast<int>(k));
  });
  connect(m_view, &GraphView::viewportChanged, this, [this] {
    m_minimap->move(m_view->width() - m_minimap->width() - 12,
                    m_view->height() - m_minimap->height() - 12);
    m_legend->move(m_view->width() - m_legend->width() - 12, 12);
    m_boundaryLegend->move(12, m_view->height() - m_boundaryLegend->height() - 12);
  });

  m_quickTimer.setSingleShot(true);
  connect(&m_quickTimer, &QTimer::timeout, this, [this] {
    if (!m_dotWatcher->isFinished() && m_graph)
      m_quickWatcher->setFuture(QtConcurrent::run(layoutLayered, m_input));
  });
  connect(m_quickWatcher, &QFutureWatcher<LayoutResult>::finished, this, [this] {
    const quint64 gen = m_quickWatcher->property("generation").toULongLong();
    if (gen != m_generation || m_final || m_quickWatcher->isCanceled()) return;
    apply(m_quickWatcher->result(), false, m_key);
  });
  connect(m_dotWatcher, &QFutureWatcher<LayoutResult>::finished, this, [this] {
    const quint64 gen = m_dotWatcher->property("generation").toULongLong();
    if (gen != m_generation || m_dotWatcher->isCanceled()) return;
    LayoutResult r = m_dotWatcher->result();
    if (!r.valid()) r = layoutLayered(m_input);  // dot refused: keep a usable picture
    m_cache.insert(m_key, std::make_shared<const LayoutResult>(r));
    apply(r, true, m_key);
  });
}

GraphPanel::~GraphPanel() {
  // Layout tasks hold only copies of their input; waiting keeps shutdown orderly.
  m_dotWatcher->waitForFinished();
  m_quickWatcher->waitForFinished();
}

void GraphPanel::clear() {
  ++m_generation;
  m_quickTimer.stop();
  m_graph.reset();
  m_scene->clearGraph();
  m_final = false;
  m_layoutInfo.clear();
  m_minimap->rebuild();
}

void GraphPanel::showGraph(std::shared_ptr<const SceneGraph> graph) {
  m_base = std::move(graph);
  present();
}

void GraphPanel::setPlan(PlanDataPtr plan) {
  m_plan = std::move(plan);
  const bool had = !m_collapsed.empty();
  m_collapsed.clear();
  if (m_collapseAll && m_plan && m_base) m_collapsed = drawnPartitions(*m_plan, m_base->teLevel);
  if (had || !m_collapsed.empty()) present();
}

void GraphPanel::present() {
  const bool planFits =
      m_plan && m_base &&
      (m_base.get() == &m_plan->model->opGraph || m_base.get() == &m_plan->model->teGraph);
  if (!planFits || m_collapsed.empty()) {
    m_collapsedView = {};
    showShown(m_base);
    return;
  }
  m_collapsedView = collapseKernels(*m_base, *m_plan, m_collapsed);
  showShown(m_collapsedView.graph);
}

std::vector<std::vector<int>> GraphPanel::shownKernels(
    const std::vector<std::vector<int>>& base) const {
  if (!m_collapsedView.graph || m_graph != m_collapsedView.graph) return base;
  return m_collapsedView.kernels;
}

std::vector<int> GraphPanel::shownBoxes(const std::vector<int>& baseBoxes) const {
  if (!m_collapsedView.graph || m_graph != m_collapsedView.graph) return baseBoxes;
  std::vector<int> out;
  for (int b : baseBoxes) {
    if (b < 0 || static_cast<size_t>(b) >= m_collapsedView.shownBox.size()) continue;
    const int s = m_collapsedView.shownBox[b];
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

void GraphPanel::collapseKernel(int partition) {
  if (!m_plan || partition < 0 || m_collapsed.count(partition)) return;
  m_collapsed.insert(partition);
  present();
}

void GraphPanel::expandKernel(int partition) {
  if (!m_collapsed.erase(partition)) return;
  m_collapseAll = false;
  present();
}

void GraphPanel::toggleBox(int box) {
  const SceneGraph* g = m_scene->graph();
  if (!g || box < 0 || static_cast<size_t>(box) >= g->nodes.size()) return;
  if (g->nodes[box].kind == SceneNode::Kind::Kernel) {
    expandKernel(g->nodes[box].index);
    return;
  }
  const std::vector<std::vector<int>> ks =
      m_plan ? shownKernels(m_plan->kernelsOf(g->teLevel)) : std::vector<std::vector<int>>();
  if (static_cast<size_t>(box) < ks.size() && !ks[box].empty()) collapseKernel(ks[box].front());
}

void GraphPanel::collapseAll() {
  if (!m_plan || !m_base) return;
  m_collapseAll = true;
  m_collapsed = drawnPartitions(*m_plan, m_base->teLevel);
  present();
}

void GraphPanel::expandAll() {
  m_collapseAll = false;
  if (m_collapsed.empty()) return;
  m_collapsed.clear();
  present();
}

void GraphPanel::setClustersVisible(bool on) {
  m_scene->setClustersVisible(on);
  m_minimap->rebuild();
}

void GraphPanel::showShown(std::shared_ptr<const SceneGraph> graph) {
  clear();
  m_graph = std::move(graph);
  if (!m_graph) return;
  m_input = LayoutInput{GraphScene::measure(*m_graph), {}};
  m_input.edges.reserve(m_graph->edges.size());
  for (const SceneEdge& e : m_graph->edges) m_input.edges.push_back({e.from, e.to});
  m_key = m_input.hash();
  if (auto it = m_cache.find(m_key); it != m_cache.end()) {
    apply(**it, true, m_key);
    return;
  }
  startLayout();
}

void GraphPanel::startLayout() {
  m_dotWatcher->setProperty("generation", m_generation);
  m_quickWatcher->setProperty("generation", m_generation);
  m_dotWatcher->setFuture(QtConcurrent::run(dotTask, m_input, cacheDir()));
  // The ranked layout is quick: no preliminary picture before it.
  if (m_input.sizes.size() <= kRankedLayoutAbove) m_quickTimer.start(kQuickDelayMs);
}

void GraphPanel::apply(const LayoutResult& layout, bool final, uint64_t key) {
  if (key != m_key || !m_graph) return;
  const bool first = m_scene->graph() != m_graph.get();
  // The final layout replaces a preliminary one: refit unless the user already picked a node.
  const bool refit = first || (!m_final && m_scene->selectedBox() < 0);
  const QPointF centre = m_view->mapToScene(m_view->viewport()->rect().center());
  m_scene->setGraph(m_graph, layout, m_input.sizes);
  m_final = final;
  m_layoutInfo = QStringLiteral("%1 layout, %2 ms").arg(layout.engine).arg(layout.ms, 0, 'f', 0);
  if (refit) {
    m_view->fit();
  } else {
    m_view->centerOn(centre);  // a relayout keeps the user's place as well as it can
  }
  m_minimap->rebuild();
  updateSearch();
  emit drawn(final);
}

void GraphPanel::setHeatMap(const HeatMap& heat) {
  m_heat = heat;
  m_scene->setHeat(heat.valid() ? heat.values : std::vector<double>());
  if (heat.valid()) {
    m_legend->setLegend(heat.legend);
    m_legend->move(m_view->width() - m_legend->width() - 12, 12);
    m_legend->show();
    m_legend->raise();
  } else {
    m_legend->hide();
  }
  m_minimap->rebuild();
}

void GraphPanel::setEdgeBoundaries(std::vector<int> kinds) {
  m_scene->setEdgeBoundaries(std::move(kinds));
  const BoundaryCounts n = m_scene->boundaryCounts();
  const bool any = std::any_of(n.begin(), n.end(), [](int c) { return c > 0; });
  m_boundaryLegend->setCounts(n);
  m_boundaryLegend->setVisible(any);
  if (any) {
    m_boundaryLegend->move(12, m_view->height() - m_boundaryLegend->height() - 12);
    m_boundaryLegend->raise();
  }
}

void GraphPanel::renderExport(QPainter& painter, const QRectF& target) {
  const QRectF r = m_scene->sceneRect();
  m_scene->render(&painter, target, r);
  if (m_boundaryLegend->isVisibleTo(this)) {
    // The boundary legend at the bottom-left, scaled as the heat legend is.
    const double s = std::max(1.0, target.width() / 1600.0);
    const double h = boundaryLegendHeight();
    painter.save();
    painter.translate(target.left() + 12 * s, target.bottom() - (h + 12) * s);
    painter.scale(s, s);
    paintBoundaryLegend(painter, QRectF(0, 0, 290, h), m_boundaryLegend->counts(),
                        m_scene->colors().dark);
    painter.restore();
  }
  if (!m_heat.valid()) return;
  // The legend at the top-left, at the size it has on screen relative to the target.
  const double s = std::max(1.0, target.width() / 1600.0);
  const QRectF area(target.left() + 12 * s, target.top() + 12 * s, 300 * s,
                    legendHeight(m_heat.legend) * s);
  painter.save();
  painter.translate(area.topLeft());
  painter.scale(s, s);
  paintHeatLegend(painter, QRectF(0, 0, 300, legendHeight(m_heat.legend)), m_heat.legend,
                  m_scene->colors().dark);
  painter.restore();
}

void GraphPanel::setColors(const GraphColors& colors) {
  m_scene->setColors(colors);
  m_minimap->rebuild();
}

void GraphPanel::setMinimapVisible(bool on) {
  m_minimap->setVisible(on);
}

void GraphPanel::setSearchText(const QString& text) {
  m_search->setText(text);
}

int GraphPanel::highlightNodes(const QStringList& onnxNodes) {
  const SceneGraph* g = m_scene->graph();
  QSet<int> boxes;
  if (g && !onnxNodes.isEmpty()) {
    const QSet<QString> wanted(onnxNodes.begin(), onnxNodes.end());
    for (size_t i = 0; i < g->nodes.size(); ++i)
      if (!g->nodes[i].onnxNode.isEmpty() && wanted.contains(g->nodes[i].onnxNode))
        boxes.insert(static_cast<int>(i));
  }
  m_scene->setMatches(boxes);
  if (!boxes.isEmpty()) m_view->reveal(*std::min_element(boxes.begin(), boxes.end()));
  return static_cast<int>(boxes.size());
}

void GraphPanel::focusSearch() {
  m_search->setFocus();
  m_search->selectAll();
}

void GraphPanel::findNext() {
  step(1);
}

void GraphPanel::findPrevious() {
  step(-1);
}

void GraphPanel::updateSearch() {
  m_matches.clear();
  m_matchIndex = -1;
  const QString q = m_search->text().trimmed();
  const SceneGraph* g = m_scene->graph();
  if (g && !q.isEmpty()) {
    for (size_t i = 0; i < g->nodes.size(); ++i) {
      const SceneNode& n = g->nodes[i];
      if (n.subtitle.contains(q, Qt::CaseInsensitive) || n.title.contains(q, Qt::CaseInsensitive))
        m_matches.push_back(static_cast<int>(i));
    }
  }
  m_scene->setMatches(QSet<int>(m_matches.begin(), m_matches.end()));
  m_searchCount->setText(q.isEmpty() ? QString() : tr("%n match(es)", nullptr, m_matches.size()));
}

void GraphPanel::step(int direction) {
  if (m_matches.isEmpty()) return;
  const int n = static_cast<int>(m_matches.size());
  m_matchIndex = ((m_matchIndex < 0 ? (direction > 0 ? -1 : 0) : m_matchIndex) + direction + n) % n;
  const int box = m_matches[m_matchIndex];
  m_scene->selectBox(box);
  m_view->reveal(box);
  m_searchCount->setText(tr("%1 of %2").arg(m_matchIndex + 1).arg(n));
}

}  // namespace souffle::views
