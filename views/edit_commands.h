/// \file The user's decisions as an undoable history: each edit is a QUndoCommand that swaps
/// the whole Decisions value, so undo and redo are exact and re-planning sees one value. A new
/// edit is first a proposal: planned, then accepted onto the history, or refused (the planner
/// said why) and dropped, so a refused edit changes nothing and is no undo step.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QUndoCommand>
#include <QUndoStack>

#include "core/plan/decisions.h"
#include "core/plan/plan.h"
#include "core/support/boundary.h"

namespace souffle::views {

/// Owns the decisions of the open project and their undo stack.
/// The edits a selection asks for, anchored by TE or node names (so they survive re-planning),
/// with the step's name; without edits, `hint` says what to select first.
struct EditRequest {
  std::vector<plan::Edit> edits;
  QString text;
  QString hint;
};
/// Merges partitions `partitions` of `plan` (two or more) into the first.
EditRequest mergeRequest(const plan::FusionPlan* plan, const std::vector<int>& partitions);
/// Split before, or pin, the node or TE named `anchor`.
EditRequest splitRequest(const QString& anchor);
EditRequest pinRequest(const QString& anchor);
/// Orders the stage of `anchor` after the stages before it by per-tile flags or a grid barrier.
EditRequest orderRequest(const QString& anchor, BoundaryKind kind);
/// The refusals `after` (the plan made under a proposal) holds for `proposed`, one
/// "edit — reason" each; empty when it applied them all.
QStringList refusalsOf(const plan::FusionPlan& after, const std::vector<plan::Edit>& proposed);

class DecisionEditor : public QObject {
  Q_OBJECT
 public:
  explicit DecisionEditor(QObject* parent = nullptr);

  const plan::Decisions& decisions() const { return m_decisions; }
  QUndoStack* undoStack() const { return m_stack; }

  /// Replaces the decisions without history (a project was opened or the model closed).
  void reset(const plan::Decisions& decisions = {});
  /// Proposes `edits` as one step named `text` (edits already present are not repeated):
  /// `proposed` asks for a plan under them; accept() makes it an undoable step, reject()
  /// drops it. A newer proposal replaces one not yet answered.
  void push(const std::vector<plan::Edit>& edits, const QString& text);
  /// Proposes `request`'s edits; false (nothing proposed) when it has none.
  bool push(const EditRequest& request);
  /// Proposes the user's choice for transformation site `key`: Force, Forbid, or (any other
  /// kind) back to the heuristic.
  void setSiteDecision(const QString& key, plan::Edit::Kind kind, bool clear);
  /// The decisions push(edits) would propose (the edit preview plans them before they are).
  plan::Decisions withEdits(const std::vector<plan::Edit>& edits) const;
  /// The decisions setSiteDecision(key, kind, clear) would propose, and the step's name.
  plan::Decisions withSiteDecision(const QString& key, plan::Edit::Kind kind, bool clear,
                                   QString* text = nullptr) const;
  /// Pushes a step without a proposal (its plan follows through `changed`).
  void pushStep(const plan::Decisions& after, const QString& text);

  bool hasProposal() const { return m_hasProposal; }
  /// The decisions a plan should be made under: the proposal while there is one.
  const plan::Decisions& planned() const { return m_hasProposal ? m_proposal : m_decisions; }
  /// The edits of the proposal that the decisions do not hold yet.
  std::vector<plan::Edit> proposedEdits() const;
  QString proposalText() const { return m_proposalText; }
  /// The proposal's plan is on screen: it becomes a step named `text` (the proposal's own
  /// name when empty); `changed` is not emitted, the plan is already there.
  void accept(const QString& text = {});
  /// The proposal was refused: the decisions stay as they were.
  void reject();
  /// Answers the proposal with `after`, the plan made under it: when `after` refuses one of the
  /// proposed edits the proposal is rejected and the refusals are returned ("edit — reason; …");
  /// else it is accepted as a step named with the change in estimated time from `before` (null:
  /// none), `message` (when given) gets "step: est. a → b µs (change)", and "" is returned.
  QString settle(const plan::FusionPlan& after, const plan::FusionPlan* before,
                 QString* message = nullptr);
  /// Force or Forbid recorded for `key`, if any.
  bool siteDecision(const QString& key, plan::Edit::Kind* kind) const;

  /// Used by the commands: sets the value and tells the window to re-plan (quietly: without
  /// telling, for a step whose plan is already on screen).
  void apply(const plan::Decisions& decisions, bool quiet = false);

 signals:
  /// The decisions changed (undo, redo, reset, an accepted step): plan them.
  void changed();
  /// A new edit wants a plan before it becomes a step.
  void proposed();

 private:
  void propose(plan::Decisions after, const QString& text);

  plan::Decisions m_decisions;
  plan::Decisions m_proposal;
  QString m_proposalText;
  bool m_hasProposal = false;
  QUndoStack* m_stack;
};

/// One step of the history: the decisions before and after it.
class DecisionsCommand : public QUndoCommand {
 public:
  /// `planned`: the plan of `after` is on screen already, so the first redo only records it.
  DecisionsCommand(DecisionEditor* editor, plan::Decisions before, plan::Decisions after,
                   const QString& text, bool planned = false);
  void undo() override;
  void redo() override;

 private:
  DecisionEditor* m_editor;
  plan::Decisions m_before, m_after;
  bool m_quietOnce;
};

}  // namespace souffle::views
