#include "views/strategy_table_model.h"

#include <QFont>
#include <QtConcurrent/QtConcurrent>

#include "views/partition_table_model.h"

namespace souffle::views {

namespace {

const plan::FusionPlan* planOf(const PlanDataPtr& p) {
  return p ? p->plan.get() : nullptr;
}

}  // namespace

StrategyTableModel::StrategyTableModel(QObject* parent)
    : TableModel(parent), m_watcher(new QFutureWatcher<Outcome>(this)) {
  m_plans.resize(plan::every_strategy().size());
  connect(m_watcher, &QFutureWatcher<Outcome>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation) return;  // stale
    m_busy = false;
    Outcome o = m_watcher->result();
    setPlans(std::move(o.plans), o.error);
    emit finished();
  });
}

StrategyTableModel::~StrategyTableModel() {
  m_watcher->waitForFinished();
}

void StrategyTableModel::start(ModelDataPtr model, const QString& gpu, gpu::Precision precision) {
  ++m_generation;
  resetRows([&] {
    for (PlanDataPtr& p : m_plans) p.reset();
    m_error.clear();
    m_busy = model != nullptr;
  });
  if (!model) return;
  m_watcher->setProperty("generation", m_generation);
  m_watcher->setFuture(QtConcurrent::run([model, gpu, precision] {
    Outcome o;
    for (plan::Strategy s : plan::every_strategy()) {
      PlanOutcome r = PlanRunner::run(model, s, gpu, precision);
      if (!r.ok() && o.error.isEmpty())
        o.error =
            QStringLiteral("%1: %2").arg(QString::fromLatin1(plan::strategy_name(s)), r.error);
      o.plans.push_back(r.data);
    }
    return o;
  }));
}

void StrategyTableModel::setPlans(std::vector<PlanDataPtr> plans, const QString& error) {
  resetRows([&] {
    plans.resize(plan::every_strategy().size());
    m_plans = std::move(plans);
    m_error = error;
  });
}

void StrategyTableModel::clear() {
  ++m_generation;
  m_busy = false;
  setPlans({});
}

void StrategyTableModel::setCurrentStrategy(const QString& name) {
  if (name == m_current) return;
  m_current = name;
  if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int StrategyTableModel::rowOf(const QString& strategy) const {
  const auto& all = plan::every_strategy();
  for (size_t i = 0; i < all.size(); ++i)
    if (strategy == QLatin1String(plan::strategy_name(all[i]))) return static_cast<int>(i);
  return -1;
}

QString StrategyTableModel::strategyAt(int row) const {
  const auto& all = plan::every_strategy();
  if (row < 0 || static_cast<size_t>(row) >= all.size()) return {};
  return QString::fromLatin1(plan::strategy_name(all[static_cast<size_t>(row)]));
}

PlanDataPtr StrategyTableModel::planAt(int row) const {
  if (row < 0 || static_cast<size_t>(row) >= m_plans.size()) return nullptr;
  return m_plans[static_cast<size_t>(row)];
}

int StrategyTableModel::rows() const {
  return static_cast<int>(plan::every_strategy().size());
}

QVariant StrategyTableModel::cell(int row, int col, int role) const {
  const QString name = strategyAt(row);
  if (role == StrategyNameRole) return name;
  if (role == Qt::FontRole && name == m_current) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole)
    return col == StrategyColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  const plan::FusionPlan* p = planOf(planAt(row));
  const plan::FusionPlan* base = planOf(planAt(rowOf(QStringLiteral("unfused"))));
  if (role == Qt::ToolTipRole) {
    if (col == RatioColumn) return tr("Estimated time relative to the unfused plan");
    if (!p && !m_busy && !m_error.isEmpty()) return m_error;
    return {};
  }
  if (role != Qt::DisplayRole && role != SortRole) return {};
  const bool sort = role == SortRole;
  if (col == StrategyColumn) return name;
  if (!p) {
    if (sort) return {};
    return m_busy ? tr("planning…") : tr("—");
  }
  switch (col) {
    case KernelColumn:
      return static_cast<qulonglong>(p->kernels());
    case SyncColumn:
      return p->grid_syncs;
    case FlopColumn:
      return sort ? QVariant(static_cast<double>(p->flops))
                  : QVariant(compactCount(static_cast<double>(p->flops)));
    case DramColumn:
      return sort ? QVariant(static_cast<double>(p->dram_bytes))
                  : QVariant(compactBytes(static_cast<double>(p->dram_bytes)));
    case TimeColumn:
      return sort ? QVariant(p->est_time_us)
                  : QVariant(QStringLiteral("%1 µs").arg(p->est_time_us, 0, 'f', 1));
    case RatioColumn: {
      if (!base || base->est_time_us <= 0) return sort ? QVariant() : QVariant(tr("—"));
      const double r = p->est_time_us / base->est_time_us;
      return sort ? QVariant(r) : QVariant(QStringLiteral("%1×").arg(r, 0, 'f', 2));
    }
    default:
      return {};
  }
}

QString StrategyTableModel::header(int column) const {
  switch (column) {
    case StrategyColumn:
      return tr("Strategy");
    case KernelColumn:
      return tr("Kernels");
    case SyncColumn:
      return tr("Grid syncs");
    case FlopColumn:
      return tr("FLOPs");
    case DramColumn:
      return tr("DRAM");
    case TimeColumn:
      return tr("Est. time");
    case RatioColumn:
      return tr("vs unfused");
    default:
      return {};
  }
}

}  // namespace souffle::views
