#include "views/step_through.h"

#include <QAction>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>
#include <map>

#include "core/support/error.h"

namespace souffle::views {

namespace {

/// What the before/after panes hold at each step, so a reader knows which level they see.
std::pair<QString, QString> paneTitles(const std::string& step) {
  static const std::map<std::string, std::pair<const char*, const char*>> titles = {
      {"import", {"Input: the file", "After: the imported graph"}},
      {"fold", {"Before: the imported graph", "After: the folded graph"}},
      {"lower", {"Before: the folded graph", "After: the TE program"}},
      {"analyze", {"Before: the TE program", "After: the analysis"}},
      {"horizontal", {"Before: the analysis", "After: sites and the transformed program"}},
      {"vertical", {"Before: after horizontal", "After: sites and the transformed program"}},
      {"re-analyze", {"Before: after vertical", "After: the analysis of the result"}},
      {"partition", {"Before: the analysis", "After: the kernels and their reasons"}},
      {"decisions", {"Before: the kernels", "After: edits applied and refused, the kernels"}},
      {"price", {"Before: the kernels", "After: the priced plan"}},
      {"build kernels", {"Before: the priced plan", "After: the kernel's loop IR"}},
      {"emit", {"Before: the loop IR", "After: CUDA C"}}};
  auto it = titles.find(step);
  if (it == titles.end()) return {QObject::tr("Before"), QObject::tr("After")};
  return {QObject::tr(it->second.first), QObject::tr(it->second.second)};
}

QPlainTextEdit* makePane(QWidget* parent) {
  auto* e = new QPlainTextEdit(parent);
  e->setReadOnly(true);
  e->setLineWrapMode(QPlainTextEdit::NoWrap);
  e->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  return e;
}

}  // namespace

StepThroughPanel::StepThroughPanel(QWidget* parent)
    : QWidget(parent), m_watcher(new QFutureWatcher<Outcome>(this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  m_list = new QListWidget(this);
  m_list->setMaximumWidth(170);
  m_list->setMinimumWidth(130);
  layout->addWidget(m_list);

  auto* right = new QVBoxLayout;
  m_title = new QLabel(this);
  QFont tf = m_title->font();
  tf.setBold(true);
  tf.setPointSizeF(tf.pointSizeF() * 1.15);
  m_title->setFont(tf);
  m_sentence = new QLabel(this);
  m_sentence->setWordWrap(true);
  m_sentence->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_sentence->setMinimumHeight(m_sentence->fontMetrics().height() * 2 + 4);
  m_sentence->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  right->addWidget(m_title);
  right->addWidget(m_sentence);

  auto* split = new QSplitter(Qt::Horizontal, this);
  auto pane = [&](QLabel*& label, QPlainTextEdit*& edit) {
    auto* w = new QWidget(split);
    auto* v = new QVBoxLayout(w);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    label = new QLabel(w);
    edit = makePane(w);
    v->addWidget(label);
    v->addWidget(edit, 1);
    split->addWidget(w);
  };
  pane(m_beforeLabel, m_before);
  pane(m_afterLabel, m_after);
  right->addWidget(split, 1);

  auto* buttons = new QHBoxLayout;
  m_prev = new QPushButton(tr("◀ Previous"), this);
  m_next = new QPushButton(tr("Next ▶"), this);
  m_position = new QLabel(this);
  buttons->addWidget(m_position, 1);
  buttons->addWidget(m_prev);
  buttons->addWidget(m_next);
  right->addLayout(buttons);
  layout->addLayout(right, 1);

  m_prevAction = new QAction(tr("Previous pipeline step"), this);
  m_prevAction->setShortcut(QKeySequence(Qt::Key_F7));
  m_nextAction = new QAction(tr("Next pipeline step"), this);
  m_nextAction->setShortcut(QKeySequence(Qt::Key_F8));
  m_prev->setToolTip(tr("Previous step (F7)"));
  m_next->setToolTip(tr("Next step (F8)"));
  connect(m_prevAction, &QAction::triggered, this, &StepThroughPanel::previous);
  connect(m_nextAction, &QAction::triggered, this, &StepThroughPanel::next);
  connect(m_prev, &QPushButton::clicked, this, &StepThroughPanel::previous);
  connect(m_next, &QPushButton::clicked, this, &StepThroughPanel::next);
  connect(m_list, &QListWidget::currentRowChanged, this, &StepThroughPanel::setCurrentStep);
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
    setSteps(std::move(o.steps));
    emit ready();
  });
  clear();
}

StepThroughPanel::~StepThroughPanel() {
  m_watcher->waitForFinished();
}

QString StepThroughPanel::keyOf(const QString& modelPath, const QString& strategy,
                                const QString& gpu, const QString& precision,
                                const plan::Decisions& decisions) {
  QString key = modelPath + QLatin1Char('|') + strategy + QLatin1Char('|') + gpu +
                QLatin1Char('|') + precision;
  for (const plan::Edit& e : decisions.edits)
    key += QLatin1Char('|') + QString::fromStdString(plan::describe(e));
  return key;
}

void StepThroughPanel::start(const QString& modelPath, const QString& strategy, const QString& gpu,
                             const QString& precision, const plan::Decisions& decisions) {
  ++m_generation;
  clear();
  m_key = keyOf(modelPath, strategy, gpu, precision, decisions);
  m_busy = true;
  m_sentence->setText(tr("Running the pipeline step by step…"));
  m_watcher->setProperty("generation", m_generation);
  const std::string path = modelPath.toStdString();
  const std::string st = strategy.toStdString(), g = gpu.toStdString(),
                    pr = precision.toStdString();
  m_watcher->setFuture(QtConcurrent::run([path, st, g, pr, decisions] {
    Outcome o;
    try {
      PipelineStepOptions opt;
      opt.strategy = plan::parse_strategy(st);
      opt.gpu = gpu::gpu_spec(g);
      opt.precision = gpu::parse_precision(pr);
      opt.decisions = decisions;
      o.steps = pipeline_steps(path, opt);
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    return o;
  }));
}

void StepThroughPanel::clear() {
  m_steps.clear();
  m_current = -1;
  {
    const QSignalBlocker block(m_list);
    m_list->clear();
  }
  m_title->setText(tr("Step-through"));
  m_sentence->setText(
      tr("Open a model: the pipeline then runs here one step at a time, from import to CUDA."));
  m_beforeLabel->setText(tr("Before"));
  m_afterLabel->setText(tr("After"));
  m_before->clear();
  m_after->clear();
  updateButtons();
}

void StepThroughPanel::setSteps(std::vector<PipelineStep> steps) {
  m_steps = std::move(steps);
  m_current = -1;
  {
    const QSignalBlocker block(m_list);
    m_list->clear();
    int i = 1;
    for (const PipelineStep& s : m_steps)
      m_list->addItem(QStringLiteral("%1. %2").arg(i++).arg(QString::fromStdString(s.name)));
  }
  if (!m_steps.empty()) setCurrentStep(0);
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

void StepThroughPanel::setCurrentStep(int index) {
  const PipelineStep* s = step(index);
  if (!s || index == m_current) return;
  m_current = index;
  {
    const QSignalBlocker block(m_list);
    m_list->setCurrentRow(index);
  }
  m_title->setText(tr("Step %1 of %2 · %3")
                       .arg(index + 1)
                       .arg(stepCount())
                       .arg(QString::fromStdString(s->title)));
  QString sentence = QString::fromStdString(s->sentence).toHtmlEscaped();
  if (s->ms > 0) sentence += tr("  <span style='color:gray'>(%1 ms)</span>").arg(s->ms, 0, 'f', 1);
  m_sentence->setText(sentence);
  const auto [before, after] = paneTitles(s->name);
  m_beforeLabel->setText(before);
  m_afterLabel->setText(after);
  m_before->setPlainText(QString::fromStdString(s->before));
  m_after->setPlainText(QString::fromStdString(s->after));
  updateButtons();
  QStringList nodes;
  for (const std::string& n : s->nodes) nodes << QString::fromStdString(n);
  emit stepShown(index, nodes);
}

void StepThroughPanel::updateButtons() {
  const bool any = !m_steps.empty();
  m_prev->setEnabled(any && m_current > 0);
  m_next->setEnabled(any && m_current + 1 < stepCount());
  m_prevAction->setEnabled(m_prev->isEnabled());
  m_nextAction->setEnabled(m_next->isEnabled());
  m_position->setText(any ? tr("Step %1 of %2").arg(m_current + 1).arg(stepCount()) : QString());
}

}  // namespace souffle::views
