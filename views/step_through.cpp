#include "views/step_through.h"

#include <QAction>
#include <QCheckBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTextBlock>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "core/support/error.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/scene_graph.h"
#include "views/theme.h"

namespace souffle::views {

namespace {

/// What the before/after panes hold at each step, so a reader knows which level they see.
std::pair<QString, QString> paneTitles(plan::Step step) {
  auto pair = [](const char* before, const char* after) {
    return std::pair<QString, QString>{QObject::tr(before), QObject::tr(after)};
  };
  switch (step) {
    case plan::Step::Import:
      return pair("Input: the file", "After: the imported graph");
    case plan::Step::Fold:
      return pair("Before: the imported graph", "After: the folded graph");
    case plan::Step::Lower:
      return pair("Before: the folded graph", "After: the TE program");
    case plan::Step::Analyze:
      return pair("Before: the TE program", "After: the analysis");
    case plan::Step::Horizontal:
      return pair("Before: the TE program", "After: sites and the transformed program");
    case plan::Step::Vertical:
      return pair("Before: after horizontal", "After: sites and the transformed program");
    case plan::Step::Reanalyze:
      return pair("Before: after vertical", "After: the analysis of the result");
    case plan::Step::Partition:
      return pair("Before: the analysis", "After: the kernels and their reasons");
    case plan::Step::Decisions:
      return pair("Before: the kernels", "After: edits applied and refused, the kernels");
    case plan::Step::Price:
      return pair("Before: the kernels", "After: the priced plan");
    case plan::Step::BuildKernels:
      return pair("Before: the priced plan", "After: the kernel's loop IR");
    case plan::Step::Emit:
      return pair("Before: the loop IR", "After: CUDA C");
    case plan::Step::Compile:
      break;
  }
  return pair("Before", "After");
}

QString graphTitle(StepGraph g) {
  switch (g) {
    case StepGraph::None:
      return QObject::tr("the ONNX file on disk");
    case StepGraph::Imported:
      return QObject::tr("the graph as imported");
    case StepGraph::Folded:
      return QObject::tr("the folded graph");
    case StepGraph::Lowered:
      return QObject::tr("the TE program as lowered");
    case StepGraph::Horizontal:
      return QObject::tr("the TE program after horizontal fusion");
    case StepGraph::Planned:
      return QObject::tr("the TE program as planned");
  }
  return {};
}

QPlainTextEdit* makePane(QWidget* parent) {
  auto* e = new QPlainTextEdit(parent);
  e->setReadOnly(true);
  e->setLineWrapMode(QPlainTextEdit::NoWrap);
  QFont f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  e->setFont(f);
  e->setMinimumHeight(QFontMetrics(f).height() * 12);
  return e;
}

/// A diff worth marking: the two texts share a fifth of the shorter one's lines (a step that
/// translates, say loop IR to CUDA C, shares next to none and is not marked).
bool worthMarking(const LineDiff& d) {
  const size_t shorter = std::min(d.removed.size(), d.added.size());
  return d.exact && d.common > 0 && d.common * 5 >= shorter;
}

/// Marks the lines `marked` of `edit` with a full-width background.
void markLines(QPlainTextEdit* edit, const std::vector<bool>& marked, const QColor& colour) {
  QList<QTextEdit::ExtraSelection> sels;
  QTextDocument* doc = edit->document();
  const int limit = 20000;
  for (size_t i = 0; i < marked.size() && sels.size() < limit; ++i) {
    if (!marked[i]) continue;
    QTextBlock block = doc->findBlockByNumber(static_cast<int>(i));
    if (!block.isValid()) break;
    QTextEdit::ExtraSelection s;
    s.cursor = QTextCursor(block);
    s.format.setBackground(colour);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    sels << s;
  }
  edit->setExtraSelections(sels);
}

QSet<int> boxesNamed(const SceneGraph* g, const QStringList& names) {
  QSet<int> out;
  if (!g || names.isEmpty()) return out;
  const QSet<QString> wanted(names.begin(), names.end());
  for (size_t i = 0; i < g->nodes.size(); ++i)
    if (g->nodes[i].kind == SceneNode::Kind::Op || g->nodes[i].kind == SceneNode::Kind::TeOp)
      if (wanted.contains(g->nodes[i].subtitle)) out.insert(static_cast<int>(i));
  return out;
}

QStringList toList(const std::vector<std::string>& v) {
  QStringList out;
  for (const std::string& s : v) out << QString::fromStdString(s);
  return out;
}

}  // namespace

StepThroughPanel::StepThroughPanel(QWidget* parent)
    : QWidget(parent), m_watcher(new QFutureWatcher<Outcome>(this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  // Left: the steps, walked with the arrow keys.
  auto* left = new QVBoxLayout;
  auto* stepsLabel = new QLabel(tr("<b>Steps</b> (↑ ↓)"), this);
  m_list = new QListWidget(this);
  m_list->setMinimumWidth(170);
  m_list->setMaximumWidth(230);
  m_showAllBox = new QCheckBox(tr("Show steps that\nchange nothing"), this);
  m_prev = new QPushButton(tr("◀ Previous"), this);
  m_next = new QPushButton(tr("Next ▶"), this);
  m_position = new QLabel(this);
  left->addWidget(stepsLabel);
  left->addWidget(m_list, 1);
  left->addWidget(m_showAllBox);
  left->addWidget(m_position);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_prev);
  buttons->addWidget(m_next);
  left->addLayout(buttons);
  layout->addLayout(left);

  // Right: title and sentence; the graphs large; the changes and the texts below.
  auto* right = new QVBoxLayout;
  m_title = new QLabel(this);
  QFont tf = m_title->font();
  tf.setBold(true);
  tf.setPointSizeF(tf.pointSizeF() * 1.3);
  m_title->setFont(tf);
  m_sentence = new QLabel(this);
  m_sentence->setWordWrap(true);
  m_sentence->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont sf = m_sentence->font();
  sf.setPointSizeF(sf.pointSizeF() * 1.1);
  m_sentence->setFont(sf);
  m_sentence->setMinimumHeight(m_sentence->fontMetrics().height() * 2 + 4);
  m_sentence->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  right->addWidget(m_title);
  right->addWidget(m_sentence);

  auto* vsplit = new QSplitter(Qt::Vertical, this);
  auto* graphs = new QSplitter(Qt::Horizontal, vsplit);
  auto graphPane = [&](QLabel*& label, GraphPanel*& panel) {
    auto* w = new QWidget(graphs);
    auto* v = new QVBoxLayout(w);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    label = new QLabel(w);
    panel = new GraphPanel(w);
    panel->setMinimapVisible(false);
    v->addWidget(label);
    v->addWidget(panel, 1);
    graphs->addWidget(w);
  };
  graphPane(m_beforeGraphLabel, m_beforeGraph);
  graphPane(m_afterGraphLabel, m_afterGraph);
  vsplit->addWidget(graphs);

  auto* bottom = new QSplitter(Qt::Horizontal, vsplit);
  {
    auto* w = new QWidget(bottom);
    auto* v = new QVBoxLayout(w);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    m_sitesLabel = new QLabel(w);
    m_sites = new QListWidget(w);
    m_sites->setWordWrap(true);
    m_sites->setTextElideMode(Qt::ElideNone);
    v->addWidget(m_sitesLabel);
    v->addWidget(m_sites, 1);
    bottom->addWidget(w);
  }
  auto textPane = [&](QLabel*& label, QPlainTextEdit*& edit) {
    auto* w = new QWidget(bottom);
    auto* v = new QVBoxLayout(w);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    label = new QLabel(w);
    edit = makePane(w);
    v->addWidget(label);
    v->addWidget(edit, 1);
    bottom->addWidget(w);
  };
  textPane(m_beforeLabel, m_before);
  textPane(m_afterLabel, m_after);
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  bottom->setStretchFactor(2, 3);
  vsplit->addWidget(bottom);
  // The graphs large: about three fifths of the height, the changes and texts below.
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 2);
  vsplit->setSizes({600, 400});
  right->addWidget(vsplit, 1);
  layout->addLayout(right, 1);

  m_prevAction = new QAction(tr("Previous pipeline step"), this);
  m_prevAction->setShortcut(QKeySequence(Qt::Key_F7));
  m_nextAction = new QAction(tr("Next pipeline step"), this);
  m_nextAction->setShortcut(QKeySequence(Qt::Key_F8));
  m_prev->setToolTip(tr("Previous step (F7, ↑ in the list)"));
  m_next->setToolTip(tr("Next step (F8, ↓ in the list)"));
  connect(m_prevAction, &QAction::triggered, this, &StepThroughPanel::previous);
  connect(m_nextAction, &QAction::triggered, this, &StepThroughPanel::next);
  connect(m_prev, &QPushButton::clicked, this, &StepThroughPanel::previous);
  connect(m_next, &QPushButton::clicked, this, &StepThroughPanel::next);
  connect(m_showAllBox, &QCheckBox::toggled, this, &StepThroughPanel::setShowUnchanged);
  connect(m_list, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && static_cast<size_t>(row) < m_listed.size())
      setCurrentStep(m_listed[static_cast<size_t>(row)]);
  });
  connect(m_sites, &QListWidget::currentRowChanged, this, &StepThroughPanel::selectSite);
  for (GraphPanel* g : {m_beforeGraph, m_afterGraph})
    connect(g, &GraphPanel::drawn, this, [this] { applyMarks(); });
  connect(m_watcher, &QFutureWatcher<Outcome>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation) return;  // stale
    m_busy = false;
    Outcome o = m_watcher->result();
    if (!o.error.isEmpty()) {
      clear();
      m_sentence->setText(tr("The pipeline stopped: %1").arg(o.error));
      emit failed(o.error);
      return;
    }
    m_walk = o.walk;
    m_graphs = std::move(o.graphs);
    m_diffs = std::move(o.diffs);
    m_steps = m_walk->steps;
    m_current = -1;
    fillList();
    if (!m_listed.empty()) setCurrentStep(m_listed.front());
    updateButtons();
    emit ready();
  });
  clear();
}

StepThroughPanel::~StepThroughPanel() {
  m_watcher->waitForFinished();
}

QString StepThroughPanel::keyOf(const QString& modelPath, const QString& strategy,
                                const QString& gpu, const QString& precision,
                                const plan::Decisions& decisions, const ModelInputs& inputs) {
  QString key = modelPath + QLatin1Char('|') + strategy + QLatin1Char('|') + gpu +
                QLatin1Char('|') + precision;
  for (const plan::Edit& e : decisions.edits)
    key += QLatin1Char('|') + QString::fromStdString(plan::describe(e));
  for (const QString& a : inputs.arguments()) key += QLatin1Char('|') + a;
  return key;
}

void StepThroughPanel::start(const QString& modelPath, const QString& strategy, const QString& gpu,
                             const QString& precision, const plan::Decisions& decisions,
                             const ModelInputs& inputs) {
  ++m_generation;
  clear();
  m_key = keyOf(modelPath, strategy, gpu, precision, decisions, inputs);
  m_busy = true;
  m_sentence->setText(tr("Running the pipeline step by step…"));
  m_watcher->setProperty("generation", m_generation);
  const std::string path = modelPath.toStdString();
  const std::string st = strategy.toStdString(), g = gpu.toStdString(),
                    pr = precision.toStdString();
  m_watcher->setFuture(QtConcurrent::run([path, st, g, pr, decisions, inputs] {
    Outcome o;
    try {
      PipelineStepOptions opt;
      opt.import = inputs.importOptions();
      opt.strategy = plan::parse_strategy(st);
      opt.gpu = gpu::gpu_spec(g);
      opt.precision = gpu::parse_precision(pr);
      opt.decisions = decisions;
      opt.programs = true;
      auto walk = std::make_shared<PipelineWalk>(walk_pipeline(path, opt));
      // Every graph a step draws, built once; every step's texts diffed once.
      for (const PipelineStep& s : walk->steps)
        for (StepGraph which : {s.graph_before, s.graph_after}) {
          if (which == StepGraph::None || o.graphs.count(which)) continue;
          if (const graph::Graph* gr = walk->graph_of(which))
            o.graphs[which] = std::make_shared<SceneGraph>(buildOpGraph(
                *gr, which == StepGraph::Folded ? walk->result.model.program : te::TeProgram{}));
          else if (const te::TeProgram* p = walk->program_of(which))
            o.graphs[which] = std::make_shared<SceneGraph>(buildTeGraph(*p));
        }
      for (const PipelineStep& s : walk->steps) o.diffs.push_back(diff_texts(s.before, s.after));
      o.walk = std::move(walk);
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    return o;
  }));
}

void StepThroughPanel::clear() {
  m_steps.clear();
  m_walk.reset();
  m_graphs.clear();
  m_diffs.clear();
  m_listed.clear();
  m_current = -1;
  m_removed.clear();
  m_added.clear();
  {
    const QSignalBlocker block(m_list);
    m_list->clear();
  }
  {
    const QSignalBlocker block(m_sites);
    m_sites->clear();
  }
  m_title->setText(tr("Step-through"));
  m_sentence->setText(
      tr("Open a model: the pipeline then runs here one step at a time, from import to CUDA."));
  m_beforeLabel->setText(tr("Before"));
  m_afterLabel->setText(tr("After"));
  m_beforeGraphLabel->setText(tr("Graph before"));
  m_afterGraphLabel->setText(tr("Graph after"));
  m_sitesLabel->setText(tr("What the step changed"));
  m_beforeGraph->clear();
  m_afterGraph->clear();
  m_before->clear();
  m_after->clear();
  m_before->setExtraSelections({});
  m_after->setExtraSelections({});
  updateButtons();
}

void StepThroughPanel::setSteps(std::vector<PipelineStep> steps) {
  clear();
  m_steps = std::move(steps);
  for (const PipelineStep& s : m_steps) m_diffs.push_back(diff_texts(s.before, s.after));
  fillList();
  if (!m_listed.empty()) setCurrentStep(m_listed.front());
  updateButtons();
}

void StepThroughPanel::fillList() {
  m_listed.clear();
  const QSignalBlocker block(m_list);
  m_list->clear();
  for (size_t i = 0; i < m_steps.size(); ++i) {
    const PipelineStep& s = m_steps[i];
    if (!s.changed && !m_showAll && static_cast<int>(i) != m_current) continue;
    m_listed.push_back(static_cast<int>(i));
    QString text = QStringLiteral("%1. %2").arg(i + 1).arg(QString::fromStdString(s.name));
    if (!s.changed) text += tr("  (no change)");
    auto* item = new QListWidgetItem(text, m_list);
    item->setToolTip(QString::fromStdString(s.title));
    if (!s.changed) item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
    if (static_cast<int>(i) == m_current) m_list->setCurrentItem(item);
  }
}

void StepThroughPanel::setShowUnchanged(bool on) {
  m_showAll = on;
  {
    const QSignalBlocker block(m_showAllBox);
    m_showAllBox->setChecked(on);
  }
  fillList();
  updateButtons();
}

const PipelineStep* StepThroughPanel::step(int i) const {
  return i >= 0 && static_cast<size_t>(i) < m_steps.size() ? &m_steps[static_cast<size_t>(i)]
                                                           : nullptr;
}

QString StepThroughPanel::sentence() const {
  return m_sentence->text();
}

QString StepThroughPanel::beforeText() const {
  return m_before->toPlainText();
}

QString StepThroughPanel::afterText() const {
  return m_after->toPlainText();
}

void StepThroughPanel::focusSteps() {
  m_list->setFocus(Qt::OtherFocusReason);
}

int StepThroughPanel::neighbour(int direction) const {
  for (int i = m_current + direction; i >= 0 && i < stepCount(); i += direction)
    if (m_showAll || m_steps[static_cast<size_t>(i)].changed) return i;
  return -1;
}

void StepThroughPanel::next() {
  if (int i = neighbour(1); i >= 0) setCurrentStep(i);
}

void StepThroughPanel::previous() {
  if (int i = neighbour(-1); i >= 0) setCurrentStep(i);
}

void StepThroughPanel::setCurrentStep(int index) {
  const PipelineStep* s = step(index);
  if (!s || index == m_current) return;
  // A step the list hides is listed while it is on screen (asked for by number).
  const bool listed = std::find(m_listed.begin(), m_listed.end(), index) != m_listed.end();
  const PipelineStep* was = step(m_current);
  const bool wasHidden = was && !was->changed && !m_showAll;
  m_current = index;
  if (!listed || wasHidden) fillList();
  {
    const QSignalBlocker block(m_list);
    auto at = std::find(m_listed.begin(), m_listed.end(), index);
    m_list->setCurrentRow(at == m_listed.end() ? -1 : static_cast<int>(at - m_listed.begin()));
  }
  m_title->setText(tr("Step %1 of %2 · %3")
                       .arg(index + 1)
                       .arg(stepCount())
                       .arg(QString::fromStdString(s->title)));
  QString sentence = QString::fromStdString(s->sentence).toHtmlEscaped();
  if (s->ms > 0) sentence += tr("  <span style='color:gray'>(%1 ms)</span>").arg(s->ms, 0, 'f', 1);
  m_sentence->setText(sentence);
  const auto [before, after] = paneTitles(s->step);
  m_beforeLabel->setText(before);
  m_afterLabel->setText(after);
  m_before->setPlainText(QString::fromStdString(s->before));
  m_after->setPlainText(QString::fromStdString(s->after));
  showDiff();
  {
    const QSignalBlocker block(m_sites);
    m_sites->clear();
    for (const StepSite& site : s->sites) {
      QString line = QString::fromStdString(site.label);
      if (!site.reason.empty())
        line += QStringLiteral("  —  ") + QString::fromStdString(site.reason);
      auto* item = new QListWidgetItem(line, m_sites);
      item->setToolTip(QString::fromStdString(site.reason));
    }
  }
  m_sitesLabel->setText(
      s->sites.empty() ? tr("What the step changed: nothing to list")
                       : tr("What the step changed (%1, click one to select it in both graphs)")
                             .arg(s->sites.size()));
  showGraphs();
  updateButtons();
  emit stepShown(index, toList(s->nodes));
}

void StepThroughPanel::showDiff() {
  const size_t i = static_cast<size_t>(m_current);
  if (i >= m_diffs.size() || !worthMarking(m_diffs[i])) {
    m_before->setExtraSelections({});
    m_after->setExtraSelections({});
    if (i < m_diffs.size()) {
      m_beforeLabel->setText(m_beforeLabel->text() + tr("  (another language: no line diff)"));
    }
    return;
  }
  const LineDiff& d = m_diffs[i];
  // Light marks under dark text, dark marks under light text (the dark theme).
  const bool dark = m_before->palette().color(QPalette::Base).lightness() < 128;
  markLines(m_before, d.removed, dark ? QColor(110, 35, 35) : QColor(255, 205, 205));
  markLines(m_after, d.added, dark ? QColor(30, 90, 45) : QColor(200, 240, 200));
  m_beforeLabel->setText(m_beforeLabel->text() + tr("  — %1 lines removed").arg(d.removed_count()));
  m_afterLabel->setText(m_afterLabel->text() + tr("  — %1 lines added").arg(d.added_count()));
}

std::vector<int> StepThroughPanel::markedLines(bool after) const {
  std::vector<int> out;
  for (const QTextEdit::ExtraSelection& s : (after ? m_after : m_before)->extraSelections())
    out.push_back(s.cursor.blockNumber());
  return out;
}

void StepThroughPanel::showGraphs() {
  const PipelineStep* s = step(m_current);
  m_removed.clear();
  m_added.clear();
  auto graphOf = [&](StepGraph which) -> std::shared_ptr<const SceneGraph> {
    auto it = m_graphs.find(which);
    return it == m_graphs.end() ? nullptr : it->second;
  };
  const auto before = s ? graphOf(s->graph_before) : nullptr;
  const auto after = s ? graphOf(s->graph_after) : nullptr;
  if (before && after && before != after && before->teLevel == after->teLevel) {
    QSet<QString> inBefore, inAfter;
    for (const SceneNode& n : before->nodes)
      if (n.kind == SceneNode::Kind::Op || n.kind == SceneNode::Kind::TeOp) inBefore << n.subtitle;
    for (const SceneNode& n : after->nodes)
      if (n.kind == SceneNode::Kind::Op || n.kind == SceneNode::Kind::TeOp) inAfter << n.subtitle;
    for (const SceneNode& n : before->nodes)
      if (!n.subtitle.isEmpty() && n.kind != SceneNode::Kind::Input &&
          n.kind != SceneNode::Kind::Output && !inAfter.contains(n.subtitle))
        m_removed << n.subtitle;
    for (const SceneNode& n : after->nodes)
      if (!n.subtitle.isEmpty() && n.kind != SceneNode::Kind::Input &&
          n.kind != SceneNode::Kind::Output && !inBefore.contains(n.subtitle))
        m_added << n.subtitle;
  }
  // A transformation also changes the TEs it keeps the name of (the consumer an inlined
  // producer went into): its results are ringed after it as well.
  if (s && (s->step == plan::Step::Horizontal || s->step == plan::Step::Vertical) && after)
    for (const StepSite& site : s->sites)
      for (const std::string& n : site.after)
        if (!m_added.contains(QString::fromStdString(n))) m_added << QString::fromStdString(n);
  auto label = [&](StepGraph which, bool isAfter) {
    QString t = (isAfter ? tr("<b>After</b>: ") : tr("<b>Before</b>: ")) + graphTitle(which);
    const QStringList& ringed = isAfter ? m_added : m_removed;
    if (!ringed.isEmpty())
      t += isAfter
               ? tr(" · <span style='color:#0a7d32'>%1 new or changed, ringed</span>")
                     .arg(ringed.size())
               : tr(" · <span style='color:#b3261e'>%1 removed, ringed</span>").arg(ringed.size());
    return t;
  };
  m_beforeGraphLabel->setText(s ? label(s->graph_before, false) : tr("Graph before"));
  m_afterGraphLabel->setText(s ? label(s->graph_after, true) : tr("Graph after"));
  // The panels draw no kernels: before the partition step there are none, and from it on the
  // step's changes (each kernel, each boundary) are what the list selects.
  if (before)
    m_beforeGraph->showGraph(before);
  else
    m_beforeGraph->clear();
  if (after)
    m_afterGraph->showGraph(after);
  else
    m_afterGraph->clear();
  applyMarks();
}

void StepThroughPanel::applyMarks() {
  m_beforeGraph->scene()->setMatches(boxesNamed(m_beforeGraph->scene()->graph(), m_removed));
  m_afterGraph->scene()->setMatches(boxesNamed(m_afterGraph->scene()->graph(), m_added));
  if (m_sites->currentRow() >= 0) selectSite(m_sites->currentRow());
}

void StepThroughPanel::selectSite(int i) {
  const PipelineStep* s = step(m_current);
  if (!s || i < 0 || static_cast<size_t>(i) >= s->sites.size()) return;
  const StepSite& site = s->sites[static_cast<size_t>(i)];
  {
    const QSignalBlocker block(m_sites);
    m_sites->setCurrentRow(i);
  }
  for (bool after : {false, true}) {
    GraphPanel* g = graph(after);
    const QSet<int> boxes =
        boxesNamed(g->scene()->graph(), toList(after ? site.after : site.before));
    std::vector<int> sorted(boxes.begin(), boxes.end());
    std::sort(sorted.begin(), sorted.end());
    g->scene()->selectBoxes(sorted);
    if (!sorted.empty()) g->view()->reveal(sorted.front());
  }
}

void StepThroughPanel::setColors(const GraphColors& colors) {
  m_beforeGraph->setColors(colors);
  m_afterGraph->setColors(colors);
}

bool StepThroughPanel::isDrawn() const {
  const PipelineStep* s = step(m_current);
  if (!s) return false;
  for (bool after : {false, true}) {
    const StepGraph which = after ? s->graph_after : s->graph_before;
    if (m_graphs.count(which) && !graph(after)->isFinal()) return false;
  }
  return true;
}

QStringList StepThroughPanel::siteLines() const {
  QStringList out;
  for (int i = 0; i < m_sites->count(); ++i) out << m_sites->item(i)->text();
  return out;
}

QStringList StepThroughPanel::ringedBoxes(bool after) const {
  QStringList out;
  GraphScene* scene = graph(after)->scene();
  const SceneGraph* g = scene->graph();
  if (!g) return out;
  for (size_t b = 0; b < g->nodes.size(); ++b)
    if (NodeItem* item = scene->nodeItem(static_cast<int>(b)); item && item->isMatch())
      out << g->nodes[b].subtitle;
  return out;
}

QStringList StepThroughPanel::selectedBoxes(bool after) const {
  QStringList out;
  GraphScene* scene = graph(after)->scene();
  const SceneGraph* g = scene->graph();
  if (!g) return out;
  for (size_t b = 0; b < g->nodes.size(); ++b)
    if (NodeItem* item = scene->nodeItem(static_cast<int>(b)); item && item->isSelected())
      out << g->nodes[b].subtitle;
  return out;
}

void StepThroughPanel::updateButtons() {
  const bool any = !m_steps.empty();
  m_prev->setEnabled(any && neighbour(-1) >= 0);
  m_next->setEnabled(any && neighbour(1) >= 0);
  m_prevAction->setEnabled(m_prev->isEnabled());
  m_nextAction->setEnabled(m_next->isEnabled());
  int hidden = 0;
  for (const PipelineStep& s : m_steps) hidden += s.changed ? 0 : 1;
  m_position->setText(
      any ? tr("Step %1 of %2%3")
                .arg(m_current + 1)
                .arg(stepCount())
                .arg(hidden && !m_showAll ? tr("\n%1 hidden: no change").arg(hidden) : QString())
          : QString());
}

}  // namespace souffle::views
