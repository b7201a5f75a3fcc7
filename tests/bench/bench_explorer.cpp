// What the explorer's user waits for on a model, in one process (offscreen): opening it until the
// plan is on the final layout (and until its kernel outlines are drawn too), the CUDA C of the
// selected kernel after selecting a node of it, and an edit (split before a node) and its undo
// until the plan on screen changed and is drawn again. Median, min and max of --runs N edit/undo
// rounds. With --frames: the time to paint the graph (a repaint of the view after a small scroll,
// median of 20) at the opening zoom and fitted to the window, a frame per wheel step zooming out as
// far as the view goes and panning there, and collapsing every kernel until the graph and its
// outlines are drawn again. Prints the machine. Not a timed test: it prints figures. --runs 0 skips
// the edit rounds and --no-code the CUDA C (on a generated 20,000-node model each takes minutes).
// With --recompile: the plan's kernels compiled (Compile, sm_80 and sm_90) into an empty compile
// cache folder of its own, then in each edit round the edited plan and the plan after the undo
// compiled again, each until the explorer shows the compile of the plan on screen: the time, and
// how many distinct programs it had and how many of them came from the cache.
//
//   bench_explorer [--runs N] [--strategy S] [--frames] [--no-code] [--recompile] MODEL.onnx...
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/machine.h"
#include "views/code_panel.h"
#include "views/edit_commands.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/main_window.h"
#include "views/scene_graph.h"

namespace {

using namespace souffle::views;

bool settled(const MainWindow& w) {
  return w.planData() && !w.isPlanning() && !w.isLoading() && w.graphPanel()->isFinal();
}

/// Settled, and the kernel outlines (made off the GUI thread) are on screen too.
bool outlined(const MainWindow& w) {
  return settled(w) && !w.graphPanel()->scene()->clustersPending();
}

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

/// Waits (processing events) until `done` or `limit_ms`; the milliseconds it took, -1 on time out.
template <typename F>
double wait_ms(F&& done, int limit_ms = 600000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > limit_ms) return -1;
    QTest::qWait(2);
  }
  return t.nsecsElapsed() / 1e6;
}

/// One Compile of the plan on screen, until the explorer shows its result.
struct Recompile {
  double ms = -1;
  int programs = 0, from_cache = 0, failures = 0;
};

Recompile compile_on_screen(MainWindow& w) {
  Recompile r;
  const PlanDataPtr plan = w.planData();
  w.compileKernels();
  r.ms = wait_ms([&] {
    const CompileDataPtr c = w.compileData();
    return !w.compileRunner()->isBusy() && c && c->plan == plan && !c->cachedOnly;
  });
  if (const CompileDataPtr c = w.compileData()) {
    r.programs = c->programs;
    r.from_cache = c->programsFromCache;
    r.failures = c->failures;
  }
  return r;
}

std::string describe(const std::vector<Recompile>& v) {
  std::vector<double> ms;
  std::string counts;
  for (const Recompile& r : v) {
    ms.push_back(r.ms);
    counts += (counts.empty() ? "" : "; ") + std::to_string(r.programs) +
              (r.programs == 1 ? " program, " : " programs, ") + std::to_string(r.from_cache) +
              " from the cache" + (r.failures ? ", " + std::to_string(r.failures) + " failed" : "");
  }
  const Stats s = stats(ms);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f ms (%.0f-%.0f)", s.median, s.min, s.max);
  return std::string(buf) + " [" + counts + "]";
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int runs = 3;
  QString strategy = QStringLiteral("souffle");
  bool frames = false, code = true, recompile = false;
  std::vector<QString> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(0, std::atoi(argv[++i]));  // 0: no edit rounds (a big model's take minutes)
    } else if (a == "--frames") {
      frames = true;
    } else if (a == "--no-code") {
      code = false;
    } else if (a == "--recompile") {
      recompile = true;
    } else if (a == "--strategy" && i + 1 < argc) {
      strategy = QString::fromUtf8(argv[++i]);
    } else {
      models.push_back(QString::fromUtf8(argv[i]));
    }
  }
  if (models.empty()) {
    std::fprintf(
        stderr,
        "usage: bench_explorer [--runs N] [--strategy S] [--frames] [--no-code] [--recompile] "
        "MODEL...\n");
    return 2;
  }
  // An empty compile cache folder of the benchmark's own: the first compile is a cold one.
  QTemporaryDir cache;
  if (recompile) qputenv("SOUFFLE_CACHE_DIR", cache.path().toUtf8());
  std::printf("machine: %u hardware threads, load average %s; strategy %s, offscreen 1600x1000\n",
              std::thread::hardware_concurrency(), souffle::bench::load_average().c_str(),
              strategy.toUtf8().constData());
  std::printf("%-28s %9s %11s %9s %22s %22s\n", "model", "open_ms", "outlines_ms", "code_ms",
              "edit_ms med (min-max)", "undo_ms med (min-max)");
  for (const QString& model : models) {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.setStrategy(strategy);
    QElapsedTimer t;
    t.start();
    w.openModel(model);
    if (wait_ms([&] { return settled(w); }) < 0) {
      std::fprintf(stderr,
                   "%s: no planned picture after %.0f s (plan %s, planning %s, loading %s, "
                   "layout final %s)\n",
                   model.toUtf8().constData(), t.elapsed() / 1e3, w.planData() ? "yes" : "no",
                   w.isPlanning() ? "yes" : "no", w.isLoading() ? "yes" : "no",
                   w.graphPanel()->isFinal() ? "yes" : "no");
      return 1;
    }
    const double open = t.nsecsElapsed() / 1e6;
    const double outlines = open + wait_ms([&] { return outlined(w); });
    // The CUDA C of the kernel of a node: select a box in the middle of the graph.
    GraphScene* scene = w.graphPanel()->scene();
    const SceneGraph* g = scene->graph();
    int box = -1;
    for (size_t b = g->nodes.size() / 2; b < g->nodes.size() && box < 0; ++b)
      if (g->nodes[b].kind == SceneNode::Kind::Op) box = static_cast<int>(b);
    double codeMs = -1;
    if (box >= 0 && code) {
      t.restart();
      scene->selectBox(box);
      w.codePanel()->setCurrentTab(CodePanel::CudaTab);
      codeMs = wait_ms([&] { return w.codePanel()->isReady(); });
    }
    // The plan compiled before any edit (the cache cold for the first model).
    Recompile first;
    if (recompile) first = compile_on_screen(w);
    // Split before the selected node, then undo: each until the plan on screen changed and is
    // drawn on its final layout (and, with --recompile, compiled again after each).
    std::vector<double> edits, undos;
    std::vector<Recompile> edited, undone;
    for (int r = 0; r < runs && box >= 0; ++r) {
      PlanDataPtr before = w.planData();
      t.restart();
      w.splitAtSelected();
      const double e = wait_ms([&] { return settled(w) && w.planData() != before; }, 300000);
      if (e < 0) break;  // refused (the node already starts a kernel): nothing to time
      edits.push_back(e);
      if (recompile) edited.push_back(compile_on_screen(w));
      before = w.planData();
      t.restart();
      w.decisionEditor()->undoStack()->undo();
      const double u = wait_ms([&] { return settled(w) && w.planData() != before; }, 300000);
      if (u >= 0) undos.push_back(u);
      if (recompile && u >= 0) undone.push_back(compile_on_screen(w));
      scene->selectBox(box);
    }
    if (frames) {
      // Painting: the view repainted after scrolling a little, as panning does.
      GraphView* view = w.graphPanel()->view();
      auto paint_ms = [&] {
        std::vector<double> v;
        for (int i = 0; i < 20; ++i) {
          view->verticalScrollBar()->setValue(view->verticalScrollBar()->value() +
                                              (i % 2 ? -40 : 40));
          QElapsedTimer p;
          p.start();
          view->viewport()->repaint();
          v.push_back(p.nsecsElapsed() / 1e6);
        }
        return stats(v);
      };
      // Every kernel expanded (a large model may open on its collapsed kernel map).
      w.graphPanel()->expandAll();
      wait_ms([&] { return settled(w); });
      QTest::qWait(50);
      const size_t expanded = w.graphPanel()->scene()->graph()->nodes.size();
      const Stats opening = paint_ms();
      view->fit();
      QTest::qWait(50);
      const Stats fitted = paint_ms();
      // Zooming out from the fitted view as far as it goes, as the wheel does, one frame per step,
      // then panning that far out (the most boxes on screen), then back to the fitted view.
      std::vector<double> zoomFrames;
      double farZoom = view->zoom();
      for (;;) {
        view->zoomOut();  // refused past the view's farthest zoom (1 %)
        if (view->zoom() == farZoom) break;
        farZoom = view->zoom();
        QElapsedTimer p;
        p.start();
        view->viewport()->repaint();
        zoomFrames.push_back(p.nsecsElapsed() / 1e6);
      }
      const Stats zoomOut = stats(zoomFrames);
      const Stats far = paint_ms();
      const auto farItems = view->items(view->viewport()->rect()).size();
      view->fit();
      QTest::qWait(50);
      t.restart();
      w.graphPanel()->collapseAll();
      // Drawn again: the final layout of the kernel map, the plan on it and its outlines.
      const double collapse = wait_ms([&] { return outlined(w); });
      const size_t kernelMap = w.graphPanel()->scene()->graph()->nodes.size();
      QTest::qWait(50);
      const Stats collapsed = paint_ms();
      std::printf(
          "  frames: %zu boxes expanded; pan at the opening zoom %.1f ms (%.1f-%.1f), fitted "
          "%.1f ms (%.1f-%.1f); zoom out to %.0f%% in %zu steps %.1f ms a frame (%.1f-%.1f), pan "
          "there (%lld items in view) %.1f ms (%.1f-%.1f); collapse all (%zu boxes) %.0f ms, then "
          "%.1f ms a frame\n",
          expanded, opening.median, opening.min, opening.max, fitted.median, fitted.min, fitted.max,
          farZoom * 100, zoomFrames.size(), zoomOut.median, zoomOut.min, zoomOut.max,
          static_cast<long long>(farItems), far.median, far.min, far.max, kernelMap, collapse,
          collapsed.median);
    }
    const Stats es = stats(edits), us = stats(undos);
    std::printf(
        "%-28s %9.0f %11.0f %9.0f %8.0f (%5.0f-%5.0f) %8.0f (%5.0f-%5.0f)\n",
        (QFileInfo(model).dir().dirName() + "/" + QFileInfo(model).fileName()).toUtf8().constData(),
        open, outlines, codeMs, es.median, es.min, es.max, us.median, us.min, us.max);
    if (recompile) {
      std::printf("  compile (sm_80, sm_90): first %s; after the edit %s; after its undo %s\n",
                  describe({first}).c_str(), describe(edited).c_str(), describe(undone).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
