#include "views/collapse.h"

#include <QHash>
#include <algorithm>
#include <map>

namespace souffle::views {

CollapsedGraph collapseKernels(const SceneGraph& full, const PlanData& plan,
                               const std::set<int>& collapsed) {
  CollapsedGraph out;
  auto g = std::make_shared<SceneGraph>();
  g->teLevel = full.teLevel;
  const auto& kernelsOf = plan.kernelsOf(full.teLevel);
  const plan::FusionPlan& p = *plan.plan;
  const size_t n = full.nodes.size();
  out.shownBox.assign(n, -1);

  // The first collapsed kernel of each box, if any.
  auto collapsedKernel = [&](size_t box) {
    if (box >= kernelsOf.size()) return -1;
    for (int k : kernelsOf[box])
      if (collapsed.count(k)) return k;
    return -1;
  };
  // Kernel boxes sit where their first member box was, so the order of boxes (and with it
  // the layout) stays close to the full graph's.
  std::map<int, int> kernelBox;
  for (size_t b = 0; b < n; ++b) {
    const int k = collapsedKernel(b);
    if (k >= 0) {
      auto it = kernelBox.find(k);
      if (it != kernelBox.end()) {
        out.shownBox[b] = it->second;
        continue;
      }
      const plan::Partition& part = p.partitions[static_cast<size_t>(k)];
      SceneNode node;
      node.kind = SceneNode::Kind::Kernel;
      node.index = k;
      node.category = part.kind == plan::PartitionKind::Compute ? NodeCategory::Matmul
                      : part.kind == plan::PartitionKind::View  ? NodeCategory::Shape
                                                                : NodeCategory::Compute;
      node.teCount = static_cast<int>(part.tes.size());
      node.subtitle = QStringLiteral("est. %1 µs").arg(part.est_time_us, 0, 'f', 1);
      const int box = static_cast<int>(g->nodes.size());
      kernelBox.emplace(k, box);
      out.shownBox[b] = box;
      g->nodes.push_back(std::move(node));
      g->baseBoxes.push_back(-1);
      out.kernels.push_back({k});
      continue;
    }
    out.shownBox[b] = static_cast<int>(g->nodes.size());
    g->nodes.push_back(full.nodes[b]);
    g->baseBoxes.push_back(static_cast<int>(b));
    out.kernels.push_back(b < kernelsOf.size() ? kernelsOf[b] : std::vector<int>());
  }
  for (auto& [k, box] : kernelBox) {
    const plan::Partition& part = p.partitions[static_cast<size_t>(k)];
    const int ops = static_cast<int>(part.ops.size());
    g->nodes[static_cast<size_t>(box)].title =
        QStringLiteral("K%1 · %2 op%3").arg(part.id).arg(ops).arg(ops == 1 ? "" : "s");
  }
  QHash<quint64, int> seen;
  for (const SceneEdge& e : full.edges) {
    if (e.from < 0 || e.to < 0 || static_cast<size_t>(e.from) >= n ||
        static_cast<size_t>(e.to) >= n)
      continue;
    const int a = out.shownBox[e.from], b = out.shownBox[e.to];
    if (a == b) continue;
    const quint64 key = (static_cast<quint64>(a) << 32) | static_cast<quint32>(b);
    if (seen.contains(key)) continue;
    seen.insert(key, 1);
    g->edges.push_back({a, b, e.label});
  }
  out.graph = std::move(g);
  return out;
}

std::set<int> drawnPartitions(const PlanData& plan, bool teLevel) {
  std::set<int> all;
  for (const std::vector<int>& ks : plan.kernelsOf(teLevel))
    for (int k : ks) all.insert(k);
  return all;
}

}  // namespace souffle::views
