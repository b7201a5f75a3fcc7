#include "views/edit_preview.h"

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QCursor>
#include <QElapsedTimer>
#include <QEvent>
#include <QLabel>
#include <QToolTip>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>

#include "views/edit_commands.h"

namespace souffle::views {

namespace {

const char* const kBaseTip = "editPreviewBaseTip";

/// "+3", "−2", "+0": a change with its sign (a true minus sign).
QString signedInt(int v) {
  return v < 0 ? QStringLiteral("\u2212%1").arg(-v) : QStringLiteral("+%1").arg(v);
}

QString signedUs(double v) {
  const QString n = QString::number(std::abs(v), 'f', std::abs(v) < 10 ? 2 : 1);
  return (v < 0 ? QStringLiteral("\u2212") : QStringLiteral("+")) + n;
}

/// The menu's preview line: a label per menu, following the preview.
class PreviewLine : public QWidgetAction {
 public:
  explicit PreviewLine(EditPreview* preview) : QWidgetAction(preview), m_preview(preview) {
    setObjectName(QStringLiteral("editPreviewLine"));
  }

 protected:
  QWidget* createWidget(QWidget* parent) override {
    auto* label = new QLabel(parent);
    label->setObjectName(QStringLiteral("editPreviewLabel"));
    label->setWordWrap(true);
    label->setTextFormat(Qt::PlainText);
    label->setContentsMargins(10, 4, 10, 4);
    label->setFixedWidth(label->fontMetrics().averageCharWidth() * 62);
    // Room for three lines, so the menu does not change size as previews come in.
    label->setMinimumHeight(label->fontMetrics().lineSpacing() * 3 + 8);
    label->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    QFont f = label->font();
    f.setItalic(true);
    label->setFont(f);
    label->setText(m_preview->current().text());
    connect(m_preview, &EditPreview::updated, label,
            [label](const EditPreviewResult& r) { label->setText(r.text()); });
    return label;
  }

 private:
  EditPreview* m_preview;
};

}  // namespace

QString EditPreviewResult::text() const {
  switch (state) {
    case State::None:
      return QObject::tr("Hover an edit to see what it would change before it is applied");
    case State::Hint:
      return reason;
    case State::Busy:
      return QObject::tr("What if %1: a plan is being made; hover again once it is on screen")
          .arg(edit);
    case State::Pending:
      return QObject::tr("What if %1: planning it…").arg(edit);
    case State::Unchanged:
      return QObject::tr("%1: the decisions say so already; nothing would change").arg(edit);
    case State::Failed:
      return QObject::tr("What if %1: could not be planned: %2").arg(edit, reason);
    case State::Refused:
      return QObject::tr("Refused if applied: %1").arg(reason);
    case State::Ready:
      break;
  }
  return QObject::tr(
             "What if %1:\nΔ est. time %2 µs (cost-model estimate, %3 → %4 µs) · Δ kernels %5 "
             "(%6 → %7) · Δ grid barriers %8 (%9 → %10)")
      .arg(edit, signedUs(deltaUs()), QString::number(beforeUs, 'f', 1),
           QString::number(afterUs, 'f', 1), signedInt(deltaKernels()))
      .arg(beforeKernels)
      .arg(afterKernels)
      .arg(signedInt(deltaBarriers()))
      .arg(beforeBarriers)
      .arg(afterBarriers);
}

EditPreview::EditPreview(DecisionEditor* editor, std::function<PlanDataPtr()> plan,
                         std::function<bool()> busy, QObject* parent)
    : QObject(parent),
      m_editor(editor),
      m_planOf(std::move(plan)),
      m_busy(std::move(busy)),
      m_watcher(new QFutureWatcher<Timed>(this)),
      m_line(new PreviewLine(this)) {
  connect(m_watcher, &QFutureWatcher<Timed>::finished, this, &EditPreview::finished);
}

EditPreview::~EditPreview() {
  if (m_progress) m_progress->cancel = true;
  m_watcher->waitForFinished();
}

EditProposal EditPreview::proposal(const EditRequest& request) const {
  EditProposal p;
  if (request.edits.empty()) {
    p.hint = request.hint;
    return p;
  }
  p.after = m_editor->withEdits(request.edits);
  p.text = request.text;
  return p;
}

void EditPreview::watch(QAction* action, std::function<EditProposal()> make) {
  action->setProperty(kBaseTip, action->toolTip());
  connect(action, &QAction::hovered, this,
          [this, action, make = std::move(make)] { hovered(action, make()); });
}

void EditPreview::watch(QAbstractButton* button, std::function<EditProposal()> make) {
  button->setProperty(kBaseTip, button->toolTip());
  m_buttons.insert(button, std::move(make));
  button->installEventFilter(this);
  connect(button, &QObject::destroyed, this, [this, button] { m_buttons.remove(button); });
}

bool EditPreview::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Enter) {
    auto it = m_buttons.constFind(watched);
    if (it != m_buttons.constEnd()) hovered(watched, (*it)());
  }
  return QObject::eventFilter(watched, event);
}

void EditPreview::hovered(QObject* source, const EditProposal& p) {
  m_source = source;
  preview(p);
}

QString EditPreview::keyOf(const plan::Decisions& d) {
  QStringList parts;
  for (const plan::Edit& e : d.edits)
    parts << QStringLiteral("%1\x1f%2\x1f%3")
                 .arg(static_cast<int>(e.kind))
                 .arg(QString::fromStdString(e.a), QString::fromStdString(e.b));
  return parts.join(QLatin1Char('\n'));
}

EditPreviewResult EditPreview::preview(const EditProposal& p) {
  EditPreviewResult r;
  r.edit = p.text;
  const PlanDataPtr plan = m_planOf ? m_planOf() : nullptr;
  if (!p.hint.isEmpty() || !plan || !plan->plan) {
    r.state = EditPreviewResult::State::Hint;
    r.reason = p.hint.isEmpty() ? tr("Open a model and wait for its plan first") : p.hint;
    setCurrent(r, {});
    return r;
  }
  if (m_busy && m_busy()) {
    r.state = EditPreviewResult::State::Busy;
    setCurrent(r, {});
    return r;
  }
  if (plan.get() != m_cachePlan || m_cacheOwner.expired()) {
    // Another plan on screen: what was kept (and what is being planned) belongs to the old one.
    m_cache.clear();
    m_cachePlan = plan.get();
    m_cacheOwner = plan;
    if (m_progress) m_progress->cancel = true;
    m_pending.reset();
  }
  if (p.after == m_editor->decisions()) {
    r.state = EditPreviewResult::State::Unchanged;
    setCurrent(r, {});
    return r;
  }
  const QString key = keyOf(p.after);
  auto kept = m_cache.constFind(key);
  if (kept != m_cache.constEnd()) {
    setCurrent(*kept, key);
    return *kept;
  }
  r.state = EditPreviewResult::State::Pending;
  setCurrent(r, key);
  Job job{key, p, m_editor->decisions(), plan};
  if (!m_running)
    start(std::move(job));
  else if (m_running->key != key || m_running->plan != plan)
    m_pending = std::make_unique<Job>(std::move(job));
  return r;
}

void EditPreview::start(Job job) {
  m_progress = std::make_shared<PlanProgress>();
  ++m_planCount;
  const PlanDataPtr plan = job.plan;
  const ModelDataPtr model = plan->model;
  const plan::Strategy strategy = plan->plan->strategy;
  const QString gpu = plan->gpu;
  const gpu::Precision precision = plan->plan->precision;
  const SyncMode sync = plan->plan->sync;
  const plan::Decisions after = job.proposal.after;
  std::shared_ptr<PlanProgress> progress = m_progress;
  m_running = std::make_unique<Job>(std::move(job));
  // The same call the window makes to plan an accepted edit, with the plan on screen as the
  // previous one: what the preview shows is what applying it gives.
  m_watcher->setFuture(QtConcurrent::run([=] {
    QElapsedTimer t;
    t.start();
    Timed out;
    out.outcome = PlanRunner::runWith(model, strategy, gpu, after, plan, precision, progress, sync);
    out.ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
    return out;
  }));
}

EditPreviewResult EditPreview::resultOf(const Job& job, const Timed& timed) const {
  EditPreviewResult r;
  r.edit = job.proposal.text;
  r.ms = timed.ms;
  if (!timed.outcome.ok()) {
    r.state = EditPreviewResult::State::Failed;
    r.reason = timed.outcome.error;
    return r;
  }
  const plan::FusionPlan& before = *job.plan->plan;
  const plan::FusionPlan& after = *timed.outcome.data->plan;
  r.beforeUs = before.est_time_us;
  r.afterUs = after.est_time_us;
  r.beforeKernels = static_cast<int>(before.kernels());
  r.afterKernels = static_cast<int>(after.kernels());
  r.beforeBarriers = before.grid_syncs;
  r.afterBarriers = after.grid_syncs;
  std::vector<plan::Edit> proposed;
  for (const plan::Edit& e : job.proposal.after.edits)
    if (std::find(job.base.edits.begin(), job.base.edits.end(), e) == job.base.edits.end())
      proposed.push_back(e);
  const QStringList refusals = refusalsOf(after, proposed);
  if (!refusals.isEmpty()) {
    r.state = EditPreviewResult::State::Refused;
    r.reason = refusals.join(QStringLiteral("; "));
  } else {
    r.state = EditPreviewResult::State::Ready;
  }
  return r;
}

void EditPreview::finished() {
  const Timed timed = m_watcher->result();
  std::unique_ptr<Job> job = std::move(m_running);
  if (job && !timed.outcome.cancelled && job->plan.get() == m_cachePlan &&
      !m_cacheOwner.expired()) {
    const EditPreviewResult r = resultOf(*job, timed);
    m_cache.insert(job->key, r);
    if (job->key == m_currentKey) setCurrent(r, job->key);
  }
  if (m_pending) {
    Job next = std::move(*m_pending);
    m_pending.reset();
    if (next.plan.get() == m_cachePlan && !m_cache.contains(next.key)) start(std::move(next));
  }
}

void EditPreview::setCurrent(const EditPreviewResult& r, const QString& key) {
  m_current = r;
  m_currentKey = key;
  if (m_source) {
    const QString base = m_source->property(kBaseTip).toString();
    const QString tip = base.isEmpty() ? r.text() : base + QStringLiteral("\n\n") + r.text();
    if (auto* a = qobject_cast<QAction*>(m_source.data()))
      a->setToolTip(tip);
    else if (auto* b = qobject_cast<QAbstractButton*>(m_source.data()))
      b->setToolTip(tip);
    // A tooltip on screen shows the new figures at once.
    if (QToolTip::isVisible())
      QToolTip::showText(QCursor::pos(), tip, QApplication::widgetAt(QCursor::pos()));
  }
  emit updated(r);
}

}  // namespace souffle::views
