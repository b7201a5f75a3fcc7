#include "views/comparison_model.h"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QFont>
#include <QHash>
#include <QPalette>
#include <algorithm>
#include <numeric>

#include "views/partition_table_model.h"

namespace souffle::views {

namespace {

/// Union-find over the kernels of both sides (A first, then B).
struct Groups {
  std::vector<int> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  }
  void join(int x, int y) {
    x = find(x), y = find(y);
    if (x != y) parent[size_t(std::max(x, y))] = std::min(x, y);
  }
};

ComparisonModel::Totals totalsOf(const PlanDataPtr& p) {
  ComparisonModel::Totals t;
  if (!p) return t;
  t.kernels = int(p->plan->kernels());
  t.gridSyncs = p->plan->grid_syncs;
  t.dramBytes = double(p->plan->dram_bytes);
  t.timeUs = p->plan->est_time_us;
  return t;
}

QString kernelList(const PlanDataPtr& p, const std::vector<int>& ks) {
  QStringList ids;
  for (int k : ks) ids << QStringLiteral("#%1").arg(p->plan->partitions[size_t(k)].id);
  return ids.join(QStringLiteral(" "));
}

QColor tint(ComparisonModel::Status s) {
  const bool dark = qApp->palette().color(QPalette::Base).lightness() < 128;
  switch (s) {
    case ComparisonModel::Status::Differs:
      return dark ? QColor(96, 80, 30) : QColor(255, 240, 200);
    case ComparisonModel::Status::OnlyA:
    case ComparisonModel::Status::OnlyB:
      return dark ? QColor(100, 45, 45) : QColor(255, 220, 215);
    case ComparisonModel::Status::Same:
      break;
  }
  return {};
}

/// B against A for a count or bytes: "same", "B −301 (−99.7%)", "B +12 (+4.0%)".
QString change(double a, double b, const QString& bText = {}) {
  if (a == b) return QObject::tr("same");
  const QString sign = b < a ? QStringLiteral("\u2212") : QStringLiteral("+");
  const QString amount = bText.isEmpty() ? QString::number(std::abs(b - a), 'g', 6) : bText;
  if (a <= 0) return QObject::tr("B %1%2 (A has none)").arg(sign, amount);
  return QObject::tr("B %1%2 (%1%3%)").arg(sign, amount).arg(std::abs(b - a) / a * 100, 0, 'f', 1);
}

/// B against A for a time: "B 2.13× faster", "B 1.20× slower", "same".
QString speed(double a, double b) {
  if (a <= 0 || b <= 0) return QStringLiteral("–");
  if (std::abs(a - b) < 1e-9 * std::max(a, b)) return QObject::tr("same");
  return b < a ? QObject::tr("B %1× faster").arg(a / b, 0, 'f', 2)
               : QObject::tr("B %1× slower").arg(b / a, 0, 'f', 2);
}

}  // namespace

ComparisonModel::ComparisonModel(QObject* parent) : TableModel(parent) {}

void ComparisonModel::setPlans(PlanDataPtr a, PlanDataPtr b, const QString& labelA,
                               const QString& labelB) {
  resetRows([&] { fill(std::move(a), std::move(b), labelA, labelB); });
}

void ComparisonModel::fill(PlanDataPtr a, PlanDataPtr b, const QString& labelA,
                           const QString& labelB) {
  m_a = std::move(a);
  m_b = std::move(b);
  m_labelA = labelA;
  m_labelB = labelB;
  m_rows.clear();
  const size_t na = m_a ? m_a->plan->partitions.size() : 0;
  const size_t nb = m_b ? m_b->plan->partitions.size() : 0;
  Groups g(na + nb);
  // Kernels of either side that cover a common ONNX op belong to one row.
  QHash<QString, int> firstOwner;
  auto visit = [&](const PlanDataPtr& p, size_t n, size_t offset) {
    for (size_t k = 0; k < n; ++k)
      for (const std::string& op : p->plan->partitions[k].ops) {
        const QString name = QString::fromStdString(op);
        auto it = firstOwner.constFind(name);
        if (it == firstOwner.constEnd())
          firstOwner.insert(name, int(offset + k));
        else
          g.join(*it, int(offset + k));
      }
  };
  if (m_a) visit(m_a, na, 0);
  if (m_b) visit(m_b, nb, na);
  // An op whose TE a transformation replaced (horizontal fusion names only the first op) still
  // sits in the kernels of its replacement: follow the op boxes of both plans too.
  QHash<int, QStringList> boxOps;
  if (m_a && m_b && m_a->model == m_b->model) {
    const SceneGraph& og = m_a->model->opGraph;
    for (size_t box = 0;
         box < og.nodes.size() && box < m_a->opKernels.size() && box < m_b->opKernels.size();
         ++box) {
      std::vector<int> all;
      for (int k : m_a->opKernels[box]) all.push_back(k);
      for (int k : m_b->opKernels[box]) all.push_back(int(na) + k);
      for (size_t i = 1; i < all.size(); ++i) g.join(all[0], all[i]);
      if (!all.empty()) boxOps[all[0]] << og.nodes[box].onnxNode;
    }
  }
  QHash<int, int> rowOfRoot;
  auto rowFor = [&](int node) -> Row& {
    const int root = g.find(node);
    auto it = rowOfRoot.constFind(root);
    if (it != rowOfRoot.constEnd()) return m_rows[size_t(*it)];
    rowOfRoot.insert(root, int(m_rows.size()));
    m_rows.emplace_back();
    return m_rows.back();
  };
  auto addOps = [](Row& r, const plan::Partition& k) {
    for (const std::string& op : k.ops) {
      const QString name = QString::fromStdString(op);
      if (!r.ops.contains(name)) r.ops << name;
    }
  };
  for (size_t k = 0; k < na; ++k) {
    Row& r = rowFor(int(k));
    const plan::Partition& p = m_a->plan->partitions[k];
    r.a.push_back(int(k));
    r.aStages += kernelStages(p);
    r.aSyncs += p.grid_syncs;
    r.aTime += p.est_time_us;
    addOps(r, p);
  }
  for (size_t k = 0; k < nb; ++k) {
    Row& r = rowFor(int(na + k));
    const plan::Partition& p = m_b->plan->partitions[k];
    r.b.push_back(int(k));
    r.bStages += kernelStages(p);
    r.bSyncs += p.grid_syncs;
    r.bTime += p.est_time_us;
    addOps(r, p);
  }
  for (auto it = boxOps.constBegin(); it != boxOps.constEnd(); ++it) {
    Row& r = rowFor(it.key());
    for (const QString& op : it.value())
      if (!op.isEmpty() && !r.ops.contains(op)) r.ops << op;
  }
  for (Row& r : m_rows) {
    if (r.b.empty())
      r.status = Status::OnlyA;
    else if (r.a.empty())
      r.status = Status::OnlyB;
    else if (r.a.size() == r.b.size() && r.aStages == r.bStages && r.aSyncs == r.bSyncs)
      r.status = Status::Same;
    else
      r.status = Status::Differs;
  }
  m_totalA = totalsOf(m_a);
  m_totalB = totalsOf(m_b);
}

int ComparisonModel::differingRows() const {
  return int(std::count_if(m_rows.begin(), m_rows.end(),
                           [](const Row& r) { return r.status != Status::Same; }));
}

QString ComparisonModel::totalsHtml() const {
  const Totals& a = m_totalA;
  const Totals& b = m_totalB;
  auto row = [](const QString& what, const QString& x, const QString& y, const QString& r) {
    return QStringLiteral(
               "<tr><td>%1</td><td align=right>%2</td><td align=right>%3</td>"
               "<td align=right><b>%4</b></td></tr>")
        .arg(what, x, y, r);
  };
  QString html = QStringLiteral(
                     "<table cellspacing=0 cellpadding=2><tr><th></th><th align=right>A: "
                     "%1&nbsp;&nbsp;</th><th align=right>B: %2&nbsp;&nbsp;</th><th "
                     "align=right>B against A</th></tr>")
                     .arg(m_labelA.toHtmlEscaped(), m_labelB.toHtmlEscaped());
  html += row(tr("Kernels"), QString::number(a.kernels), QString::number(b.kernels),
              change(a.kernels, b.kernels));
  html += row(tr("Grid syncs"), QString::number(a.gridSyncs), QString::number(b.gridSyncs),
              change(a.gridSyncs, b.gridSyncs));
  html += row(tr("DRAM bytes"), compactBytes(a.dramBytes), compactBytes(b.dramBytes),
              change(a.dramBytes, b.dramBytes, compactBytes(std::abs(b.dramBytes - a.dramBytes))));
  html += row(tr("Est. time (cost model)"), QStringLiteral("%1 µs").arg(a.timeUs, 0, 'f', 1),
              QStringLiteral("%1 µs").arg(b.timeUs, 0, 'f', 1), speed(a.timeUs, b.timeUs));
  return html + QStringLiteral("</table>");
}

QVariant ComparisonModel::cell(int row, int c, int role) const {
  const Row& r = m_rows[size_t(row)];
  if (role == StatusRole) return int(r.status);
  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    const bool hasA = !r.a.empty(), hasB = !r.b.empty();
    switch (c) {
      case OpsColumn:
        if (sort) return r.ops.size();
        if (r.ops.isEmpty()) return tr("(no ONNX op)");
        return r.ops.size() == 1 ? r.ops.front()
                                 : tr("%1 +%2 ops").arg(r.ops.front()).arg(r.ops.size() - 1);
      case AKernelsColumn:
        if (sort) return hasA ? r.a.front() : -1;
        return hasA ? kernelList(m_a, r.a) : QStringLiteral("—");
      case AStagesColumn:
        return hasA ? QVariant(r.aStages) : QVariant(sort ? -1 : QVariant());
      case ASyncsColumn:
        return hasA ? QVariant(r.aSyncs) : QVariant(sort ? -1 : QVariant());
      case ATimeColumn:
        if (!hasA) return sort ? QVariant(-1.0) : QVariant();
        return sort ? QVariant(r.aTime) : QVariant(QString::number(r.aTime, 'f', 2));
      case BKernelsColumn:
        if (sort) return hasB ? r.b.front() : -1;
        return hasB ? kernelList(m_b, r.b) : QStringLiteral("—");
      case BStagesColumn:
        return hasB ? QVariant(r.bStages) : QVariant(sort ? -1 : QVariant());
      case BSyncsColumn:
        return hasB ? QVariant(r.bSyncs) : QVariant(sort ? -1 : QVariant());
      case BTimeColumn:
        if (!hasB) return sort ? QVariant(-1.0) : QVariant();
        return sort ? QVariant(r.bTime) : QVariant(QString::number(r.bTime, 'f', 2));
      case DiffColumn:
        switch (r.status) {
          case Status::Same:
            return sort ? QVariant(0) : QVariant(tr("same"));
          case Status::OnlyA:
            return sort ? QVariant(2) : QVariant(tr("only in A"));
          case Status::OnlyB:
            return sort ? QVariant(2) : QVariant(tr("only in B"));
          case Status::Differs:
            if (sort) return 1;
            if (r.a.size() != r.b.size())
              return tr("%1 → %2 kernels").arg(r.a.size()).arg(r.b.size());
            return tr("stages/syncs differ");
        }
        return {};
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole && c == OpsColumn) return r.ops.join(QLatin1Char('\n'));
  if (role == Qt::TextAlignmentRole)  // the text columns sort by numbers: not the base's rule
    return c != OpsColumn && c != DiffColumn && c != AKernelsColumn && c != BKernelsColumn
               ? int(Qt::AlignRight | Qt::AlignVCenter)
               : int(Qt::AlignLeft | Qt::AlignVCenter);
  if (role == Qt::BackgroundRole && r.status != Status::Same) return tint(r.status);
  if (role == Qt::FontRole) {
    const bool stagesDiffer = (c == AStagesColumn || c == BStagesColumn) && !r.a.empty() &&
                              !r.b.empty() && r.aStages != r.bStages;
    const bool syncsDiffer = (c == ASyncsColumn || c == BSyncsColumn) && !r.a.empty() &&
                             !r.b.empty() && r.aSyncs != r.bSyncs;
    if (stagesDiffer || syncsDiffer || (c == DiffColumn && r.status != Status::Same)) {
      QFont f;
      f.setBold(true);
      return f;
    }
  }
  return {};
}

QString ComparisonModel::headerTip(int column) const {
  if (column >= AKernelsColumn && column <= ATimeColumn) return m_labelA;
  if (column >= BKernelsColumn && column <= BTimeColumn) return m_labelB;
  return {};
}

QString ComparisonModel::header(int column) const {
  switch (column) {
    case OpsColumn:
      return tr("ONNX ops");
    case AKernelsColumn:
      return tr("A kernels");
    case AStagesColumn:
      return tr("A stages");
    case ASyncsColumn:
      return tr("A syncs");
    case ATimeColumn:
      return tr("A µs");
    case BKernelsColumn:
      return tr("B kernels");
    case BStagesColumn:
      return tr("B stages");
    case BSyncsColumn:
      return tr("B syncs");
    case BTimeColumn:
      return tr("B µs");
    case DiffColumn:
      return tr("Difference");
    default:
      return {};
  }
}

}  // namespace souffle::views
