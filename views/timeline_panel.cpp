#include "views/timeline_panel.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHelpEvent>
#include <QLabel>
#include <QMetaObject>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QTemporaryDir>
#include <QToolBar>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/support/error.h"
#include "views/explorer_session.h"
#include "views/profile_runner.h"
#include "views/theme.h"

namespace souffle::views {

namespace {

constexpr int kGutter = 70;  ///< row labels
constexpr int kRuler = 22;   ///< time axis

QString waitName(loop::TimelineWait w) {
  switch (w) {
    case loop::TimelineWait::BlockBarrier:
      return QObject::tr("block barrier");
    case loop::TimelineWait::FlagWait:
      return QObject::tr("flag wait");
    case loop::TimelineWait::GridBarrier:
      return QObject::tr("grid barrier");
    case loop::TimelineWait::None:
      break;
  }
  return {};
}

/// 1, 2 or 5 times a power of ten, at least `x`.
double niceStep(double x) {
  if (x <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= x) return m * p;
  return 10 * p;
}

}  // namespace

// ---- the chart --------------------------------------------------------------------------------

TimelineCanvas::TimelineCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(120);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::ClickFocus);
}

void TimelineCanvas::setKernel(const TimelineKernel* kernel, const TimelineRows* rows) {
  m_kernel = kernel;
  m_rows = rows;
  m_selected.clear();
  fit();
}

QRect TimelineCanvas::chartRect() const {
  return QRect(kGutter, kRuler, std::max(1, width() - kGutter - 4),
               std::max(1, height() - kRuler - 2));
}

void TimelineCanvas::setWindow(double t0, double t1) {
  if (t1 - t0 < 1e-6) t1 = t0 + 1e-6;
  m_t0 = t0;
  m_t1 = t1;
  update();
  emit windowChanged();
}

void TimelineCanvas::fit() {
  const double end = m_rows && m_rows->endUs > 0 ? m_rows->endUs : 1;
  setWindow(0, end * 1.01);
}

void TimelineCanvas::zoom(double factor, double x) {
  const double at = timeAt(static_cast<int>(x));
  const double t0 = at - (at - m_t0) / factor;
  const double t1 = at + (m_t1 - at) / factor;
  setWindow(t0, t1);
}

void TimelineCanvas::setSelectedStages(std::vector<char> selected) {
  m_selected = std::move(selected);
  m_cache = QImage();
  update();
}

void TimelineCanvas::setDark(bool dark) {
  m_dark = dark;
  m_cache = QImage();
  update();
}

double TimelineCanvas::timeAt(int x) const {
  const QRect c = chartRect();
  return m_t0 + (x - c.left()) * (m_t1 - m_t0) / c.width();
}

double TimelineCanvas::xAt(double us) const {
  const QRect c = chartRect();
  return c.left() + (us - m_t0) * c.width() / (m_t1 - m_t0);
}

int TimelineCanvas::spanAt(const QPoint& pos) const {
  const QRect c = chartRect();
  if (!m_kernel || !m_rows || !c.contains(pos)) return -1;
  const int row = timelineRowAt(*m_rows, c.height(), pos.y() - c.top());
  const double perPixel = (m_t1 - m_t0) / c.width();
  return timelineSpanAt(*m_kernel, *m_rows, row, timeAt(pos.x()), 2 * perPixel);
}

QPoint TimelineCanvas::spanPosition(int span) const {
  if (!m_kernel || !m_rows || span < 0 || size_t(span) >= m_kernel->timeline.spans.size())
    return {};
  const TimelineSpan& s = m_kernel->timeline.spans[size_t(span)];
  const int64_t key = m_rows->perBlock ? s.block : s.sm;
  const auto it = std::lower_bound(m_rows->keys.begin(), m_rows->keys.end(), key);
  if (it == m_rows->keys.end() || *it != key) return {};
  const QRect c = chartRect();
  const int n = static_cast<int>(m_rows->keys.size());
  const int row = static_cast<int>(it - m_rows->keys.begin());
  const int y = c.top() + static_cast<int>((row + 0.5) * c.height() / n);
  const double mid = (s.begin_us + s.end_us) / 2;
  if (mid < m_t0 || mid > m_t1) return {};
  return QPoint(static_cast<int>(xAt(mid)), y);
}

QString TimelineCanvas::spanText(int span) const {
  if (!m_kernel || span < 0 || size_t(span) >= m_kernel->timeline.spans.size()) return {};
  const TimelineKernel& k = *m_kernel;
  const TimelineSpan& s = k.timeline.spans[size_t(span)];
  const size_t st = static_cast<size_t>(std::max(0, s.stage));
  QString t;
  if (s.wait == loop::TimelineWait::None)
    t = QObject::tr("<b>stage %1</b> %2").arg(s.stage).arg(k.stageName(s.stage).toHtmlEscaped());
  else
    t = QObject::tr("<b>%1</b> before stage %2 %3")
            .arg(waitName(s.wait))
            .arg(s.stage)
            .arg(k.stageName(s.stage).toHtmlEscaped());
  t += QObject::tr("<br>block %1, SM %2%3")
           .arg(s.block)
           .arg(s.sm)
           .arg(k.timeline.emulated ? QObject::tr(" (the emulator's SM is the block)") : QString());
  t += QObject::tr("<br>start %1, end %2, duration <b>%3</b>")
           .arg(formatTimelineUs(s.begin_us), formatTimelineUs(s.end_us), formatTimelineUs(s.us()));
  if (s.wait == loop::TimelineWait::None) {
    // The wait of this block before the stage, if it had one.
    double waited = 0;
    for (const TimelineSpan& w : k.timeline.spans)
      if (w.block == s.block && w.stage == s.stage && w.wait != loop::TimelineWait::None)
        waited += w.us();
    t += QObject::tr("<br>waited %1 before it").arg(formatTimelineUs(waited));
    if (st < k.timeline.stage_est_us.size() && k.timeline.stage_est_us[st] >= 0)
      t += QObject::tr(", cost model estimate %1")
               .arg(formatTimelineUs(k.timeline.stage_est_us[st]));
  } else if (st < k.waitMaxUs.size()) {
    t += QObject::tr("<br>longest wait there %1, %2 over all blocks")
             .arg(formatTimelineUs(k.waitMaxUs[st]), formatTimelineUs(k.waitTotalUs[st]));
  }
  if (st < k.stageNodes.size() && !k.stageNodes[st].isEmpty()) {
    QStringList nodes = k.stageNodes[st];
    const int more = static_cast<int>(nodes.size()) - 8;
    if (more > 0) nodes = nodes.mid(0, 8);
    for (QString& n : nodes) n = n.toHtmlEscaped();
    t += QObject::tr("<br>nodes: %1").arg(nodes.join(QStringLiteral(", ")));
    if (more > 0) t += QObject::tr(" and %1 more").arg(more);
  }
  t += QStringLiteral("<br><i>%1</i>")
           .arg(k.timeline.emulated ? QObject::tr("emulator estimate, not GPU time")
                                    : QString::fromStdString(k.timeline.time_base).toHtmlEscaped());
  return t;
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const GraphColors colors = GraphColors::from(palette());
  p.fillRect(rect(), colors.background);
  const QRect c = chartRect();
  if (!m_kernel || !m_rows || m_rows->keys.empty()) {
    p.setPen(colors.subtext);
    p.drawText(rect(), Qt::AlignCenter,
               tr("No timeline: Run on the emulator, or open the record files "
                  "souffle-cli profile --timeline kept."));
    return;
  }
  // The raster of the window, drawn again only when something it shows changed.
  if (m_cache.size() != c.size() || m_cacheT0 != m_t0 || m_cacheT1 != m_t1) {
    QElapsedTimer timer;
    timer.start();
    TimelineRaster r;
    r.t0 = m_t0;
    r.t1 = m_t1;
    r.size = c.size();
    r.dark = m_dark;
    r.background = colors.background;
    r.highlight = colors.match.isValid() ? colors.match : colors.accent;
    r.selected = m_selected;
    m_cache = rasterTimeline(*m_kernel, *m_rows, r, &m_visited);
    m_cacheT0 = m_t0;
    m_cacheT1 = m_t1;
    m_rasterMs = double(timer.nsecsElapsed()) / 1e6;
  }
  p.drawImage(c.topLeft(), m_cache);

  // Grid barriers and flag waits: a line where their last waiter left (one per pixel).
  QPen barrier(m_dark ? QColor(0xff, 0x8a, 0x80) : QColor(0xc6, 0x28, 0x28), 1, Qt::DashLine);
  p.setPen(barrier);
  int lastX = -1;
  std::vector<double> lines;
  for (double us : m_kernel->barrierUs)
    if (us >= m_t0 && us <= m_t1) lines.push_back(us);
  std::sort(lines.begin(), lines.end());
  for (double us : lines) {
    const int x = static_cast<int>(xAt(us));
    if (x == lastX) continue;
    lastX = x;
    p.drawLine(x, c.top(), x, c.bottom());
  }

  // The ruler.
  QFont small = font();
  small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1));
  p.setFont(small);
  p.setPen(colors.subtext);
  const double step = niceStep((m_t1 - m_t0) / std::max(1, c.width() / 90));
  for (double t = std::ceil(m_t0 / step) * step; t <= m_t1; t += step) {
    const int x = static_cast<int>(xAt(t));
    p.drawLine(x, kRuler - 5, x, kRuler - 1);
    p.drawText(QRect(x + 2, 0, 90, kRuler - 4), Qt::AlignLeft | Qt::AlignVCenter,
               formatTimelineUs(t));
  }
  // Row labels, as many as fit.
  const int n = static_cast<int>(m_rows->keys.size());
  const double rh = double(c.height()) / n;
  const int every = std::max(1, static_cast<int>(std::ceil(14 / rh)));
  const QString what = m_rows->perBlock ? tr("block %1") : tr("SM %1");
  for (int r = 0; r < n; r += every) {
    const int y = c.top() + static_cast<int>(r * rh);
    p.drawText(QRect(2, y, kGutter - 6, static_cast<int>(std::max(rh, 12.0))),
               Qt::AlignRight | Qt::AlignTop, what.arg(m_rows->keys[size_t(r)]));
  }
  p.drawText(QRect(2, 0, kGutter - 4, kRuler - 2), Qt::AlignLeft | Qt::AlignVCenter,
             m_kernel->timeline.emulated ? tr("emul. µs") : tr("µs"));
}

void TimelineCanvas::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  zoom(std::pow(1.25, steps), event->position().x());
  event->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  m_press = event->position().toPoint();
  m_pressT0 = m_t0;
  m_pressT1 = m_t1;
  m_dragging = false;
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton)) return;
  const int dx = event->position().toPoint().x() - m_press.x();
  if (!m_dragging && std::abs(dx) < 4) return;
  m_dragging = true;
  setCursor(Qt::ClosedHandCursor);
  const double shift = dx * (m_pressT1 - m_pressT0) / chartRect().width();
  setWindow(m_pressT0 - shift, m_pressT1 - shift);
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  unsetCursor();
  if (m_dragging) {
    m_dragging = false;
    return;
  }
  const int span = spanAt(event->position().toPoint());
  if (span >= 0) emit spanClicked(span);
}

void TimelineCanvas::mouseDoubleClickEvent(QMouseEvent*) {
  fit();
}

bool TimelineCanvas::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int span = spanAt(help->pos());
    if (span >= 0)
      QToolTip::showText(help->globalPos(), spanText(span), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(event);
}

// ---- the panel --------------------------------------------------------------------------------

TimelinePanel::TimelinePanel(QWidget* parent)
    : QWidget(parent), m_watcher(new QFutureWatcher<Outcome>(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  m_bar = new QToolBar(this);
  m_bar->setIconSize(QSize(16, 16));
  m_runAction = m_bar->addAction(tr("Run on the emulator"), this, [this] { runEmulator(); });
  m_runAction->setToolTip(
      tr("Profile the plan on the emulator with timeline records (its cost model's clock: an "
         "estimate, not GPU time)"));
  m_cancelAction = m_bar->addAction(tr("Cancel"), this, [this] { cancel(); });
  m_cancelAction->setEnabled(false);
  m_openAction = m_bar->addAction(tr("Open records…"), this, [this] { openFiles(); });
  m_openAction->setToolTip(
      tr("Open the record files (*.timeline) souffle-cli profile --timeline kept, measured on a "
         "GPU or emulated"));
  m_bar->addSeparator();
  m_kernels = new QComboBox(m_bar);
  m_kernels->setToolTip(tr("The kernel shown"));
  m_kernels->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_bar->addWidget(m_kernels);
  connect(m_kernels, &QComboBox::currentIndexChanged, this, [this](int i) { setCurrentKernel(i); });
  m_blockAction = m_bar->addAction(tr("Rows per block"));
  m_blockAction->setCheckable(true);
  m_blockAction->setToolTip(tr("One row per block instead of one per SM"));
  connect(m_blockAction, &QAction::toggled, this, [this](bool on) { setPerBlock(on); });
  m_bar->addAction(tr("Fit"), this, [this] { m_canvas->fit(); });
  layout->addWidget(m_bar);
  m_info = new QLabel(this);
  m_info->setWordWrap(true);
  m_info->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_info->setContentsMargins(6, 0, 6, 0);
  layout->addWidget(m_info);
  m_error = new QLabel(this);
  m_error->setWordWrap(true);
  m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_error->setContentsMargins(6, 2, 6, 2);
  m_error->setStyleSheet(QStringLiteral("color: #c62828;"));
  m_error->hide();
  layout->addWidget(m_error);
  m_canvas = new TimelineCanvas(this);
  layout->addWidget(m_canvas, 1);
  connect(m_canvas, &TimelineCanvas::spanClicked, this, &TimelinePanel::activateSpan);
  connect(m_canvas, &TimelineCanvas::windowChanged, this, [this] { updateInfo(); });

  connect(m_watcher, &QFutureWatcher<Outcome>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation) return;  // stale
    m_busy = false;
    m_cancelAction->setEnabled(false);
    m_runAction->setEnabled(m_plan != nullptr);
    emit busyChanged(false, {});
    const QFuture<Outcome> f = m_watcher->future();
    if (f.resultCount() == 0 || f.result().cancelled) {
      emit progress(tr("Timeline cancelled"));
      updateInfo();
      emit finished();
      return;
    }
    const Outcome o = f.result();
    if (!o.error.isEmpty()) {
      if (o.restored) {  // the project's timeline is not shown, so not remembered either
        m_recordFiles.clear();
        m_recordKey.clear();
        emit progress(o.error);
      }
      showError(o.error);
    } else {
      setData(o.data);
      if (!o.kept.isEmpty()) m_recordFiles = o.kept;
      if (!o.recordKey.isEmpty()) m_recordKey = o.recordKey;
      if (!o.carried)
        emit progress(tr("Timeline ready in %1 s").arg(m_clock.elapsed() / 1000.0, 0, 'f', 1));
    }
    emit finished();
  });
  m_runAction->setEnabled(false);
  updateInfo();
}

TimelinePanel::~TimelinePanel() {
  if (m_cancel) m_cancel->store(true);
  m_watcher->waitForFinished();
}

void TimelinePanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::planChanged, this, [this, session](PlanDataPtr plan) {
    if (plan) setInputOptions(session->inputDims(), session->inputBinds(), session->inputShapes());
    setPlan(std::move(plan));
  });
  connect(this, &TimelinePanel::progress, session,
          [session](const QString& what) { session->say(what, 8000); });
  connect(this, &TimelinePanel::dataChanged, session, &ExplorerSession::measuredTimesChanged);
  // A span: its stage's nodes in the graph, its lines in the code.
  connect(this, &TimelinePanel::stageActivated, session, &ExplorerSession::selectStage);
  // A node selected in the graph (not by the timeline): its stages' spans.
  connect(session, &ExplorerSession::nodeSelected, this, [this](const NodeSelection& n) {
    if (!n.byProgram) highlightNodes({n.node});
  });
}

QList<QAction*> TimelinePanel::menuActions() {
  auto* run = new QAction(tr("&Timeline on the emulator"), this);
  run->setToolTip(
      tr("Profile the plan on the emulator with timeline records: each stage and "
         "wait per block (an estimate, not GPU time)"));
  connect(run, &QAction::triggered, this, [this] {
    raiseDockOf(this);
    runEmulator();
  });
  auto* open = new QAction(tr("Open timeline &records…"), this);
  connect(open, &QAction::triggered, this, [this] {
    raiseDockOf(this);
    openFiles();
  });
  return {run, open};
}

void TimelinePanel::setPlan(PlanDataPtr plan) {
  if (plan == m_plan) return;
  m_plan = std::move(plan);
  m_runAction->setEnabled(m_plan != nullptr && !m_busy);
  // Nothing shown: say what there is to do for this plan (it said "open a model" with one open).
  if (!m_data) updateInfo();
  if (m_data && m_data->plan && m_data->plan != m_plan) {
    if (m_plan && m_plan->plan && !m_busy) {
      carryOver();  // the kernels the edit left alone keep their records
    } else {
      setData(nullptr);
      m_info->setText(tr(
          "The plan changed: the timeline shown was of another plan. Run it again for this one."));
    }
  }
  // A project's records, read once its plan is on screen (the first plan after it opened).
  if (m_plan && m_plan->plan && !m_pendingFiles.isEmpty()) {
    const QStringList files = std::exchange(m_pendingFiles, {});
    const QString key = std::exchange(m_pendingKey, {});
    if (QString::fromStdString(plan_key(*m_plan->plan)) == key) {
      m_recordFiles = files;
      m_recordKey = key;
      readFiles(files, true);
    } else {
      m_info->setText(tr("The project's timeline (%1) was recorded for another plan: it is not "
                         "shown. Run it again for this one.")
                          .arg(QFileInfo(files.front()).fileName()));
    }
  }
}

void TimelinePanel::carryOver() {
  const TimelineDataPtr old = m_data;
  const QStringList files = m_recordFiles;
  const QString key = m_recordKey;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  start(
      [old, plan = m_plan, files, key]() -> Outcome {
        Outcome out;
        int stale = 0;
        out.data = carryTimelineData(old, plan, &stale);
        out.kept = files;
        // With a stale kernel the files stay the earlier plan's: a project reopens them there.
        if (stale > 0) out.recordKey = key;
        out.carried = true;
        return out;
      },
      tr("Carrying the timeline over to the new plan…"));
}

void TimelinePanel::restoreRecords(const QStringList& files, const QString& planKey) {
  m_pendingFiles = files;
  m_pendingKey = planKey;
}

QStringList TimelinePanel::recordFiles() const {
  return m_pendingFiles.isEmpty() ? m_recordFiles : m_pendingFiles;
}

QString TimelinePanel::recordPlanKey() const {
  return m_pendingFiles.isEmpty() ? m_recordKey : m_pendingKey;
}

bool TimelinePanel::isKept(const QString& file) const {
  return m_keep && QFileInfo(file).absoluteFilePath().startsWith(m_keep->path() + QLatin1Char('/'));
}

QStringList TimelinePanel::copyKeptRecords(const QString& dir) const {
  QStringList files = recordFiles();
  for (QString& f : files) {
    if (!isKept(f)) continue;
    const QString to = dir + QLatin1Char('/') + QDir(m_keep->path()).relativeFilePath(f);
    if (QFileInfo::exists(to) ||
        (QDir().mkpath(QFileInfo(to).absolutePath()) && QFile::copy(f, to)))
      f = to;
  }
  return files;
}

bool TimelinePanel::isJobRunning() const {
  return m_watcher->isRunning();
}

void TimelinePanel::setInputOptions(const QStringList& dims, const QStringList& binds,
                                    const QStringList& shapes) {
  m_dims = dims;
  m_binds = binds;
  m_shapes = shapes;
}

void TimelinePanel::start(std::function<Outcome()> work, const QString& what) {
  if (m_busy && m_cancel) m_cancel->store(true);
  ++m_generation;
  m_busy = true;
  m_clock.start();
  m_cancelAction->setEnabled(true);
  m_runAction->setEnabled(false);
  m_error->hide();
  m_watcher->setProperty("generation", m_generation);
  m_info->setText(what);
  emit progress(what);
  emit busyChanged(true, what);
  m_watcher->setFuture(QtConcurrent::run(std::move(work)));
}

void TimelinePanel::runEmulator() {
  if (!m_plan || !m_plan->plan) return;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  ProfileOptions o;
  o.backend = "emulator";
  o.runs = 1;
  o.warmup = 0;
  o.graph = false;
  o.counters = false;
  o.timeline = true;
  o.sync = m_plan->plan->sync;
  // The emulator interprets every thread: a full-size model takes tens of minutes (the full
  // LSTM about 28), past the CLI's default limit. Here Cancel stops a run, so the limit only
  // guards against a runner that stops answering.
  o.timeout_s = 12 * 3600;
  o.timeout_option.clear();
  // The records are kept (in a folder of this panel) so a project can remember them.
  if (!m_keep) m_keep = std::make_unique<QTemporaryDir>();
  if (m_keep->isValid()) {
    const QString dir = m_keep->filePath(QStringLiteral("run-%1").arg(++m_runs));
    if (QDir().mkpath(dir)) o.timeline_keep_dir = dir.toStdString();
  }
  std::shared_ptr<std::atomic<bool>> cancel = m_cancel;
  o.cancel = cancel.get();
  QPointer<TimelinePanel> self(this);
  const quint64 generation = m_generation + 1;
  o.progress = [self, generation](const std::string& s) {
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, text = QString::fromStdString(s)] {
          if (self && self->m_generation == generation && self->m_busy) {
            self->m_info->setText(tr("Timeline on the emulator: %1").arg(text));
            emit self->progress(tr("Timeline: %1").arg(text));
          }
        },
        Qt::QueuedConnection);
  };
  auto strings = [](const QStringList& l) {
    std::vector<std::string> out;
    for (const QString& s : l) out.push_back(s.toStdString());
    return out;
  };
  start(
      [plan = m_plan, o, cancel, d = strings(m_dims), b = strings(m_binds),
       sh = strings(m_shapes)]() -> Outcome {
        Outcome out;
        ProfileDataPtr r = ProfileRunner::run(plan, o, d, b, sh);
        if (cancel->load()) {
          out.cancelled = true;
          return out;
        }
        if (!r->report.error.empty()) {
          out.error = tr("The timeline on the emulator failed: %1")
                          .arg(QString::fromStdString(r->report.error));
          return out;
        }
        if (r->report.timelines.empty()) {
          out.error = tr("The emulator returned no timeline for this plan");
          return out;
        }
        for (const KernelTimeline& t : r->report.timelines)
          if (!t.file.empty()) out.kept << QString::fromStdString(t.file);
        if (out.kept.size() != static_cast<qsizetype>(r->report.timelines.size())) out.kept.clear();
        out.data = makeTimelineData(plan, r->report.timelines, true,
                                    tr("emulator estimate, not GPU time"));
        return out;
      },
      tr("Profiling %1 on the emulator with timeline records…")
          .arg(m_plan->strategy.isEmpty() ? tr("the plan") : m_plan->strategy));
}

void TimelinePanel::cancel() {
  if (m_cancel) m_cancel->store(true);
  if (!m_busy) return;
  // Said at once; the job's result, if it still comes, is of an older generation and dropped.
  ++m_generation;
  m_busy = false;
  m_cancelAction->setEnabled(false);
  m_runAction->setEnabled(m_plan != nullptr);
  emit busyChanged(false, {});
  emit progress(tr("Timeline cancelled"));
  updateInfo();
  if (!m_data) m_info->setText(tr("Timeline cancelled."));
  emit finished();
}

void TimelinePanel::openFiles(QStringList files) {
  if (files.isEmpty())
    files = QFileDialog::getOpenFileNames(this, tr("Open timeline records"), QString(),
                                          tr("Timeline records (*.timeline);;All files (*)"));
  if (files.isEmpty()) return;
  readFiles(files, false);
}

void TimelinePanel::readFiles(const QStringList& files, bool restored) {
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  start(
      [plan = m_plan, files, restored]() -> Outcome {
        Outcome out;
        out.restored = restored;
        const QString what = restored ? tr("The project's timeline %1 could not be read (the "
                                           "project opened without it): %2")
                                      : tr("Cannot open the timeline %1: %2");
        try {
          out.data = readTimelineFiles(plan, files);
        } catch (const UserError& e) {
          const QString file = e.file().empty() ? files.join(QStringLiteral(", "))
                                                : QString::fromStdString(e.file());
          out.error = what.arg(file, QString::fromStdString(e.reason()));
        } catch (const std::exception& e) {
          out.error = what.arg(files.join(QStringLiteral(", ")), QString::fromUtf8(e.what()));
        }
        return out;
      },
      tr("Reading %1…").arg(QFileInfo(files.front()).fileName()));
}

void TimelinePanel::showError(const QString& error) {
  m_error->setText(error);
  m_error->show();
  updateInfo();
}

QString TimelinePanel::errorText() const {
  return m_error->isVisible() || !m_error->isHidden() ? m_error->text() : QString();
}

QString TimelinePanel::infoText() const {
  return m_info->text();
}

void TimelinePanel::setData(TimelineDataPtr data) {
  m_data = std::move(data);
  m_recordFiles = m_data ? m_data->files : QStringList();
  m_recordKey = m_data && m_data->plan && m_data->plan->plan
                    ? QString::fromStdString(plan_key(*m_data->plan->plan))
                    : QString();
  m_error->hide();
  m_kernelIndex = -1;
  {
    const QSignalBlocker block(m_kernels);
    m_kernels->clear();
    if (m_data)
      for (const TimelineKernel& k : m_data->kernels)
        m_kernels->addItem((k.stale ? tr("%1 (%2 stages, %3 blocks; stale: of an earlier plan)")
                                    : tr("%1 (%2 stages, %3 blocks)"))
                               .arg(QString::fromStdString(k.timeline.kernel))
                               .arg(k.stageCount())
                               .arg(k.timeline.grid));
    m_kernels->setEnabled(m_kernels->count() > 1);
  }
  setCurrentKernel(m_data && !m_data->kernels.empty() ? 0 : -1);
  emit dataChanged();
}

void TimelinePanel::setCurrentKernel(int k) {
  if (!m_data || k < 0 || size_t(k) >= m_data->kernels.size()) {
    m_kernelIndex = -1;
    m_rows.reset();
    m_canvas->setKernel(nullptr, nullptr);
    updateInfo();
    return;
  }
  m_kernelIndex = k;
  if (m_kernels->currentIndex() != k) {
    const QSignalBlocker block(m_kernels);
    m_kernels->setCurrentIndex(k);
  }
  m_rows = std::make_unique<TimelineRows>(
      makeTimelineRows(m_data->kernels[size_t(k)].timeline, m_perBlock));
  m_canvas->setKernel(&m_data->kernels[size_t(k)], m_rows.get());
  updateInfo();
}

void TimelinePanel::setPerBlock(bool on) {
  if (m_blockAction->isChecked() != on) {
    const QSignalBlocker block(m_blockAction);
    m_blockAction->setChecked(on);
  }
  if (m_perBlock == on) return;
  m_perBlock = on;
  const double t0 = m_canvas->windowStart(), t1 = m_canvas->windowEnd();
  std::vector<char> sel = m_canvas->selectedStages();
  setCurrentKernel(m_kernelIndex);
  m_canvas->setWindow(t0, t1);
  m_canvas->setSelectedStages(std::move(sel));
}

int TimelinePanel::highlightNodes(const QStringList& nodes) {
  if (!m_data || m_kernelIndex < 0) return 0;
  const TimelineKernel& k = m_data->kernels[size_t(m_kernelIndex)];
  std::vector<char> sel(k.stageNodes.size(), 0);
  int count = 0;
  for (size_t s = 0; s < k.stageNodes.size(); ++s)
    for (const QString& n : nodes)
      if (k.stageNodes[s].contains(n)) {
        sel[s] = 1;
        ++count;
        break;
      }
  m_canvas->setSelectedStages(std::move(sel));
  updateInfo();
  return count;
}

void TimelinePanel::activateSpan(int span) {
  if (!m_data || m_kernelIndex < 0) return;
  const TimelineKernel& k = m_data->kernels[size_t(m_kernelIndex)];
  if (span < 0 || size_t(span) >= k.timeline.spans.size()) return;
  const int stage = k.timeline.spans[size_t(span)].stage;
  std::vector<char> sel(k.stageNodes.size(), 0);
  if (stage >= 0 && size_t(stage) < sel.size()) sel[size_t(stage)] = 1;
  m_canvas->setSelectedStages(std::move(sel));
  updateInfo();
  const size_t st = static_cast<size_t>(std::max(0, stage));
  emit stageActivated(k.partition, k.partition >= 0 ? k.stageBase + stage : stage,
                      st < k.stageNodes.size() ? k.stageNodes[st] : QStringList(),
                      st < k.stageTes.size() ? k.stageTes[st] : QStringList());
}

void TimelinePanel::setDark(bool dark) {
  m_canvas->setDark(dark);
}

void TimelinePanel::updateInfo() {
  if (m_busy) return;
  if (!m_data || m_kernelIndex < 0) {
    if (!m_data)
      m_info->setText(m_plan ? tr("No timeline yet: <b>Run on the emulator</b> (an estimate, not "
                                  "GPU time) or open the records a GPU profile kept.")
                             : tr("Open a model to see its kernels' timelines."));
    return;
  }
  const TimelineKernel& k = m_data->kernels[size_t(m_kernelIndex)];
  const TimelineAnalysis& a = k.analysis;
  QString text = QStringLiteral("<b>%1</b> · ").arg(m_data->source.toHtmlEscaped());
  text += tr("%1: %2 stages on %3 blocks (%4), span %5, %6% of block time waiting")
              .arg(QString::fromStdString(k.timeline.kernel))
              .arg(k.stageCount())
              .arg(k.timeline.grid)
              .arg(QString::fromStdString(k.timeline.sample_note()))
              .arg(formatTimelineUs(a.span_us))
              .arg(a.wait_share() * 100, 0, 'f', 0);
  if (a.slowest_stage >= 0 && size_t(a.slowest_stage) < a.stages.size()) {
    const StageTiming& s = a.stages[size_t(a.slowest_stage)];
    text += tr(" · slowest stage %1 (%2)").arg(s.stage).arg(formatTimelineUs(s.max_us));
  }
  if (a.longest_wait >= 0 && size_t(a.longest_wait) < a.waits.size()) {
    const WaitTiming& w = a.waits[size_t(a.longest_wait)];
    text += tr(" · longest wait before stage %1 (%2 over blocks, straggler block %3)")
                .arg(w.before_stage)
                .arg(formatTimelineUs(w.total_us))
                .arg(w.straggler);
  }
  if (m_rows) {
    const int h = m_canvas->chartRect().height();
    const int n = static_cast<int>(m_rows->keys.size());
    if (n > h) text += tr(" · %1 rows on %2 pixel lines (summed)").arg(n).arg(h);
  }
  if (!m_data->files.isEmpty()) {
    // One kernel per file, in the files' order: name the shown kernel's file.
    const QString& file = m_data->files.size() == static_cast<qsizetype>(m_data->kernels.size()) &&
                                  m_kernelIndex >= 0 && m_kernelIndex < m_data->files.size()
                              ? m_data->files[m_kernelIndex]
                              : m_data->files.front();
    text += QStringLiteral(" · ") + tr("from %1").arg(QFileInfo(file).fileName());
  }
  if (!m_data->note.isEmpty())
    text += QStringLiteral("<br><i>%1</i>").arg(m_data->note.toHtmlEscaped());
  m_info->setText(text);
}

}  // namespace souffle::views
