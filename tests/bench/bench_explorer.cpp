// What the explorer's user waits for on a model, in one process (offscreen): opening it until the
// plan is on the final layout, the CUDA C of the selected kernel after selecting a node of it,
// and an edit (split before a node) and its undo until the plan on screen changed and is drawn
// again. Median, min and max of --runs N edit/undo rounds; prints the machine. Not a timed
// test: it prints figures.
//
//   bench_explorer [--runs N] [--strategy S] MODEL.onnx...
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTest>
#include <QUndoStack>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int runs = 3;
  QString strategy = QStringLiteral("souffle");
  std::vector<QString> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--strategy" && i + 1 < argc)
      strategy = QString::fromUtf8(argv[++i]);
    else
      models.push_back(QString::fromUtf8(argv[i]));
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: bench_explorer [--runs N] [--strategy S] MODEL.onnx...\n");
    return 2;
  }
  std::printf("machine: %u hardware threads, load average %s; strategy %s, offscreen 1600x1000\n",
              std::thread::hardware_concurrency(), load_average().c_str(),
              strategy.toUtf8().constData());
  std::printf("%-28s %9s %9s %22s %22s\n", "model", "open_ms", "code_ms", "edit_ms med (min-max)",
              "undo_ms med (min-max)");
  for (const QString& model : models) {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.setStrategy(strategy);
    QElapsedTimer t;
    t.start();
    w.openModel(model);
    if (wait_ms([&] { return settled(w); }) < 0) {
      std::fprintf(stderr, "%s: no plan in 10 minutes\n", model.toUtf8().constData());
      return 1;
    }
    const double open = t.nsecsElapsed() / 1e6;
    // The CUDA C of the kernel of a node: select a box in the middle of the graph.
    GraphScene* scene = w.graphPanel()->scene();
    const SceneGraph* g = scene->graph();
    int box = -1;
    for (size_t b = g->nodes.size() / 2; b < g->nodes.size() && box < 0; ++b)
      if (g->nodes[b].kind == SceneNode::Kind::Op) box = static_cast<int>(b);
    double code = -1;
    if (box >= 0) {
      t.restart();
      scene->selectBox(box);
      w.codePanel()->setCurrentTab(CodePanel::CudaTab);
      code = wait_ms([&] { return w.codePanel()->isReady(); });
    }
    // Split before the selected node, then undo: each until the plan on screen changed and is
    // drawn on its final layout.
    std::vector<double> edits, undos;
    for (int r = 0; r < runs && box >= 0; ++r) {
      PlanDataPtr before = w.planData();
      t.restart();
      w.splitAtSelected();
      const double e = wait_ms([&] { return settled(w) && w.planData() != before; }, 300000);
      if (e < 0) break;  // refused (the node already starts a kernel): nothing to time
      edits.push_back(e);
      before = w.planData();
      t.restart();
      w.decisionEditor()->undoStack()->undo();
      const double u = wait_ms([&] { return settled(w) && w.planData() != before; }, 300000);
      if (u >= 0) undos.push_back(u);
      scene->selectBox(box);
    }
    const Stats es = stats(edits), us = stats(undos);
    std::printf(
        "%-28s %9.0f %9.0f %8.0f (%5.0f-%5.0f) %8.0f (%5.0f-%5.0f)\n",
        (QFileInfo(model).dir().dirName() + "/" + QFileInfo(model).fileName()).toUtf8().constData(),
        open, code, es.median, es.min, es.max, us.median, us.min, us.max);
    std::fflush(stdout);
  }
  return 0;
}
