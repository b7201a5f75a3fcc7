/// \file Item model over the op-level graph nodes: name, op type, output shapes, TE count.
#pragma once

#include "views/scene_graph.h"
#include "views/table_model.h"

namespace souffle::views {

class NodeTableModel : public TableModel {
  Q_OBJECT
 public:
  enum Column { NameColumn, OpColumn, OutputsColumn, TeColumn, ColumnCount };
  /// SortRole (the base's): numbers as numbers, so the TE column sorts numerically.
  enum Role {
    BoxRole = FirstCustomRole,  ///< the box of this node in the op-level SceneGraph
    NodeIndexRole,              ///< index into Graph::nodes
  };

  explicit NodeTableModel(QObject* parent = nullptr);

  void setModelData(ModelDataPtr data);
  ModelDataPtr modelData() const { return m_data; }
  /// Row of the node drawn as `box` in the op-level graph, or -1.
  int rowOfBox(int box) const;

 protected:
  int rows() const override { return static_cast<int>(m_rows.size()); }
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;

 private:
  void fill(ModelDataPtr data);
  struct Row {
    QString name, op, outputs;
    int tes = 0;
    int box = -1;
  };
  ModelDataPtr m_data;
  std::vector<Row> m_rows;
  std::vector<int> m_rowOfBox;
};

}  // namespace souffle::views
