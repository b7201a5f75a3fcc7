/// \file The comparison view: two plans of the open model side by side (two strategies, or a
/// strategy before and after the user's edits), planned off the GUI thread.
#pragma once

#include <QFutureWatcher>
#include <QWidget>
#include <utility>

#include "core/plan/decisions.h"
#include "views/plan_runner.h"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace souffle::views {

class ComparisonModel;

class ComparisonView : public QWidget {
  Q_OBJECT
 public:
  explicit ComparisonView(QWidget* parent = nullptr);
  ~ComparisonView() override;

  /// What the sides are planned from; re-compares when anything changed. Until the user picks
  /// sides, `current` (the strategy on screen) chooses them: before and after the edits, or,
  /// without edits, against rules (souffle for rules).
  void setContext(ModelDataPtr model, const QString& gpu, const plan::Decisions& decisions,
                  const QString& current = {}, gpu::Precision precision = gpu::Precision::FP32);
  /// Side choices: "<strategy>" (no edits) or "<strategy> + edits"; index into the combo boxes.
  void setSides(int a, int b);
  int sideCount() const;
  QString sideLabel(int index) const;
  /// The index of `strategy` with or without the user's edits.
  int sideIndex(const QString& strategy, bool withEdits) const;

  ComparisonModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  bool isBusy() const { return m_busy; }
  QString totalsText() const;

 signals:
  /// Both plans arrived and the table shows them.
  void compared();
  void failed(const QString& reason);

 private:
  void start();

  using PlanPair = std::pair<PlanOutcome, PlanOutcome>;
  ModelDataPtr m_data;
  QString m_gpu;
  plan::Decisions m_decisions;
  gpu::Precision m_precision = gpu::Precision::FP32;
  bool m_chosen = false;  ///< the user picked the sides
  ComparisonModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_table;
  QComboBox* m_a;
  QComboBox* m_b;
  QLabel* m_totals;
  QLabel* m_legend;
  QFutureWatcher<PlanPair>* m_watcher;
  quint64 m_generation = 0;
  bool m_busy = false;
};

}  // namespace souffle::views
