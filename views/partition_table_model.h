/// \file Item model over the kernels of a plan: id, kind, TEs, stages, syncs, FLOPs, DRAM
/// bytes and estimated time.
#pragma once

#include <QAbstractTableModel>

#include "views/plan_runner.h"

namespace souffle::views {

class PartitionTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    KernelColumn,
    KindColumn,
    TeColumn,
    StageColumn,
    SyncColumn,
    FlopColumn,
    DramColumn,
    TimeColumn,
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole + 1,  ///< numbers as numbers
    PartitionRole,                ///< index into FusionPlan::partitions
  };

  explicit PartitionTableModel(QObject* parent = nullptr);
  void setPlan(PlanDataPtr plan);
  PlanDataPtr plan() const { return m_plan; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  PlanDataPtr m_plan;
};

/// "1.2 G", "340 M", "12 k" (base 1000, FLOPs) or "1.5 MiB" (bytes).
QString compactCount(double v);
QString compactBytes(double v);

}  // namespace souffle::views
