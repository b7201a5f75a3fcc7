/// \file The user's decisions as an undoable history: each edit is a QUndoCommand that swaps
/// the whole Decisions value, so undo and redo are exact and re-planning sees one value.
#pragma once

#include <QObject>
#include <QString>
#include <QUndoCommand>
#include <QUndoStack>

#include "core/plan/decisions.h"

namespace souffle::views {

/// Owns the decisions of the open project and their undo stack.
class DecisionEditor : public QObject {
  Q_OBJECT
 public:
  explicit DecisionEditor(QObject* parent = nullptr);

  const plan::Decisions& decisions() const { return m_decisions; }
  QUndoStack* undoStack() const { return m_stack; }

  /// Replaces the decisions without history (a project was opened or the model closed).
  void reset(const plan::Decisions& decisions = {});
  /// Adds `edits` as one undoable step named `text`. Edits already present are not repeated.
  void push(const std::vector<plan::Edit>& edits, const QString& text);
  /// Sets the user's choice for transformation site `key`: Force, Forbid, or (any other kind)
  /// back to the heuristic. One undoable step.
  void setSiteDecision(const QString& key, plan::Edit::Kind kind, bool clear);
  /// Force or Forbid recorded for `key`, if any.
  bool siteDecision(const QString& key, plan::Edit::Kind* kind) const;

  /// Used by the commands: sets the value and tells the window to re-plan.
  void apply(const plan::Decisions& decisions);

 signals:
  void changed();

 private:
  plan::Decisions m_decisions;
  QUndoStack* m_stack;
};

/// One step of the history: the decisions before and after it.
class DecisionsCommand : public QUndoCommand {
 public:
  DecisionsCommand(DecisionEditor* editor, plan::Decisions before, plan::Decisions after,
                   const QString& text);
  void undo() override;
  void redo() override;

 private:
  DecisionEditor* m_editor;
  plan::Decisions m_before, m_after;
};

}  // namespace souffle::views
