#include "views/kernels_page.h"

#include <QDockWidget>
#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "views/explorer_session.h"
#include "views/kernel_runs.h"
#include "views/partition_table_model.h"

namespace souffle::views {

KernelsPage::KernelsPage(QWidget* parent)
    : QWidget(parent),
      m_model(new PartitionTableModel(this)),
      m_proxy(new QSortFilterProxyModel(this)),
      m_table(new QTableView(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(PartitionTableModel::SortRole);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(-1, Qt::AscendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);  // several to merge
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_table->horizontalHeader()->setStretchLastSection(true);
  const int digit = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  const int widths[] = {9, 13, 6, 7, 6, 9, 10, 9, 7, 10, 6, 9, 7};
  for (int c = 0; c < PartitionTableModel::ColumnCount; ++c)
    m_table->setColumnWidth(c, widths[c] * digit + 12);
  m_table->setWordWrap(false);
  m_table->setAlternatingRowColors(true);
  layout->addWidget(m_table);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    const int k = m_proxy->mapToSource(rows.front()).row();
    if (!m_quiet) emit partitionActivated(k);
    emit currentPartitionChanged(k);
  });
}

void KernelsPage::attach(ExplorerSession* session) {
  connect(this, &KernelsPage::currentPartitionChanged, session, &ExplorerSession::selectPartition);
  connect(session, &ExplorerSession::partitionActivated, this, [this](int k) {
    if (k < 0 || k >= m_model->rowCount()) return;
    if (QDockWidget* dock = dockOf(this)) dock->raise();
    selectPartition(k, false);
  });
  // A compile the user asked for that failed selects the first kernel that failed.
  connect(session, &ExplorerSession::kernelsCompiled, this,
          [this](CompileDataPtr data, bool asked) {
            m_model->setCompile(data);
            if (const int failed = asked ? firstCompileFailure(*data).partition : -1; failed >= 0)
              selectPartition(failed, false);
          });
  connect(session, &ExplorerSession::profiled, m_model, &PartitionTableModel::setProfile);
  connect(session, &ExplorerSession::importedProfileChanged, this,
          [this, session] { m_model->setImported(session->importedData()); });
}

std::vector<int> KernelsPage::selectedPartitions() const {
  std::vector<int> ks;
  for (const QModelIndex& r : m_table->selectionModel()->selectedRows())
    ks.push_back(m_proxy->mapToSource(r).row());
  return ks;
}

bool KernelsPage::selectPartition(int k, bool quiet) {
  const QModelIndex idx = m_proxy->mapFromSource(m_model->index(k, 0));
  m_quiet = quiet;  // an index without a row clears the selection
  m_table->selectionModel()->select(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  m_table->scrollTo(idx);
  m_quiet = false;
  return idx.isValid();
}

}  // namespace souffle::views
