// The graph layouts on a model's graph, outside the explorer: boxes and edges of the op-level
// graph (or the TE-level one with --te), the ranked layout's time (median of --runs N) and, with
// --dot, dot's time for the same graph (one run; given up after --dot-limit seconds, default 120).
// Shows where dot stops being usable and what the ranked layout costs instead. Prints the machine.
// Not a timed test: it prints figures.
//
//   bench_layout [--te] [--runs N] [--dot] [--dot-limit S] MODEL.onnx...
#include <QElapsedTimer>
#include <QFileInfo>
#include <QGuiApplication>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/session/load.h"
#include "tests/bench/machine.h"
#include "views/graph_layout.h"
#include "views/graph_scene.h"
#include "views/scene_graph.h"

using namespace souffle::views;

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  bool te = false, dot = false;
  int runs = 3, dotLimit = 120;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--te")
      te = true;
    else if (a == "--dot")
      dot = true;
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--dot-limit" && i + 1 < argc)
      dotLimit = std::max(1, std::atoi(argv[++i]));
    else
      models.push_back(a);
  }
  if (models.empty()) {
    std::fprintf(stderr,
                 "usage: bench_layout [--te] [--runs N] [--dot] [--dot-limit S] MODEL...\n");
    return 2;
  }
  std::printf("machine: %u hardware threads, load average %s; %s level\n",
              std::thread::hardware_concurrency(), souffle::bench::load_average().c_str(),
              te ? "TE" : "op");
  std::printf("%-28s %7s %7s %14s %10s\n", "model", "boxes", "edges", "ranked_ms med", "dot_ms");
  std::fflush(stdout);
  for (const std::string& path : models) {
    souffle::LoadedModel model = souffle::load_model(path);
    const SceneGraph g =
        te ? buildTeGraph(model.program) : buildOpGraph(model.graph, model.program);
    LayoutInput in{GraphScene::measure(g), {}};
    for (const SceneEdge& e : g.edges) in.edges.push_back({e.from, e.to});
    std::vector<double> ranked;
    for (int r = 0; r < runs; ++r) ranked.push_back(layoutRanked(in).ms);
    std::sort(ranked.begin(), ranked.end());
    std::string dotText = "-";
    if (dot) {
      // dot cannot be interrupted: it runs on a thread of its own that is abandoned past the
      // limit (the process then ends without waiting for it).
      auto result = std::async(std::launch::async, [in] { return layoutWithDot(in).ms; });
      if (result.wait_for(std::chrono::seconds(dotLimit)) == std::future_status::ready) {
        dotText = std::to_string(static_cast<long long>(result.get()));
      } else {
        dotText = "over " + std::to_string(dotLimit * 1000);
        const QString name = QFileInfo(QString::fromStdString(path)).fileName();
        std::printf("%-28s %7zu %7zu %14.0f %10s\n", name.toUtf8().constData(), in.sizes.size(),
                    in.edges.size(), ranked[ranked.size() / 2], dotText.c_str());
        std::fflush(stdout);
        std::_Exit(0);
      }
    }
    const QString name = QFileInfo(QString::fromStdString(path)).fileName();
    std::printf("%-28s %7zu %7zu %14.0f %10s\n", name.toUtf8().constData(), in.sizes.size(),
                in.edges.size(), ranked[ranked.size() / 2], dotText.c_str());
    std::fflush(stdout);
  }
  return 0;
}
