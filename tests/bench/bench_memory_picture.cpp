// The Memory panel on a big model: the time from asking for the memory picture of a stage (full
// BERT-base's attention stage by default) to the picture on screen (the emulator's recording,
// the picture model and the first paint, each reported; median of 3 fresh panels), the blocks
// the panel's time budget recorded, and the frame time while the animation plays (median of 20
// frames). With --all 1, also the time to record every block ("Record all blocks").
// Offscreen; prints the machine. Not a timed test.
//
//   bench_memory_picture MODEL.onnx [--strategy souffle|rules|...] [--stage WORD] [--all 1]
//
// MODEL: full BERT-base from scripts/make_bert_base.py --out DIR (DIR/model.onnx). The stage is
// the first whose name or schedule contains WORD ("attention" by default; else "Softmax").
#include <QApplication>
#include <QElapsedTimer>
#include <QtTest>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

#include "core/session/kernel_cache.h"
#include "tests/bench/machine.h"
#include "views/memory_panel.h"
#include "views/model_loader.h"
#include "views/plan_runner.h"

using namespace souffle;
using namespace souffle::views;

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_memory_picture MODEL.onnx [--strategy S] [--stage WORD]\n");
    return 2;
  }
  QString strategy = QStringLiteral("souffle"), word = QStringLiteral("attention");
  bool all = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (QLatin1String(argv[i]) == QLatin1String("--strategy"))
      strategy = QString::fromUtf8(argv[i + 1]);
    if (QLatin1String(argv[i]) == QLatin1String("--stage")) word = QString::fromUtf8(argv[i + 1]);
    if (QLatin1String(argv[i]) == QLatin1String("--all")) all = QLatin1String(argv[i + 1]) == "1";
  }
  std::printf("machine: %u hardware threads, load average %s; offscreen Qt\n",
              std::thread::hardware_concurrency(), souffle::bench::load_average().c_str());
  QElapsedTimer t;
  t.start();
  const LoadOutcome loaded = ModelLoader::run(QString::fromUtf8(argv[1]));
  if (!loaded.data) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  std::printf("load: %.0f ms\n", double(t.nsecsElapsed()) / 1e6);
  plan::Strategy st = plan::Strategy::Souffle;
  for (plan::Strategy s : plan::every_strategy())
    if (strategy == QLatin1String(plan::strategy_name(s))) st = s;
  t.start();
  const PlanOutcome planned = PlanRunner::run(loaded.data, st, QStringLiteral("A100"));
  if (!planned.ok()) {
    std::fprintf(stderr, "plan failed: %s\n", qPrintable(planned.error));
    return 1;
  }
  const plan::FusionPlan& p = *planned.data->plan;
  std::printf("plan (%s): %zu kernels, %.0f ms\n", qPrintable(strategy), p.kernels(),
              double(t.nsecsElapsed()) / 1e6);
  // The stage: the first whose name or schedule holds the word (then Softmax's).
  int partition = -1;
  QString node, stageText;
  for (const QString& w : {word, QStringLiteral("Softmax")}) {
    for (size_t k = 0; k < p.partitions.size() && partition < 0; ++k) {
      const PartitionKernelsPtr built = shared_kernel_cache().kernels(p, k);
      for (const CompiledKernel& ck : built->kernels)
        for (const loop::StageInfo& s : ck.kernel.stages)
          if (partition < 0 && !s.origins.empty() &&
              (QString::fromStdString(s.name).contains(w, Qt::CaseInsensitive) ||
               QString::fromStdString(s.schedule).contains(w, Qt::CaseInsensitive))) {
            partition = int(k);
            node = QString::fromStdString(s.origins.front().node);
            stageText = QString::fromStdString(s.name);
          }
    }
    if (partition >= 0) break;
  }
  if (partition < 0) {
    std::fprintf(stderr, "no stage named like %s\n", qPrintable(word));
    return 1;
  }
  // Three fresh panels, each asked for the stage: the time to the picture on screen.
  std::vector<double> shown, recorded;
  std::unique_ptr<MemoryPanel> kept;
  for (int run = 0; run < 3; ++run) {
    auto panel = std::make_unique<MemoryPanel>();
    panel->resize(1400, 1000);
    panel->show();
    panel->setPlan(planned.data);
    panel->showPartition(partition, node);
    if (!QTest::qWaitFor([&] { return panel->isReady(); }, 3600 * 1000)) return 1;
    if (!panel->error().isEmpty()) {
      std::fprintf(stderr, "not recorded: %s\n", qPrintable(panel->error()));
      return 1;
    }
    const MemoryPictureResult& r = panel->result();
    if (run == 0) {
      std::printf("stage: kernel %d (%s) stage %d %s\n", partition, qPrintable(r.kernel), r.stage,
                  qPrintable(stageText));
      std::printf("picture: %zu tensors, %zu frames, %lld blocks; %s\n", r.picture->tensors.size(),
                  r.picture->frames.size(), static_cast<long long>(r.picture->grid),
                  r.access->blocks.empty() ? "every block recorded"
                                           : emulate::sample_note(*r.access).c_str());
    }
    std::printf(
        "on screen: %.0f ms (emulator recording %.0f ms, %zu blocks; picture model %.1f ms, the "
        "rest queueing and the first paint)\n",
        panel->lastShowMs(), r.recordMs,
        r.access->blocks.empty() ? size_t(r.access->grid) : r.access->blocks.size(), r.pictureMs);
    shown.push_back(panel->lastShowMs());
    recorded.push_back(r.recordMs);
    kept = std::move(panel);
  }
  std::sort(shown.begin(), shown.end());
  std::sort(recorded.begin(), recorded.end());
  std::printf("request to picture on screen: median %.0f ms of 3 (recording median %.0f ms)\n",
              shown[1], recorded[1]);
  MemoryPanel& panel = *kept;
  if (all) {
    QElapsedTimer a;
    a.start();
    panel.recordAllBlocks();
    if (!QTest::qWaitFor([&] { return panel.isReady(); }, 3600 * 1000)) return 1;
    std::printf("record all blocks: %.0f ms to the picture (%zu frames; recording %.0f ms)\n",
                double(a.nsecsElapsed()) / 1e6, panel.result().picture->frames.size(),
                panel.result().recordMs);
  }
  // A redraw of the whole recording, then 20 frames of the animation, each painted.
  MemoryCanvas* canvas = panel.canvas();
  t.start();
  canvas->repaint();
  std::printf("repaint of the whole recording: %.1f ms (canvas %dx%d)\n",
              double(t.nsecsElapsed()) / 1e6, canvas->width(), canvas->height());
  std::vector<double> frames;
  for (int i = 0; i < 20 && i < panel.frameCount(); ++i) {
    t.start();
    panel.step();
    canvas->repaint();
    frames.push_back(double(t.nsecsElapsed()) / 1e6);
  }
  std::sort(frames.begin(), frames.end());
  if (!frames.empty())
    std::printf("animation frame (step + repaint): median %.2f ms, max %.2f ms over %zu frames\n",
                frames[frames.size() / 2], frames.back(), frames.size());
  return 0;
}
