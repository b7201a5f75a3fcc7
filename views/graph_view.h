/// \file The graph panel: a zoomable, pannable view of the GraphScene with a minimap, a search
/// bar, and the layout pipeline (cache, a fast first picture, dot off the GUI thread).
#pragma once

#include <QFutureWatcher>
#include <QGraphicsView>
#include <QHash>
#include <QPixmap>
#include <QStringList>
#include <QTimer>
#include <QWidget>
#include <memory>
#include <set>

#include "views/collapse.h"
#include "views/graph_layout.h"
#include "views/graph_scene.h"
#include "views/heat_map.h"
#include "views/plan_runner.h"

class QLabel;
class QLineEdit;
class QToolButton;

namespace souffle::views {

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);
  double zoom() const { return transform().m11(); }

 public slots:
  void zoomIn() { zoomBy(1.25); }
  void zoomOut() { zoomBy(1 / 1.25); }
  void resetZoom();
  void fit();
  void zoomBy(double factor);
  /// Scrolls so the box is visible and, when zoomed far out, zooms in to a readable scale.
  void reveal(int box);

 signals:
  void viewportChanged();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  void resizeEvent(QResizeEvent* event) override;
};

/// An overview of the whole graph, rendered once per layout, with the visible area framed;
/// clicking or dragging in it moves the main view.
class Minimap : public QWidget {
  Q_OBJECT
 public:
  Minimap(GraphView* view, QWidget* parent);
  void rebuild();
  QSize sizeHint() const override { return {220, 160}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  QRectF targetRect() const;
  void moveViewTo(QPointF widgetPos);
  GraphView* m_view;
  QPixmap m_pixmap;
  QRectF m_sceneRect;
};

/// The heat map's legend over the graph's top-right corner.
class HeatLegendWidget : public QWidget {
  Q_OBJECT
 public:
  explicit HeatLegendWidget(QWidget* parent);
  void setLegend(const HeatLegend& legend);
  const HeatLegend& legend() const { return m_legend; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  HeatLegend m_legend;
};

class GraphPanel : public QWidget {
  Q_OBJECT
 public:
  explicit GraphPanel(QWidget* parent = nullptr);
  ~GraphPanel() override;

  /// Shows a graph; layouts are cached per graph shape, so switching back is instant. With
  /// kernels collapsed (and a plan of this graph's model) the collapsed graph is shown instead.
  void showGraph(std::shared_ptr<const SceneGraph> graph);
  void clear();

  /// The plan whose kernels can be collapsed; a new plan expands everything unless "collapse
  /// all" is on, in which case its kernels are collapsed in turn.
  void setPlan(PlanDataPtr plan);
  /// The full graph given to showGraph (the scene may show a collapsed one).
  const SceneGraph* fullGraph() const { return m_base.get(); }
  bool isCollapsed() const { return !m_collapsed.empty(); }
  const std::set<int>& collapsedKernels() const { return m_collapsed; }
  /// Per box on screen, the partition indices it shows, from the full graph's `base` (the
  /// plan's kernelsOf for this level): `base` itself when nothing is collapsed.
  std::vector<std::vector<int>> shownKernels(const std::vector<std::vector<int>>& base) const;
  /// Boxes on screen that show the given boxes of the full graph (deduplicated, in order).
  std::vector<int> shownBoxes(const std::vector<int>& baseBoxes) const;
  GraphScene* scene() const { return m_scene; }
  GraphView* view() const { return m_view; }
  Minimap* minimap() const { return m_minimap; }
  /// True once the graph on screen has its final layout (dot, or ranked for a big graph).
  bool isFinal() const { return m_final; }
  QString layoutInfo() const { return m_layoutInfo; }
  void setColors(const GraphColors& colors);
  void setMinimapVisible(bool on);
  /// The search box's text (as if typed); matches are highlighted.
  void setSearchText(const QString& text);
  int matchCount() const { return static_cast<int>(m_matches.size()); }
  /// Colours the boxes by `heat` (computed for the graph on screen) with its legend; an
  /// invalid one returns to colours by op type.
  void setHeatMap(const HeatMap& heat);
  const HeatMap& heatMap() const { return m_heat; }
  HeatLegendWidget* legend() const { return m_legend; }
  /// Draws the edges inside kernels by their stage boundary (GraphScene::setEdgeBoundaries,
  /// for the graph on screen) with the legend at the bottom-left; an empty vector removes both.
  void setEdgeBoundaries(std::vector<int> kinds);
  BoundaryLegendWidget* boundaryLegend() const { return m_boundaryLegend; }
  /// The scene as an image or SVG with what explains it (the heat map's legend).
  void renderExport(QPainter& painter, const QRectF& target);
  /// Rings the boxes standing for these ONNX nodes (the step-through's "what changed") and
  /// scrolls to the first; an empty list removes the rings. Returns how many boxes were rung.
  int highlightNodes(const QStringList& onnxNodes);

 public slots:
  void focusSearch();
  void findNext();
  void findPrevious();
  /// Collapse / expand a partition (index into the plan's partitions).
  void collapseKernel(int partition);
  void expandKernel(int partition);
  /// A double click: a kernel box expands, a box in a kernel collapses its (first) kernel.
  void toggleBox(int box);
  void collapseAll();
  void expandAll();
  void setClustersVisible(bool on);

 signals:
  /// A picture is on screen; `final` is false for the preliminary layered layout.
  void drawn(bool final);
  void boxSelected(int box);

 private:
  void apply(const LayoutResult& layout, bool final, uint64_t key);
  /// Shows the full graph or its collapsed form, whichever the state asks for.
  void present();
  void showShown(std::shared_ptr<const SceneGraph> graph);
  void startLayout();
  void updateSearch();
  void step(int direction);

  GraphScene* m_scene;
  GraphView* m_view;
  Minimap* m_minimap;
  HeatLegendWidget* m_legend;
  BoundaryLegendWidget* m_boundaryLegend;
  HeatMap m_heat;
  QWidget* m_searchBar;
  QLineEdit* m_search;
  QLabel* m_searchCount;
  std::shared_ptr<const SceneGraph> m_graph;  ///< on screen (full or collapsed)
  std::shared_ptr<const SceneGraph> m_base;   ///< the full graph
  PlanDataPtr m_plan;
  std::set<int> m_collapsed;
  bool m_collapseAll = false;
  CollapsedGraph m_collapsedView;  ///< valid while m_collapsed is non-empty
  LayoutInput m_input;
  uint64_t m_key = 0;
  quint64 m_generation = 0;
  QFutureWatcher<LayoutResult>* m_dotWatcher;
  QFutureWatcher<LayoutResult>* m_quickWatcher;
  QTimer m_quickTimer;
  QHash<quint64, std::shared_ptr<const LayoutResult>> m_cache;
  bool m_final = false;
  QString m_layoutInfo;
  QList<int> m_matches;
  int m_matchIndex = -1;
};

}  // namespace souffle::views
