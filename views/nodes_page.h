/// \file The "Nodes" page: the nodes of the op-level graph in a filterable, sortable table that
/// follows the graph's selection and selects in the graph what the user picks.
#pragma once

#include <QWidget>

#include "views/model_loader.h"

class QSortFilterProxyModel;
class QTableView;

namespace souffle::views {

class ExplorerSession;
class NodeTableModel;

class NodesPage : public QWidget {
  Q_OBJECT
 public:
  explicit NodesPage(QWidget* parent = nullptr);
  /// Lists the nodes of the session's model.
  void attach(ExplorerSession* session);

  NodeTableModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  void setModelData(ModelDataPtr data);
  /// Selects and scrolls to the model's row `row` (a node index) without nodeActivated.
  void showRow(int row);
  /// Shows the row of box `box` of `graph`: its node, or a TE op's ONNX node in `model`'s graph
  /// (null: none), as showRow.
  void showBox(const SceneGraph& graph, int box, const ModelData* model);

 signals:
  /// The user selected the node of the model's row `row`.
  void nodeActivated(int row);

 private:
  NodeTableModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_table;
  bool m_quiet = false;  ///< showRow is selecting
};

}  // namespace souffle::views
