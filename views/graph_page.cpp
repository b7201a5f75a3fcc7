#include "views/graph_page.h"

#include <QAction>
#include <QFileDialog>
#include <QGraphicsItem>
#include <QMenu>
#include <QPainter>
#include <QSvgGenerator>
#include <QVBoxLayout>
#include <algorithm>

#include "views/cluster_items.h"
#include "views/explorer_session.h"
#include "views/graph_view.h"

namespace souffle::views {

GraphPage::GraphPage(QWidget* parent)
    : QWidget(parent),
      m_panel(new GraphPanel(this)),
      m_teLevelAction(new QAction(tr("&TE-level graph"), this)) {
  m_teLevelAction->setCheckable(true);
  m_teLevelAction->setShortcut(QKeySequence(tr("Ctrl+T")));
  connect(m_teLevelAction, &QAction::toggled, this, &GraphPage::setTeLevel);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_panel);
  GraphView* view = m_panel->view();
  view->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(view, &QWidget::customContextMenuRequested, this, [this, view](const QPoint& pos) {
    if (m_contextActions.isEmpty()) return;
    // Right-clicking an unselected node selects it first, as file managers do.
    for (QGraphicsItem* item : view->items(pos))
      if (item->type() == NodeItem::Type) {
        if (!item->isSelected()) m_panel->scene()->selectBox(static_cast<NodeItem*>(item)->box());
        break;
      }
    QMenu menu(this);
    menu.setToolTipsVisible(true);  // the edits' tooltips preview what they would change
    menu.addActions(m_contextActions);
    menu.exec(view->viewport()->mapToGlobal(pos));
  });
}

void GraphPage::showGraph(ModelDataPtr data) {
  m_data = std::move(data);
  if (!m_data) return;
  // Aliasing pointers keep the whole ModelData alive as long as the scene shows its graph.
  std::shared_ptr<const SceneGraph> g(m_data, m_teLevel ? &m_data->teGraph : &m_data->opGraph);
  m_panel->showGraph(g);
}

void GraphPage::setTeLevel(bool on) {
  if (m_teLevelAction->isChecked() != on) {
    m_teLevelAction->setChecked(on);  // re-enters through toggled
    return;
  }
  if (m_teLevel == on) return;
  m_teLevel = on;
  emit teLevelChanged(on);
}

void GraphPage::clear() {
  m_data.reset();
  m_panel->clear();
}

void GraphPage::attach(ExplorerSession* session) {
  m_session = session;
  connect(m_panel, &GraphPanel::boxSelected, this, [this, session](int box) {
    const SceneGraph* g = m_panel->scene()->graph();
    if (!g || box < 0 || static_cast<size_t>(box) >= g->nodes.size()) return;
    const SceneNode& node = g->nodes[static_cast<size_t>(box)];
    NodeSelection n;
    n.box = box;
    n.node = node.onnxNode;
    n.te = node.kind == SceneNode::Kind::TeOp ? node.subtitle : QString();
    n.byProgram = m_selectingNodes;
    if (const PlanDataPtr plan = session->plan()) {
      const auto& ks = plan->kernelsOf(g->teLevel);
      if (static_cast<size_t>(box) < ks.size() && !ks[static_cast<size_t>(box)].empty())
        n.partition = ks[static_cast<size_t>(box)].front();
    }
    session->selectNode(n);
  });
  connect(session, &ExplorerSession::nodesActivated, this, &GraphPage::selectNodes);
  connect(session, &ExplorerSession::stageActivated, this,
          [this](int, int, const QStringList& nodes, const QStringList& tes) {
            selectNodes(nodes, tes);
          });
  connect(session, &ExplorerSession::measuredChanged, this, &GraphPage::refreshHeat);
  connect(session, &ExplorerSession::planChanged, this, &GraphPage::setPlan);
}

void GraphPage::setPlan(PlanDataPtr plan) {
  m_plan = std::move(plan);
  m_panel->setPlan(m_plan);
}

void GraphPage::setPlanShown(bool on) {
  if (on == m_planShown) return;
  m_planShown = on;
  applyPlan();
}

void GraphPage::applyPlan() {
  GraphScene* scene = m_panel->scene();
  const SceneGraph* g = scene->graph();
  if (!g || !m_plan || m_plan->model != m_data || !m_planShown) {
    scene->setKernels({});
    m_panel->setEdgeBoundaries({});
    if (g && !m_planShown) refreshHeat();  // which redraws the minimap without the plan too
    return;
  }
  // Kernel ids (not partition indices) are what the badges and palette show.
  std::vector<std::vector<int>> ids = m_panel->shownKernels(m_plan->kernelsOf(g->teLevel));
  std::vector<QString> names;
  QHash<int, quint32> keys;
  for (size_t i = 0; i < m_plan->identities.size(); ++i) {
    names.push_back(m_plan->identities[i].shortName);
    keys.insert(m_plan->plan->partitions[i].id, m_plan->identities[i].colorKey);
  }
  scene->setClusterLabels(clusterLabels(*m_plan->plan, names));
  scene->setKernelColorKeys(std::move(keys));
  for (auto& ks : ids)
    for (int& k : ks) k = m_plan->plan->partitions[k].id;
  scene->setKernels(std::move(ids));
  // Edges inside a kernel drawn by the stage boundary between their ends (edges of a collapsed
  // graph through the boxes they stand for).
  const EdgeKinds& kinds = m_plan->edgeKindsOf(g->teLevel);
  std::vector<int> edgeKinds(g->edges.size(), -1);
  for (size_t e = 0; e < g->edges.size(); ++e) {
    const int from = g->baseBox(g->edges[e].from), to = g->baseBox(g->edges[e].to);
    if (from < 0 || to < 0) continue;
    auto it = kinds.constFind(edgeKey(from, to));
    if (it != kinds.constEnd()) edgeKinds[e] = static_cast<int>(*it);
  }
  m_panel->setEdgeBoundaries(std::move(edgeKinds));
  refreshHeat();
}

void GraphPage::setHeatMetric(HeatMetric metric) {
  m_heatMetric = metric;
  refreshHeat();
}

void GraphPage::refreshHeat() {
  const SceneGraph* g = m_panel->scene()->graph();
  if (!g || !m_plan || m_plan->model != m_data || m_heatMetric == HeatMetric::None) {
    m_panel->setHeatMap({});
    return;
  }
  m_panel->setHeatMap(computeHeat(m_heatMetric, *g,
                                  m_panel->shownKernels(m_plan->kernelsOf(g->teLevel)), *m_plan,
                                  m_measured ? m_measured() : MeasuredTimes()));
}

void GraphPage::selectBox(int box) {
  m_panel->scene()->selectBox(box);
  m_panel->view()->reveal(box);
}

int GraphPage::selectPartition(int k) {
  const SceneGraph* g = m_panel->scene()->graph();
  if (!g || !m_plan) return -1;
  const std::vector<int> boxes = m_panel->shownBoxes(m_plan->boxesOf(g->teLevel, k));
  if (boxes.empty()) return -1;
  m_panel->scene()->selectBoxes(boxes);
  m_panel->view()->reveal(boxes.front());
  return boxes.front();
}

void GraphPage::selectNodes(const QStringList& nodes, const QStringList& tes) {
  const SceneGraph* g = m_panel->scene()->graph();
  if (!g) return;
  std::vector<int> boxes;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const SceneNode& n = g->nodes[i];
    const bool hit =
        g->teLevel ? n.kind == SceneNode::Kind::TeOp &&
                         (tes.contains(n.subtitle) || (tes.isEmpty() && nodes.contains(n.onnxNode)))
                   : n.kind == SceneNode::Kind::Op && nodes.contains(n.onnxNode);
    if (hit) boxes.push_back(static_cast<int>(i));
  }
  if (boxes.empty()) return;
  m_selectingNodes = true;
  m_panel->scene()->selectBoxes(boxes);
  m_panel->view()->reveal(boxes.front());
  m_selectingNodes = false;
}

QString GraphPage::selectedAnchor() const {
  const SceneGraph* g = m_panel->scene()->graph();
  const int box = m_panel->scene()->selectedBox();
  if (!g || box < 0 || box >= int(g->nodes.size())) return {};
  const SceneNode& n = g->nodes[size_t(box)];
  if (n.kind == SceneNode::Kind::TeOp) return n.subtitle;
  if (n.kind == SceneNode::Kind::Op) return n.onnxNode;
  return {};
}

std::vector<int> GraphPage::selectedPartitions() const {
  std::vector<int> parts;
  if (!m_plan) return parts;
  // Nodes selected in the graph (several kernels' worth, e.g. by Ctrl+click).
  std::vector<int> ids;
  for (QGraphicsItem* item : m_panel->scene()->selectedItems())
    if (item->type() == NodeItem::Type)
      if (const std::vector<int>* k =
              m_panel->scene()->kernelsOf(static_cast<NodeItem*>(item)->box()))
        for (int x : *k)
          if (std::find(ids.begin(), ids.end(), x) == ids.end()) ids.push_back(x);
  // kernelsOf gives kernel ids (badges); map them back to partition indices.
  for (int id : ids)
    for (size_t p = 0; p < m_plan->plan->partitions.size(); ++p)
      if (m_plan->plan->partitions[p].id == id) parts.push_back(int(p));
  return parts;
}

QList<QAction*> GraphPage::findActions() {
  QAction* find = new QAction(tr("&Find node…"), this);
  find->setShortcut(QKeySequence::Find);
  connect(find, &QAction::triggered, m_panel, &GraphPanel::focusSearch);
  QAction* next = new QAction(tr("Find &next"), this);
  next->setShortcut(QKeySequence::FindNext);
  connect(next, &QAction::triggered, m_panel, &GraphPanel::findNext);
  QAction* previous = new QAction(tr("Find &previous"), this);
  previous->setShortcut(QKeySequence::FindPrevious);
  connect(previous, &QAction::triggered, m_panel, &GraphPanel::findPrevious);
  return {find, next, previous};
}

QList<QAction*> GraphPage::zoomActions() {
  GraphView* view = m_panel->view();
  QAction* fit = new QAction(tr("&Fit graph"), this);
  fit->setShortcut(QKeySequence(Qt::Key_F));
  connect(fit, &QAction::triggered, view, &GraphView::fit);
  QAction* in = new QAction(tr("Zoom &in"), this);
  in->setShortcuts({QKeySequence(tr("Ctrl+=")), QKeySequence(QKeySequence::ZoomIn)});
  connect(in, &QAction::triggered, view, &GraphView::zoomIn);
  QAction* out = new QAction(tr("Zoom &out"), this);
  out->setShortcuts({QKeySequence(tr("Ctrl+-")), QKeySequence(QKeySequence::ZoomOut)});
  connect(out, &QAction::triggered, view, &GraphView::zoomOut);
  QAction* actual = new QAction(tr("&Actual size"), this);
  actual->setShortcut(QKeySequence(tr("Ctrl+0")));
  connect(actual, &QAction::triggered, view, &GraphView::resetZoom);
  return {fit, in, out, actual};
}

QAction* GraphPage::minimapAction() {
  QAction* minimap = new QAction(tr("&Minimap"), this);
  minimap->setCheckable(true);
  minimap->setChecked(true);
  minimap->setShortcut(QKeySequence(tr("Ctrl+M")));
  connect(minimap, &QAction::toggled, m_panel, &GraphPanel::setMinimapVisible);
  return minimap;
}

QList<QAction*> GraphPage::clusterActions() {
  QAction* clusters = new QAction(tr("Kernel &clusters"), this);
  clusters->setCheckable(true);
  clusters->setChecked(true);
  clusters->setShortcut(QKeySequence(tr("Ctrl+Shift+K")));
  connect(clusters, &QAction::toggled, m_panel, &GraphPanel::setClustersVisible);
  QAction* collapseAll = new QAction(tr("C&ollapse all kernels"), this);
  collapseAll->setShortcut(QKeySequence(tr("Ctrl+Alt+C")));
  connect(collapseAll, &QAction::triggered, m_panel, &GraphPanel::collapseAll);
  QAction* expandAll = new QAction(tr("E&xpand all kernels"), this);
  expandAll->setShortcut(QKeySequence(tr("Ctrl+Alt+E")));
  connect(expandAll, &QAction::triggered, m_panel, &GraphPanel::expandAll);
  QAction* toggle = new QAction(tr("Collapse/expand the selected &kernel"), this);
  toggle->setShortcut(QKeySequence(tr("Ctrl+Alt+K")));
  toggle->setToolTip(tr("Double-click a box or a kernel outline does the same"));
  connect(toggle, &QAction::triggered, this,
          [this] { m_panel->toggleBox(m_panel->scene()->selectedBox()); });
  for (QAction* a : {collapseAll, expandAll, toggle}) a->setEnabled(false);
  return {clusters, collapseAll, expandAll, toggle};
}

void GraphPage::setContextActions(const QList<QAction*>& actions) {
  m_contextActions = actions;
}

QList<QAction*> GraphPage::exportActions() {
  auto* svg = new QAction(tr("Export graph as &SVG…"), this);
  svg->setShortcut(QKeySequence(tr("Ctrl+E")));
  connect(svg, &QAction::triggered, this, [this] { exportSvg(); });
  auto* png = new QAction(tr("Export graph as &PNG…"), this);
  png->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
  connect(png, &QAction::triggered, this, [this] { exportPng(); });
  return {svg, png};
}

void GraphPage::exportSvg(const QString& given) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export graph as SVG"), QString(),
                                        tr("SVG images (*.svg)"));
  writeSvg(path, window()->windowTitle());
}

void GraphPage::exportPng(const QString& given) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export graph as PNG"), QString(),
                                        tr("PNG images (*.png)"));
  if (path.isEmpty() || !m_panel->scene()->graph()) return;
  if (!writePng(path) && m_session) m_session->say(tr("Could not write %1").arg(path), 8000);
}

bool GraphPage::writeSvg(const QString& path, const QString& title) {
  if (path.isEmpty() || !m_panel->scene()->graph()) return false;
  const QRectF r = m_panel->scene()->sceneRect();
  QSvgGenerator gen;
  gen.setFileName(path);
  gen.setSize(r.size().toSize());
  gen.setViewBox(QRectF(QPointF(), r.size()));
  gen.setTitle(title);
  QPainter p(&gen);
  m_panel->renderExport(p, QRectF(QPointF(), r.size()));
  return true;
}

bool GraphPage::writePng(const QString& path) {
  if (path.isEmpty() || !m_panel->scene()->graph()) return false;
  const QRectF r = m_panel->scene()->sceneRect();
  // Cap the image at about 16k pixels on the long side so huge graphs still export.
  const double scale = std::min(2.0, 16000.0 / std::max(r.width(), r.height()));
  QImage img((r.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
  img.fill(m_panel->scene()->colors().background);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  m_panel->renderExport(p, QRectF(QPointF(), QSizeF(img.size())));
  p.end();
  return img.save(path);
}

}  // namespace souffle::views
