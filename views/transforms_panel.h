/// \file The "Transformations" dock: the plan's horizontal/vertical sites with applied or
/// refused state and the user's force/forbid choice, and the list of the user's edits with the
/// reason of each refused one.
#pragma once

#include <QWidget>

#include "core/plan/decisions.h"
#include "views/plan_runner.h"
#include "views/table_model.h"

class QLabel;
class QPushButton;
class QTableView;

namespace souffle::views {

class DecisionEditor;
class ExplorerSession;

/// One row per transformation site of the plan.
class TransformsModel : public TableModel {
  Q_OBJECT
 public:
  enum Column { KindColumn, SiteColumn, StateColumn, ChoiceColumn, ReasonColumn, ColumnCount };
  enum Role { KeyRole = FirstCustomRole };

  explicit TransformsModel(QObject* parent = nullptr);
  void setPlan(PlanDataPtr plan, const plan::Decisions& decisions);

 protected:
  int rows() const override;
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;

 private:
  PlanDataPtr m_plan;
  plan::Decisions m_decisions;
};

/// One row per user edit, in the order they are applied.
class EditsModel : public TableModel {
  Q_OBJECT
 public:
  enum Column { EditColumn, StateColumn, ReasonColumn, ColumnCount };
  enum Role { RefusedRole = FirstCustomRole };

  explicit EditsModel(QObject* parent = nullptr);
  /// `plan` may be null or stale (planning): edits it does not mention read "pending".
  void setState(PlanDataPtr plan, const plan::Decisions& decisions);
  int refusedCount() const;

 protected:
  int rows() const override { return int(m_rows.size()); }
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;

 private:
  void fill(const PlanDataPtr& plan, const plan::Decisions& decisions);
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
  /// Follows the session's plan.
  void attach(ExplorerSession* session);
  void setPlan(PlanDataPtr plan);
  TransformsModel* transformsModel() const { return m_sites; }
  EditsModel* editsModel() const { return m_edits; }
  QTableView* sitesTable() const { return m_sitesTable; }

  /// Records the user's choice for the selected site (Force/Forbid, or back to the heuristic).
  void chooseForSelected(plan::Edit::Kind kind, bool clear);
  /// The key of the selected site ("" when none is selected).
  QString selectedSiteKey() const;
  QPushButton* forceButton() const { return m_force; }
  QPushButton* forbidButton() const { return m_forbid; }
  QPushButton* heuristicButton() const { return m_heuristic; }

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
