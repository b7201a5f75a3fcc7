#include "views/charts_panel.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QDockWidget>
#include <QGraphicsLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QTabWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "views/explorer_session.h"
#include "views/partition_table_model.h"
#include "views/theme.h"

namespace souffle::views {

namespace {

constexpr int kMaxBars = 40;            // more bars than this are unreadable in a dock
constexpr double kMinIntensity = 1e-3;  // FLOP/byte: where a kernel without FLOPs is drawn
constexpr double kMinGflops = 1e-2;

QChartView* makeView(QWidget* parent) {
  auto* v = new QChartView(new QChart(), parent);
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumSize(240, 180);
  return v;
}

/// Replaces the chart of `view` (axes and series of the old one go with it).
QChart* freshChart(QChartView* view) {
  QChart* old = view->chart();
  auto* c = new QChart();
  view->setChart(c);
  delete old;
  return c;
}

std::vector<StrategyTotals> planTotals(ModelDataPtr model, QString gpu, gpu::Precision precision) {
  std::vector<StrategyTotals> out;
  for (plan::Strategy s : plan::every_strategy()) {
    StrategyTotals t;
    t.strategy = QString::fromLatin1(plan::strategy_name(s));
    const PlanOutcome o = PlanRunner::run(model, s, gpu, precision);
    if (o.ok()) {
      t.ok = true;
      t.kernels = static_cast<int>(o.data->plan->kernels());
      t.estUs = o.data->plan->est_time_us;
      t.dramBytes = static_cast<double>(o.data->plan->dram_bytes);
    } else {
      t.error = o.error;
    }
    out.push_back(t);
  }
  return out;
}

double perfGflops(const plan::Partition& p) {
  return p.est_time_us > 0 ? static_cast<double>(p.flops) / (p.est_time_us * 1e3) : 0.0;
}

double intensity(const plan::Partition& p) {
  return p.dram_bytes > 0 ? static_cast<double>(p.flops) / static_cast<double>(p.dram_bytes) : 0.0;
}

}  // namespace

ChartsPanel::ChartsPanel(QWidget* parent)
    : QWidget(parent), m_totalsWatcher(new QFutureWatcher<std::vector<StrategyTotals>>(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  m_timeView = makeView(m_tabs);
  m_rooflineView = makeView(m_tabs);
  auto* strategies = new QWidget(m_tabs);
  auto* sl = new QHBoxLayout(strategies);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->setSpacing(0);
  for (int i = 0; i < 3; ++i) {
    m_strategyViews.push_back(makeView(strategies));
    m_strategyViews.back()->setMinimumSize(160, 180);
    sl->addWidget(m_strategyViews.back());
  }
  auto* resources = new QWidget(m_tabs);
  auto* rl = new QVBoxLayout(resources);
  rl->setContentsMargins(0, 0, 0, 0);
  m_resourcesNote = new QLabel(resources);
  m_resourcesNote->setContentsMargins(8, 4, 8, 0);
  auto* rrow = new QHBoxLayout();
  m_regView = makeView(resources);
  m_smemView = makeView(resources);
  rrow->addWidget(m_regView);
  rrow->addWidget(m_smemView);
  rl->addWidget(m_resourcesNote);
  rl->addLayout(rrow, 1);
  m_tabs->addTab(m_timeView, tr("Time"));
  m_tabs->addTab(m_rooflineView, tr("Roofline"));
  m_tabs->addTab(strategies, tr("Strategies"));
  m_tabs->addTab(resources, tr("Resources"));
  layout->addWidget(m_tabs);
  connect(m_tabs, &QTabWidget::currentChanged, this, [this] { startTotals(); });
  m_measuredNote = tr("no GPU");
  connect(m_totalsWatcher, &QFutureWatcher<std::vector<StrategyTotals>>::finished, this, [this] {
    if (m_totalsWatcher->property("generation").toULongLong() != m_generation) return;
    if (m_totalsWatcher->future().resultCount() == 0) return;
    m_totals = m_totalsWatcher->result();
    rebuildStrategies();
  });
  rebuildAll();
}

ChartsPanel::~ChartsPanel() {
  m_totalsWatcher->waitForFinished();
}

QChartView* ChartsPanel::view(Tab tab) const {
  switch (tab) {
    case TimeTab:
      return m_timeView;
    case RooflineTab:
      return m_rooflineView;
    case StrategiesTab:
      return m_strategyViews.front();
    case ResourcesTab:
      return m_regView;
    default:
      return nullptr;
  }
}

void ChartsPanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::planChanged, this, &ChartsPanel::setPlan);
  connect(session, &ExplorerSession::partitionSelected, this, [this, session](int k) {
    if (session->plan()) setCurrentPartition(k);
  });
  connect(session, &ExplorerSession::nodeSelected, this, [this](const NodeSelection& n) {
    if (!n.byProgram && n.partition >= 0) setCurrentPartition(n.partition);
  });
  connect(this, &ChartsPanel::partitionClicked, session, &ExplorerSession::activatePartition);
  connect(session, &ExplorerSession::kernelsCompiled, this,
          [this](CompileDataPtr data, bool asked) {
            setCompile(std::move(data));
            if (QDockWidget* dock = asked ? dockOf(this) : nullptr) dock->show();
          });
  connect(session, &ExplorerSession::profiled, this, [this](ProfileDataPtr data) {
    setProfile(std::move(data));
    if (QDockWidget* dock = dockOf(this)) dock->show();
  });
}

void ChartsPanel::setPlan(PlanDataPtr plan) {
  const bool sameModel = plan && m_plan && plan->model == m_plan->model &&
                         plan->gpu == m_plan->gpu &&
                         plan->plan->precision == m_plan->plan->precision;
  m_plan = std::move(plan);
  m_current = -1;
  if (m_compile && m_compile->plan != m_plan) m_compile.reset();
  if (m_profile && m_profile->plan != m_plan) m_profile.reset();
  if (!sameModel) {
    m_totals.clear();
    ++m_generation;
    m_totalsStarted = false;
  }
  startTotals();
  rebuildAll();
}

void ChartsPanel::startTotals() {
  // Every strategy planned is not free on a big model: only once the chart is looked at.
  if (!m_plan || m_totalsStarted || m_tabs->currentIndex() != StrategiesTab || !isVisible()) return;
  m_totalsStarted = true;
  m_totalsWatcher->setProperty("generation", m_generation);
  m_totalsWatcher->setFuture(
      QtConcurrent::run(&planTotals, m_plan->model, m_plan->gpu, m_plan->plan->precision));
}

void ChartsPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  startTotals();
}

void ChartsPanel::setCompile(CompileDataPtr data) {
  m_compile = std::move(data);
  rebuildResources();
  if (m_compile) m_tabs->setCurrentIndex(ResourcesTab);
}

void ChartsPanel::setCurrentPartition(int partition) {
  m_current = partition;
  if (!m_currentSeries || !m_plan) return;
  m_currentSeries->clear();
  for (size_t s = 0; s < m_kernelSeries.size(); ++s)
    for (size_t i = 0; i < m_pointPartitions[s].size(); ++i)
      if (m_pointPartitions[s][i] == partition)
        m_currentSeries->append(m_kernelSeries[s]->at(static_cast<int>(i)));
}

void ChartsPanel::setDark(bool dark) {
  if (dark == m_dark) return;
  m_dark = dark;
  rebuildAll();
}

void ChartsPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  // The palette reaches this widget after the theme switch that asked for setDark: the charts
  // take their colours from it, so they are rebuilt once it has arrived.
  if (event->type() == QEvent::PaletteChange) {
    m_dark = isDark(palette());
    rebuildAll();
  }
}

void ChartsPanel::setProfile(ProfileDataPtr data) {
  m_profile = data && data->plan == m_plan ? std::move(data) : nullptr;
  rebuildTime();
  rebuildRoofline();
}

void ChartsPanel::setMeasuredNote(const QString& note) {
  m_measuredNote = note;
  rebuildTime();
}

bool ChartsPanel::strategiesReady() const {
  return m_totals.size() == plan::every_strategy().size();
}

int ChartsPanel::pointCount() const {
  int n = 0;
  for (const QScatterSeries* s : m_kernelSeries) n += s->count();
  return n;
}

int ChartsPanel::partitionOfPoint(const QScatterSeries* series, int point) const {
  if (series && series == m_measuredSeries)
    return point >= 0 && static_cast<size_t>(point) < m_measuredPartitions.size()
               ? m_measuredPartitions[static_cast<size_t>(point)]
               : -1;
  for (size_t s = 0; s < m_kernelSeries.size(); ++s)
    if (m_kernelSeries[s] == series)
      return point >= 0 && static_cast<size_t>(point) < m_pointPartitions[s].size()
                 ? m_pointPartitions[s][static_cast<size_t>(point)]
                 : -1;
  return -1;
}

void ChartsPanel::rebuildAll() {
  rebuildTime();
  rebuildRoofline();
  rebuildStrategies();
  rebuildResources();
}

void ChartsPanel::styleChart(QChart* chart, const QString& title) {
  chart->setTheme(m_dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  const QPalette pal = palette();
  chart->setBackgroundBrush(pal.color(QPalette::Base));
  chart->setTitleBrush(pal.color(QPalette::Text));
  chart->legend()->setLabelColor(pal.color(QPalette::Text));
  chart->setTitle(title);
  QFont f = chart->titleFont();
  f.setPointSizeF(font().pointSizeF());
  f.setBold(true);
  chart->setTitleFont(f);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->layout()->setContentsMargins(0, 0, 0, 0);
  chart->setBackgroundRoundness(0);
  chart->setAnimationOptions(QChart::NoAnimation);
}

// ---- per-kernel time ----

void ChartsPanel::rebuildTime() {
  QChart* c = freshChart(m_timeView);
  m_timeBars = 0;
  if (!m_plan) {
    styleChart(c, tr("Per-kernel time — no plan yet"));
    return;
  }
  const auto& parts = m_plan->plan->partitions;
  std::vector<int> order(parts.size());
  std::iota(order.begin(), order.end(), 0);
  const bool capped = order.size() > static_cast<size_t>(kMaxBars);
  if (capped) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return parts[a].est_time_us > parts[b].est_time_us; });
    order.resize(kMaxBars);
    std::sort(order.begin(), order.end());
  }
  auto* est = new QBarSet(tr("estimated (%1 roofline)").arg(m_plan->gpu));
  // Measured beside estimated on one axis only when both are GPU times: the emulator's CPU
  // times are drawn as such and never on a GPU-time scale.
  const bool measured = m_profile && m_profile->plan == m_plan && m_profile->gpuTime();
  auto* meas = new QBarSet(measured    ? m_profile->label()
                           : m_profile ? tr("measured — no GPU (CPU times: Kernels table)")
                                       : tr("measured — none (%1)").arg(m_measuredNote));
  QStringList cats;
  double maxUs = 0;
  for (int i : order) {
    *est << parts[i].est_time_us;
    const double m = measured && static_cast<size_t>(i) < m_profile->partitionUs.size()
                         ? std::max(0.0, m_profile->partitionUs[static_cast<size_t>(i)])
                         : 0.0;
    *meas << m;
    cats << QStringLiteral("K%1").arg(parts[i].id);
    maxUs = std::max({maxUs, parts[i].est_time_us, m});
  }
  m_timeBars = static_cast<int>(order.size());
  auto* series = new QBarSeries();
  series->append(est);
  series->append(meas);
  c->addSeries(series);
  styleChart(
      c,
      capped
          ? tr("Per-kernel time, µs — the %1 longest of %2 kernels").arg(kMaxBars).arg(parts.size())
          : tr("Per-kernel time, µs — %1 kernel%2")
                .arg(parts.size())
                .arg(parts.size() == 1 ? QString() : QStringLiteral("s")));
  est->setColor(m_dark ? QColor(0x61, 0xaf, 0xef) : QColor(0x2b, 0x6c, 0xb0));
  meas->setColor(m_dark ? QColor(0xe5, 0xc0, 0x7b) : QColor(0xd0, 0x8c, 0x1a));
  auto* x = new QBarCategoryAxis();
  x->append(cats);
  if (cats.size() > 16) x->setLabelsAngle(-90);
  auto* y = new QValueAxis();
  y->setRange(0, maxUs > 0 ? maxUs * 1.1 : 1.0);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.3g"));
  y->setTitleText(tr("µs"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  c->legend()->setAlignment(Qt::AlignTop);
}

// ---- roofline ----

void ChartsPanel::rebuildRoofline() {
  QChart* c = freshChart(m_rooflineView);
  m_kernelSeries.clear();
  m_pointPartitions.clear();
  m_currentSeries = nullptr;
  if (!m_plan) {
    styleChart(c, tr("Roofline — no plan yet"));
    return;
  }
  gpu::GpuSpec spec;
  try {
    spec = gpu::gpu_spec(m_plan->gpu.toStdString());
  } catch (const std::exception&) {
    styleChart(c, tr("Roofline — unknown GPU %1").arg(m_plan->gpu));
    return;
  }
  // The plan's kernels run at FP32 (the planner's default precision); tensor-core roofs are
  // drawn dashed for comparison.
  const gpu::Precision precision = gpu::Precision::FP32;
  const double bw = spec.dram_bandwidth_gbps;  // GB/s: GFLOP/s = intensity x bw
  const double peak = gpu::peak_flops(spec, precision) / 1e9;
  const auto& parts = m_plan->plan->partitions;
  double xmin = 1e-2, xmax = 1e3, ymin = 1.0, ymax = peak * 2;
  for (const plan::Partition& p : parts) {
    const double i = std::max(intensity(p), kMinIntensity);
    const double g = std::max(perfGflops(p), kMinGflops);
    xmin = std::min(xmin, i / 2);
    xmax = std::max(xmax, i * 2);
    ymin = std::min(ymin, g / 2);
  }
  // Measured on a GPU (never the emulator's CPU times): each kernel's FLOPs over its measured
  // time, at the intensity of its measured DRAM bytes where the hardware counters gave them,
  // else of its estimated ones.
  const bool measured = m_profile && m_profile->plan == m_plan && m_profile->gpuTime();
  std::vector<std::pair<QPointF, int>> measuredPoints;
  if (measured)
    for (size_t i = 0; i < parts.size() && i < m_profile->partitionUs.size(); ++i) {
      const double us = m_profile->partitionUs[i];
      if (us <= 0 || parts[i].flops <= 0) continue;
      const double g = static_cast<double>(parts[i].flops) / (us * 1e3);
      const double bytes =
          i < m_profile->partitionDramBytes.size() ? m_profile->partitionDramBytes[i] : -1.0;
      const double x =
          bytes > 0 ? static_cast<double>(parts[i].flops) / bytes : intensity(parts[i]);
      measuredPoints.push_back(
          {QPointF(std::max(x, kMinIntensity), std::max(g, kMinGflops)), static_cast<int>(i)});
      xmin = std::min(xmin, std::max(x, kMinIntensity) / 2);
      xmax = std::max(xmax, std::max(x, kMinIntensity) * 2);
      ymin = std::min(ymin, std::max(g, kMinGflops) / 2);
    }
  const double ridge = peak / bw;
  xmax = std::max(xmax, ridge * 4);
  ymin = std::max(ymin, kMinGflops / 2);
  auto roof = [&](double p, const QString& name) {
    auto* s = new QLineSeries();
    s->setName(name);
    const double r = p / bw;
    s->append(xmin, xmin * bw);
    s->append(r, p);
    s->append(xmax, p);
    return s;
  };
  std::vector<QLineSeries*> roofs;
  roofs.push_back(
      roof(peak, tr("%1 roof").arg(QString::fromLatin1(gpu::precision_name(precision)))));
  for (gpu::Precision other : {gpu::Precision::TF32, gpu::Precision::FP16}) {
    const double p = gpu::peak_flops(spec, other) / 1e9;
    if (p <= peak * 1.01) continue;  // the GPU has no faster rate
    roofs.push_back(roof(p, tr("%1 TC").arg(QString::fromLatin1(gpu::precision_name(other)))));
    ymax = std::max(ymax, p * 2);
  }
  for (QLineSeries* s : roofs) c->addSeries(s);

  // One series per kernel kind so the legend explains the colours.
  std::vector<QString> kinds;
  for (const plan::Partition& p : parts) {
    const QString k = QString::fromLatin1(plan::partition_kind_name(p.kind));
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  std::sort(kinds.begin(), kinds.end());
  for (const QString& kind : kinds) {
    auto* s = new QScatterSeries();
    s->setName(kind);
    s->setMarkerSize(9);
    s->setBorderColor(Qt::transparent);
    std::vector<int> idx;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (QString::fromLatin1(plan::partition_kind_name(parts[i].kind)) != kind) continue;
      s->append(std::max(intensity(parts[i]), kMinIntensity),
                std::max(perfGflops(parts[i]), kMinGflops));
      idx.push_back(static_cast<int>(i));
    }
    m_kernelSeries.push_back(s);
    m_pointPartitions.push_back(std::move(idx));
    c->addSeries(s);
    connect(s, &QScatterSeries::clicked, this,
            [this, s](const QPointF& p) { onPointClicked(s, p); });
    connect(s, &QScatterSeries::hovered, this,
            [this, s](const QPointF& p, bool state) { onPointHovered(s, p, state); });
  }
  m_measuredSeries = nullptr;
  if (!measuredPoints.empty()) {
    auto* s = new QScatterSeries();
    s->setName(m_profile->label());  // "measured on NVIDIA H200 (cupti)"
    s->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    s->setMarkerSize(9);
    std::vector<int> idx;
    for (const auto& [pt, part] : measuredPoints) {
      s->append(pt);
      idx.push_back(part);
    }
    m_measuredSeries = s;
    m_measuredPartitions = std::move(idx);
    c->addSeries(s);
    connect(s, &QScatterSeries::clicked, this,
            [this, s](const QPointF& p) { onPointClicked(s, p); });
  }
  m_currentSeries = new QScatterSeries();
  m_currentSeries->setName(tr("selected"));
  m_currentSeries->setMarkerSize(16);
  m_currentSeries->setColor(Qt::transparent);
  c->addSeries(m_currentSeries);

  const QString head = tr("Roofline of %1 (%2 TFLOP/s, %3 GB/s)")
                           .arg(QString::fromStdString(spec.name))
                           .arg(peak / 1e3, 0, 'f', 1)
                           .arg(bw, 0, 'f', 0);
  styleChart(c, parts.size() == 1 ? tr("%1 — 1 kernel").arg(head)
                                  : tr("%1 — %2 kernels").arg(head).arg(parts.size()));
  const QColor roofColor = m_dark ? QColor(0xdc, 0xdf, 0xe4) : QColor(0x30, 0x30, 0x30);
  for (size_t i = 0; i < roofs.size(); ++i) {
    QPen pen(i == 0 ? roofColor : roofColor.darker(m_dark ? 160 : 60));
    pen.setWidthF(i == 0 ? 2.0 : 1.2);
    if (i > 0) pen.setStyle(Qt::DashLine);
    roofs[i]->setPen(pen);
  }
  const QColor kindColors[] = {m_dark ? QColor(0xe0, 0x6c, 0x75) : QColor(0xc0, 0x39, 0x2b),
                               m_dark ? QColor(0x61, 0xaf, 0xef) : QColor(0x2b, 0x6c, 0xb0),
                               m_dark ? QColor(0x98, 0xc3, 0x79) : QColor(0x2e, 0x8b, 0x57),
                               m_dark ? QColor(0xc6, 0x78, 0xdd) : QColor(0x8e, 0x44, 0xad)};
  for (size_t i = 0; i < m_kernelSeries.size(); ++i) {
    m_kernelSeries[i]->setColor(kindColors[i % 4]);
    m_kernelSeries[i]->setBorderColor(kindColors[i % 4].darker(130));
  }
  if (m_measuredSeries) {
    // Hollow squares: where the estimate's circle of the same kernel would be if it were right.
    QPen pen(m_dark ? QColor(0xe5, 0xc0, 0x7b) : QColor(0xb3, 0x6b, 0x00));
    pen.setWidthF(2.0);
    m_measuredSeries->setPen(pen);
    m_measuredSeries->setBrush(Qt::NoBrush);
  }
  QPen ring(m_dark ? QColor(0xff, 0xd7, 0x00) : QColor(0x10, 0x10, 0x10));
  ring.setWidthF(2.5);
  m_currentSeries->setPen(ring);
  m_currentSeries->setBrush(Qt::NoBrush);

  auto* x = new QLogValueAxis();
  x->setBase(10);
  x->setRange(xmin, xmax);
  x->setLabelFormat(QStringLiteral("%g"));
  x->setTitleText(tr("arithmetic intensity, FLOP / DRAM byte"));
  x->setMinorTickCount(0);
  auto* y = new QLogValueAxis();
  y->setMinorTickCount(0);
  y->setBase(10);
  y->setRange(ymin, ymax);
  y->setLabelFormat(QStringLiteral("%g"));
  y->setTitleText(tr("GFLOP/s"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : c->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  c->legend()->setAlignment(Qt::AlignBottom);
  // The ring marking the selection needs no legend entry.
  for (QLegendMarker* m : c->legend()->markers(m_currentSeries)) m->setVisible(false);
  setCurrentPartition(m_current);
}

int ChartsPanel::nearestPoint(const QScatterSeries* series, const QPointF& point) const {
  // Compare in log space, the way the points are drawn.
  int best = -1;
  double bestD = 0;
  for (int i = 0; i < series->count(); ++i) {
    const QPointF q = series->at(i);
    const double dx = std::log10(q.x()) - std::log10(std::max(point.x(), 1e-12));
    const double dy = std::log10(q.y()) - std::log10(std::max(point.y(), 1e-12));
    const double d = dx * dx + dy * dy;
    if (best < 0 || d < bestD) {
      best = i;
      bestD = d;
    }
  }
  return best;
}

void ChartsPanel::onPointClicked(QScatterSeries* series, const QPointF& point) {
  const int part = partitionOfPoint(series, nearestPoint(series, point));
  if (part < 0) return;
  setCurrentPartition(part);
  emit partitionClicked(part);
}

void ChartsPanel::onPointHovered(QScatterSeries* series, const QPointF& point, bool state) {
  if (!state || !m_plan) {
    QToolTip::hideText();
    return;
  }
  const int part = partitionOfPoint(series, nearestPoint(series, point));
  if (part < 0) return;
  const plan::Partition& p = m_plan->plan->partitions[static_cast<size_t>(part)];
  QString ops;
  for (size_t i = 0; i < p.ops.size() && i < 4; ++i)
    ops += (i ? QStringLiteral(", ") : QString()) + QString::fromStdString(p.ops[i]);
  if (p.ops.size() > 4) ops += tr(" … (%1 ops)").arg(p.ops.size());
  QToolTip::showText(QCursor::pos(),
                     tr("<b>K%1</b> · %2<br>%3 FLOPs · %4 DRAM<br>%5 FLOP/B · %6 GFLOP/s · "
                        "est. %7 µs<br><small>%8</small>")
                         .arg(p.id)
                         .arg(QString::fromLatin1(plan::partition_kind_name(p.kind)))
                         .arg(compactCount(static_cast<double>(p.flops)))
                         .arg(compactBytes(static_cast<double>(p.dram_bytes)))
                         .arg(intensity(p), 0, 'g', 3)
                         .arg(perfGflops(p), 0, 'g', 3)
                         .arg(p.est_time_us, 0, 'f', 2)
                         .arg(ops.toHtmlEscaped()),
                     m_rooflineView);
}

// ---- strategy totals ----

void ChartsPanel::rebuildStrategies() {
  const QString titles[] = {tr("Kernels"), tr("Est. time, µs"), tr("DRAM, MiB")};
  for (int m = 0; m < 3; ++m) {
    QChart* c = freshChart(m_strategyViews[static_cast<size_t>(m)]);
    if (!m_plan) {
      styleChart(c, titles[m]);
      continue;
    }
    if (!strategiesReady()) {
      styleChart(c, titles[m] + tr(" — planning…"));
      continue;
    }
    auto* set = new QBarSet(titles[m]);
    QStringList cats;
    double maxV = 0;
    for (const StrategyTotals& t : m_totals) {
      const double v = !t.ok    ? 0.0
                       : m == 0 ? t.kernels
                       : m == 1 ? t.estUs
                                : t.dramBytes / (1024.0 * 1024.0);
      *set << v;
      maxV = std::max(maxV, v);
      cats << (t.ok ? t.strategy : tr("%1 (failed)").arg(t.strategy));
    }
    auto* series = new QBarSeries();
    series->append(set);
    series->setLabelsVisible(true);
    series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
    series->setLabelsFormat(m == 0 ? QStringLiteral("@value") : QStringLiteral("@value"));
    series->setLabelsPrecision(4);
    c->addSeries(series);
    styleChart(c, titles[m]);
    set->setColor(m_dark ? QColor(0x61, 0xaf, 0xef) : QColor(0x2b, 0x6c, 0xb0));
    set->setLabelColor(palette().color(QPalette::Text));
    auto* x = new QBarCategoryAxis();
    x->append(cats);
    QFont small = x->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.85);  // three names under three narrow bars
    x->setLabelsFont(small);
    auto* y = new QValueAxis();
    y->setLabelsFont(small);
    y->setRange(0, maxV > 0 ? maxV * 1.25 : 1.0);
    y->applyNiceNumbers();
    y->setLabelFormat(QStringLiteral("%.3g"));
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    c->legend()->hide();
  }
}

// ---- compiled resources ----

void ChartsPanel::rebuildResources() {
  QChart* rc = freshChart(m_regView);
  QChart* sc = freshChart(m_smemView);
  if (!m_compile || !m_compile->plan) {
    m_resourcesNote->setText(
        tr("Compile the kernels (Kernels › Compile, Ctrl+B) to see their "
           "registers, shared memory and spills."));
    styleChart(rc, tr("Registers per thread"));
    styleChart(sc, tr("Shared memory per block, KiB"));
    return;
  }
  const CompileData& d = *m_compile;
  const auto& parts = d.plan->plan->partitions;
  if (!d.error.isEmpty())
    m_resourcesNote->setText(tr("Kernels could not be built: %1").arg(d.error));
  else
    m_resourcesNote->setText(tr("%1 kernel%2 compiled for %3 in %4 s — %5 failed")
                                 .arg(parts.size())
                                 .arg(parts.size() == 1 ? QString() : QStringLiteral("s"))
                                 .arg(d.archs.join(QStringLiteral(", ")))
                                 .arg(d.ms / 1000, 0, 'f', 1)
                                 .arg(d.failures));
  std::vector<int> order;
  for (size_t i = 0; i < parts.size() && order.size() < static_cast<size_t>(kMaxBars); ++i)
    order.push_back(static_cast<int>(i));
  QStringList cats;
  for (int i : order) cats << QStringLiteral("K%1").arg(parts[i].id);
  auto* regs = new QBarSeries();
  auto* smem = new QBarSeries();
  double maxR = 0, maxS = 0;
  const QColor colors[] = {m_dark ? QColor(0x61, 0xaf, 0xef) : QColor(0x2b, 0x6c, 0xb0),
                           m_dark ? QColor(0x98, 0xc3, 0x79) : QColor(0x2e, 0x8b, 0x57)};
  int ci = 0;
  for (const QString& arch : d.archs) {
    auto* r = new QBarSet(arch);
    auto* s = new QBarSet(arch);
    for (int i : order) {
      const ArchCompile* a = d.find(i, arch);
      const double rv = a && a->ok ? a->registers : 0;
      const double sv = a && a->ok ? static_cast<double>(a->sharedBytes) / 1024.0 : 0;
      *r << rv;
      *s << sv;
      maxR = std::max(maxR, rv);
      maxS = std::max(maxS, sv);
    }
    r->setColor(colors[ci % 2]);
    s->setColor(colors[ci % 2]);
    ++ci;
    regs->append(r);
    smem->append(s);
  }
  auto finish = [&](QChart* c, QBarSeries* series, double maxV, const QString& title) {
    c->addSeries(series);
    styleChart(c, title);
    for (int i = 0; i < series->count(); ++i) series->barSets()[i]->setColor(colors[i % 2]);
    auto* x = new QBarCategoryAxis();
    x->append(cats);
    if (cats.size() > 12) x->setLabelsAngle(-90);
    auto* y = new QValueAxis();
    y->setRange(0, maxV > 0 ? maxV * 1.15 : 1.0);
    y->applyNiceNumbers();
    y->setLabelFormat(QStringLiteral("%.3g"));
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    c->legend()->setAlignment(Qt::AlignTop);
  };
  const QString more = parts.size() > order.size()
                           ? tr(" (first %1 of %2)").arg(order.size()).arg(parts.size())
                           : QString();
  finish(rc, regs, maxR, tr("Registers per thread") + more);
  finish(sc, smem, maxS, tr("Shared memory per block, KiB") + more);
}

}  // namespace souffle::views
