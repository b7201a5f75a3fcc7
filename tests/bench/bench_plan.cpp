// Loads each model once (what `inspect` does) and times planning under every strategy and
// re-planning after one decision edit; prints medians and the model x strategy table.
//
//   bench_plan [--runs N] [--gpu NAME] MODEL.onnx...
//   SOUFFLE_BENCH_MODELS="a.onnx:b.onnx" bench_plan
// Models that do not exist are skipped with a message.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/plan/plan.h"
#include "core/session/load.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace souffle;
  int runs = 5;
  std::string gpu_name = "a100";
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--gpu" && i + 1 < argc)
      gpu_name = argv[++i];
    else
      models.push_back(a);
  }
  if (models.empty())
    if (const char* env = std::getenv("SOUFFLE_BENCH_MODELS")) {
      std::stringstream ss(env);
      std::string m;
      while (std::getline(ss, m, ':'))
        if (!m.empty()) models.push_back(m);
    }
  if (models.empty()) {
    std::cout << "[SKIP] no models: pass MODEL.onnx paths or set SOUFFLE_BENCH_MODELS\n";
    return 0;
  }
  gpu::GpuSpec spec = gpu::gpu_spec(gpu_name);
  std::cout << fmt::format("{:14} {:8} {:>8} {:>6} {:>11} {:>11} {:>10} {:>10}\n", "model",
                           "strategy", "kernels", "syncs", "DRAM MB", "est. us", "plan ms",
                           "replan ms");
  for (const std::string& path : models) {
    if (!std::filesystem::exists(path)) {
      std::cout << "[SKIP] " << path << ": not found\n";
      continue;
    }
    std::string name = std::filesystem::path(path).parent_path().filename().string();
    auto t0 = Clock::now();
    LoadedModel m;
    try {
      m = load_model(path);
    } catch (const std::exception& e) {
      std::cout << "[SKIP] " << path << ": " << e.what() << "\n";
      continue;
    }
    double load_ms = ms_since(t0);
    std::cout << fmt::format("{:14} load (inspect) {:.0f} ms, {} TEs\n", name, load_ms,
                             m.program.ops.size());
    for (plan::Strategy s : plan::all_strategies()) {
      plan::PlanOptions o;
      o.strategy = s;
      o.gpu = spec;
      std::vector<double> plan_ms, replan_ms;
      plan::FusionPlan p;
      for (int r = 0; r < runs; ++r) {
        auto t = Clock::now();
        p = plan::plan(m.program, o);
        plan_ms.push_back(ms_since(t));
      }
      plan::verify(p);
      // One edit: pin the middle compute TE of the plan to its own kernel.
      std::string anchor;
      const auto& order = p.analysis.bfs_order;
      for (size_t k = order.size() / 2; k < order.size() && anchor.empty(); ++k)
        if (p.analysis.tes[order[k]].kind == analysis::Intensity::Compute)
          anchor = p.analysis.tes[order[k]].name;
      plan::PlanOptions e = o;
      if (!anchor.empty()) e.decisions.edits.push_back({plan::Edit::Kind::Pin, anchor, ""});
      plan::FusionPlan q;
      for (int r = 0; r < runs; ++r) {
        auto t = Clock::now();
        q = plan::replan(p, e);
        replan_ms.push_back(ms_since(t));
      }
      plan::verify(q);
      std::cout << fmt::format("{:14} {:8} {:>8} {:>6} {:>11.2f} {:>11.1f} {:>10.1f} {:>10.2f}\n",
                               name, plan::strategy_name(s), p.kernels(), p.grid_syncs,
                               p.dram_bytes / 1e6, p.est_time_us, median(plan_ms),
                               median(replan_ms));
    }
  }
  return 0;
}
