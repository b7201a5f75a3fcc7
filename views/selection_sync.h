/// \file The selection kept in step across the graph, the Nodes page, the Kernels page,
/// Properties and the TE program: a box picked in the graph selects its node and its (first)
/// kernel; a node or a kernel picked in its table selects its boxes in the graph.
#pragma once

#include <QObject>

namespace souffle::views {

class ExplorerSession;
class GraphPage;
class KernelsPage;
class NodesPage;
class PropertiesPanel;
class TeTextPanel;

class SelectionSync : public QObject {
  Q_OBJECT
 public:
  /// Follows the graph page's box selection, the Nodes page's and the Kernels page's
  /// activations; the pages belong to the window.
  SelectionSync(ExplorerSession* session, GraphPage* graph, NodesPage* nodes, KernelsPage* kernels,
                PropertiesPanel* properties, TeTextPanel* teText, QObject* parent = nullptr);

 private:
  /// A box picked in the graph: Properties, its kernel, its TE op and its node row.
  void onBoxSelected(int box);
  /// The node of row `row` picked in the Nodes page: its box in the graph.
  void onNodeActivated(int row);
  /// Kernel `k` picked in the Kernels page: its boxes in the graph (the TE op is not revealed).
  void onPartitionActivated(int k);

  ExplorerSession* m_session;
  GraphPage* m_graphPage;
  NodesPage* m_nodes;
  KernelsPage* m_kernels;
  PropertiesPanel* m_properties;
  TeTextPanel* m_teText;
  bool m_syncing = false;  ///< a selection made for another page: it does not echo back
};

}  // namespace souffle::views
