// The Timeline panel's frame time (docs/timeline.md) on a big kernel: the model is opened and
// planned in the explorer (offscreen), its largest kernel's timeline is laid out from the kernel
// itself — every stage on the blocks it runs on, each block's stage time the cost model's
// estimate with a deterministic spread of +-15%, each grid barrier a wait of every block until the
// last arrives — and shown in the panel; with --records, the emulator's own records (the full
// LSTM's take about 15 CPU minutes to profile, so they are read from files, not made here). Then
// 20 frames of the panel's chart (offscreen, raster dropped before each) at the whole kernel, and
// 20 at windows of 1/50 of it across the kernel; median, min and max of each, with the spans read
// and the machine. The panel floats at 1600 x 800 for them.
//
//   bench_timeline_frame [--shot PNG] [--emulator | --records FILE...] MODEL.onnx
//
// --shot saves the window with the Timeline panel shown (run it under xvfb-run for a screen);
// --emulator profiles on the emulator instead of laying the timeline out (small models only);
// --records FILE (repeatable) opens record files that `profile --timeline` kept, as the panel's
// "Open records…" does, and shows the kernel of the most stages among them (the emulator's
// timeline of a full-size model, profiled beforehand, docs/timeline.md).
#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/session/kernel_cache.h"
#include "tests/bench/machine.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/timeline_panel.h"

namespace {

using namespace souffle;
using namespace souffle::views;

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.min = v.front();
  s.max = v.back();
  return s;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

/// The timeline of `k` laid out from the kernel: stage times from the cost model
/// (attach_stage_info), spread +-15% per block, grid barriers waiting for the last block.
KernelTimeline layOut(const CompiledKernel& k, const plan::FusionPlan& p) {
  KernelTimeline t;
  t.kernel = k.name;
  attach_stage_info(t, k, p);
  t.emulated = false;  // not the emulator's clock either: said in time_base
  t.timer = "layout";
  t.time_base = "cost-model layout (estimated stage times on the kernel's blocks), not measured";
  const int64_t grid = std::max<int64_t>(1, k.kernel.launch.grid_x);
  t.grid = t.rows = grid;
  t.clock_mhz = 1000;
  std::vector<BoundaryKind> before(k.kernel.stages.size(), BoundaryKind::None);
  for (const StageBoundary& b : k.kernel.boundaries)
    if (b.after >= 0 && size_t(b.after) < before.size()) before[size_t(b.after)] = b.kind;
  std::vector<double> at(size_t(grid), 0);
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (size_t s = 0; s < k.kernel.stages.size(); ++s) {
    const loop::StageInfo& st = k.kernel.stages[s];
    if (before[s] == BoundaryKind::Grid) {
      const double last = *std::max_element(at.begin(), at.end());
      for (int64_t b = 0; b < grid; ++b)
        if (at[size_t(b)] < last) {
          t.spans.push_back({b, b, int(s), loop::TimelineWait::GridBarrier, at[size_t(b)], last});
          at[size_t(b)] = last;
        }
    }
    const double est = s < t.stage_est_us.size() && t.stage_est_us[s] > 0 ? t.stage_est_us[s] : 0.5;
    const int64_t first = st.grid_x >= grid ? 0 : std::min(st.block_offset, grid - 1);
    const int64_t last =
        st.grid_x >= grid ? grid : std::min(grid, first + std::max<int64_t>(1, st.grid_x));
    for (int64_t b = first; b < last; ++b) {
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      const double spread = 0.85 + 0.3 * double(h >> 40) / double(1ull << 24);
      const double begin = at[size_t(b)];
      t.spans.push_back({b, b, int(s), loop::TimelineWait::None, begin, begin + est * spread});
      at[size_t(b)] = begin + est * spread;
    }
  }
  std::stable_sort(t.spans.begin(), t.spans.end(),
                   [](const TimelineSpan& a, const TimelineSpan& b) { return a.block < b.block; });
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QString model, shot;
  QStringList records;
  bool emulator = false;
  for (int i = 1; i < argc; ++i) {
    const QString a = QString::fromLocal8Bit(argv[i]);
    if (a == QLatin1String("--shot") && i + 1 < argc)
      shot = QString::fromLocal8Bit(argv[++i]);
    else if (a == QLatin1String("--records") && i + 1 < argc)
      records << QString::fromLocal8Bit(argv[++i]);
    else if (a == QLatin1String("--emulator"))
      emulator = true;
    else
      model = a;
  }
  if (model.isEmpty()) {
    std::fprintf(stderr,
                 "usage: bench_timeline_frame [--shot PNG] [--emulator | --records FILE...] "
                 "MODEL.onnx\n");
    return 2;
  }
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QElapsedTimer clock;
  clock.start();
  w.openModel(model);
  if (!QTest::qWaitFor([&] { return w.planData() && w.graphPanel()->isFinal() && !w.isPlanning(); },
                       1200000)) {
    std::fprintf(stderr, "the model did not plan\n");
    return 1;
  }
  std::printf("%s: planned and drawn in %.1f s\n", qPrintable(model), clock.elapsed() / 1000.0);
  TimelinePanel* panel = w.timelinePanel();
  w.timelineDock()->show();
  w.timelineDock()->raise();
  PlanDataPtr plan = w.planData();
  clock.restart();
  if (emulator || !records.isEmpty()) {
    QSignalSpy done(panel, &TimelinePanel::finished);
    if (emulator)
      panel->runEmulator();
    else
      panel->openFiles(records);
    if (!done.wait(1200000) || !panel->errorText().isEmpty() || !panel->data()) {
      std::fprintf(stderr, "no timeline: %s\n", qPrintable(panel->errorText()));
      return 1;
    }
    std::printf("%s in %.1f s\n", emulator ? "emulator timeline" : "records read and analysed",
                clock.elapsed() / 1000.0);
    // The kernel of the most stages, as the layout below takes the largest kernel.
    int most = 0;
    for (size_t i = 0; i < panel->data()->kernels.size(); ++i)
      if (panel->data()->kernels[i].stageCount() >
          panel->data()->kernels[size_t(most)].stageCount())
        most = int(i);
    panel->setCurrentKernel(most);
  } else {
    // The largest kernel of the plan, laid out.
    size_t best = 0, bestStages = 0;
    std::vector<CompiledKernel> kernels;
    for (size_t i = 0; i < plan->plan->partitions.size(); ++i) {
      PartitionKernelsPtr built = shared_kernel_cache().kernels(*plan->plan, i);
      for (const CompiledKernel& k : built->kernels)
        if (k.ok() && k.kernel.stages.size() > bestStages) {
          bestStages = k.kernel.stages.size();
          best = kernels.size();
          kernels.push_back(k);
        }
    }
    if (kernels.empty()) {
      std::fprintf(stderr, "no kernel built\n");
      return 1;
    }
    KernelTimeline t = layOut(kernels[best], *plan->plan);
    panel->setData(makeTimelineData(
        plan, {std::move(t)}, false,
        QStringLiteral("cost-model layout: estimated stage times on the kernel's blocks and "
                       "barriers, not measured, not emulated")));
    std::printf("timeline laid out and analysed in %.1f s\n", clock.elapsed() / 1000.0);
  }
  const TimelineKernel& k = panel->data()->kernels[size_t(panel->currentKernel())];
  TimelineCanvas* canvas = panel->canvas();
  // Measured on the panel floating at 1600 x 800: two pixel lines per row of 320 blocks.
  w.timelineDock()->setFloating(true);
  w.timelineDock()->resize(1600, 800);
  QTest::qWait(500);
  std::printf("kernel %s: %d stages, %lld blocks, %zu spans, %zu rows, chart %dx%d px\n",
              k.timeline.kernel.c_str(), k.stageCount(), static_cast<long long>(k.timeline.grid),
              k.timeline.spans.size(), canvas->rows()->keys.size(), canvas->chartRect().width(),
              canvas->chartRect().height());

  QImage frame(canvas->size(), QImage::Format_RGB32);
  auto measure = [&](auto&& window, const char* what) {
    std::vector<double> total, raster;
    int64_t visited = 0;
    for (int i = 0; i < 20; ++i) {
      window(i);
      canvas->invalidate();
      QElapsedTimer t;
      t.start();
      canvas->render(&frame);
      total.push_back(t.nsecsElapsed() / 1e6);
      raster.push_back(canvas->lastRasterMs());
      visited = std::max(visited, canvas->lastSpansVisited());
    }
    const Stats a = stats(total), r = stats(raster);
    std::printf(
        "%s: frame median %.2f ms (min %.2f, max %.2f), raster median %.2f ms, up to %lld "
        "spans read\n",
        what, a.median, a.min, a.max, r.median, static_cast<long long>(visited));
  };
  const double end = canvas->rows()->endUs * 1.01;
  measure([&](int) { canvas->setWindow(0, end); }, "whole kernel (20 frames)");
  measure(
      [&](int i) {
        const double w0 = end * i / 20.0;
        canvas->setWindow(w0, w0 + end / 50);
      },
      "1/50 windows across the kernel (20 frames)");
  // A cached frame: nothing changed but the widget repaints (a tooltip, a dock resize).
  canvas->setWindow(0, end);
  canvas->render(&frame);
  std::vector<double> cached;
  for (int i = 0; i < 20; ++i) {
    QElapsedTimer t;
    t.start();
    canvas->render(&frame);
    cached.push_back(t.nsecsElapsed() / 1e6);
  }
  std::printf("cached frame median %.2f ms\n", stats(cached).median);
  std::printf("machine: %s, %u hardware threads, load %s, Qt platform %s\n", cpu_model().c_str(),
              std::thread::hardware_concurrency(), souffle::bench::load_average().c_str(),
              qPrintable(QGuiApplication::platformName()));
  if (!shot.isEmpty()) {
    w.timelineDock()->setFloating(false);
    w.timelineDock()->raise();
    w.resizeDocks({w.timelineDock()}, {520}, Qt::Vertical);
    w.resizeDocks({w.timelineDock()}, {1150}, Qt::Horizontal);
    QTest::qWait(500);
    canvas->fit();
    QTest::qWait(500);
    w.grab().save(shot);
    std::printf("saved %s\n", qPrintable(shot));
  }
  return 0;
}
