#include "views/edit_commands.h"

#include <algorithm>

#include "views/partition_table_model.h"

namespace souffle::views {

namespace {

bool isSiteEdit(const plan::Edit& e) {
  return e.kind == plan::Edit::Kind::Force || e.kind == plan::Edit::Kind::Forbid;
}

}  // namespace

DecisionEditor::DecisionEditor(QObject* parent) : QObject(parent), m_stack(new QUndoStack(this)) {}

void DecisionEditor::reset(const plan::Decisions& decisions) {
  m_stack->clear();
  m_hasProposal = false;
  m_decisions = decisions;
  emit changed();
}

void DecisionEditor::apply(const plan::Decisions& decisions, bool quiet) {
  m_hasProposal = false;  // undo/redo while an edit was being planned: the edit is dropped
  m_decisions = decisions;
  if (!quiet) emit changed();
}

void DecisionEditor::propose(plan::Decisions after, const QString& text) {
  if (after == m_decisions) return;
  m_proposal = std::move(after);
  m_proposalText = text;
  m_hasProposal = true;
  emit proposed();
}

std::vector<plan::Edit> DecisionEditor::proposedEdits() const {
  std::vector<plan::Edit> out;
  if (!m_hasProposal) return out;
  for (const plan::Edit& e : m_proposal.edits)
    if (std::find(m_decisions.edits.begin(), m_decisions.edits.end(), e) == m_decisions.edits.end())
      out.push_back(e);
  return out;
}

void DecisionEditor::accept(const QString& text) {
  if (!m_hasProposal) return;
  m_hasProposal = false;
  m_stack->push(new DecisionsCommand(this, m_decisions, m_proposal,
                                     text.isEmpty() ? m_proposalText : text, true));
}

void DecisionEditor::reject() {
  m_hasProposal = false;
}

EditRequest mergeRequest(const plan::FusionPlan* p, const std::vector<int>& ks) {
  EditRequest r;
  if (!p || ks.size() < 2) {
    r.hint = QObject::tr(
        "Select two or more kernels to merge (rows of the kernel table, or nodes of different "
        "kernels with Ctrl+click)");
    return r;
  }
  const std::string first = p->program.ops[size_t(p->partitions[size_t(ks[0])].tes.front())]->name;
  QStringList ids{QStringLiteral("#%1").arg(p->partitions[size_t(ks[0])].id)};
  for (size_t i = 1; i < ks.size(); ++i) {
    const plan::Partition& k = p->partitions[size_t(ks[i])];
    r.edits.push_back(
        {plan::Edit::Kind::Merge, first, p->program.ops[size_t(k.tes.front())]->name});
    ids << QStringLiteral("#%1").arg(k.id);
  }
  r.text = QObject::tr("merge kernels %1").arg(ids.join(QStringLiteral(", ")));
  return r;
}

EditRequest splitRequest(const QString& at) {
  if (at.isEmpty()) return {{}, {}, QObject::tr("Select a node in the graph to split at")};
  return {{{plan::Edit::Kind::Split, at.toStdString(), ""}},
          QObject::tr("split before %1").arg(at),
          {}};
}

EditRequest pinRequest(const QString& at) {
  if (at.isEmpty()) return {{}, {}, QObject::tr("Select a node in the graph to pin")};
  return {{{plan::Edit::Kind::Pin, at.toStdString(), ""}}, QObject::tr("pin %1").arg(at), {}};
}

EditRequest orderRequest(const QString& at, BoundaryKind kind) {
  if (at.isEmpty()) return {{}, {}, QObject::tr("Select a node in the graph whose stage to order")};
  const plan::Edit e{plan::Edit::Kind::Sync, at.toStdString(),
                     kind == BoundaryKind::Flags ? "flags" : "grid"};
  return {{e}, QString::fromStdString(plan::describe(e)), {}};
}

QStringList refusalsOf(const plan::FusionPlan& after, const std::vector<plan::Edit>& proposed) {
  QStringList refusals;
  for (const plan::Edit& e : proposed)
    for (const plan::RefusedEdit& r : after.refused)
      if (r.edit == e)
        refusals << QObject::tr("%1 — %2").arg(QString::fromStdString(plan::describe(r.edit)),
                                               QString::fromStdString(r.reason));
  return refusals;
}

bool DecisionEditor::push(const EditRequest& request) {
  if (request.edits.empty()) return false;
  push(request.edits, request.text);
  return true;
}

QString DecisionEditor::settle(const plan::FusionPlan& after, const plan::FusionPlan* before,
                               QString* message) {
  const QStringList refusals = refusalsOf(after, proposedEdits());
  if (!refusals.isEmpty()) {
    reject();
    return refusals.join(QStringLiteral("; "));
  }
  QString text = proposalText();
  if (before) {
    const QString delta = estimateDelta(before->est_time_us, after.est_time_us);
    text += QStringLiteral(" (%1)").arg(delta);
    if (message)
      *message = tr("%1: est. %2 → %3 µs (%4)")
                     .arg(proposalText())
                     .arg(before->est_time_us, 0, 'f', 1)
                     .arg(after.est_time_us, 0, 'f', 1)
                     .arg(delta);
  }
  accept(text);
  return {};
}

void DecisionEditor::pushStep(const plan::Decisions& after, const QString& text) {
  if (after == m_decisions) return;
  m_hasProposal = false;
  m_stack->push(new DecisionsCommand(this, m_decisions, after, text));
}

plan::Decisions DecisionEditor::withEdits(const std::vector<plan::Edit>& edits) const {
  plan::Decisions after = m_decisions;
  for (const plan::Edit& e : edits)
    if (std::find(after.edits.begin(), after.edits.end(), e) == after.edits.end())
      after.edits.push_back(e);
  return after;
}

void DecisionEditor::push(const std::vector<plan::Edit>& edits, const QString& text) {
  propose(withEdits(edits), text);
}

plan::Decisions DecisionEditor::withSiteDecision(const QString& key, plan::Edit::Kind kind,
                                                 bool clear, QString* text) const {
  const std::string k = key.toStdString();
  plan::Decisions after = m_decisions;
  // One choice per site: a new one replaces the old.
  std::erase_if(after.edits, [&](const plan::Edit& e) { return isSiteEdit(e) && e.a == k; });
  QString name;
  if (!clear && (kind == plan::Edit::Kind::Force || kind == plan::Edit::Kind::Forbid)) {
    after.edits.push_back({kind, k, ""});
    name = QString::fromStdString(plan::describe(after.edits.back()));
  } else {
    name = tr("heuristic at %1").arg(key);
  }
  if (text) *text = name;
  return after;
}

void DecisionEditor::setSiteDecision(const QString& key, plan::Edit::Kind kind, bool clear) {
  QString text;
  plan::Decisions after = withSiteDecision(key, kind, clear, &text);
  propose(std::move(after), text);
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
                                   plan::Decisions after, const QString& text, bool planned)
    : m_editor(editor),
      m_before(std::move(before)),
      m_after(std::move(after)),
      m_quietOnce(planned) {
  setText(text);
}

void DecisionsCommand::undo() {
  m_editor->apply(m_before);
}

void DecisionsCommand::redo() {
  m_editor->apply(m_after, m_quietOnce);
  m_quietOnce = false;
}

}  // namespace souffle::views
