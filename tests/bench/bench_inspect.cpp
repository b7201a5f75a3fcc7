// What `souffle-cli inspect` costs: import, type inference + constant folding, lowering and
// verification of each model given on the command line, repeated; prints medians.
// Usage: bench_inspect [--runs N] MODEL...   (models that do not exist are skipped)
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/session/load.h"

namespace {
std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}
}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::stoi(argv[++i]));
    else
      models.push_back(a);
  }
  std::cout << fmt::format("machine: {}, {} hardware threads; {} runs per model\n", cpu_name(),
                           std::thread::hardware_concurrency(), runs);
  for (const std::string& m : models) {
    if (!std::filesystem::exists(m)) {
      std::cout << fmt::format("{}: not found, skipped\n", m);
      continue;
    }
    std::vector<double> ms;
    size_t file_nodes = 0, nodes = 0, tes = 0;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      souffle::LoadedModel lm = souffle::load_model(m);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      file_nodes = lm.onnx_nodes;
      nodes = lm.graph.nodes.size();
      tes = lm.program.ops.size();
    }
    std::sort(ms.begin(), ms.end());
    std::cout << fmt::format(
        "{}: {} ONNX nodes -> {} after folding, {} TEs; median {:.0f} ms "
        "(min {:.0f}, max {:.0f})\n",
        m, file_nodes, nodes, tes, ms[ms.size() / 2], ms.front(), ms.back());
  }
  return 0;
}
