#include "views/panels.h"

#include <algorithm>
#include <map>
#include <set>

#include <QAction>
#include <QDockWidget>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextBlock>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "core/te/printer.h"
#include "views/boundary_edges.h"
#include "views/explorer_session.h"
#include "views/kernel_stages.h"
#include "views/theme.h"

namespace souffle::views {

namespace {

QString esc(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

template <typename T>
QString joinList(const std::vector<T>& xs, int limit = 16) {
  QStringList parts;
  for (size_t i = 0; i < xs.size() && static_cast<int>(i) < limit; ++i)
    parts << QString::number(xs[i]);
  if (static_cast<int>(xs.size()) > limit) parts << QStringLiteral("… (%1)").arg(xs.size());
  return QStringLiteral("[") + parts.join(QStringLiteral(", ")) + QStringLiteral("]");
}

QString attrText(const graph::Attribute& a) {
  using K = graph::Attribute::Kind;
  switch (a.kind) {
    case K::Int:
      return QString::number(a.i);
    case K::Float:
      return QString::number(a.f, 'g', 6);
    case K::String:
      return QStringLiteral("\"%1\"").arg(QString::fromStdString(a.s));
    case K::Ints:
      return joinList(a.ints);
    case K::Floats:
      return joinList(a.floats);
    case K::Strings: {
      QStringList parts;
      for (const std::string& s : a.strings) parts << QString::fromStdString(s);
      return QStringLiteral("[") + parts.join(QStringLiteral(", ")) + QStringLiteral("]");
    }
    case K::Tensor:
      return a.t ? QStringLiteral("tensor ") + compactType(a.t->dtype(), a.t->shape())
                 : QStringLiteral("tensor");
    case K::Graph:
      return QStringLiteral("subgraph");
  }
  return {};
}

QString valueRow(const graph::Graph& g, const std::string& name) {
  if (name.empty()) return QStringLiteral("<tr><td><i>omitted</i></td><td></td></tr>");
  QString type = QStringLiteral("?");
  QString extra;
  if (g.has_value(name)) {
    const graph::Value& v = g.value(name);
    if (v.type_known) type = compactType(v.type.dtype, v.type.shape);
    if (v.constant) extra = QStringLiteral(" <span style='color:gray'>constant</span>");
  }
  return QStringLiteral("<tr><td>%1</td><td><code>%2</code>%3</td></tr>")
      .arg(esc(name), type.toHtmlEscaped(), extra);
}

const QString kStyle = QStringLiteral(
    "<style>h2{margin:0 0 2px 0;} h3{margin:10px 0 3px 0;} td{padding:1px 8px 1px 0;}"
    " pre{margin:2px 0 6px 0; white-space:pre-wrap;} .sub{color:gray;}</style>");

}  // namespace

// ------------------------------------------------------------------------------ PropertiesPanel

PropertiesPanel::PropertiesPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_browser = new QTextBrowser(this);
  m_browser->setOpenLinks(false);
  m_browser->setFrameShape(QFrame::NoFrame);
  layout->addWidget(m_browser);
  showBox(nullptr, -1);
}

void PropertiesPanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::modelChanged, this, &PropertiesPanel::setModelData);
  connect(session, &ExplorerSession::planChanged, this, &PropertiesPanel::setPlan);
}

void PropertiesPanel::setModelData(ModelDataPtr data) {
  m_data = std::move(data);
  m_plan.reset();
  showBox(nullptr, -1);
}

void PropertiesPanel::setPlan(PlanDataPtr plan) {
  m_plan = std::move(plan);
  showBox(m_graph, m_box);
}

QString PropertiesPanel::partitionHtml(const SceneGraph& sg, int box) const {
  if (!m_plan || m_plan->model != m_data) return {};
  const auto& all = m_plan->kernelsOf(sg.teLevel);
  // A collapsed graph shows some boxes of the full one; a kernel box stands for its partition.
  const std::vector<int> own = box >= 0 && static_cast<size_t>(box) < sg.nodes.size() &&
                                       sg.nodes[box].kind == SceneNode::Kind::Kernel
                                   ? std::vector<int>{sg.nodes[box].index}
                                   : std::vector<int>();
  const SceneNode* node = own.empty() && box >= 0 && static_cast<size_t>(box) < sg.nodes.size()
                              ? &sg.nodes[static_cast<size_t>(box)]
                              : nullptr;
  box = sg.baseBox(box);
  if (own.empty() && (box < 0 || static_cast<size_t>(box) >= all.size())) return {};
  const std::vector<int>& ks = own.empty() ? all[box] : own;
  const plan::FusionPlan& p = *m_plan->plan;
  QString h = tr("<h3>Partition</h3>");
  if (ks.empty())
    return h + tr("<p class='sub'>In no kernel: it computes nothing at run time.</p>");
  if (ks.size() > 1) h += tr("<p>Its TEs are split over %1 kernels.</p>").arg(ks.size());
  for (int k : ks) {
    const plan::Partition& part = p.partitions[k];
    h += tr("<p><b>Kernel K%1</b> · %2 · TEs %3 · stages %4 · grid syncs %5 · est. %6 µs</p>")
             .arg(part.id)
             .arg(esc(plan::partition_kind_name(part.kind)))
             .arg(part.tes.size())
             .arg(kernelStages(part))
             .arg(part.grid_syncs)
             .arg(part.est_time_us, 0, 'f', 2);
    if (!part.reasons.empty()) {
      h += QStringLiteral("<ul>");
      for (const plan::Reason& r : part.reasons)
        h += QStringLiteral("<li>%1</li>").arg(esc(r.text));
      h += QStringLiteral("</ul>");
    }
    h += boundariesHtml(part, node);
  }
  return h;
}

QString PropertiesPanel::boundariesHtml(const plan::Partition& part, const SceneNode* node) const {
  if (part.boundaries.empty()) return {};
  const bool dark = isDark(palette());
  auto kindHtml = [&](BoundaryKind k) {
    return QStringLiteral("<b style='color:%1'>%2</b>")
        .arg(boundaryColor(k, dark).name(), QString::fromLatin1(boundary_kind_name(k)));
  };
  if (!node) {
    // A whole kernel: its boundaries by kind.
    BoundaryCounts n{};
    for (const plan::Boundary& b : part.boundaries) ++n[static_cast<size_t>(b.order.kind)];
    QStringList parts;
    for (size_t k = 0; k < n.size(); ++k)
      if (n[k] > 0)
        parts << QStringLiteral("%1 %2").arg(n[k]).arg(kindHtml(static_cast<BoundaryKind>(k)));
    return tr("<p>Stage boundaries: %1</p>").arg(parts.join(QStringLiteral(", ")));
  }
  // The node's stages in this kernel, and what orders each after the stages before it.
  const std::string name =
      (node->kind == SceneNode::Kind::TeOp ? node->subtitle : node->onnxNode).toStdString();
  std::set<int> mine;
  for (size_t s = 0; s < part.built_stages.size(); ++s) {
    const plan::BuiltStage& st = part.built_stages[s];
    const std::vector<std::string>& names = node->kind == SceneNode::Kind::TeOp ? st.tes : st.nodes;
    if (std::find(names.begin(), names.end(), name) != names.end()) mine.insert(int(s));
  }
  QString rows;
  for (const plan::Boundary& b : part.boundaries) {
    if (!mine.count(b.to) || (mine.count(b.from) && b.from != b.to)) continue;
    const plan::BuiltStage& to = part.built_stages[static_cast<size_t>(b.to)];
    rows += QStringLiteral("<li>%1 before stage <tt>%2</tt>: %3</li>")
                .arg(kindHtml(b.order.kind), esc(to.name), esc(describe(b.order)));
  }
  // Its stages that run side by side with others of their wave, on blocks of their own.
  std::map<int, int> wave_size;
  for (const plan::BuiltStage& st : part.built_stages)
    if (st.wave >= 0) ++wave_size[st.wave];
  QString beside;
  for (int s : mine) {
    const plan::BuiltStage& st = part.built_stages[static_cast<size_t>(s)];
    if (st.wave < 0 || wave_size[st.wave] < 2) continue;
    beside += tr("<li>stage <tt>%1</tt>: wave %2, from block %3, beside %4 other stages</li>")
                  .arg(esc(st.name))
                  .arg(st.wave)
                  .arg(st.block_offset)
                  .arg(wave_size[st.wave] - 1);
  }
  // Its GEMM stages that keep their weights in shared memory for the whole kernel.
  QString panels;
  for (int s : mine) {
    const plan::BuiltStage& st = part.built_stages[static_cast<size_t>(s)];
    if (st.weight_panel.empty()) continue;
    panels += (st.weight_panel_load
                   ? tr("<li>stage <tt>%1</tt> loads its weights into <tt>%2</tt>, where later "
                        "stages with the same weights on its blocks read them</li>")
                   : tr("<li>stage <tt>%1</tt> reads its weights from <tt>%2</tt>, loaded by an "
                        "earlier stage on its blocks</li>"))
                  .arg(esc(st.name), esc(st.weight_panel));
  }
  if (rows.isEmpty() && beside.isEmpty() && panels.isEmpty()) return {};
  QString out;
  if (!rows.isEmpty())
    out += tr("<p>What orders its stages after the ones before:</p><ul>%1</ul>").arg(rows);
  if (!beside.isEmpty())
    out += tr("<p>Side by side in waves (independent stages on disjoint blocks between the same "
              "barriers):</p><ul>%1</ul>")
               .arg(beside);
  if (!panels.isEmpty())
    out +=
        tr("<p>Weights kept in shared memory for the whole kernel (a weight panel):</p><ul>%1</ul>")
            .arg(panels);
  return out;
}

QString PropertiesPanel::characterizationHtml(const std::string& origin) const {
  if (!m_plan || m_plan->model != m_data || origin.empty()) return {};
  const analysis::Analysis& a = m_plan->plan->analysis;
  QString rows;
  int shown = 0, total = 0;
  for (const analysis::TeInfo& t : a.tes) {
    if (t.origin_node != origin) continue;
    if (++total > 12) continue;
    ++shown;
    QStringList ins;
    for (const analysis::InputAccess& in : t.inputs)
      ins << QStringLiteral("%1: %2%3")
                 .arg(esc(in.name), QString::fromLatin1(analysis::access_kind_name(in.kind)),
                      in.injective ? tr(", injective") : QString());
    QStringList reuse;
    for (const analysis::ReuseSite& r : a.reuse)
      if (std::find(r.readers.begin(), r.readers.end(), t.op) != r.readers.end())
        reuse << tr("%1 reuse of %2 (%3 readers)")
                     .arg(QString::fromLatin1(analysis::reuse_kind_name(r.kind)), esc(r.name))
                     .arg(r.readers.size());
    rows += QStringLiteral("<li><b>%1</b>: %2 (%3)%4%5</li>")
                .arg(esc(t.name),
                     t.is_pure_view ? tr("pure view")
                                    : QString::fromLatin1(analysis::intensity_name(t.kind)),
                     esc(t.kind_reason),
                     ins.isEmpty() ? QString()
                                   : QStringLiteral("<br>") + ins.join(QStringLiteral("; ")),
                     reuse.isEmpty() ? QString()
                                     : QStringLiteral("<br>") + reuse.join(QStringLiteral("; ")));
  }
  if (total == 0) return {};
  QString h = tr("<h3>Characterization</h3><ul>") + rows + QStringLiteral("</ul>");
  if (total > shown) h += tr("<p class='sub'>… and %1 more TEs.</p>").arg(total - shown);
  return h;
}

QString PropertiesPanel::html() const {
  return m_browser->toHtml();
}

void PropertiesPanel::showBox(const SceneGraph* sg, int box) {
  m_graph = sg;
  m_box = box;
  QString h = kStyle;
  if (!m_data) {
    m_browser->setHtml(h + tr("<p class='sub'>Open a model (Ctrl+O) or drop an .onnx file here."
                              "</p>"));
    return;
  }
  const LoadedModel& m = *m_data->model;
  const graph::Graph& g = m.graph;
  const QString mono = QFontDatabase::systemFont(QFontDatabase::FixedFont).family();
  auto pre = [&](const QString& text) {
    return QStringLiteral("<pre style='font-family:\"%1\"'>%2</pre>")
        .arg(mono, text.toHtmlEscaped());
  };
  if (!sg || box < 0 || static_cast<size_t>(box) >= sg->nodes.size()) {
    h += QStringLiteral("<h2>%1</h2>").arg(esc(g.name.empty() ? "model" : g.name));
    h += QStringLiteral("<p class='sub'>%1</p><table>").arg(esc(m.path));
    h += tr("<tr><td>ONNX nodes</td><td>%1</td></tr>").arg(m.onnx_nodes);
    h += tr("<tr><td>after folding</td><td>%1 (%2 folded, %3 dead)</td></tr>")
             .arg(g.nodes.size())
             .arg(m.stats.nodes_folded)
             .arg(m.stats.nodes_dead);
    h += tr("<tr><td>compute ops (TEs)</td><td>%1</td></tr>").arg(m.program.ops.size());
    h += tr("<tr><td>opset</td><td>%1</td></tr></table>").arg(g.opset);
    h += tr("<h3>Inputs</h3><table>");
    for (const std::string& in : g.inputs) h += valueRow(g, in);
    h += tr("</table><h3>Outputs</h3><table>");
    for (const std::string& out : g.outputs) h += valueRow(g, out);
    h += QStringLiteral("</table>");
    if (!m.warnings.empty()) {
      h += tr("<h3>Warnings</h3>");
      for (const std::string& w : m.warnings) h += QStringLiteral("<p>%1</p>").arg(esc(w));
    }
    h += tr("<p class='sub'>Select a node to see its attributes, types and TEs.</p>");
    m_browser->setHtml(h);
    return;
  }
  const SceneNode& n = sg->nodes[box];
  switch (n.kind) {
    case SceneNode::Kind::Input:
    case SceneNode::Kind::Output: {
      h += QStringLiteral("<h2>%1</h2><p class='sub'>model %2</p><table>")
               .arg(n.subtitle.toHtmlEscaped(), n.title);
      if (!sg->teLevel) h += valueRow(g, n.subtitle.toStdString());
      h += QStringLiteral("</table>");
      if (sg->teLevel && n.index >= 0 && static_cast<size_t>(n.index) < m.program.inputs.size()) {
        const te::Tensor& t = m.program.inputs[n.index];
        h += QStringLiteral("<p><code>%1</code></p>").arg(compactType(t->dtype, t->shape));
      }
      break;
    }
    case SceneNode::Kind::Op: {
      const graph::Node& node = g.nodes[n.index];
      h += QStringLiteral("<h2>%1</h2><p class='sub'>%2%3</p>")
               .arg(esc(node.op_type), esc(node.name),
                    node.domain.empty() ? QString()
                                        : QStringLiteral(" · domain ") + esc(node.domain));
      if (!node.attrs.empty()) {
        h += tr("<h3>Attributes</h3><table>");
        for (const auto& [key, a] : node.attrs)
          h += QStringLiteral("<tr><td>%1</td><td><code>%2</code></td></tr>")
                   .arg(esc(key), attrText(a).toHtmlEscaped());
        h += QStringLiteral("</table>");
      }
      h += tr("<h3>Inputs</h3><table>");
      for (const std::string& in : node.inputs) h += valueRow(g, in);
      h += tr("</table><h3>Outputs</h3><table>");
      for (const std::string& out : node.outputs) h += valueRow(g, out);
      h += QStringLiteral("</table>");
      QStringList tes;
      int total = 0;
      for (const te::Op& op : m.program.ops) {
        if (op->origin.node != node.name) continue;
        if (++total <= 40) tes << QString::fromStdString(te::print(*op));
      }
      h += characterizationHtml(node.name);
      h += partitionHtml(*sg, box);  // before the TE list, which can run long
      h += tr("<h3>Tensor expressions (%1)</h3>").arg(total);
      if (total == 0)
        h += tr("<p class='sub'>None: this node is a view or was folded into its users.</p>");
      else
        h += pre(tes.join(QStringLiteral("\n")));
      if (total > 40) h += tr("<p class='sub'>… and %1 more in the TE panel.</p>").arg(total - 40);
      break;
    }
    case SceneNode::Kind::Kernel:
      h += tr("<h2>%1</h2><p class='sub'>%2 · collapsed: double-click to expand</p>")
               .arg(n.title.toHtmlEscaped(), n.subtitle.toHtmlEscaped());
      break;
    case SceneNode::Kind::TeOp: {
      const te::ComputeOp& op = *m.program.ops[n.index];
      h += QStringLiteral("<h2>%1</h2><p class='sub'>from %2 (%3)</p>")
               .arg(esc(op.name), esc(op.origin.node), esc(op.origin.op_type));
      h += QStringLiteral("<table><tr><td>output</td><td><code>%1</code></td></tr>")
               .arg(compactType(op.output->dtype, op.output->shape));
      h += tr("<tr><td>reduction</td><td>%1</td></tr></table>")
               .arg(op.reduce == te::ReduceKind::None
                        ? tr("none")
                        : QString::fromLatin1(te::reduce_name(op.reduce)));
      h += tr("<h3>Expression</h3>") + pre(QString::fromStdString(te::print(op)));
      break;
    }
  }
  if (n.kind == SceneNode::Kind::TeOp || n.kind == SceneNode::Kind::Kernel)
    h += partitionHtml(*sg, box);
  if (n.kind == SceneNode::Kind::TeOp)
    h += characterizationHtml(m.program.ops[n.index]->origin.node);
  m_browser->setHtml(h);
}

// ---------------------------------------------------------------------------------- TeTextPanel

TeTextPanel::TeTextPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 4, 6, 4);
  m_search = new QLineEdit(this);
  m_search->setPlaceholderText(tr("Find in the TE program (Ctrl+Shift+F)"));
  m_search->setClearButtonEnabled(true);
  m_status = new QLabel(this);
  m_status->setMinimumWidth(80);
  bar->addWidget(m_search, 1);
  bar->addWidget(m_status);
  layout->addLayout(bar);
  m_edit = new QPlainTextEdit(this);
  m_edit->setReadOnly(true);
  m_edit->setLineWrapMode(QPlainTextEdit::NoWrap);  // wrapping long TE lines is slow and unreadable
  m_edit->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_edit->setFrameShape(QFrame::NoFrame);
  m_edit->setPlaceholderText(tr("The tensor-expression program of the model appears here."));
  layout->addWidget(m_edit, 1);
  connect(m_search, &QLineEdit::returnPressed, this,
          [this] { find(QGuiApplication::keyboardModifiers() & Qt::ShiftModifier); });
  connect(m_search, &QLineEdit::textChanged, this, [this] { m_status->clear(); });
}

void TeTextPanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::modelChanged, this,
          [this](const ModelDataPtr& model) { setText(model ? model->teText : QString()); });
}

void TeTextPanel::setText(const QString& text) {
  m_edit->setPlainText(text);
  m_status->clear();
}

QAction* TeTextPanel::findAction() {
  auto* find = new QAction(tr("Find in &TE program…"), this);
  find->setShortcut(QKeySequence(tr("Ctrl+Shift+F")));
  connect(find, &QAction::triggered, this, [this] {
    raiseDockOf(this);
    focusSearch();
  });
  return find;
}

void TeTextPanel::focusSearch() {
  m_search->setFocus();
  m_search->selectAll();
}

bool TeTextPanel::find(bool backward) {
  const QString q = m_search->text();
  if (q.isEmpty()) return false;
  QTextDocument::FindFlags flags;
  if (backward) flags |= QTextDocument::FindBackward;
  bool found = m_edit->find(q, flags);
  if (!found) {
    // Wrap around once.
    QTextCursor c = m_edit->textCursor();
    c.movePosition(backward ? QTextCursor::End : QTextCursor::Start);
    m_edit->setTextCursor(c);
    found = m_edit->find(q, flags);
  }
  m_status->setText(found ? QString() : tr("not found"));
  return found;
}

void TeTextPanel::revealBox(const SceneNode& n, const ModelData* model) {
  if (n.kind == SceneNode::Kind::TeOp) {
    revealOp(n.subtitle);
  } else if (n.kind == SceneNode::Kind::Op && model) {
    for (const te::Op& op : model->model->program.ops)
      if (QString::fromStdString(op->origin.node) == n.onnxNode) {
        revealOp(QString::fromStdString(op->name));
        break;
      }
  }
}

void TeTextPanel::revealOp(const QString& opName) {
  if (opName.isEmpty()) return;
  QTextDocument* doc = m_edit->document();
  // Ops print as "<name>[...] = ..."; the line starting with the name is the op itself.
  QTextCursor c = doc->find(opName + QLatin1Char('['));
  if (c.isNull()) c = doc->find(opName);
  if (c.isNull()) return;
  m_edit->setTextCursor(c);
  m_edit->centerCursor();
}

// ----------------------------------------------------------------------------------- ErrorPanel

ErrorPanel::ErrorPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_title = new QLabel(this);
  QFont f = m_title->font();
  f.setBold(true);
  f.setPointSizeF(f.pointSizeF() * 1.15);
  m_title->setFont(f);
  auto* grid = new QVBoxLayout;
  m_file = new QLabel(this);
  m_node = new QLabel(this);
  m_reason = new QLabel(this);
  for (QLabel* l : {m_file, m_node, m_reason}) {
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setWordWrap(true);
    grid->addWidget(l);
  }
  auto* buttons = new QHBoxLayout;
  auto* retry = new QPushButton(tr("Retry"), this);
  auto* dismiss = new QPushButton(tr("Dismiss"), this);
  buttons->addStretch(1);
  buttons->addWidget(retry);
  buttons->addWidget(dismiss);
  layout->addWidget(m_title);
  layout->addLayout(grid);
  layout->addStretch(1);
  layout->addLayout(buttons);
  connect(retry, &QPushButton::clicked, this, &ErrorPanel::retryRequested);
  connect(dismiss, &QPushButton::clicked, this, &ErrorPanel::dismissed);
}

void ErrorPanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::problem, this, [this](const LoadError& e) {
    showError(e);
    raiseDockOf(this);
  });
  connect(this, &ErrorPanel::dismissed, this, [this] {
    if (QDockWidget* dock = dockOf(this)) dock->hide();
  });
}

void ErrorPanel::showError(const LoadError& e) {
  m_error = e;
  m_title->setText(e.internal
                       ? tr("Internal error while opening the model (a bug; please report it)")
                   : !e.title.isEmpty() ? e.title
                                        : tr("The model could not be opened"));
  m_file->setText(tr("<b>File:</b> %1").arg(e.file.toHtmlEscaped()));
  m_node->setText(tr("<b>Node:</b> %1").arg(e.node.isEmpty() ? tr("—") : e.node.toHtmlEscaped()));
  m_reason->setText(tr("<b>Reason:</b> %1").arg(e.reason.toHtmlEscaped()));
}

QString ErrorPanel::text() const {
  return m_title->text() + QLatin1Char('\n') + m_file->text() + QLatin1Char('\n') + m_node->text() +
         QLatin1Char('\n') + m_reason->text();
}

}  // namespace souffle::views
