#include "views/strategies_page.h"

#include <QHeaderView>
#include <QTableView>
#include <QVBoxLayout>

#include "views/strategy_table_model.h"
#include "views/table_model.h"

namespace souffle::views {

StrategiesPage::StrategiesPage(QWidget* parent)
    : QWidget(parent), m_model(new StrategyTableModel(this)), m_table(new QTableView(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_table);
  m_table->setModel(m_model);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  const int digit = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  const int widths[] = {10, 8, 10, 9, 10, 11, 10};
  for (int c = 0; c < StrategyTableModel::ColumnCount; ++c)
    m_table->setColumnWidth(c, widths[c] * digit + 12);
  addCsvExport(m_table, tr("strategies"));
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    const QString name = m_model->strategyAt(rows.front().row());
    if (!name.isEmpty()) emit strategyChosen(name);
  });
}

void StrategiesPage::refresh(ModelDataPtr data, const QString& strategy, const QString& gpu,
                             gpu::Precision precision, bool plan) {
  if (!data) {
    m_key.clear();
    m_model->clear();
    return;
  }
  m_model->setCurrentStrategy(strategy);
  // Only what is on screen is planned: three plans of a big model are not free.
  const QString key = QString::number(reinterpret_cast<quintptr>(data.get())) + gpu +
                      QLatin1String(gpu::precision_name(precision));
  if (plan && key != m_key) {
    m_key = key;
    m_model->start(std::move(data), gpu, precision);
  }
}

}  // namespace souffle::views
