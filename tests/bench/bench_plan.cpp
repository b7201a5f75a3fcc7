// Loads each model once (what `inspect` does) and times planning under every strategy and
// re-planning after one decision edit, priced from built kernels (cost model v2): the first
// plan builds every kernel it prices once per structure (a structural twin's price is renamed:
// "1st bld" partitions built, "twins" prices shared), later plans find them in the pricer's cache,
// and a re-plan builds only the partitions the edit changed. Prints the first times and medians.
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
#include "core/schedule/plan_pricer.h"
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
  std::cout << fmt::format(
      "{:14} {:13} {:>7} {:>8} {:>6} {:>9} {:>10} {:>10} {:>9} {:>10} {:>9} {:>6} {:>7} {:>6}\n",
      "model", "strategy", "kernels", "launches", "syncs", "DRAM MB", "est. us", "1st plan",
      "plan ms", "1st replan", "replan ms", "built", "1st bld", "twins");
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
    for (plan::Strategy s : plan::every_strategy()) {
      plan::PlanOptions o;
      o.strategy = s;
      o.gpu = spec;
      auto pricer = schedule::make_pricer(spec, o.precision);
      o.pricer = pricer;
      std::vector<double> plan_ms, replan_ms;
      auto t1 = Clock::now();
      plan::FusionPlan p = plan::plan(m.program, o);
      const double first_plan = ms_since(t1);
      const size_t first_builds = pricer->builds(), first_twins = pricer->twin_hits();
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
      const size_t built = pricer->builds();
      t1 = Clock::now();
      plan::FusionPlan q = plan::replan(p, e);
      const double first_replan = ms_since(t1);
      const size_t rebuilt = pricer->builds() - built;
      for (int r = 0; r < runs; ++r) {
        auto t = Clock::now();
        q = plan::replan(p, e);
        replan_ms.push_back(ms_since(t));
      }
      plan::verify(q);
      std::cout << fmt::format(
          "{:14} {:13} {:>7} {:>8} {:>6} {:>9.2f} {:>10.1f} {:>10.0f} {:>9.1f} {:>10.1f} {:>9.2f} "
          "{:>6} {:>7} {:>6}\n",
          name, plan::strategy_name(s), p.kernels(), p.launches, p.grid_syncs, p.dram_bytes / 1e6,
          p.est_time_us, first_plan, median(plan_ms), first_replan, median(replan_ms), rebuilt,
          first_builds, first_twins);
    }
  }
  return 0;
}
