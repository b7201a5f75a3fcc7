// Loading a model as the CLI and the explorer do (import, fold, lower; load_model), one way per
// process so that the peak memory is that way's alone:
//   bench_import MODEL.onnx [--mode eager|mapped|memory|ondemand] [--runs N]
// eager copies every weight at import (the explorer before deferral), mapped defers the weights
// and reads them from the mapped file when first used (plan, compile), memory defers them and
// reads them from one copy of the file this process owns (the explorer before), ondemand defers
// them and reads each through a descriptor kept open when first used (the explorer). Prints the
// median, min and max of N loads' import step and whole load, the process's peak resident memory,
// and the machine.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/session/pipeline.h"
#include "tests/bench/machine.h"

using namespace souffle;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx [--mode eager|mapped|memory|ondemand] [--runs N]\n",
                 argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  std::string mode = "ondemand";
  int runs = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mode") == 0) mode = argv[i + 1];
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
  }
  PipelineOptions po;
  po.until = Step::Lower;
  if (mode == "mapped" || mode == "memory" || mode == "ondemand") po.import.defer_weights = true;
  if (mode == "memory" || mode == "ondemand") po.import.read_into_memory = true;
  if (mode == "ondemand") po.import.read_weights_on_demand = true;
  if (mode != "eager" && mode != "mapped" && mode != "memory" && mode != "ondemand") {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::vector<double> import_ms, load_ms;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    PipelineResult res = run_pipeline(path, po);
    load_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (const plan::PassRecord& p : res.passes)
      if (p.step == Step::Import) import_ms.push_back(p.ms);
  }
  auto stats = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    char buf[96];
    std::snprintf(buf, sizeof buf, "%8.1f %8.1f %8.1f", v[v.size() / 2], v.front(), v.back());
    return std::string(buf);
  };
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("machine: %u hardware threads, load average %s\n",
              std::thread::hardware_concurrency(), bench::load_average().c_str());
  std::printf("%-7s %-26s %-26s %s\n", "mode", "import ms (median min max)",
              "load ms (median min max)", "peak MB");
  std::printf("%-7s %-26s %-26s %.0f\n", mode.c_str(), stats(import_ms).c_str(),
              stats(load_ms).c_str(), static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}
