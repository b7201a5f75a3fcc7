// What the kernels of a plan come to before NVRTC sees them: the time to build the loop-IR
// kernels and to emit their CUDA C, the size of that source, and for kernels whose stages are
// outlined into functions, how many stage calls there are and how many distinct functions
// serve them (stages that run the same code on other tensors share one). Also the grid
// barriers, the largest grid, how many kernels had their grid capped at the GPU's co-resident
// blocks, and the stages whose weight tile is prefetched before a grid barrier and the
// intermediates kept in shared memory.
// Median of --runs N (default 1) for the times. BENCH_EMIT_STAGES=N prints the first N stages of
// each kernel with their schedules; BENCH_EMIT_CUDA=DIR writes each kernel's CUDA C there.
//
//   bench_emit [--strategy S] [--gpu NAME] [--runs N] MODEL.onnx...
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/codegen/codegen_cuda.h"
#include "core/loop/mutator.h"
#include "core/plan/plan.h"
#include "core/session/load.h"
#include "core/session/verify_kernels.h"

namespace {

using namespace souffle;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models;
  std::vector<plan::Strategy> strategies = {plan::Strategy::Souffle};
  std::string gpu_name = "a100";
  int runs = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--strategy" && i + 1 < argc)
      strategies = {plan::parse_strategy(argv[++i])};
    else if (a == "--gpu" && i + 1 < argc)
      gpu_name = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::stoi(argv[++i]));
    else
      models.push_back(a);
  }
  if (models.empty()) {
    fmt::print(stderr, "usage: bench_emit [--strategy S] [--gpu NAME] [--runs N] MODEL.onnx...\n");
    return 2;
  }
  const gpu::GpuSpec gpu = gpu::gpu_spec(gpu_name);
  fmt::print("GPU spec: {}; times are medians of {} run(s) on this machine\n", gpu.name, runs);
  fmt::print(
      "{:<13} {:<8} {:>7} {:>7} {:>6} {:>6} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>7}\n",
      "model", "strategy", "kernels", "stages", "syncs", "grid", "capped", "prefetch", "resident",
      "build_ms", "emit_ms", "cuda_KB", "calls", "funcs");
  for (const std::string& path : models) {
    LoadedModel m = load_model(path);
    for (plan::Strategy s : strategies) {
      plan::PlanOptions po;
      po.strategy = s;
      po.gpu = gpu;
      plan::FusionPlan fp = plan::plan(m.program, po);
      KernelBuildOptions bo;
      bo.split_launches = true;
      std::vector<double> build_ms, emit_ms;
      loop::KernelSet ks;
      size_t bytes = 0, calls = 0, funcs = 0;
      for (int r = 0; r < runs; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        ks = build_plan_kernels(fp, {}, bo);
        build_ms.push_back(ms_since(t0));
        t0 = std::chrono::steady_clock::now();
        bytes = calls = funcs = 0;
        for (const loop::Kernel& k : ks.kernels) {
          const std::string cuda = codegen::emit_cuda(k);
          if (const char* dir = std::getenv("BENCH_EMIT_CUDA"))
            std::ofstream(std::filesystem::path(dir) / (k.name + ".cu")) << cuda;
          bytes += cuda.size();
          funcs += count(cuda, "static __device__ __noinline__");
          calls += count(cuda, "// runs stage ");
        }
        emit_ms.push_back(ms_since(t0));
      }
      if (const char* v = std::getenv("BENCH_EMIT_STAGES"))
        for (const loop::Kernel& k : ks.kernels)
          for (size_t i = 0; i < k.stages.size() && i < static_cast<size_t>(std::atoi(v)); ++i)
            fmt::print("  {} stage {} [{}]: {}\n", k.name, i, fmt::join(k.stages[i].tes, " "),
                       k.stages[i].schedule);
      size_t stages = 0, capped = 0, syncs = 0, prefetched = 0, resident = 0;
      int64_t grid = 0;
      for (const loop::Kernel& k : ks.kernels) {
        stages = std::max(stages, k.stages.size());
        grid = std::max(grid, k.launch.grid_x);
        loop::for_each_stmt(
            k.body, [&](const loop::Stmt& x) { syncs += x.kind() == loop::StmtKind::GridBarrier; });
        for (const loop::StageInfo& st : k.stages) {
          capped += st.schedule.find("kernel grid capped at") != std::string::npos;
          prefetched += st.schedule.find("prefetched before the grid barrier") != std::string::npos;
          resident += count(st.schedule, " kept in shared memory (");
        }
      }
      fmt::print(
          "{:<13} {:<8} {:>7} {:>7} {:>6} {:>6} {:>6} {:>8} {:>8} {:>9.0f} {:>9.0f} {:>9} {:>8} "
          "{:>7}\n",
          std::filesystem::path(path).parent_path().filename().string(), plan::strategy_name(s),
          ks.kernels.size(), stages, syncs, grid, capped, prefetched, resident, median(build_ms),
          median(emit_ms), bytes / 1024, calls, funcs);
    }
  }
  return 0;
}
