#include "views/timeline_scene.h"

#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>
#include <map>
#include <thread>

#include "core/session/kernel_cache.h"
#include "core/support/error.h"
#include "views/kernel_identity.h"

namespace souffle::views {

QString TimelineKernel::stageName(int stage) const {
  if (stage >= 0 && static_cast<size_t>(stage) < timeline.stage_names.size() &&
      !timeline.stage_names[static_cast<size_t>(stage)].empty())
    return QString::fromStdString(timeline.stage_names[static_cast<size_t>(stage)]);
  return QStringLiteral("stage %1").arg(stage);
}

QString kernelOfTimelineFile(const QString& file) {
  QString name = QFileInfo(file).fileName();
  if (name.endsWith(QLatin1String(".timeline"))) name.chop(9);
  // STRATEGY.KERNEL (profile --timeline-dir) or KERNEL (a bundle's timeline/ folder).
  static const QRegularExpression kernel(QStringLiteral("(kernel\\d+(\\.\\d+)?)$"));
  const QRegularExpressionMatch m = kernel.match(name);
  return m.hasMatch() ? m.captured(1) : name;
}

namespace {

/// Ties `k.timeline` to the kernel of that name in `plan` (its stages' names, estimates, nodes).
QString matchKernel(TimelineKernel& k, const PlanData& plan) {
  const plan::FusionPlan& p = *plan.plan;
  const std::string& name = k.timeline.kernel;
  static const QRegularExpression id(QStringLiteral("^kernel(\\d+)"));
  const QRegularExpressionMatch m = id.match(QString::fromStdString(name));
  if (!m.hasMatch())
    return QObject::tr("%1 is not a kernel of the plan on screen").arg(name.c_str());
  const int want = m.captured(1).toInt();
  int maxStage = -1;
  for (const TimelineSpan& s : k.timeline.spans) maxStage = std::max(maxStage, s.stage);
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    if (p.partitions[i].id != want) continue;
    PartitionKernelsPtr built;
    try {
      built = shared_kernel_cache().kernels(p, i);
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
    int base = 0;
    for (const CompiledKernel& ck : built->kernels) {
      if (ck.name != name) {
        base += static_cast<int>(ck.kernel.stages.size());
        continue;
      }
      if (maxStage >= static_cast<int>(ck.kernel.stages.size()))
        return QObject::tr(
                   "%1 records stage %2, but the plan's %1 has %3 stages: records of "
                   "another plan")
            .arg(name.c_str())
            .arg(maxStage)
            .arg(ck.kernel.stages.size());
      if (k.timeline.stage_names.size() != ck.kernel.stages.size())
        attach_stage_info(k.timeline, ck, p);
      k.partition = static_cast<int>(i);
      k.stageBase = base;
      k.stageNodes.assign(ck.kernel.stages.size(), {});
      k.stageTes.assign(ck.kernel.stages.size(), {});
      for (size_t s = 0; s < ck.kernel.stages.size(); ++s) {
        const loop::StageInfo& st = ck.kernel.stages[s];
        for (const te::Origin& o : st.origins) {
          const QString n = QString::fromStdString(o.node);
          if (!n.isEmpty() && !k.stageNodes[s].contains(n)) k.stageNodes[s] << n;
        }
        for (const std::string& t : st.tes) k.stageTes[s] << QString::fromStdString(t);
      }
      if (i < plan.identities.size()) k.colorKey = plan.identities[i].colorKey;
      return {};
    }
  }
  return QObject::tr("%1 is not a kernel of the plan on screen").arg(name.c_str());
}

}  // namespace

TimelineDataPtr makeTimelineData(PlanDataPtr plan, std::vector<KernelTimeline> timelines,
                                 bool emulated, const QString& source, const QStringList& files) {
  auto d = std::make_shared<TimelineData>();
  d->plan = plan;
  d->emulated = emulated;
  d->source = source;
  d->files = files;
  QStringList notes;
  for (KernelTimeline& t : timelines) {
    TimelineKernel k;
    k.timeline = std::move(t);
    k.colorKey = qHash(QString::fromStdString(k.timeline.kernel));
    if (plan && plan->plan) {
      const QString why = matchKernel(k, *plan);
      if (!why.isEmpty()) notes << why;
    } else {
      notes << QObject::tr("no plan on screen: stages are not tied to graph nodes");
    }
    int maxStage = -1;
    for (const TimelineSpan& s : k.timeline.spans) maxStage = std::max(maxStage, s.stage);
    const size_t n = static_cast<size_t>(std::max<int>(maxStage + 1, k.stageCount()));
    k.timeline.stage_names.resize(n);
    k.stageNodes.resize(n);
    k.stageTes.resize(n);
    k.waitTotalUs.assign(n, 0);
    k.waitMaxUs.assign(n, 0);
    k.barrierUs.assign(n, -1);
    for (const TimelineSpan& s : k.timeline.spans) {
      if (s.wait == loop::TimelineWait::None || s.stage < 0) continue;
      const size_t i = static_cast<size_t>(s.stage);
      k.waitTotalUs[i] += s.us();
      k.waitMaxUs[i] = std::max(k.waitMaxUs[i], s.us());
      if (s.wait != loop::TimelineWait::BlockBarrier)
        k.barrierUs[i] = std::max(k.barrierUs[i], s.end_us);
    }
    k.analysis = analyse_timeline(k.timeline);
    for (const StageTiming& st : k.analysis.stages) {
      if (st.stage < 0 || static_cast<size_t>(st.stage) >= n) continue;
      for (const QString& node : k.stageNodes[static_cast<size_t>(st.stage)]) {
        d->nodeStageUs[node] += st.median_us;
        d->nodeWaitUs[node] += k.waitMaxUs[static_cast<size_t>(st.stage)];
      }
    }
    d->kernels.push_back(std::move(k));
  }
  notes.removeDuplicates();
  d->note = notes.join(QStringLiteral("; "));
  return d;
}

TimelineDataPtr carryTimelineData(const TimelineDataPtr& old, PlanDataPtr plan, int* stale) {
  if (stale) *stale = 0;
  if (!old || old->kernels.empty()) return nullptr;
  const plan::FusionPlan* was = old->plan && old->plan->plan ? old->plan->plan.get() : nullptr;
  const plan::FusionPlan* now = plan && plan->plan ? plan->plan.get() : nullptr;
  KernelCache& cache = shared_kernel_cache();
  std::vector<KernelTimeline> same;
  std::vector<TimelineKernel> gone;
  for (const TimelineKernel& k : old->kernels) {
    bool keep = false;
    if (k.stale) {
      keep = false;
    } else if (!was || k.partition < 0) {
      keep = true;  // tied to no kernel before: tied by name again (as when it was read)
    } else if (now && static_cast<size_t>(k.partition) < was->partitions.size()) {
      const int id = was->partitions[static_cast<size_t>(k.partition)].id;
      for (size_t i = 0; i < now->partitions.size() && !keep; ++i)
        if (now->partitions[i].id == id)
          keep = cache.key(*now, i) == cache.key(*was, static_cast<size_t>(k.partition));
    }
    if (keep) {
      KernelTimeline t = k.timeline;
      same.push_back(std::move(t));
      continue;
    }
    TimelineKernel s = k;
    s.stale = true;
    s.partition = -1;
    s.stageBase = 0;
    for (QStringList& n : s.stageNodes) n.clear();
    for (QStringList& n : s.stageTes) n.clear();
    gone.push_back(std::move(s));
  }
  std::shared_ptr<TimelineData> d = std::const_pointer_cast<TimelineData>(
      makeTimelineData(plan, std::move(same), old->emulated, old->source, old->files));
  if (!gone.empty()) {
    QStringList names;
    for (const TimelineKernel& k : gone) names << QString::fromStdString(k.timeline.kernel);
    const QString why =
        QObject::tr(
            "%1 changed with the plan: its records are of the earlier plan (stale, not "
            "tied to the graph)",
            "", int(names.size()))
            .arg(names.join(QStringLiteral(", ")));
    d->note = d->note.isEmpty() ? why : d->note + QStringLiteral("; ") + why;
    for (TimelineKernel& k : gone) d->kernels.push_back(std::move(k));
  }
  if (stale) *stale = static_cast<int>(gone.size());
  return d;
}

TimelineDataPtr readTimelineFiles(PlanDataPtr plan, const QStringList& files) {
  std::vector<KernelTimeline> ts;
  bool emulated = true;
  double clock = 0;
  for (const QString& f : files) {
    KernelTimeline t = read_timeline_file(f.toStdString());
    t.kernel = kernelOfTimelineFile(f).toStdString();
    emulated = emulated && t.emulated;
    clock = std::max(clock, t.clock_mhz);
    ts.push_back(std::move(t));
  }
  if (ts.empty()) throw UserError("no timeline file given");
  // A record file keeps the timer and SM clock, not the device's name.
  const QString source =
      emulated ? QObject::tr("emulator estimate, not GPU time")
               : QObject::tr("measured on a GPU (%1 SM clock; the record file names no device)")
                     .arg(clock > 0 ? QStringLiteral("%1 MHz").arg(clock, 0, 'f', 0)
                                    : QObject::tr("unknown"));
  return makeTimelineData(std::move(plan), std::move(ts), emulated, source, files);
}

TimelineRows makeTimelineRows(const KernelTimeline& t, bool perBlock) {
  TimelineRows r;
  r.perBlock = perBlock;
  std::map<int64_t, int> row;
  for (const TimelineSpan& s : t.spans) row.emplace(perBlock ? s.block : s.sm, 0);
  for (auto& [key, index] : row) {
    index = static_cast<int>(r.keys.size());
    r.keys.push_back(key);
  }
  r.spans.assign(r.keys.size(), {});
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const TimelineSpan& s = t.spans[i];
    r.spans[static_cast<size_t>(row[perBlock ? s.block : s.sm])].push_back(static_cast<int>(i));
    r.endUs = std::max(r.endUs, s.end_us);
  }
  r.maxEnd.resize(r.keys.size());
  for (size_t k = 0; k < r.spans.size(); ++k) {
    std::vector<int>& v = r.spans[k];
    std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
      return t.spans[static_cast<size_t>(a)].begin_us < t.spans[static_cast<size_t>(b)].begin_us;
    });
    double m = 0;
    for (int i : v) {
      m = std::max(m, t.spans[static_cast<size_t>(i)].end_us);
      r.maxEnd[k].push_back(m);
    }
  }
  return r;
}

QColor timelineStageColor(quint32 key, int stage, bool dark) {
  const QColor base = kernelColor(key, dark);
  const double h = std::fmod(
      std::max(0.0, double(base.hslHueF())) + 1.0 + (std::fmod(stage * 0.381966, 1.0) - 0.5) * 0.24,
      1.0);
  const double l = (dark ? 0.42 : 0.62) + ((stage % 3) - 1) * 0.06;
  return QColor::fromHslF(float(h), dark ? 0.45f : 0.60f, float(l));
}

namespace {

QRgb blend(QRgb fg, QRgb bg, double a) {
  const int w = static_cast<int>(a * 256 + 0.5);
  auto mix = [w](int f, int b) { return b + (((f - b) * w) >> 8); };
  return qRgb(mix(qRed(fg), qRed(bg)), mix(qGreen(fg), qGreen(bg)), mix(qBlue(fg), qBlue(bg)));
}

}  // namespace

QImage rasterTimeline(const TimelineKernel& k, const TimelineRows& rows, const TimelineRaster& r,
                      int64_t* spansVisited) {
  const int W = r.size.width(), H = r.size.height();
  QImage img(std::max(1, W), std::max(1, H), QImage::Format_RGB32);
  const QRgb bg = r.background.rgb();
  img.fill(bg);
  const int n = static_cast<int>(rows.keys.size());
  if (n == 0 || W <= 0 || H <= 0 || r.t1 <= r.t0) return img;
  const int stages = static_cast<int>(k.timeline.stage_names.size());
  std::vector<QRgb> fill(static_cast<size_t>(stages)), hatch(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    const QColor c = timelineStageColor(k.colorKey, s, r.dark);
    fill[static_cast<size_t>(s)] = c.rgb();
    hatch[static_cast<size_t>(s)] = (r.dark ? c.lighter(150) : c.darker(150)).rgb();
  }
  const QRgb highlight = r.highlight.rgb();
  auto selected = [&](int s) {
    return s >= 0 && static_cast<size_t>(s) < r.selected.size() && r.selected[size_t(s)];
  };
  const double scale = W / (r.t1 - r.t0);
  const auto nw = static_cast<size_t>(W);
  const std::vector<TimelineSpan>& spans = k.timeline.spans;
  const QRgb edgeInk = r.dark ? qRgb(255, 255, 255) : qRgb(0, 0, 0);

  // One band of pixel lines, with scratch of its own (bands run on threads of their own).
  struct Scratch {
    std::vector<float> work, wait, workBestCov, waitBestCov;
    std::vector<int> workBest, waitBest;
    std::vector<char> edge;
    std::vector<QRgb> stripe, gap;  ///< per column: a line's colour where (x + y) & 7 < 3, else
    int64_t visited = 0;
  };
  auto band = [&](int yBegin, int yEnd, Scratch& sc) {
    sc.work.resize(nw);
    sc.wait.resize(nw);
    sc.workBestCov.resize(nw);
    sc.waitBestCov.resize(nw);
    sc.workBest.resize(nw);
    sc.waitBest.resize(nw);
    sc.edge.resize(nw);
    sc.stripe.resize(nw);
    sc.gap.resize(nw);
    auto clear = [&] {
      std::fill(sc.work.begin(), sc.work.end(), 0.f);
      std::fill(sc.wait.begin(), sc.wait.end(), 0.f);
      std::fill(sc.workBestCov.begin(), sc.workBestCov.end(), 0.f);
      std::fill(sc.waitBestCov.begin(), sc.waitBestCov.end(), 0.f);
      std::fill(sc.edge.begin(), sc.edge.end(), 0);
    };
    auto accumulate = [&](int row) {
      const std::vector<int>& v = rows.spans[size_t(row)];
      const std::vector<double>& me = rows.maxEnd[size_t(row)];
      size_t i = size_t(std::upper_bound(me.begin(), me.end(), r.t0) - me.begin());
      for (; i < v.size(); ++i) {
        const TimelineSpan& s = spans[size_t(v[i])];
        if (s.begin_us >= r.t1) break;
        ++sc.visited;
        if (s.end_us <= r.t0) continue;
        const double a = std::max(0.0, (s.begin_us - r.t0) * scale);
        const double e = std::min(double(W), (s.end_us - r.t0) * scale);
        if (e <= a) continue;
        const int xa = static_cast<int>(a);
        const int xe = std::min(W - 1, static_cast<int>(std::ceil(e)) - 1);
        const bool isWait = s.wait != loop::TimelineWait::None;
        if (!isWait && e - a >= 4 && a > 0) sc.edge[size_t(xa)] = 1;
        float* cov = isWait ? sc.wait.data() : sc.work.data();
        float* bestCov = isWait ? sc.waitBestCov.data() : sc.workBestCov.data();
        int* best = isWait ? sc.waitBest.data() : sc.workBest.data();
        for (int x = xa; x <= xe; ++x) {
          const float c = float(std::min(e, double(x + 1)) - std::max(a, double(x)));
          cov[x] += c;
          if (c > bestCov[x]) {
            bestCov[x] = c;
            best[x] = s.stage;
          }
        }
      }
    };
    // The colours of the columns of the rows summed (`count` of them), once per row group.
    auto shade = [&](float count) {
      const float inv = 1.f / count;
      for (int x = 0; x < W; ++x) {
        const float cw = sc.work[size_t(x)] * inv, ct = sc.wait[size_t(x)] * inv;
        const float tot = std::min(1.f, cw + ct);
        QRgb a = bg, b = bg;
        if (tot >= 0.02f) {
          if (ct > cw) {
            const int s = sc.waitBest[size_t(x)];
            if (s >= 0 && s < stages) {
              a = hatch[size_t(s)];
              b = blend(fill[size_t(s)], bg, 0.35);
            }
          } else {
            const int s = sc.workBest[size_t(x)];
            a = selected(s) ? highlight : (s >= 0 && s < stages ? fill[size_t(s)] : bg);
            if (sc.edge[size_t(x)]) a = blend(a, edgeInk, 0.35);
            b = a;
          }
          if (tot < 0.999f) {
            a = blend(a, bg, 0.25 + 0.75 * tot);
            b = blend(b, bg, 0.25 + 0.75 * tot);
          }
        }
        sc.stripe[size_t(x)] = a;
        sc.gap[size_t(x)] = b;
      }
    };
    auto paint = [&](int y) {
      QRgb* line = reinterpret_cast<QRgb*>(img.scanLine(y));
      for (int x = 0; x < W; ++x)
        line[x] = ((x + y) & 7) < 3 ? sc.stripe[size_t(x)] : sc.gap[size_t(x)];
    };
    const double rh = double(H) / n;
    if (rh >= 1) {
      // The rows whose first line falls in the band.
      for (int row = std::max(0, static_cast<int>(yBegin / rh) - 1); row < n; ++row) {
        const int y0 = static_cast<int>(row * rh);
        if (y0 >= yEnd) break;
        if (y0 < yBegin) continue;
        int y1 = static_cast<int>((row + 1) * rh);
        if (y1 - y0 >= 5) --y1;  // a gap between rows tall enough to tell apart
        if (y1 <= y0) continue;
        clear();
        accumulate(row);
        shade(1);
        for (int y = y0; y < y1 && y < H; ++y) paint(y);
      }
    } else {
      for (int y = yBegin; y < yEnd; ++y) {
        const int r0 = static_cast<int>(int64_t(y) * n / H);
        const int r1 = std::max(r0 + 1, static_cast<int>(int64_t(y + 1) * n / H));
        clear();
        for (int row = r0; row < r1 && row < n; ++row) accumulate(row);
        shade(float(r1 - r0));
        paint(y);
      }
    }
  };

  // Bands of lines on up to 8 threads (each band's rows are its own: no line is shared).
  const int threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::min(8, H));
  std::vector<Scratch> scratch(static_cast<size_t>(threads));
  if (threads == 1) {
    band(0, H, scratch[0]);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(band, H * t / threads, H * (t + 1) / threads, std::ref(scratch[size_t(t)]));
    for (std::thread& t : pool) t.join();
  }
  int64_t visited = 0;
  for (const Scratch& sc : scratch) visited += sc.visited;
  if (spansVisited) *spansVisited = visited;
  return img;
}

int timelineRowAt(const TimelineRows& rows, int height, int y) {
  const int n = static_cast<int>(rows.keys.size());
  if (n == 0 || height <= 0 || y < 0 || y >= height) return -1;
  return std::min(n - 1, static_cast<int>(int64_t(y) * n / height));
}

int timelineSpanAt(const TimelineKernel& k, const TimelineRows& rows, int row, double us,
                   double slackUs) {
  if (row < 0 || static_cast<size_t>(row) >= rows.spans.size()) return -1;
  const std::vector<int>& v = rows.spans[size_t(row)];
  const std::vector<double>& me = rows.maxEnd[size_t(row)];
  size_t i = size_t(std::upper_bound(me.begin(), me.end(), us - slackUs) - me.begin());
  int best = -1;
  double bestDist = slackUs;
  for (; i < v.size(); ++i) {
    const TimelineSpan& s = k.timeline.spans[size_t(v[i])];
    if (s.begin_us > us + slackUs) break;
    const double d = us < s.begin_us ? s.begin_us - us : (us > s.end_us ? us - s.end_us : 0);
    // Inside a span: the innermost (a stage's work wins over a wait that ends at the same time).
    const bool better =
        best < 0 ? d <= slackUs
                 : d < bestDist || (d == 0 && bestDist == 0 && s.wait == loop::TimelineWait::None);
    if (better) {
      bestDist = d;
      best = v[i];
    }
  }
  return best;
}

QString formatTimelineUs(double us) {
  if (us == 0) return QStringLiteral("0");
  if (std::abs(us) >= 1000) return QStringLiteral("%1 ms").arg(us / 1000, 0, 'f', 2);
  return QStringLiteral("%1 µs").arg(us, 0, 'f',
                                     std::abs(us) >= 100 ? 1 : (std::abs(us) >= 1 ? 2 : 3));
}

}  // namespace souffle::views
