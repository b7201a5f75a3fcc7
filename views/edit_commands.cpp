#include "views/edit_commands.h"

#include <algorithm>

namespace souffle::views {

namespace {

bool isSiteEdit(const plan::Edit& e) {
  return e.kind == plan::Edit::Kind::Force || e.kind == plan::Edit::Kind::Forbid;
}

}  // namespace

DecisionEditor::DecisionEditor(QObject* parent) : QObject(parent), m_stack(new QUndoStack(this)) {}

void DecisionEditor::reset(const plan::Decisions& decisions) {
  m_stack->clear();
  m_decisions = decisions;
  emit changed();
}

void DecisionEditor::apply(const plan::Decisions& decisions) {
  m_decisions = decisions;
  emit changed();
}

void DecisionEditor::push(const std::vector<plan::Edit>& edits, const QString& text) {
  plan::Decisions after = m_decisions;
  for (const plan::Edit& e : edits)
    if (std::find(after.edits.begin(), after.edits.end(), e) == after.edits.end())
      after.edits.push_back(e);
  if (after == m_decisions) return;
  m_stack->push(new DecisionsCommand(this, m_decisions, std::move(after), text));
}

void DecisionEditor::setSiteDecision(const QString& key, plan::Edit::Kind kind, bool clear) {
  const std::string k = key.toStdString();
  plan::Decisions after = m_decisions;
  // One choice per site: a new one replaces the old.
  std::erase_if(after.edits, [&](const plan::Edit& e) { return isSiteEdit(e) && e.a == k; });
  QString text;
  if (!clear && (kind == plan::Edit::Kind::Force || kind == plan::Edit::Kind::Forbid)) {
    after.edits.push_back({kind, k, ""});
    text = QString::fromStdString(plan::describe(after.edits.back()));
  } else {
    text = tr("heuristic at %1").arg(key);
  }
  if (after == m_decisions) return;
  m_stack->push(new DecisionsCommand(this, m_decisions, std::move(after), text));
}

bool DecisionEditor::siteDecision(const QString& key, plan::Edit::Kind* kind) const {
  const std::string k = key.toStdString();
  for (const plan::Edit& e : m_decisions.edits)
    if (isSiteEdit(e) && e.a == k) {
      if (kind) *kind = e.kind;
      return true;
    }
  return false;
}

DecisionsCommand::DecisionsCommand(DecisionEditor* editor, plan::Decisions before,
                                   plan::Decisions after, const QString& text)
    : m_editor(editor), m_before(std::move(before)), m_after(std::move(after)) {
  setText(text);
}

void DecisionsCommand::undo() {
  m_editor->apply(m_before);
}

void DecisionsCommand::redo() {
  m_editor->apply(m_after);
}

}  // namespace souffle::views
