#include "views/node_table_model.h"

namespace souffle::views {

NodeTableModel::NodeTableModel(QObject* parent) : TableModel(parent) {}

void NodeTableModel::setModelData(ModelDataPtr data) {
  resetRows([&] { fill(std::move(data)); });
}

void NodeTableModel::fill(ModelDataPtr data) {
  m_data = std::move(data);
  m_rows.clear();
  m_rowOfBox.clear();
  if (m_data) {
    const graph::Graph& g = m_data->model->graph;
    const SceneGraph& sg = m_data->opGraph;
    m_rows.resize(g.nodes.size());
    m_rowOfBox.assign(sg.nodes.size(), -1);
    for (size_t b = 0; b < sg.nodes.size(); ++b) {
      const SceneNode& n = sg.nodes[b];
      if (n.kind != SceneNode::Kind::Op || n.index < 0 ||
          static_cast<size_t>(n.index) >= m_rows.size())
        continue;
      m_rows[n.index].box = static_cast<int>(b);
      m_rows[n.index].tes = n.teCount;
      m_rowOfBox[b] = n.index;
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const graph::Node& node = g.nodes[i];
      Row& r = m_rows[i];
      r.name = QString::fromStdString(node.name);
      r.op = QString::fromStdString(node.op_type);
      QStringList outs;
      for (const std::string& o : node.outputs) {
        if (o.empty() || !g.has_value(o)) continue;
        const graph::Value& v = g.value(o);
        outs << (v.type_known ? compactType(v.type.dtype, v.type.shape) : QStringLiteral("?"));
      }
      r.outputs = outs.join(QStringLiteral(", "));
    }
  }
}

int NodeTableModel::rowOfBox(int box) const {
  return box >= 0 && static_cast<size_t>(box) < m_rowOfBox.size() ? m_rowOfBox[box] : -1;
}

QVariant NodeTableModel::cell(int row, int column, int role) const {
  const Row& r = m_rows[static_cast<size_t>(row)];
  switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole:
      switch (column) {
        case NameColumn:
          return r.name;
        case OpColumn:
          return r.op;
        case OutputsColumn:
          return r.outputs;
        case TeColumn:
          return r.tes;
      }
      break;
    case SortRole:
      if (column == TeColumn) return r.tes;
      return cell(row, column, Qt::DisplayRole);
    case Qt::TextAlignmentRole:
      if (column == TeColumn) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;  // the base's: text to the left
    case BoxRole:
      return r.box;
    case NodeIndexRole:
      return row;
  }
  return {};
}

QString NodeTableModel::header(int column) const {
  switch (column) {
    case NameColumn:
      return tr("Name");
    case OpColumn:
      return tr("Op");
    case OutputsColumn:
      return tr("Output shapes");
    case TeColumn:
      return tr("TEs");
  }
  return {};
}

}  // namespace souffle::views
