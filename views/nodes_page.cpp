#include "views/nodes_page.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "views/explorer_session.h"
#include "views/node_table_model.h"
#include "views/table_model.h"

namespace souffle::views {

NodesPage::NodesPage(QWidget* parent)
    : QWidget(parent),
      m_model(new NodeTableModel(this)),
      m_proxy(new QSortFilterProxyModel(this)),
      m_table(new QTableView(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  auto* filter = new QLineEdit(this);
  filter->setPlaceholderText(tr("Filter nodes"));
  filter->setClearButtonEnabled(true);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(NodeTableModel::SortRole);
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_proxy->setFilterKeyColumn(-1);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(-1, Qt::AscendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setStretchLastSection(false);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_table->setColumnWidth(NodeTableModel::NameColumn, 150);
  m_table->setColumnWidth(NodeTableModel::OpColumn, 110);
  m_table->setColumnWidth(NodeTableModel::OutputsColumn, 110);
  m_table->setColumnWidth(NodeTableModel::TeColumn, 40);
  m_table->setWordWrap(false);
  m_table->setTextElideMode(Qt::ElideMiddle);  // node names share long path prefixes
  m_table->setAlternatingRowColors(true);
  layout->addWidget(filter);
  layout->addWidget(m_table, 1);
  addCsvExport(m_table, tr("nodes"));
  connect(filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    if (m_quiet) return;
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (!rows.isEmpty()) emit nodeActivated(m_proxy->mapToSource(rows.front()).row());
  });
}

void NodesPage::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::modelChanged, this, &NodesPage::setModelData);
}

void NodesPage::setModelData(ModelDataPtr data) {
  m_model->setModelData(std::move(data));
}

void NodesPage::showBox(const SceneGraph& g, int box, const ModelData* model) {
  const SceneNode& n = g.nodes[box];
  int row = -1;
  if (n.kind == SceneNode::Kind::Op) {
    row = m_model->rowOfBox(g.baseBox(box));
  } else if (n.kind == SceneNode::Kind::TeOp && model) {
    const auto& nodes = model->model->graph.nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (QString::fromStdString(nodes[i].name) == n.onnxNode) row = static_cast<int>(i);
  }
  if (row >= 0) showRow(row);
}

void NodesPage::showRow(int row) {
  const QModelIndex idx = m_proxy->mapFromSource(m_model->index(row, 0));
  if (!idx.isValid()) return;
  m_quiet = true;
  m_table->selectionModel()->select(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  m_table->scrollTo(idx);
  m_quiet = false;
}

}  // namespace souffle::views
