/// \file The graph page, the window's centre: the graph panel with the plan drawn on it (kernel
/// outlines, badges, cluster labels, stage boundaries, the heat map) and the selections the
/// other pages ask of it; it names what is selected for the edits and exports the picture.
#pragma once

#include <QWidget>
#include <functional>
#include <vector>

#include "views/heat_map.h"
#include "views/model_loader.h"
#include "views/plan_runner.h"

class QAction;

namespace souffle::views {

class ExplorerSession;
class GraphPanel;

class GraphPage : public QWidget {
  Q_OBJECT
 public:
  explicit GraphPage(QWidget* parent = nullptr);

  GraphPanel* panel() const { return m_panel; }
  /// Tells `session` the node selected (nodeSelected); selects the nodes other pages ask for
  /// (a code line, a timeline span), follows the session's plan and refreshes the heat map when
  /// measured times change.
  void attach(ExplorerSession* session);
  /// Draws the op-level or TE-level graph of `data` (laid out off the GUI thread).
  void showGraph(ModelDataPtr data);
  /// Whether the graph shows the TE program's ops instead of the ONNX nodes (View > TE-level
  /// graph, Ctrl+T); a change emits teLevelChanged and the window draws the graph again.
  bool isTeLevel() const { return m_teLevel; }
  void setTeLevel(bool on);
  QAction* teLevelAction() const { return m_teLevelAction; }
  void clear();
  /// The plan drawn on the graph (null: none yet); applyPlan draws it once the graph is shown.
  void setPlan(PlanDataPtr plan);
  /// Draws the plan on the graph on screen: kernels, their labels and colours, the stage
  /// boundaries on edges, and the heat map. Nothing when the plan is of another model.
  void applyPlan();
  /// Whether the plan is drawn (the step-through's steps before partitioning show the graph
  /// without kernels: no clusters, badges or boundary-styled edges). On by default.
  void setPlanShown(bool on);
  bool planShown() const { return m_planShown; }
  /// Colours the boxes by op type (None) or as a heat map of `metric`.
  void setHeatMetric(HeatMetric metric);
  /// Where the measured times of the heat map come from (asked at each refresh).
  void setMeasuredTimes(std::function<MeasuredTimes()> source) { m_measured = std::move(source); }
  void refreshHeat();

  /// Selects and reveals `box`.
  void selectBox(int box);
  /// Selects and reveals the boxes of partition `k`; the first box, or -1 when it has none.
  int selectPartition(int k);
  /// Selects the boxes of ONNX nodes `nodes` (TEs `tes` at TE level), as a code line asks;
  /// selectingNodes() is true meanwhile.
  void selectNodes(const QStringList& nodes, const QStringList& tes);
  bool selectingNodes() const { return m_selectingNodes; }
  /// The name an edit anchors to for the selected node (ONNX node or TE); empty if none.
  QString selectedAnchor() const;
  /// Partition indices of the kernels of the selected nodes.
  std::vector<int> selectedPartitions() const;
  /// View menu entries: find node, next and previous match.
  QList<QAction*> findActions();
  /// View menu entries: fit, zoom in, zoom out, actual size.
  QList<QAction*> zoomActions();
  /// View menu entry: the minimap shown (on).
  QAction* minimapAction();
  /// View menu entries: kernel clusters shown (on), collapse all, expand all, collapse/expand the
  /// selected kernel (the last three off until a model is open).
  QList<QAction*> clusterActions();
  /// The actions of the graph's context menu (a right click selects the node under it first).
  void setContextActions(const QList<QAction*>& actions);

  /// File menu entries: export the graph as SVG (Ctrl+E) or PNG (Ctrl+Shift+E), asking where.
  QList<QAction*> exportActions();
  /// Writes the graph as SVG (titled as the window) or PNG to `path` (asked for when empty); a
  /// PNG that cannot be written is said on the status bar.
  void exportSvg(const QString& path = {});
  void exportPng(const QString& path = {});
  /// Writes the graph as SVG (titled `title`) or PNG; false when there is none or it failed.
  bool writeSvg(const QString& path, const QString& title);
  bool writePng(const QString& path);

 signals:
  void teLevelChanged(bool on);

 private:
  GraphPanel* m_panel;
  ExplorerSession* m_session = nullptr;
  bool m_teLevel = false;
  QAction* m_teLevelAction;
  ModelDataPtr m_data;
  PlanDataPtr m_plan;
  bool m_planShown = true;
  HeatMetric m_heatMetric = HeatMetric::None;
  std::function<MeasuredTimes()> m_measured;
  bool m_selectingNodes = false;
  QList<QAction*> m_contextActions;
};

}  // namespace souffle::views
