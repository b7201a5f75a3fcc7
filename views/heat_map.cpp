#include "views/heat_map.h"

#include <QFont>
#include <QFontMetricsF>
#include <QLinearGradient>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <limits>

#include "views/partition_table_model.h"

namespace souffle::views {

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

QString formatValue(HeatMetric m, double v) {
  switch (m) {
    case HeatMetric::EstimatedTime:
    case HeatMetric::MeasuredTime:
    case HeatMetric::StageTime:
    case HeatMetric::BarrierWait:
      return v >= 1000 ? QStringLiteral("%1 ms").arg(v / 1000, 0, 'f', 2)
                       : QStringLiteral("%1 µs").arg(v, 0, 'f', v >= 10 ? 1 : 2);
    case HeatMetric::DramBytes:
      return compactBytes(v);
    case HeatMetric::Flops:
      return compactCount(v) + QStringLiteral("FLOP");
    case HeatMetric::Intensity:
      return QStringLiteral("%1 FLOP/B").arg(v, 0, 'f', v >= 10 ? 0 : 2);
    case HeatMetric::None:
      break;
  }
  return QString::number(v);
}

}  // namespace

const std::vector<HeatMetric>& heatMetrics() {
  static const std::vector<HeatMetric> all = {HeatMetric::None,         HeatMetric::EstimatedTime,
                                              HeatMetric::MeasuredTime, HeatMetric::DramBytes,
                                              HeatMetric::Flops,        HeatMetric::Intensity,
                                              HeatMetric::StageTime,    HeatMetric::BarrierWait};
  return all;
}

QString heatMetricKey(HeatMetric m) {
  switch (m) {
    case HeatMetric::None:
      return QStringLiteral("op");
    case HeatMetric::EstimatedTime:
      return QStringLiteral("time");
    case HeatMetric::MeasuredTime:
      return QStringLiteral("measured");
    case HeatMetric::DramBytes:
      return QStringLiteral("dram");
    case HeatMetric::Flops:
      return QStringLiteral("flops");
    case HeatMetric::Intensity:
      return QStringLiteral("intensity");
    case HeatMetric::StageTime:
      return QStringLiteral("stage-time");
    case HeatMetric::BarrierWait:
      return QStringLiteral("barrier-wait");
  }
  return {};
}

bool parseHeatMetric(const QString& key, HeatMetric& metric) {
  for (HeatMetric m : heatMetrics())
    if (heatMetricKey(m) == key) {
      metric = m;
      return true;
    }
  return false;
}

QString heatMetricName(HeatMetric m) {
  switch (m) {
    case HeatMetric::None:
      return QObject::tr("Op type");
    case HeatMetric::EstimatedTime:
      return QObject::tr("Estimated time");
    case HeatMetric::MeasuredTime:
      return QObject::tr("Measured time");
    case HeatMetric::DramBytes:
      return QObject::tr("DRAM bytes");
    case HeatMetric::Flops:
      return QObject::tr("FLOPs");
    case HeatMetric::Intensity:
      return QObject::tr("Arithmetic intensity");
    case HeatMetric::StageTime:
      return QObject::tr("Measured stage time");
    case HeatMetric::BarrierWait:
      return QObject::tr("Barrier wait");
  }
  return {};
}

HeatMap computeHeat(HeatMetric metric, const SceneGraph& graph,
                    const std::vector<std::vector<int>>& kernels, const PlanData& plan,
                    const MeasuredTimes& measured) {
  HeatMap out;
  out.metric = metric;
  if (metric == HeatMetric::None || !plan.plan) return out;
  const plan::FusionPlan& p = *plan.plan;
  const size_t n = graph.nodes.size();
  std::vector<double> raw(n, kNone);

  // Per kernel: the largest figure among the box's kernels.
  auto perKernel = [&](auto&& figure) {
    for (size_t b = 0; b < n && b < kernels.size(); ++b)
      for (int k : kernels[b]) {
        if (k < 0 || static_cast<size_t>(k) >= p.partitions.size()) continue;
        const double v = figure(static_cast<size_t>(k));
        if (v >= 0 && (std::isnan(raw[b]) || v > raw[b])) raw[b] = v;
      }
  };
  // Per node: summed over the node's TEs (TE boxes: their own TE).
  QHash<QString, double> flops, bytes;
  for (const analysis::TeInfo& t : p.analysis.tes) {
    const QString node = QString::fromStdString(t.origin_node);
    flops[node] += double(t.flops);
    bytes[node] += double(t.bytes_read + t.bytes_written);
  }
  // TE boxes take their node's figures: they name TEs of the model's own program, which the
  // plan may have transformed.
  QString title, note;
  switch (metric) {
    case HeatMetric::EstimatedTime:
      title = QObject::tr("Estimated time per kernel (cost model on %1)").arg(plan.gpu);
      perKernel([&](size_t k) { return p.partitions[k].est_time_us; });
      break;
    case HeatMetric::DramBytes:
      title = QObject::tr("DRAM bytes per kernel (estimate)");
      perKernel([&](size_t k) { return double(p.partitions[k].dram_bytes); });
      break;
    case HeatMetric::MeasuredTime:
      if (!measured.nodeUs.isEmpty()) {
        title = QObject::tr("Measured time per node");
        for (size_t b = 0; b < n; ++b) {
          auto it = measured.nodeUs.constFind(graph.nodes[b].onnxNode);
          if (it != measured.nodeUs.constEnd() && *it >= 0) raw[b] = *it;
        }
      } else {
        title = measured.gpu ? QObject::tr("Measured time per kernel")
                             : QObject::tr("Emulator time per kernel (CPU time, not a GPU time)");
        perKernel([&](size_t k) {
          return k < measured.partitionUs.size() ? measured.partitionUs[k] : -1.0;
        });
      }
      note = measured.source.isEmpty() ? QObject::tr("no measurements: profile or import one")
                                       : measured.source;
      break;
    case HeatMetric::Flops:
    case HeatMetric::Intensity:
      title = metric == HeatMetric::Flops ? QObject::tr("FLOPs per node")
                                          : QObject::tr("Arithmetic intensity per node");
      for (size_t b = 0; b < n; ++b) {
        const SceneNode& node = graph.nodes[b];
        if (node.kind == SceneNode::Kind::Kernel) {
          // A collapsed kernel: its kernel's figures.
          if (b < kernels.size() && !kernels[b].empty() &&
              static_cast<size_t>(kernels[b].front()) < p.partitions.size()) {
            const plan::Partition& k = p.partitions[static_cast<size_t>(kernels[b].front())];
            raw[b] = metric == HeatMetric::Flops
                         ? double(k.flops)
                         : (k.dram_bytes > 0 ? double(k.flops) / double(k.dram_bytes) : kNone);
          }
          continue;
        }
        auto f = flops.constFind(node.onnxNode);
        if (f == flops.constEnd()) continue;
        const double by = bytes.value(node.onnxNode);
        raw[b] = metric == HeatMetric::Flops ? *f : (by > 0 ? *f / by : kNone);
      }
      break;
    case HeatMetric::StageTime:
    case HeatMetric::BarrierWait: {
      // Per node, from the Timeline panel's timeline (its stages in the kernel).
      const bool wait = metric == HeatMetric::BarrierWait;
      const QHash<QString, double>& per = wait ? measured.waitUs : measured.stageUs;
      title = wait ? QObject::tr("Longest barrier wait before each node's stages")
                   : QObject::tr("Stage time per node (median block time of its stages)");
      for (size_t b = 0; b < n; ++b) {
        auto it = per.constFind(graph.nodes[b].onnxNode);
        if (it != per.constEnd() && *it >= 0) raw[b] = *it;
      }
      note = measured.timelineSource.isEmpty()
                 ? QObject::tr("no timeline: run one in the Timeline panel")
                 : QObject::tr("timeline: %1").arg(measured.timelineSource);
      break;
    }
    case HeatMetric::None:
      break;
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  int missing = 0, candidates = 0;
  for (size_t b = 0; b < n; ++b) {
    const SceneNode& node = graph.nodes[b];
    const bool countable =
        node.kind != SceneNode::Kind::Input && node.kind != SceneNode::Kind::Output;
    candidates += countable;
    if (std::isnan(raw[b])) {
      missing += countable;
      continue;
    }
    lo = std::min(lo, raw[b]);
    hi = std::max(hi, raw[b]);
  }
  out.legend.title = title;
  out.values.assign(n, kNone);
  if (hi < lo) {  // nothing to colour
    out.legend.note = note.isEmpty() ? QObject::tr("no values") : note;
    return out;
  }
  const bool log = lo > 0 && hi / lo > 20;
  out.legend.log = log;
  out.legend.low = formatValue(metric, lo);
  out.legend.high = formatValue(metric, hi);
  for (size_t b = 0; b < n; ++b) {
    if (std::isnan(raw[b])) continue;
    if (hi <= lo) {
      out.values[b] = 1.0;
    } else if (log) {
      out.values[b] = (std::log(raw[b]) - std::log(lo)) / (std::log(hi) - std::log(lo));
    } else {
      out.values[b] = (raw[b] - lo) / (hi - lo);
    }
  }
  QStringList notes;
  if (!note.isEmpty()) notes << note;
  if (missing > 0)
    notes << QObject::tr("%1 of %2 boxes without a value (grey)").arg(missing).arg(candidates);
  out.legend.note = notes.join(QStringLiteral(" · "));
  return out;
}

QColor heatColor(double t, bool dark) {
  // Stops of a viridis-like map; on a dark background the darkest end is lifted a little.
  static const QColor stops[] = {QColor(0x44, 0x01, 0x54), QColor(0x3b, 0x52, 0x8b),
                                 QColor(0x21, 0x90, 0x8d), QColor(0x5d, 0xc8, 0x63),
                                 QColor(0xfd, 0xe7, 0x25)};
  constexpr int last = 4;
  t = std::clamp(std::isnan(t) ? 0.0 : t, 0.0, 1.0);
  if (dark) t = 0.12 + 0.88 * t;
  const double x = t * last;
  const int i = std::min(last - 1, static_cast<int>(x));
  const double f = x - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f),
                          float(a.greenF() + (b.greenF() - a.greenF()) * f),
                          float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

double legendHeight(const HeatLegend& legend) {
  QFont f;
  f.setPointSizeF(9);
  QFontMetricsF fm(f);
  return fm.height() * (legend.note.isEmpty() ? 3 : 4) + 22;
}

void paintHeatLegend(QPainter& painter, const QRectF& area, const HeatLegend& legend, bool dark) {
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, true);
  const QColor bg = dark ? QColor(0x2b, 0x2d, 0x31, 235) : QColor(0xff, 0xff, 0xff, 235);
  const QColor fg = dark ? QColor(0xe6, 0xe7, 0xea) : QColor(0x20, 0x22, 0x25);
  painter.setPen(QPen(dark ? QColor(0x60, 0x63, 0x68) : QColor(0xb0, 0xb3, 0xb8), 1));
  painter.setBrush(bg);
  painter.drawRoundedRect(area, 5, 5);
  QFont f;
  f.setPointSizeF(9);
  QFont bold = f;
  bold.setBold(true);
  QFontMetricsF fm(f);
  const double pad = 8, line = fm.height();
  QRectF r = area.adjusted(pad, 6, -pad, -6);
  painter.setPen(fg);
  painter.setFont(bold);
  painter.drawText(QRectF(r.left(), r.top(), r.width(), line), Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetricsF(bold).elidedText(legend.title, Qt::ElideMiddle, r.width()));
  const QRectF bar(r.left(), r.top() + line + 4, r.width(), 12);
  QLinearGradient g(bar.topLeft(), bar.topRight());
  for (int i = 0; i <= 8; ++i) g.setColorAt(i / 8.0, heatColor(i / 8.0, dark));
  painter.setPen(Qt::NoPen);
  painter.setBrush(g);
  painter.drawRect(bar);
  painter.setFont(f);
  painter.setPen(fg);
  const QRectF ends(r.left(), bar.bottom() + 2, r.width(), line);
  painter.drawText(ends, Qt::AlignLeft | Qt::AlignVCenter, legend.low);
  painter.drawText(ends, Qt::AlignRight | Qt::AlignVCenter, legend.high);
  if (legend.log)
    painter.drawText(ends, Qt::AlignHCenter | Qt::AlignVCenter, QObject::tr("log scale"));
  if (!legend.note.isEmpty())
    painter.drawText(QRectF(r.left(), ends.bottom(), r.width(), line),
                     Qt::AlignLeft | Qt::AlignVCenter,
                     fm.elidedText(legend.note, Qt::ElideMiddle, r.width()));
  painter.restore();
}

}  // namespace souffle::views
