/// \file Item model over the op-level graph nodes: name, op type, output shapes, TE count.
#pragma once

#include <QAbstractTableModel>

#include "views/scene_graph.h"

namespace souffle::views {

class NodeTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { NameColumn, OpColumn, OutputsColumn, TeColumn, ColumnCount };
  enum Role {
    SortRole = Qt::UserRole + 1,  ///< numbers as numbers, so the TE column sorts numerically
    BoxRole,                      ///< the box of this node in the op-level SceneGraph
    NodeIndexRole,                ///< index into Graph::nodes
  };

  explicit NodeTableModel(QObject* parent = nullptr);

  void setModelData(ModelDataPtr data);
  ModelDataPtr modelData() const { return m_data; }
  /// Row of the node drawn as `box` in the op-level graph, or -1.
  int rowOfBox(int box) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
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
