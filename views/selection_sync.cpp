#include "views/selection_sync.h"

#include "views/explorer_session.h"
#include "views/graph_page.h"
#include "views/graph_view.h"
#include "views/kernels_page.h"
#include "views/node_table_model.h"
#include "views/nodes_page.h"
#include "views/panels.h"
#include "views/scene_graph.h"

namespace souffle::views {

SelectionSync::SelectionSync(ExplorerSession* session, GraphPage* graph, NodesPage* nodes,
                             KernelsPage* kernels, PropertiesPanel* properties, TeTextPanel* teText,
                             QObject* parent)
    : QObject(parent),
      m_session(session),
      m_graphPage(graph),
      m_nodes(nodes),
      m_kernels(kernels),
      m_properties(properties),
      m_teText(teText) {
  connect(m_graphPage->panel(), &GraphPanel::boxSelected, this, &SelectionSync::onBoxSelected);
  connect(m_nodes, &NodesPage::nodeActivated, this, &SelectionSync::onNodeActivated);
  connect(m_kernels, &KernelsPage::partitionActivated, this, &SelectionSync::onPartitionActivated);
}

void SelectionSync::onBoxSelected(int box) {
  GraphPanel* graph = m_graphPage->panel();
  const SceneGraph* g = graph->scene()->graph();
  m_properties->showBox(g, box);
  if (!g || box < 0 || m_syncing) return;
  // Follow in the kernel table: the (first) kernel of the box.
  if (const std::vector<int>* ks = graph->scene()->kernelsOf(box); ks && !ks->empty()) {
    m_syncing = true;
    m_kernels->selectPartition(ks->front(), true);
    m_syncing = false;
  }
  m_teText->revealBox(g->nodes[box], m_session->model().get());
  m_nodes->showBox(*g, box, m_session->model().get());
}

void SelectionSync::onNodeActivated(int row) {
  if (m_syncing) return;
  const QModelIndex src = m_nodes->model()->index(row, 0);
  int box = src.data(NodeTableModel::BoxRole).toInt();
  const SceneGraph* g = m_graphPage->panel()->scene()->graph();
  if (!g) return;
  if (g->teLevel) {
    const QString name = src.data().toString();
    box = -1;
    for (size_t i = 0; i < g->nodes.size() && box < 0; ++i)
      if (g->nodes[i].onnxNode == name) box = static_cast<int>(i);
  }
  if (box < 0) return;
  m_syncing = true;
  m_graphPage->selectBox(box);
  m_syncing = false;
  onBoxSelected(box);
}

void SelectionSync::onPartitionActivated(int k) {
  if (m_syncing || !m_session->plan()) return;
  m_syncing = true;
  const int box = m_graphPage->selectPartition(k);
  m_syncing = false;
  if (box >= 0) m_properties->showBox(m_graphPage->panel()->scene()->graph(), box);
}

}  // namespace souffle::views
