#include "views/partition_table_model.h"

#include <QColor>
#include <QGuiApplication>

#include "views/theme.h"

namespace souffle::views {

QString compactCount(double v) {
  const char* units[] = {"", " k", " M", " G", " T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return QString::number(v, 'f', u == 0 || v >= 100 ? 0 : 1) + QLatin1String(units[u]);
}

QString compactBytes(double v) {
  const char* units[] = {" B", " KiB", " MiB", " GiB", " TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return QString::number(v, 'f', u == 0 || v >= 100 ? 0 : 1) + QLatin1String(units[u]);
}

PartitionTableModel::PartitionTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PartitionTableModel::setPlan(PlanDataPtr plan) {
  beginResetModel();
  m_plan = std::move(plan);
  endResetModel();
}

int PartitionTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_plan) return 0;
  return static_cast<int>(m_plan->plan->partitions.size());
}

int PartitionTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant PartitionTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !m_plan || index.row() >= rowCount()) return {};
  const plan::Partition& k = m_plan->plan->partitions[index.row()];
  if (role == PartitionRole) return index.row();
  if (role == Qt::DecorationRole && index.column() == KernelColumn)  // as the graph draws it
    return kernelColor(k.id, isDark(QGuiApplication::palette()));
  if (role == Qt::TextAlignmentRole)
    return index.column() == KindColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                        : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == KernelColumn) {
    QStringList ops;
    for (const std::string& op : k.ops) ops << QString::fromStdString(op);
    return ops.join(QLatin1Char('\n'));
  }
  if (role != Qt::DisplayRole && role != SortRole) return {};
  const bool sort = role == SortRole;
  switch (index.column()) {
    case KernelColumn:
      return sort ? QVariant(k.id) : QVariant(QStringLiteral("K%1").arg(k.id));
    case KindColumn:
      return QString::fromStdString(k.kind) +
             (k.cooperative && !sort ? QStringLiteral(" (coop)") : QString());
    case TeColumn:
      return static_cast<int>(k.tes.size());
    case StageColumn:
      return static_cast<int>(k.stages.size());
    case SyncColumn:
      return k.grid_syncs;
    case FlopColumn:
      return sort ? QVariant(static_cast<qlonglong>(k.flops))
                  : QVariant(compactCount(static_cast<double>(k.flops)));
    case DramColumn:
      return sort ? QVariant(static_cast<qlonglong>(k.dram_bytes))
                  : QVariant(compactBytes(static_cast<double>(k.dram_bytes)));
    case TimeColumn:
      return sort ? QVariant(k.est_time_us) : QVariant(QString::number(k.est_time_us, 'f', 2));
    default:
      return {};
  }
}

QVariant PartitionTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case SyncColumn:
        return tr("Grid-wide synchronisations inside the kernel");
      case DramColumn:
        return tr("Bytes read from and written to DRAM");
      case TimeColumn:
        return tr("Estimated time in microseconds (cost model)");
      default:
        return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case KernelColumn:
      return tr("Kernel");
    case KindColumn:
      return tr("Kind");
    case TeColumn:
      return tr("TEs");
    case StageColumn:
      return tr("Stages");
    case SyncColumn:
      return tr("Syncs");
    case FlopColumn:
      return tr("FLOPs");
    case DramColumn:
      return tr("DRAM");
    case TimeColumn:
      return tr("Est. µs");
    default:
      return {};
  }
}

}  // namespace souffle::views
