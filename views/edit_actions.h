/// \file The edits the user makes to the plan on screen: Edit's entries (undo, redo, merge,
/// split, pin, the two stage orders, force, forbid, heuristic, discard), their tool bar and
/// context menus, and the what-if preview shown while one is hovered.
#pragma once

#include <QList>
#include <QObject>
#include <functional>
#include <vector>

#include "views/edit_commands.h"

class QAction;
class QMenu;
class QToolBar;

namespace souffle::views {

class EditPreview;
class ExplorerSession;
class GraphPage;
class KernelsPage;
class TransformsPanel;

class EditActions : public QObject {
  Q_OBJECT
 public:
  /// Edits go to `editor`; what is selected comes from the kernel table and the graph page, the
  /// transformation sites from `transforms`; `planning` says whether a plan is being made.
  EditActions(ExplorerSession* session, DecisionEditor* editor, KernelsPage* kernels,
              GraphPage* graph, TransformsPanel* transforms, std::function<bool()> planning,
              QObject* parent);

  /// Fills the Edit menu and the context menus of the kernel table and the graph; returns the
  /// entries that need a model.
  QList<QAction*> fillMenu(QMenu* edit);
  /// Undo, redo, merge, split and pin.
  void fillToolBar(QToolBar* bar);
  EditPreview* preview() const { return m_preview; }

  /// Merges the kernels of the selected kernel-table rows (or of the selected graph nodes).
  void mergeSelected();
  /// Starts a new kernel at the selected graph node.
  void splitAtSelected();
  /// Gives the selected graph node a kernel of its own.
  void pinSelected();
  /// Orders the selected node's stage after the stages before it by `kind`.
  void orderSelected(BoundaryKind kind);

 private:
  /// Partition indices of the selected kernel rows, else of the selected graph nodes.
  std::vector<int> selectedKernels() const;
  /// Proposes the request's edits, or says what to select first.
  void proposeEdit(const EditRequest& request);
  /// Hovering merge, split, pin, the two orders, force, forbid and heuristic (in this order)
  /// previews them.
  void watchPreviews(const QList<QAction*>& actions);

  ExplorerSession* m_session;
  DecisionEditor* m_editor;
  KernelsPage* m_kernels;
  GraphPage* m_graph;
  TransformsPanel* m_transforms;
  EditPreview* m_preview;
  QAction* m_undo = nullptr;
  QAction* m_redo = nullptr;
  QList<QAction*> m_shape;  ///< merge, split, pin
};

}  // namespace souffle::views
