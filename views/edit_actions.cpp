#include "views/edit_actions.h"

#include <QAction>
#include <QMenu>
#include <QPushButton>
#include <QTableView>
#include <QToolBar>
#include <QUndoStack>
#include <algorithm>

#include "views/edit_preview.h"
#include "views/explorer_session.h"
#include "views/graph_page.h"
#include "views/kernels_page.h"
#include "views/transforms_panel.h"

namespace souffle::views {

EditActions::EditActions(ExplorerSession* session, DecisionEditor* editor, KernelsPage* kernels,
                         GraphPage* graph, TransformsPanel* transforms,
                         std::function<bool()> planning, QObject* parent)
    : QObject(parent),
      m_session(session),
      m_editor(editor),
      m_kernels(kernels),
      m_graph(graph),
      m_transforms(transforms),
      m_preview(new EditPreview(
          editor, [session] { return session->plan(); }, std::move(planning), this)) {}

QList<QAction*> EditActions::fillMenu(QMenu* edit) {
  m_undo = m_editor->undoStack()->createUndoAction(parent(), tr("&Undo"));
  m_undo->setShortcut(QKeySequence::Undo);
  m_redo = m_editor->undoStack()->createRedoAction(parent(), tr("&Redo"));
  m_redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
  edit->addAction(m_undo);
  edit->addAction(m_redo);
  edit->addSeparator();
  QAction* merge =
      edit->addAction(tr("&Merge selected kernels"), this, [this] { mergeSelected(); });
  merge->setShortcut(QKeySequence(tr("Ctrl+Shift+M")));
  merge->setToolTip(tr("Merge the selected kernels into one (Ctrl+Shift+M)"));
  QAction* split = edit->addAction(tr("&Split at node"), this, [this] { splitAtSelected(); });
  split->setShortcut(QKeySequence(tr("Ctrl+Shift+X")));
  split->setToolTip(tr("Start a new kernel at the selected node (Ctrl+Shift+X)"));
  QAction* pin =
      edit->addAction(tr("&Pin node to its own kernel"), this, [this] { pinSelected(); });
  pin->setShortcut(QKeySequence(tr("Ctrl+Shift+P")));
  pin->setToolTip(tr("Give the selected node a kernel of its own (Ctrl+Shift+P)"));
  QAction* byFlags = edit->addAction(tr("Order stage by per-tile &flags"), this,
                                     [this] { orderSelected(BoundaryKind::Flags); });
  byFlags->setToolTip(
      tr("The selected node's stage waits only on the producer blocks it reads (refused with "
         "the reason where the dependence cannot be bounded)"));
  QAction* byGrid = edit->addAction(tr("Order stage by a &grid barrier"), this,
                                    [this] { orderSelected(BoundaryKind::Grid); });
  byGrid->setToolTip(
      tr("A grid barrier before the selected node's stage, whatever the proofs "
         "allow"));
  edit->addSeparator();
  QAction* force = edit->addAction(tr("&Force selected transformation"), this, [this] {
    raiseDockOf(m_transforms);
    m_transforms->chooseForSelected(plan::Edit::Kind::Force, false);
  });
  force->setShortcut(QKeySequence(tr("Ctrl+Alt+F")));
  QAction* forbid = edit->addAction(tr("F&orbid selected transformation"), this, [this] {
    raiseDockOf(m_transforms);
    m_transforms->chooseForSelected(plan::Edit::Kind::Forbid, false);
  });
  forbid->setShortcut(QKeySequence(tr("Ctrl+Alt+B")));
  QAction* heuristic = edit->addAction(tr("&Heuristic for selected transformation"), this, [this] {
    m_transforms->chooseForSelected(plan::Edit::Kind::Force, true);
  });
  edit->addSeparator();
  QAction* clearEdits = edit->addAction(
      tr("&Discard all edits"), this, [this] { m_editor->pushStep({}, tr("discard all edits")); });
  watchPreviews({merge, split, pin, byFlags, byGrid, force, forbid, heuristic});
  edit->setToolTipsVisible(true);
  edit->addSeparator();
  edit->addAction(m_preview->menuLine());

  // The same actions on right click in the kernel table and the graph.
  merge->setIconText(tr("Merge"));
  split->setIconText(tr("Split"));
  pin->setIconText(tr("Pin"));
  m_shape = {merge, split, pin};
  QTableView* kernelTable = m_kernels->table();
  kernelTable->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* sep = new QAction(this);
  sep->setSeparator(true);
  // First in the table's menu, before what the table offers itself (its CSV export).
  kernelTable->insertActions(kernelTable->actions().value(0), m_shape + QList<QAction*>{sep});
  auto* previewSep = new QAction(this);
  previewSep->setSeparator(true);
  m_graph->setContextActions(
      {merge, split, pin, byFlags, byGrid, previewSep, m_preview->menuLine()});
  return {merge, split, pin, byFlags, byGrid, force, forbid, heuristic, clearEdits};
}

void EditActions::fillToolBar(QToolBar* bar) {
  bar->addAction(m_undo);
  bar->addAction(m_redo);
  bar->addSeparator();
  bar->addActions(m_shape);
}

std::vector<int> EditActions::selectedKernels() const {
  std::vector<int> ks;
  auto add = [&ks](int k) {
    if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  };
  if (!m_session->plan()) return ks;
  for (int k : m_kernels->selectedPartitions()) add(k);
  if (ks.size() >= 2) return ks;
  const std::vector<int> parts = m_graph->selectedPartitions();
  return parts.size() > ks.size() ? parts : ks;
}

void EditActions::mergeSelected() {
  const PlanDataPtr plan = m_session->plan();
  proposeEdit(mergeRequest(plan ? plan->plan.get() : nullptr, selectedKernels()));
}

void EditActions::splitAtSelected() {
  proposeEdit(splitRequest(m_graph->selectedAnchor()));
}

void EditActions::pinSelected() {
  proposeEdit(pinRequest(m_graph->selectedAnchor()));
}

void EditActions::orderSelected(BoundaryKind kind) {
  proposeEdit(orderRequest(m_graph->selectedAnchor(), kind));
}

void EditActions::proposeEdit(const EditRequest& request) {
  if (!m_editor->push(request)) m_session->say(request.hint, 6000);
}

void EditActions::watchPreviews(const QList<QAction*>& actions) {
  const auto site = [this](plan::Edit::Kind kind, bool clear) {
    return [this, kind, clear] {
      EditProposal p;
      const QString key = m_transforms->selectedSiteKey();
      if (key.isEmpty())
        p.hint = tr("Select a transformation site in the Transformations panel");
      else
        p.after = m_editor->withSiteDecision(key, kind, clear, &p.text);
      return p;
    };
  };
  const auto anchored = [this](EditRequest (*request)(const QString&)) {
    return [this, request] { return m_preview->proposal(request(m_graph->selectedAnchor())); };
  };
  const auto ordered = [this](BoundaryKind kind) {
    return
        [this, kind] { return m_preview->proposal(orderRequest(m_graph->selectedAnchor(), kind)); };
  };
  const std::function<EditProposal()> makers[] = {
      [this] {
        const PlanDataPtr plan = m_session->plan();
        return m_preview->proposal(
            mergeRequest(plan ? plan->plan.get() : nullptr, selectedKernels()));
      },
      anchored(&splitRequest),
      anchored(&pinRequest),
      ordered(BoundaryKind::Flags),
      ordered(BoundaryKind::Grid),
      site(plan::Edit::Kind::Force, false),
      site(plan::Edit::Kind::Forbid, false),
      site(plan::Edit::Kind::Force, true)};
  for (int i = 0; i < actions.size() && i < 8; ++i) m_preview->watch(actions[i], makers[i]);
  m_preview->watch(m_transforms->forceButton(), makers[5]);
  m_preview->watch(m_transforms->forbidButton(), makers[6]);
  m_preview->watch(m_transforms->heuristicButton(), makers[7]);
}

}  // namespace souffle::views
