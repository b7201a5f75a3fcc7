/// \file The graph scene: box and edge items drawn from a SceneGraph and a LayoutResult, with
/// level-of-detail painting so thousands of items stay fluid.
#pragma once

#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QHash>
#include <QSet>
#include <cmath>
#include <memory>
#include <vector>

#include "views/boundary_edges.h"
#include "views/cluster_items.h"
#include "views/graph_layout.h"
#include "views/scene_graph.h"
#include "views/theme.h"

namespace souffle::views {

class GraphScene;

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  NodeItem(GraphScene* scene, int box, QSizeF size);
  int type() const override { return Type; }
  int box() const { return m_box; }
  QRectF boundingRect() const override;
  /// The box itself in item coordinates (the bounding rect adds the badge strip).
  QRectF boxRect() const {
    return QRectF(-m_size.width() / 2, -m_size.height() / 2, m_size.width(), m_size.height());
  }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  void setMatch(bool match);
  bool isMatch() const { return m_match; }

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;

 private:
  GraphScene* m_scene;
  int m_box;
  QSizeF m_size;
  bool m_match = false;
};

class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  EdgeItem(GraphScene* scene, int edge, QPainterPath path);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_bounds; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  void setHighlighted(bool on);

 private:
  /// The arrow head and the label's place at half the path's length, made on first use: the
  /// length of a curve is costly, and most edges of a big graph are never painted up close.
  void ensureGeometry() const;

  GraphScene* m_scene;
  int m_edge;
  QPainterPath m_path;
  mutable QPolygonF m_arrow;
  mutable QPointF m_labelPos;
  mutable bool m_geometry = false;
  QRectF m_bounds;
  bool m_highlighted = false;
};

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  explicit GraphScene(QObject* parent = nullptr);
  ~GraphScene() override;

  /// Box sizes of a graph in scene units, from the fonts the items paint with.
  static std::vector<QSizeF> measure(const SceneGraph& graph);

  /// Replaces all items; keeps the selected box when the graph is the same (a relayout).
  /// `sizes` are the graph's measured box sizes when the caller has them (measure() otherwise).
  void setGraph(std::shared_ptr<const SceneGraph> graph, const LayoutResult& layout,
                const std::vector<QSizeF>& sizes = {});
  void clearGraph();
  const SceneGraph* graph() const { return m_graph.get(); }
  int itemCount(SceneNode::Kind kind) const;
  NodeItem* nodeItem(int box) const;

  const GraphColors& colors() const { return m_colors; }
  void setColors(const GraphColors& colors);

  /// Marks search matches (drawn with a highlight ring).
  void setMatches(const QSet<int>& boxes);
  void selectBox(int box);
  /// Selects several boxes (a partition); `boxes.front()` becomes the current box.
  void selectBoxes(const std::vector<int>& boxes);
  int selectedBox() const { return m_selected; }
  int selectedCount() const;

  /// Colours boxes by kernel: per box, the kernel ids it belongs to (empty: none; more than
  /// one: the node is split over kernels and drawn with a dashed border). An empty vector, or
  /// one that does not match the graph, removes the overlay.
  void setKernels(std::vector<std::vector<int>> kernelIds);
  const std::vector<int>* kernelsOf(int box) const;

  /// Labels of the kernel clusters by kernel id (set before setKernels, which draws them).
  void setClusterLabels(QHash<int, QString> labels);
  /// Colour keys of the kernels by kernel id (kernel_identity.h; set before setKernels).
  void setKernelColorKeys(QHash<int, quint32> keys);
  /// The fill of kernel `id` in the current theme.
  QColor kernelFill(int id) const;

  /// Colours boxes by a metric: per box a value in [0, 1] (NaN: no value, drawn neutral); an
  /// empty vector, or one that does not match the graph, returns to colours by op type.
  void setHeat(std::vector<double> values);
  bool heatShown() const { return !m_heat.empty(); }
  /// The heat of box `box` (NaN when none or no heat map).
  double heatOf(int box) const;
  /// Draws edges inside kernels by the stage boundary they cross: per edge of the graph its
  /// kind (static_cast<int>(BoundaryKind)), -1 for an edge drawn plainly. An empty vector, or
  /// one that does not match the graph, draws every edge plainly.
  void setEdgeBoundaries(std::vector<int> kinds);
  /// The boundary kind edge `edge` is drawn with, -1 when plain.
  int edgeBoundary(int edge) const;
  /// Edges drawn per boundary kind.
  BoundaryCounts boundaryCounts() const;
  /// Shows or hides the kernel outlines (they are kept, so toggling is instant).
  void setClustersVisible(bool on);
  bool clustersVisible() const { return m_clustersVisible; }
  const std::vector<ClusterItem*>& clusterItems() const { return m_clusters; }
  /// Distinct kernels that have an outline.
  int clusterKernelCount() const;
  /// Kernel outlines are being computed (off the GUI thread) for the kernels last set.
  bool clustersPending() const { return m_clustersPending; }

  static QFont titleFont();
  static QFont subtitleFont();
  static QFont edgeFont();
  /// Width of an edge label in edgeFont(), remembered per text (labels repeat a lot).
  double edgeLabelWidth(const QString& label);

 signals:
  void boxSelected(int box);  ///< -1 when the selection is cleared
  void boxDoubleClicked(int box);
  /// A double click on a kernel outline, away from its boxes.
  void clusterDoubleClicked(int kernelId);
  /// The kernel outlines for the kernels last set are on screen.
  void clustersReady();

 protected:
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  friend class NodeItem;
  friend class EdgeItem;
  void onSelectionChanged();
  void setCurrent(int box);
  void refreshItems();
  void rebuildClusters();
  void applyClusters(std::vector<ClusterShape> shapes);

  std::shared_ptr<const SceneGraph> m_graph;
  std::vector<NodeItem*> m_nodes;
  std::vector<EdgeItem*> m_edges;
  std::vector<std::vector<int>> m_edgesOfBox;
  QSet<int> m_matches;
  GraphColors m_colors;
  int m_selected = -1;
  std::vector<std::vector<int>> m_kernels;
  std::vector<ClusterItem*> m_clusters;
  QHash<int, QString> m_clusterLabels;
  QHash<int, quint32> m_colorKeys;
  std::vector<double> m_heat;
  std::vector<int> m_edgeBoundaries;
  QHash<QString, double> m_labelWidths;
  bool m_clustersVisible = true;
  bool m_clustersPending = false;
  quint64 m_clusterGeneration = 0;
};

}  // namespace souffle::views
