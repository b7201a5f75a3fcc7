/// \file The "Plan" toolbar: what the plan on screen is made with (strategy, GPU, precision,
/// sync mode) and what the graph's boxes are coloured by.
#pragma once

#include <QToolBar>

#include "core/gpu/cost.h"
#include "core/plan/plan.h"
#include "core/support/boundary.h"
#include "views/heat_map.h"

class QComboBox;
class QMenu;

namespace souffle::views {

struct PlanData;

class PlanToolBar : public QToolBar {
  Q_OBJECT
 public:
  explicit PlanToolBar(QWidget* parent = nullptr);

  /// The names (as the command line and projects give them) and the values plans are made with.
  QString strategy() const;
  plan::Strategy strategyValue() const;
  QString gpu() const;
  /// "fp32", "tf32", "fp16" or "bf16".
  QString precision() const;
  gpu::Precision precisionValue() const;
  /// "grid", "auto" or "flags".
  QString sync() const;
  SyncMode syncValue() const;

  /// Each setter changes its box, which says settingsChanged when the value changed.
  void setStrategy(const QString& strategy);
  /// A GPU by name, or the first whose name starts with `gpu`.
  void setGpu(const QString& gpu);
  void setPrecision(const QString& precision);
  void setSync(const QString& sync);
  void setStrategy(plan::Strategy strategy);
  void setPrecision(gpu::Precision precision);
  void setSync(SyncMode sync);
  /// The settings `plan` was made with, without settingsChanged (the plan that stays on screen).
  void showPlan(const PlanData& plan);
  /// The Plan menu's entries: a strategy each (Ctrl+1 …), load a calibration file, back to the
  /// GPU spec's constants.
  void fillMenu(QMenu* menu);
  /// Prices every plan from now on with the calibration file `file` and says settingsChanged;
  /// false and `error` (the file and the field named) for a file that cannot be read, the
  /// constants in use kept.
  bool loadCalibration(const QString& file, QString* error = nullptr);
  /// Back to the GPU spec's constants (settingsChanged).
  void clearCalibration();
  /// Picks `metric` in the colour box (heatMetricChosen follows when it changed).
  void setHeatMetric(HeatMetric metric);

 signals:
  /// Strategy, GPU, precision or sync changed: the model is planned again.
  void settingsChanged();
  void heatMetricChosen(HeatMetric metric);

 private:
  QComboBox* m_strategy;
  QComboBox* m_gpu;
  QComboBox* m_precision;
  QComboBox* m_sync;
  QComboBox* m_color;
};

}  // namespace souffle::views
