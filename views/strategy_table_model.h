/// \file Item model comparing the strategies side by side: one row per strategy (unfused,
/// rules, souffle, souffle-paper) with kernels, grid syncs, FLOPs, DRAM bytes, estimated time and
/// the ratio to unfused; all three are planned off the GUI thread for the chosen GPU.
#pragma once

#include <QFutureWatcher>
#include <vector>

#include "views/plan_runner.h"
#include "views/table_model.h"

namespace souffle::views {

class StrategyTableModel : public TableModel {
  Q_OBJECT
 public:
  enum Column {
    StrategyColumn,
    KernelColumn,
    SyncColumn,
    FlopColumn,
    DramColumn,
    TimeColumn,
    RatioColumn,
    ColumnCount
  };
  enum Role {
    StrategyNameRole = FirstCustomRole,  ///< "unfused", "rules", "souffle"
  };

  explicit StrategyTableModel(QObject* parent = nullptr);
  ~StrategyTableModel() override;

  /// Plans every strategy of `model` for `gpu` on a worker thread; rows show "planning…" until
  /// the results arrive. A run in progress becomes stale.
  void start(ModelDataPtr model, const QString& gpu,
             gpu::Precision precision = gpu::Precision::FP32);
  /// Sets the results directly (one per strategy in plan::every_strategy() order; null: none).
  void setPlans(std::vector<PlanDataPtr> plans, const QString& error = {});
  void clear();
  bool isBusy() const { return m_busy; }
  /// The strategy shown in bold (the main view's).
  void setCurrentStrategy(const QString& name);
  int rowOf(const QString& strategy) const;
  QString strategyAt(int row) const;
  PlanDataPtr planAt(int row) const;
  QString error() const { return m_error; }

 signals:
  /// All strategies are planned (or failed) and the rows show them.
  void finished();

 protected:
  int rows() const override;
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;

 private:
  struct Outcome {
    std::vector<PlanDataPtr> plans;
    QString error;
  };
  QFutureWatcher<Outcome>* m_watcher;
  quint64 m_generation = 0;
  bool m_busy = false;
  std::vector<PlanDataPtr> m_plans;
  QString m_error;
  QString m_current;
};

}  // namespace souffle::views
