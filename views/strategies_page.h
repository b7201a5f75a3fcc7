/// \file The "Strategies" page: every strategy planned side by side for the open model, GPU and
/// precision (off the GUI thread, only while the page is shown); picking a row picks the strategy.
#pragma once

#include <QWidget>

#include "core/gpu/cost.h"
#include "views/model_loader.h"

class QTableView;

namespace souffle::views {

class StrategyTableModel;

class StrategiesPage : public QWidget {
  Q_OBJECT
 public:
  explicit StrategiesPage(QWidget* parent = nullptr);

  StrategyTableModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  /// Shows `strategy` as the current one and, when `plan` (the page is on screen) and the
  /// model, GPU or precision changed since the last run, plans every strategy again. A null
  /// `data` clears the page.
  void refresh(ModelDataPtr data, const QString& strategy, const QString& gpu,
               gpu::Precision precision, bool plan);

 signals:
  /// The user picked the row of `strategy`.
  void strategyChosen(const QString& strategy);

 private:
  StrategyTableModel* m_model;
  QTableView* m_table;
  QString m_key;  ///< what the rows were planned for
};

}  // namespace souffle::views
