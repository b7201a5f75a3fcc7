/// \file The "Transformations" dock: the plan's horizontal/vertical sites with applied or
/// refused state and the user's force/forbid choice, and the list of the user's edits with the
/// reason of each refused one.
#pragma once

#include <QAbstractTableModel>
#include <QWidget>

#include "core/plan/decisions.h"
#include "views/plan_runner.h"

class QLabel;
class QPushButton;
class QTableView;

namespace souffle::views {

class DecisionEditor;

/// One row per transformation site of the plan.
class TransformsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { KindColumn, SiteColumn, StateColumn, ChoiceColumn, ReasonColumn, ColumnCount };
  enum Role { KeyRole = Qt::UserRole + 1 };

  explicit TransformsModel(QObject* parent = nullptr);
  void setPlan(PlanDataPtr plan, const plan::Decisions& decisions);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  PlanDataPtr m_plan;
  plan::Decisions m_decisions;
};

/// One row per user edit, in the order they are applied.
class EditsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { EditColumn, StateColumn, ReasonColumn, ColumnCount };
  enum Role { RefusedRole = Qt::UserRole + 1 };

  explicit EditsModel(QObject* parent = nullptr);
  /// `plan` may be null or stale (planning): edits it does not mention read "pending".
  void setState(PlanDataPtr plan, const plan::Decisions& decisions);
  int refusedCount() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    plan::Edit edit;
    int state = 0;  ///< 0 pending, 1 applied, 2 refused
    QString reason;
  };
  std::vector<Row> m_rows;
};

class TransformsPanel : public QWidget {
  Q_OBJECT
 public:
  TransformsPanel(DecisionEditor* editor, QWidget* parent = nullptr);
  void setPlan(PlanDataPtr plan);
  TransformsModel* transformsModel() const { return m_sites; }
  EditsModel* editsModel() const { return m_edits; }
  QTableView* sitesTable() const { return m_sitesTable; }

  /// Records the user's choice for the selected site (Force/Forbid, or back to the heuristic).
  void chooseForSelected(plan::Edit::Kind kind, bool clear);

 private:
  void refresh();
  void updateButtons();

  DecisionEditor* m_editor;
  PlanDataPtr m_plan;
  TransformsModel* m_sites;
  EditsModel* m_edits;
  QTableView* m_sitesTable;
  QTableView* m_editsTable;
  QLabel* m_summary;
  QPushButton* m_force;
  QPushButton* m_forbid;
  QPushButton* m_heuristic;
};

}  // namespace souffle::views
