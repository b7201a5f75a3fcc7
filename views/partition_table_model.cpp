#include "views/partition_table_model.h"

#include <QColor>
#include <QCoreApplication>
#include <QGuiApplication>
#include <cmath>

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

QString timeWithUnit(double us) {
  // Three significant digits: 2 decimals below 10, 1 below 100, none above; 3 below 1 µs. The
  // unit is chosen on the value as rounded, so 999.96 µs reads 1.00 ms, never 1000 µs.
  const char* units[] = {" µs", " ms", " s"};
  int u = 0;
  double v = us;
  auto decimals = [](double a) { return a < 1 ? 3 : a < 10 ? 2 : a < 100 ? 1 : 0; };
  auto rounded = [&](double x) {
    const double scale = std::pow(10.0, decimals(std::abs(x)));
    return std::round(x * scale) / scale;
  };
  while (u < 2 && std::abs(rounded(v)) >= 1000) {
    v /= 1000;
    ++u;
  }
  return QString::number(v, 'f', decimals(std::abs(rounded(v)))) + QString::fromUtf8(units[u]);
}

QString estimateDelta(double beforeUs, double afterUs) {
  const double d = afterUs - beforeUs;
  if (std::abs(d) < 0.05) return QObject::tr("no change in est. time");
  const QString sign = d < 0 ? QStringLiteral("\u2212") : QStringLiteral("+");
  QString out = sign + QString::number(std::abs(d), 'f', 1) + QStringLiteral(" µs");
  if (beforeUs > 0)
    out += QStringLiteral(", ") + sign + QString::number(std::abs(d) / beforeUs * 100, 'f', 1) +
           QStringLiteral("%");
  return out;
}

PartitionTableModel::PartitionTableModel(QObject* parent) : TableModel(parent) {}

void PartitionTableModel::setPlan(PlanDataPtr plan) {
  resetRows([&] {
    m_plan = std::move(plan);
    if (m_compile && m_compile->plan != m_plan) m_compile.reset();
    if (m_profile && m_profile->plan != m_plan) m_profile.reset();
    if (m_imported && m_imported->plan != m_plan) m_imported.reset();
  });
}

void PartitionTableModel::setProfile(ProfileDataPtr profile) {
  m_profile = profile && profile->plan == m_plan ? std::move(profile) : nullptr;
  columnChanged(MeasuredColumn);
  emit headerDataChanged(Qt::Horizontal, MeasuredColumn, MeasuredColumn);
}

void PartitionTableModel::setImported(ExternalProfileDataPtr imported) {
  m_imported = imported && imported->plan == m_plan ? std::move(imported) : nullptr;
  columnChanged(MeasuredColumn);
  emit headerDataChanged(Qt::Horizontal, MeasuredColumn, MeasuredColumn);
}

void PartitionTableModel::setCompile(CompileDataPtr compile) {
  m_compile = compile && compile->plan == m_plan ? std::move(compile) : nullptr;
  if (rowCount() > 0)
    emit dataChanged(index(0, RegisterColumn), index(rowCount() - 1, SpillColumn));
}

QVariant PartitionTableModel::compileData(const plan::Partition& k, int row, int column,
                                          int role) const {
  if (!m_compile || static_cast<size_t>(row) >= m_compile->kernels.size()) return {};
  const KernelCompile& kc = m_compile->kernels[static_cast<size_t>(row)];
  if (kc.archs.empty()) return {};
  const bool failed = !kc.ok();
  if (role == Qt::ForegroundRole && failed) return QColor(0xd0, 0x30, 0x30);
  if (role == Qt::ToolTipRole) {
    QStringList lines;
    for (const ArchCompile& a : kc.archs)
      lines << (a.ok ? tr("%1: %2 registers, %3 shared, %4 spilled")
                           .arg(a.arch)
                           .arg(a.registers)
                           .arg(compactBytes(static_cast<double>(a.sharedBytes)))
                           .arg(compactBytes(static_cast<double>(a.spillBytes)))
                     : tr("%1: compile error (see Problems)").arg(a.arch));
    return tr("K%1 (%2)\n").arg(k.id).arg(kc.name) + lines.join(QLatin1Char('\n'));
  }
  if (role != Qt::DisplayRole && role != SortRole) return {};
  if (failed) return role == SortRole ? QVariant(-1) : QVariant(tr("error"));
  QStringList parts;
  double first = 0;
  for (const ArchCompile& a : kc.archs) {
    double v = column == RegisterColumn ? a.registers
               : column == SharedColumn ? static_cast<double>(a.sharedBytes)
                                        : static_cast<double>(a.spillBytes);
    if (parts.isEmpty()) first = v;
    parts << (column == RegisterColumn ? QString::number(a.registers) : compactBytes(v));
  }
  if (role == SortRole) return first;
  parts.removeDuplicates();  // "40" rather than "40 / 40" when the archs agree
  return parts.join(QStringLiteral(" / "));
}

int PartitionTableModel::rows() const {
  return m_plan ? static_cast<int>(m_plan->plan->partitions.size()) : 0;
}

QVariant PartitionTableModel::cell(int row, int column, int role) const {
  const plan::Partition& k = m_plan->plan->partitions[static_cast<size_t>(row)];
  if (role == PartitionRole) return row;
  if (column >= RegisterColumn && column <= SpillColumn)
    return role == Qt::TextAlignmentRole ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                         : compileData(k, row, column, role);
  if (role == Qt::DecorationRole && column == KernelColumn)  // as the graph draws it
    return row < int(m_plan->identities.size())
               ? kernelColor(m_plan->identities[size_t(row)].colorKey,
                             isDark(QGuiApplication::palette()))
               : QVariant();
  if (role == Qt::TextAlignmentRole)
    return column == KindColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && column == KernelColumn) {
    QStringList ops;
    for (const std::string& op : k.ops) ops << QString::fromStdString(op);
    return ops.join(QLatin1Char('\n'));
  }
  if (role == Qt::ToolTipRole && column == MeasuredColumn && m_profile && m_profile->gpuTime()) {
    // The hardware counters of the measured run, beside the estimate.
    const size_t i = static_cast<size_t>(row);
    QStringList lines;
    if (i < m_profile->partitionDramBytes.size() && m_profile->partitionDramBytes[i] >= 0)
      lines << tr("DRAM traffic measured %1, estimated %2")
                   .arg(compactBytes(m_profile->partitionDramBytes[i]))
                   .arg(compactBytes(static_cast<double>(k.dram_bytes)));
    if (i < m_profile->partitionOccupancy.size() && m_profile->partitionOccupancy[i] >= 0)
      lines << tr("achieved occupancy %1%").arg(100 * m_profile->partitionOccupancy[i], 0, 'f', 0);
    if (lines.isEmpty() && !m_profile->report.counters_note.empty())
      lines << tr("no hardware counters: %1")
                   .arg(QString::fromStdString(m_profile->report.counters_note));
    return lines.isEmpty() ? QVariant() : QVariant(lines.join(QLatin1Char('\n')));
  }
  if (role == Qt::ToolTipRole && column == StageColumn) return stageTip(k);
  if (role == Qt::ToolTipRole && column == SyncColumn)
    return k.priced ? tr("%1 grid barriers in its built kernel").arg(k.grid_syncs)
                    : tr("%1 grid syncs planned (its kernel was not built)").arg(k.grid_syncs);
  if (role != Qt::DisplayRole && role != SortRole) return {};
  const bool sort = role == SortRole;
  switch (column) {
    case KernelColumn:
      return sort ? QVariant(k.id) : QVariant(QStringLiteral("K%1").arg(k.id));
    case KindColumn:
      return QString::fromLatin1(plan::partition_kind_name(k.kind)) +
             (k.cooperative && !sort ? QStringLiteral(" (coop)") : QString());
    case TeColumn:
      return static_cast<int>(k.tes.size());
    case StageColumn:
      return kernelStages(k);
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
    case ShareColumn: {
      const double total = m_plan->plan->est_time_us;
      const double share = total > 0 ? k.est_time_us / total * 100 : 0;
      return sort ? QVariant(share) : QVariant(QString::number(share, 'f', 1) + QLatin1Char('%'));
    }
    case MeasuredColumn: {
      if (!m_profile && m_imported && static_cast<size_t>(row) < m_imported->partitionUs.size()) {
        const double us = m_imported->partitionUs[static_cast<size_t>(row)];
        if (us < 0) return {};
        return sort ? QVariant(us) : QVariant(QString::number(us, 'f', 2));
      }
      if (!m_profile || static_cast<size_t>(row) >= m_profile->partitionUs.size()) return {};
      const double us = m_profile->partitionUs[static_cast<size_t>(row)];
      if (us < 0) return {};
      if (sort) return us;
      // An emulator time is a CPU time: never shown as if it were the GPU's.
      return m_profile->gpuTime() ? QString::number(us, 'f', 2)
                                  : tr("%1 (CPU)").arg(timeWithUnit(us));
    }
    default:
      return {};
  }
}

QString stageTip(const plan::Partition& k) {
  const int planned = static_cast<int>(k.stages.size());
  if (!k.priced || k.built_stages.empty())
    return QCoreApplication::translate("PartitionTableModel",
                                       "%1 planned stages (its kernel was not built)")
        .arg(planned);
  const int built = static_cast<int>(k.built_stages.size());
  const QString launches =
      k.launches > 1
          ? QCoreApplication::translate("PartitionTableModel", " over %1 launches").arg(k.launches)
          : QString();
  return QCoreApplication::translate(
             "PartitionTableModel",
             "%1 stages in its built kernel%2; the planner grouped its TEs into %3 stages "
             "between grid syncs")
      .arg(built)
      .arg(launches)
      .arg(planned);
}

QString PartitionTableModel::headerTip(int column) const {
  switch (column) {
    case StageColumn:
      return tr("Stages of the built kernel (the planned stages where it could not be built)");
    case SyncColumn:
      return tr(
          "Grid barriers of the built kernel (the planned grid syncs where it could not be "
          "built)");
    case DramColumn:
      return tr("Bytes read from and written to DRAM");
    case TimeColumn:
      return tr("Estimated time in microseconds (cost model)");
    case ShareColumn:
      return tr("The kernel's share of the plan's estimated time");
    case MeasuredColumn:
      return m_profile
                 ? tr("Median of %1 timed runs, µs — %2 (%3)")
                       .arg(m_profile->report.runs)
                       .arg(m_profile->label(), QString::fromStdString(m_profile->report.date))
             : m_imported ? tr("µs per call, %1").arg(m_imported->source)
                          : tr("Measured time (Kernels › Profile, or Import a profile)");
    case RegisterColumn:
      return tr("Registers per thread, per compiled architecture (Kernels › Compile)");
    case SharedColumn:
      return tr("Shared memory per block (static + dynamic), per architecture");
    case SpillColumn:
      return tr("Bytes spilled to local memory (stores + loads), per architecture");
    default:
      return {};
  }
}

QString PartitionTableModel::header(int column) const {
  switch (column) {
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
    case ShareColumn:
      return tr("Share");
    case MeasuredColumn:
      return m_profile && !m_profile->gpuTime() ? tr("Emul. time") : tr("Meas. µs");
    case RegisterColumn:
      return tr("Regs");
    case SharedColumn:
      return tr("Smem");
    case SpillColumn:
      return tr("Spills");
    default:
      return {};
  }
}

}  // namespace souffle::views
