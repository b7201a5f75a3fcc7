/// \file Charts of a plan (Qt Charts): per-kernel time (estimated beside measured), a roofline of
/// the chosen GPU with one point per kernel, strategy totals, and compiled kernel resources.
#pragma once

#include <QFutureWatcher>
#include <QWidget>
#include <vector>

#include "views/compile_runner.h"
#include "views/plan_runner.h"
#include "views/profile_runner.h"

class QTabWidget;
class QLabel;
class QChartView;
class QChart;
class QScatterSeries;

namespace souffle::views {

class ExplorerSession;

/// What the strategies chart shows for one strategy.
struct StrategyTotals {
  QString strategy;
  bool ok = false;
  QString error;
  int kernels = 0;
  double estUs = 0;
  double dramBytes = 0;
};

class ChartsPanel : public QWidget {
  Q_OBJECT
 public:
  enum Tab { TimeTab, RooflineTab, StrategiesTab, ResourcesTab, TabCount };

  explicit ChartsPanel(QWidget* parent = nullptr);
  ~ChartsPanel() override;

  /// Follows `session`: its plan, the selected kernel, compiles and profile runs (shown when
  /// the user asked for them); a click on a kernel asks the kernel table to select it.
  void attach(ExplorerSession* session);
  /// Redraws for `plan` and plans the two other strategies off the GUI thread for the totals.
  void setPlan(PlanDataPtr plan);
  void setCompile(CompileDataPtr data);
  /// Measured times of the plan shown, beside the estimates (ignored for another plan).
  void setProfile(ProfileDataPtr data);
  /// Marks partition `partition` on the roofline (-1: none).
  void setCurrentPartition(int partition);
  void setDark(bool dark);
  /// Why there are no measured times ("no CUDA driver found ...").
  void setMeasuredNote(const QString& note);

  QTabWidget* tabs() const { return m_tabs; }
  QChartView* view(Tab tab) const;
  /// The roofline's kernel series (one per kernel kind) and, per series, the partition of
  /// each point.
  const std::vector<QScatterSeries*>& kernelSeries() const { return m_kernelSeries; }
  int partitionOfPoint(const QScatterSeries* series, int point) const;
  int pointCount() const;
  /// The totals of all three strategies are in.
  bool strategiesReady() const;
  const std::vector<StrategyTotals>& strategyTotals() const { return m_totals; }
  /// Kernels drawn in the time chart (the longest ones when there are many).
  int timeBarCount() const { return m_timeBars; }

 signals:
  void partitionClicked(int partition);

 protected:
  void changeEvent(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void rebuildAll();
  /// Plans every strategy for the totals when the strategies chart is shown and they are stale.
  void startTotals();
  void rebuildTime();
  void rebuildRoofline();
  void rebuildStrategies();
  void rebuildResources();
  void styleChart(QChart* chart, const QString& title);
  void onPointClicked(QScatterSeries* series, const QPointF& point);
  void onPointHovered(QScatterSeries* series, const QPointF& point, bool state);
  int nearestPoint(const QScatterSeries* series, const QPointF& point) const;

  PlanDataPtr m_plan;
  CompileDataPtr m_compile;
  /// Kernels at their measured FLOP/s (GPU times only), and the partition of each point.
  QScatterSeries* m_measuredSeries = nullptr;
  std::vector<int> m_measuredPartitions;
  ProfileDataPtr m_profile;
  int m_current = -1;
  bool m_dark = false;
  QString m_measuredNote;
  int m_timeBars = 0;
  quint64 m_generation = 0;
  bool m_totalsStarted = false;

  std::vector<StrategyTotals> m_totals;
  QFutureWatcher<std::vector<StrategyTotals>>* m_totalsWatcher;

  QTabWidget* m_tabs;
  QChartView* m_timeView;
  QChartView* m_rooflineView;
  std::vector<QChartView*> m_strategyViews;
  QChartView* m_regView;
  QChartView* m_smemView;
  QLabel* m_resourcesNote;
  std::vector<QScatterSeries*> m_kernelSeries;
  std::vector<std::vector<int>> m_pointPartitions;  ///< per kernel series
  QScatterSeries* m_currentSeries = nullptr;
};

}  // namespace souffle::views
