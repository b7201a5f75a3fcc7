/// \file The graph panel: a zoomable, pannable view of the GraphScene with a minimap, a search
/// bar, and the layout pipeline (cache, a fast first picture, dot off the GUI thread).
#pragma once

#include <QFutureWatcher>
#include <QGraphicsView>
#include <QHash>
#include <QPixmap>
#include <QTimer>
#include <QWidget>
#include <memory>

#include "views/graph_layout.h"
#include "views/graph_scene.h"

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

class GraphPanel : public QWidget {
  Q_OBJECT
 public:
  explicit GraphPanel(QWidget* parent = nullptr);
  ~GraphPanel() override;

  /// Shows a graph; layouts are cached per graph shape, so switching back is instant.
  void showGraph(std::shared_ptr<const SceneGraph> graph);
  void clear();
  GraphScene* scene() const { return m_scene; }
  GraphView* view() const { return m_view; }
  Minimap* minimap() const { return m_minimap; }
  /// True once the graph on screen has its final (dot) layout.
  bool isFinal() const { return m_final; }
  QString layoutInfo() const { return m_layoutInfo; }
  void setColors(const GraphColors& colors);
  void setMinimapVisible(bool on);
  /// The search box's text (as if typed); matches are highlighted.
  void setSearchText(const QString& text);
  int matchCount() const { return static_cast<int>(m_matches.size()); }

 public slots:
  void focusSearch();
  void findNext();
  void findPrevious();

 signals:
  /// A picture is on screen; `final` is false for the preliminary layered layout.
  void drawn(bool final);
  void boxSelected(int box);

 private:
  void apply(const LayoutResult& layout, bool final, uint64_t key);
  void startLayout();
  void updateSearch();
  void step(int direction);

  GraphScene* m_scene;
  GraphView* m_view;
  Minimap* m_minimap;
  QWidget* m_searchBar;
  QLineEdit* m_search;
  QLabel* m_searchCount;
  std::shared_ptr<const SceneGraph> m_graph;
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
