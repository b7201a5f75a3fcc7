/// \file Item model comparing two plans kernel by kernel: rows group the kernels of each side
/// that cover the same ONNX ops, so merges and splits line up; totals are compared with ratios.
#pragma once

#include <QStringList>

#include "views/plan_runner.h"
#include "views/table_model.h"

namespace souffle::views {

class ComparisonModel : public TableModel {
  Q_OBJECT
 public:
  enum Column {
    OpsColumn,
    AKernelsColumn,
    AStagesColumn,
    ASyncsColumn,
    ATimeColumn,
    BKernelsColumn,
    BStagesColumn,
    BSyncsColumn,
    BTimeColumn,
    DiffColumn,
    ColumnCount
  };
  enum Role { StatusRole = FirstCustomRole };  ///< the row's Status, as an int
  /// Same: as many kernels on each side (one op may span several) with equal stage and sync
  /// counts.
  enum class Status { Same, Differs, OnlyA, OnlyB };

  struct Totals {
    int kernels = 0, gridSyncs = 0;
    double dramBytes = 0, timeUs = 0;
  };
  struct Row {
    QStringList ops;               ///< ONNX nodes covered, first appearance order
    std::vector<int> a, b;         ///< partition indices on each side
    int aStages = 0, bStages = 0;  ///< summed over the row's kernels
    int aSyncs = 0, bSyncs = 0;
    double aTime = 0, bTime = 0;
    Status status = Status::Same;
  };

  explicit ComparisonModel(QObject* parent = nullptr);
  /// Either side may be null (the row shows only the other).
  void setPlans(PlanDataPtr a, PlanDataPtr b, const QString& labelA, const QString& labelB);

  /// The rows as compared (the table shows them in this order).
  const std::vector<Row>& comparedRows() const { return m_rows; }
  Totals totalsA() const { return m_totalA; }
  Totals totalsB() const { return m_totalB; }
  int differingRows() const;
  /// The totals side by side with B/A ratios, as an HTML table.
  QString totalsHtml() const;

 protected:
  int rows() const override { return int(m_rows.size()); }
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;
  QString headerTip(int column) const override;

 private:
  void fill(PlanDataPtr a, PlanDataPtr b, const QString& labelA, const QString& labelB);
  PlanDataPtr m_a, m_b;
  QString m_labelA, m_labelB;
  std::vector<Row> m_rows;
  Totals m_totalA, m_totalB;
};

}  // namespace souffle::views
