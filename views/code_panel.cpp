#include "views/code_panel.h"

#include <QElapsedTimer>
#include <QFontDatabase>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTabWidget>
#include <QTextBlock>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/session/kernel_cache.h"
#include "core/session/sass_report.h"
#include "views/boundary_edges.h"
#include "views/code_highlighter.h"
#include "views/explorer_session.h"
#include "views/kernel_runs.h"
#include "views/kernel_stages.h"

namespace souffle::views {

// ---- the editor ----

class LineNumberArea : public QWidget {
 public:
  explicit LineNumberArea(CodeEditor* editor) : QWidget(editor), m_editor(editor) {}
  QSize sizeHint() const override { return {m_editor->lineNumberAreaWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { m_editor->paintLineNumbers(event); }

 private:
  CodeEditor* m_editor;
};

CodeEditor::CodeEditor(QWidget* parent)
    : QPlainTextEdit(parent), m_gutter(new LineNumberArea(this)) {
  setReadOnly(true);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  connect(this, &QPlainTextEdit::blockCountChanged, this,
          [this] { setViewportMargins(lineNumberAreaWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, &CodeEditor::updateGutter);
  setViewportMargins(lineNumberAreaWidth(), 0, 0, 0);
}

int CodeEditor::lineNumberAreaWidth() const {
  int digits = 1;
  for (int n = std::max(1, blockCount()); n >= 10; n /= 10) ++digits;
  return 12 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * std::max(3, digits);
}

void CodeEditor::updateGutter(const QRect& rect, int dy) {
  if (dy)
    m_gutter->scroll(0, dy);
  else
    m_gutter->update(0, rect.y(), m_gutter->width(), rect.height());
}

void CodeEditor::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  const QRect cr = contentsRect();
  m_gutter->setGeometry(QRect(cr.left(), cr.top(), lineNumberAreaWidth(), cr.height()));
}

void CodeEditor::paintLineNumbers(QPaintEvent* event) {
  QPainter p(m_gutter);
  const QPalette pal = palette();
  p.fillRect(event->rect(), pal.color(QPalette::AlternateBase));
  const std::set<int> marked(m_highlighted.begin(), m_highlighted.end());
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  while (block.isValid() && top <= event->rect().bottom()) {
    const int height = qRound(blockBoundingRect(block).height());
    if (block.isVisible() && top + height >= event->rect().top()) {
      const int line = block.blockNumber() + 1;
      QFont f = font();
      f.setBold(marked.count(line) > 0);
      p.setFont(f);
      p.setPen(marked.count(line) ? pal.color(QPalette::Text)
                                  : pal.color(QPalette::PlaceholderText));
      p.drawText(0, top, m_gutter->width() - 6, height, Qt::AlignRight | Qt::AlignVCenter,
                 QString::number(line));
    }
    block = block.next();
    top += height;
  }
}

void CodeEditor::applySelections() {
  QList<QTextEdit::ExtraSelection> sels;
  auto add = [&](int line, const QColor& color) {
    const QTextBlock b = document()->findBlockByNumber(line - 1);
    if (!b.isValid()) return;
    QTextEdit::ExtraSelection s;
    s.format.setBackground(color);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    s.cursor = QTextCursor(b);
    sels << s;
  };
  for (const LineNote& n : m_notes) add(n.line, n.color);
  for (int line : m_highlighted) add(line, m_highlightColor);
  setExtraSelections(sels);
}

void CodeEditor::setLineNotes(std::vector<LineNote> notes) {
  m_notes = std::move(notes);
  applySelections();
}

bool CodeEditor::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QPoint at = viewport()->mapFrom(this, help->pos());
    const int line = cursorForPosition(at).blockNumber() + 1;
    for (const LineNote& n : m_notes)
      if (n.line == line) {
        QToolTip::showText(help->globalPos(), n.text, this);
        return true;
      }
    QToolTip::hideText();
    event->ignore();
    return true;
  }
  return QPlainTextEdit::event(event);
}

void CodeEditor::setHighlightedLines(const std::vector<int>& lines, const QColor& color,
                                     bool scroll) {
  m_highlighted = lines;
  m_highlightColor = color;
  applySelections();
  m_gutter->update();
  if (scroll && !lines.empty()) {
    const QTextBlock b = document()->findBlockByNumber(lines.front() - 1);
    if (b.isValid()) {
      // Put the first line a few lines below the top, so its context shows.
      verticalScrollBar()->setValue(std::max(0, b.blockNumber() - 3));
    }
  }
}

QPoint CodeEditor::linePosition(int line) const {
  const QTextBlock b = document()->findBlockByNumber(line - 1);
  const QRectF r = blockBoundingGeometry(b).translated(contentOffset());
  return QPoint(20, qRound(r.top() + r.height() / 2));
}

void CodeEditor::mouseReleaseEvent(QMouseEvent* event) {
  QPlainTextEdit::mouseReleaseEvent(event);
  if (event->button() != Qt::LeftButton || textCursor().hasSelection()) return;
  const QTextCursor c = cursorForPosition(event->position().toPoint());
  emit lineClicked(c.blockNumber() + 1);
}

// ---- generation (worker thread) ----

KernelCodeText CodePanel::generate(PlanDataPtr planData, int partition) {
  KernelCodeText c;
  if (!planData || !planData->plan || partition < 0 ||
      static_cast<size_t>(partition) >= planData->plan->partitions.size())
    return c;
  QElapsedTimer timer;
  timer.start();
  const plan::FusionPlan& p = *planData->plan;
  codegen::MappedText t = codegen::te_listing(p.program, p.partitions[partition].tes);
  c.te = QString::fromStdString(t.text);
  c.teMap = std::move(t.map);
  PartitionKernelsPtr built;
  try {
    // As the plan's pricing, compile and the bundle build it (the same cache entry).
    built = shared_kernel_cache().kernels(p, static_cast<size_t>(partition));
  } catch (const std::exception& e) {
    c.error = QString::fromUtf8(e.what());
    return c;
  }
  c.builtHere = built->built_here;
  if (!built->error.empty()) {
    c.error = QString::fromStdString(built->error);
    return c;
  }
  // A partition's launches: one, or kernelN.0, kernelN.1, ... where rules/unfused split it.
  if (built->kernels.empty()) {
    c.error = QStringLiteral("the kernel holds only views: it launches nothing");
    return c;
  }
  for (const CompiledKernel& k : built->kernels)
    if (!k.ok()) {
      c.error = QString::fromStdString(k.error);
      return c;
    }
  try {
    loop::KernelSet set;
    for (const CompiledKernel& k : built->kernels) set.kernels.push_back(k.kernel);
    c.kernelName = QString::fromStdString(built->kernels.front().name);
    // Loop IR: the launches' texts one after another, each mapped on its own and shifted.
    std::string loopText;
    int line = 0, stageBase = 0;
    for (const loop::Kernel& k : set.kernels) {
      const std::string lt = loop::print(k);
      for (codegen::SourceSpan sp : codegen::map_loop_text(lt, k).spans) {
        sp.first_line += line;
        sp.last_line += line;
        sp.stage += stageBase;
        c.loopMap.spans.push_back(std::move(sp));
      }
      loopText += lt;
      if (!lt.empty() && lt.back() != '\n') loopText += '\n';
      line = static_cast<int>(std::count(loopText.begin(), loopText.end(), '\n'));
      stageBase += static_cast<int>(k.stages.size());
    }
    c.loop = QString::fromStdString(loopText);
    for (const loop::Kernel& k : set.kernels)
      for (StageSass st : stage_expectations(k)) {
        st.stage = static_cast<int>(c.stages.size());
        c.stages.push_back(std::move(st));
      }
    // CUDA C: a lone launch as compile and the bundle have it; several launches in one
    // translation unit (shared includes and helpers). The maps are what the emitter recorded
    // for each line: a kernel's stages, its boundaries, the line that names it.
    codegen::EmittedUnit unit;
    if (set.kernels.size() != 1) unit = codegen::emit_cuda_unit(set);
    const std::string cuda = set.kernels.size() == 1 ? built->kernels.front().cuda : unit.text();
    auto addBoundaries = [&c](const codegen::SourceMap& map, const loop::Kernel& k) {
      for (const codegen::SourceMap::BoundaryLine& b : map.boundaries) {
        if (b.boundary < 0 || static_cast<size_t>(b.boundary) >= k.boundaries.size()) continue;
        const StageBoundary& sb = k.boundaries[static_cast<size_t>(b.boundary)];
        c.cudaBoundaries.push_back({b.line, sb.kind, QString::fromStdString(describe(sb))});
      }
    };
    if (set.kernels.size() == 1) {
      c.cudaMap = built->kernels.front().cuda_map;
      addBoundaries(c.cudaMap, set.kernels.front());
    } else {
      stageBase = 0;
      for (size_t j = 0; j < set.kernels.size(); ++j) {
        const int kernel = static_cast<int>(j);
        const codegen::SourceMap map = codegen::map_emitted(unit, kernel, set.kernels[j]);
        for (codegen::SourceSpan sp : map.spans) {
          sp.stage += stageBase;
          c.cudaMap.spans.push_back(std::move(sp));
        }
        // A later launch: the line naming its __global__ function (the last function emitted
        // for it, after its stages' functions) stands for the boundary that started it.
        int head = 0;
        for (size_t i = 0; i < unit.lines.size(); ++i)
          if (unit.lines[i].kernel == kernel &&
              unit.lines[i].role == codegen::LineRole::FunctionHead)
            head = static_cast<int>(i) + 1;
        const std::vector<StageBoundary>& kb = set.kernels[j].boundaries;
        if (head > 0 && !kb.empty() && kb.front().kind == BoundaryKind::Launch)
          c.cudaBoundaries.push_back(
              {head, BoundaryKind::Launch, QString::fromStdString(describe(kb.front()))});
        addBoundaries(map, set.kernels[j]);
        stageBase += static_cast<int>(set.kernels[j].stages.size());
      }
    }
    c.cuda = QString::fromStdString(cuda);
  } catch (const std::exception& e) {
    c.error = QString::fromUtf8(e.what());
  }
  c.ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return c;
}

PtxText CodePanel::compilePtx(const KernelCodeText& code) {
  PtxText out;
  if (code.cuda.isEmpty()) {
    out.error = code.error.isEmpty() ? QStringLiteral("no CUDA C for this kernel") : code.error;
    return out;
  }
  if (!gpu::nvrtc_available()) {
    out.error = QStringLiteral("this build has no NVRTC: PTX cannot be generated");
    return out;
  }
  gpu::CompileOptions o;
  o.arch = "sm_80";
  o.line_info = true;  // .loc directives tie PTX lines to CUDA lines
  const std::string name = code.kernelName.toStdString() + ".cu";
  const gpu::CompileResult r = gpu::compile_cuda(code.cuda.toStdString(), name, o);
  if (!r.ok) {
    out.error = QString::fromStdString(r.error.empty() ? r.log : r.error);
    return out;
  }
  out.ptx = QString::fromStdString(r.ptx);
  out.map = codegen::map_ptx(r.ptx, code.cudaMap, name);
  fillSass(out, code, r, name);
  return out;
}

void CodePanel::fillSass(PtxText& out, const KernelCodeText& code, const gpu::CompileResult& r,
                         const std::string& name) {
  KernelSass s = sass_of_result(code.stages, code.kernelName.toStdString(), code.cudaMap, name, r);
  mark_mma_source(s.stages, code.cuda.toStdString(), code.cudaMap);
  if (!s.ok) {
    out.sassError = QString::fromStdString(s.error);
    return;
  }
  // A summary per stage as comments above the listing; the map shifts by its lines.
  auto mix = [](const gpu::SassMix& m) {
    return fmt::format("{:>6} {:>5} {:>6} {:>5} {:>4} {:>4} {:>4}", m.total, m.mma, m.async_copy,
                       m.ldsm, m.bar, m.local_load, m.local_store);
  };
  std::string head = fmt::format(
      "// {} SASS (nvdisasm): {} registers, {} spill bytes\n"
      "// {:<40} {:>6} {:>5} {:>6} {:>5} {:>4} {:>4} {:>4}\n",
      r.arch, s.registers, s.spill_bytes, "stage", "instr", "MMA", "async", "LDSM", "BAR", "LDL",
      "STL");
  for (const StageSass& st : s.stages)
    head += fmt::format("// {:<40} {}{}\n", st.name.substr(0, 40), mix(st.mix),
                        st.tensor_core ? "  tensor cores" : "");
  head += fmt::format("// {:<40} {}\n// {:<40} {}\n", "(outside every stage)", mix(s.outside),
                      "kernel", mix(s.mix));
  for (const std::string& p : sass_problems(s)) head += "// problem: " + p + "\n";
  int shift = 0;
  for (char c : head) shift += c == '\n';
  std::vector<int> lines(static_cast<size_t>(shift), 0);
  lines.insert(lines.end(), s.cuda_lines.begin(), s.cuda_lines.end());
  out.sass = QString::fromStdString(head + s.text);
  out.sassMap = map_sass(lines, code.cudaMap);
}

// ---- the panel ----

CodePanel::CodePanel(QWidget* parent)
    : QWidget(parent),
      m_watcher(new QFutureWatcher<KernelCodeText>(this)),
      m_ptxWatcher(new QFutureWatcher<PtxText>(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->setSpacing(4);
  m_header = new QLabel(tr("Select a kernel to see its code."), this);
  m_header->setTextFormat(Qt::RichText);
  m_header->setWordWrap(false);
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  const CodeLanguage langs[] = {CodeLanguage::Te, CodeLanguage::LoopIr, CodeLanguage::Cuda,
                                CodeLanguage::Ptx, CodeLanguage::Ptx};
  const QString names[] = {tr("TE"), tr("Loop IR"), tr("CUDA C"), tr("PTX"), tr("SASS")};
  for (int t = 0; t < TabCount; ++t) {
    m_editors[t] = new CodeEditor(m_tabs);
    m_editors[t]->setObjectName(QStringLiteral("code%1").arg(t));
    m_highlighters[t] = new CodeHighlighter(langs[t], m_editors[t]->document());
    m_tabs->addTab(m_editors[t], names[t]);
    connect(m_editors[t], &CodeEditor::lineClicked, this,
            [this, t](int line) { onLineClicked(static_cast<Tab>(t), line); });
  }
  m_tabs->setCurrentIndex(CudaTab);
  connect(m_tabs, &QTabWidget::currentChanged, this, [this](int t) {
    if (t == PtxTab || t == SassTab) requestPtx();
    applyHighlight(true);
  });
  layout->addWidget(m_header);
  layout->addWidget(m_tabs, 1);
  connect(m_watcher, &QFutureWatcher<KernelCodeText>::finished, this, &CodePanel::onGenerated);
  connect(m_ptxWatcher, &QFutureWatcher<PtxText>::finished, this, [this] {
    const int part = m_ptxWatcher->property("partition").toInt();
    const void* plan = m_ptxWatcher->property("plan").value<const void*>();
    m_ptxPending = -1;
    if (plan != m_plan.get() || m_ptxWatcher->future().resultCount() == 0) return;  // stale
    m_ptx.insert(part, m_ptxWatcher->result());
    if (part == m_partition) refresh();
    emit ptxReady();
    if (m_partition >= 0 && !m_ptx.contains(m_partition) && showsCompiled()) requestPtx();
  });
}

CodePanel::~CodePanel() {
  m_watcher->waitForFinished();
  m_ptxWatcher->waitForFinished();
}

void CodePanel::setDark(bool dark) {
  m_dark = dark;
  for (CodeHighlighter* h : m_highlighters) h->setDark(dark);
  applyBoundaryNotes();
  applyHighlight(false);
}

void CodePanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::planChanged, this, &CodePanel::setPlan);
  connect(session, &ExplorerSession::partitionSelected, this, [this, session](int k) {
    if (session->plan()) showPartition(k);
  });
  // A node selected in the graph: its kernel's code, its lines highlighted.
  connect(session, &ExplorerSession::nodeSelected, this, [this](const NodeSelection& n) {
    if (n.byProgram || n.partition < 0) return;
    showPartition(n.partition);
    highlightNode(n.node, n.te);
  });
  connect(session, &ExplorerSession::stageActivated, this,
          [this, session](int partition, int stage, const QStringList& nodes, const QStringList&) {
            if (partition < 0 || !session->plan()) return;
            showPartition(partition);
            highlightStage(stage, nodes.value(0));
          });
  connect(this, &CodePanel::nodesActivated, session, &ExplorerSession::selectNodes);
  // A compile the user asked for that failed: the CUDA of the kernel that failed.
  connect(session, &ExplorerSession::kernelsCompiled, this,
          [this](CompileDataPtr data, bool asked) {
            if (asked && firstCompileFailure(*data).partition >= 0) setCurrentTab(CudaTab);
          });
}

void CodePanel::setPlan(PlanDataPtr plan) {
  if (plan == m_plan) return;
  m_plan = std::move(plan);
  m_partition = -1;
  m_node.clear();
  m_te.clear();
  m_ptx.clear();
  m_code.clear();
  m_requested.clear();
  refresh();
}

void CodePanel::requestCode() {
  // One kernel at a time: the one shown; another asked for meanwhile starts when it is done.
  if (!m_plan || m_partition < 0 || m_code.contains(m_partition) || m_watcher->isRunning()) return;
  m_pending = m_partition;
  if (!m_requested.contains(m_partition)) m_requested << m_partition;
  m_watcher->setProperty("plan", QVariant::fromValue<const void*>(m_plan.get()));
  m_watcher->setFuture(
      QtConcurrent::run([plan = m_plan, part = m_partition] { return generate(plan, part); }));
}

void CodePanel::onGenerated() {
  const void* plan = m_watcher->property("plan").value<const void*>();
  const int part = m_pending;
  m_pending = -1;
  if (m_watcher->future().resultCount() > 0 && plan == m_plan.get()) {
    m_code.insert(part, std::make_shared<const KernelCodeText>(m_watcher->result()));
    if (part == m_partition) {
      refresh();
      if (showsCompiled()) requestPtx();
      emit codeReady();
    }
  }
  requestCode();  // the partition shown now, when it is another one
}

const KernelCodeText* CodePanel::current() const {
  auto it = m_code.constFind(m_partition);
  return it == m_code.constEnd() ? nullptr : it->get();
}

bool CodePanel::isReady() const {
  return m_plan && (m_partition < 0 || current() != nullptr);
}

bool CodePanel::isPtxReady() const {
  return current() && m_ptx.contains(m_partition);
}

void CodePanel::setCurrentTab(Tab tab) {
  m_tabs->setCurrentIndex(tab);
}

void CodePanel::showPartition(int partition) {
  if (partition == m_partition) return;
  m_partition =
      m_plan && partition >= 0 && static_cast<size_t>(partition) < m_plan->plan->partitions.size()
          ? partition
          : -1;
  m_node.clear();
  m_te.clear();
  refresh();
  requestCode();
  if (current() && showsCompiled()) requestPtx();
}

bool CodePanel::showsCompiled() const {
  return m_tabs->currentIndex() == PtxTab || m_tabs->currentIndex() == SassTab;
}

void CodePanel::requestPtx() {
  const KernelCodeText* code = current();
  if (!code || m_ptx.contains(m_partition) || m_ptxPending >= 0) return;
  m_ptxPending = m_partition;
  m_ptxWatcher->setProperty("partition", m_partition);
  m_ptxWatcher->setProperty("plan", QVariant::fromValue<const void*>(m_plan.get()));
  m_editors[PtxTab]->setPlainText(tr("// compiling with NVRTC for sm_80…"));
  m_editors[SassTab]->setPlainText(tr("// compiling with NVRTC for sm_80, then nvdisasm…"));
  m_ptxWatcher->setFuture(
      QtConcurrent::run([code = m_code.value(m_partition)] { return compilePtx(*code); }));
}

const codegen::SourceMap* CodePanel::mapOf(Tab tab) const {
  const KernelCodeText* code = current();
  if (!code) return nullptr;
  const KernelCodeText& k = *code;
  switch (tab) {
    case TeTab:
      return &k.teMap;
    case LoopTab:
      return &k.loopMap;
    case CudaTab:
      return &k.cudaMap;
    case PtxTab: {
      auto it = m_ptx.constFind(m_partition);
      return it == m_ptx.constEnd() ? nullptr : &it->map;
    }
    case SassTab: {
      auto it = m_ptx.constFind(m_partition);
      return it == m_ptx.constEnd() ? nullptr : &it->sassMap;
    }
    default:
      return nullptr;
  }
}

void CodePanel::refresh() {
  auto setText = [this](Tab t, const QString& text) {
    if (m_editors[t]->toPlainText() != text) m_editors[t]->setPlainText(text);
  };
  if (!m_plan) {
    m_header->setText(tr("Open a model to see its kernels' code."));
    for (int t = 0; t < TabCount; ++t) setText(static_cast<Tab>(t), {});
    applyBoundaryNotes();
    return;
  }
  if (m_partition < 0) {
    m_header->setText(tr("Select a kernel (table, graph or chart) to see its code."));
    for (int t = 0; t < TabCount; ++t) setText(static_cast<Tab>(t), {});
    applyBoundaryNotes();
    return;
  }
  const plan::Partition& p = m_plan->plan->partitions[static_cast<size_t>(m_partition)];
  if (!current()) {
    m_header->setText(tr("Building the code of K%1 (%2 stages)…").arg(p.id).arg(kernelStages(p)));
    for (int t = 0; t < TabCount; ++t) setText(static_cast<Tab>(t), {});
    applyBoundaryNotes();
    return;
  }
  const KernelCodeText& k = *current();
  // Every stage boundary of the partition by kind (none have no line in the code).
  BoundaryCounts bc{};
  for (const plan::Boundary& b : p.boundaries) ++bc[static_cast<size_t>(b.order.kind)];
  QString bounds;
  if (!p.boundaries.empty()) {
    QStringList parts;
    const BoundaryKind order[] = {BoundaryKind::None, BoundaryKind::Block, BoundaryKind::Grid,
                                  BoundaryKind::Launch};
    for (BoundaryKind kind : order)
      if (bc[static_cast<size_t>(kind)] > 0)
        parts << QStringLiteral("<span style=\"color:%1\">%2 %3</span>")
                     .arg(boundaryColor(kind, m_dark).name())
                     .arg(bc[static_cast<size_t>(kind)])
                     .arg(QString::fromLatin1(boundary_kind_name(kind)));
    bounds = tr(" · boundaries: %1").arg(parts.join(QStringLiteral(", ")));
  }
  m_header->setText(tr("<b>K%1</b> · %2 · %3 TE%4 · %5 stage%6 · %7 grid sync%8%9%10")
                        .arg(p.id)
                        .arg(QString::fromLatin1(plan::partition_kind_name(p.kind)))
                        .arg(p.tes.size())
                        .arg(p.tes.size() == 1 ? QString() : QStringLiteral("s"))
                        .arg(kernelStages(p))
                        .arg(kernelStages(p) == 1 ? QString() : QStringLiteral("s"))
                        .arg(p.grid_syncs)
                        .arg(p.grid_syncs == 1 ? QString() : QStringLiteral("s"))
                        .arg(k.kernelName.isEmpty()
                                 ? QString()
                                 : QStringLiteral(" · <tt>%1</tt>").arg(k.kernelName))
                        .arg(bounds));
  const QString missing = k.error.isEmpty() ? QString() : tr("// no kernel: %1").arg(k.error);
  setText(TeTab, k.te);
  setText(LoopTab, k.loop.isEmpty() ? missing : k.loop);
  setText(CudaTab, k.cuda.isEmpty() ? missing : k.cuda);
  applyBoundaryNotes();
  auto ptx = m_ptx.constFind(m_partition);
  if (ptx != m_ptx.constEnd()) {
    setText(PtxTab, ptx->error.isEmpty() ? ptx->ptx : QStringLiteral("// ") + ptx->error);
    setText(SassTab, !ptx->error.isEmpty()      ? QStringLiteral("// ") + ptx->error
                     : ptx->sassError.isEmpty() ? ptx->sass
                                                : QStringLiteral("// ") + ptx->sassError);
  } else if (m_ptxPending != m_partition) {
    setText(PtxTab, tr("// PTX is compiled when this tab is shown"));
    setText(SassTab, tr("// SASS is compiled and disassembled when this tab is shown"));
  }
  applyHighlight(true);
}

void CodePanel::applyBoundaryNotes() {
  std::vector<CodeEditor::LineNote> notes;
  if (const KernelCodeText* k = current())
    for (const BoundaryLine& b : k->cudaBoundaries) {
      QColor bg = boundaryColor(b.kind, m_dark);
      bg.setAlphaF(m_dark ? 0.30 : 0.18);
      notes.push_back({b.line, bg, b.text});
    }
  m_editors[CudaTab]->setLineNotes(std::move(notes));
}

void CodePanel::highlightNode(const QString& node, const QString& te) {
  m_node = node;
  m_te = te;
  m_stage = -1;
  applyHighlight(true);
}

void CodePanel::highlightStage(int stage, const QString& node) {
  m_node = node;
  m_te.clear();
  m_stage = stage;
  applyHighlight(true);
}

void CodePanel::applyHighlight(bool scroll) {
  const QColor color = CodeColors::forTheme(m_dark).highlightLine;
  for (int t = 0; t < TabCount; ++t) {
    std::vector<int> lines;
    const codegen::SourceMap* map = mapOf(static_cast<Tab>(t));
    bool byStage = false;
    if (map && m_stage >= 0)
      for (const codegen::SourceSpan& s : map->spans)
        if (s.stage == m_stage) {
          byStage = true;
          for (int l = s.first_line; l <= s.last_line; ++l) lines.push_back(l);
        }
    if (map && !byStage && (!m_node.isEmpty() || !m_te.isEmpty())) {
      std::vector<const codegen::SourceSpan*> spans;
      if (!m_te.isEmpty()) spans = map->spans_of_te(m_te.toStdString());
      if (spans.empty() && !m_node.isEmpty()) spans = map->spans_of_node(m_node.toStdString());
      for (const codegen::SourceSpan* s : spans)
        for (int l = s->first_line; l <= s->last_line; ++l) lines.push_back(l);
    }
    m_editors[t]->setHighlightedLines(lines, color, scroll && t == m_tabs->currentIndex());
  }
}

void CodePanel::onLineClicked(Tab tab, int line) {
  const codegen::SourceMap* map = mapOf(tab);
  const codegen::SourceSpan* s = map ? map->at_line(line) : nullptr;
  if (!s || s->nodes.empty()) return;
  QStringList nodes, tes;
  for (const std::string& n : s->nodes) nodes << QString::fromStdString(n);
  for (const std::string& t : s->tes) tes << QString::fromStdString(t);
  // Highlight what the click hit without jumping away from where the user is reading.
  m_node = nodes.front();
  m_te = tes.size() == 1 ? tes.front() : QString();
  m_stage = -1;
  applyHighlight(false);
  emit nodesActivated(nodes, tes);
}

}  // namespace souffle::views
