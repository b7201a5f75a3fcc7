// The GEMM tile tuner over whole models: for each GEMM-like TE of a plan, the tile model's
// estimate with the template's fixed tile (before tuning) and with the tile tune_plan records
// (after), summed per model, beside the plan's roofline estimate.
//
//   bench_tune [--gpu NAME] [--precision fp32|tf32|fp16|bf16] [--strategy S] [-v] MODEL.onnx...
// -v prints each GEMM's fixed and tuned estimate.
// Models that do not exist are skipped with a message.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/plan/plan.h"
#include "core/schedule/tune.h"
#include "core/session/load.h"
#include "core/session/verify_kernels.h"

int main(int argc, char** argv) {
  using namespace souffle;
  std::string gpu_name = "a100", precision = "fp16", strategy = "souffle";
  std::vector<std::string> models;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gpu" && i + 1 < argc)
      gpu_name = argv[++i];
    else if (a == "--precision" && i + 1 < argc)
      precision = argv[++i];
    else if (a == "--strategy" && i + 1 < argc)
      strategy = argv[++i];
    else if (a == "-v")
      verbose = true;
    else
      models.push_back(a);
  }
  if (models.empty()) {
    std::cout << "[SKIP] no models: pass MODEL.onnx paths\n";
    return 0;
  }
  plan::PlanOptions po;
  po.gpu = gpu::gpu_spec(gpu_name);
  po.precision = gpu::parse_precision(precision);
  po.strategy = plan::parse_strategy(strategy);
  schedule::TuneOptions to;
  to.gpu = po.gpu;
  to.precision = po.precision;
  const bool tc = po.precision != gpu::Precision::FP32;
  // What an untuned kernel gets: the tensor-core template's tile from its block (2x2 fragments
  // per warp, 4, 2 or 1 warps on the block the kernel's barrier stages share, BK 32), or
  // ScheduleConfig's SIMT tile.
  auto fixed_for = [](int64_t threads) {
    const int64_t wr = threads >= 64 ? 2 : 1, wc = threads >= 128 ? 2 : 1;
    return gpu::Tile{32 * wr, 32 * wc, 32, 2, 2, false, true};
  };
  const gpu::Tile fixed = tc ? fixed_for(256) : gpu::Tile{};
  std::cout << fmt::format("{} on {}, {}: fixed tile {}\n", strategy, po.gpu.name, precision,
                           fixed.describe());
  std::cout << fmt::format("{:<40} {:>6} {:>12} {:>12} {:>8} {:>12}\n", "model", "gemms",
                           "fixed us", "tuned us", "speedup", "plan us");
  for (const std::string& path : models) {
    if (!std::filesystem::exists(path)) {
      std::cout << "[SKIP] " << path << ": no such file\n";
      continue;
    }
    LoadedModel m = load_model(path);
    plan::FusionPlan p = plan::plan(m.program, po);
    const double plan_before = p.est_time_us;
    schedule::ScheduleConfig sc;
    sc.precision = po.precision;
    try {
      tune_plan(p, sc);
    } catch (const std::exception& e) {
      std::cout << "[FAIL] " << path << ": " << e.what() << "\n";
      continue;
    }
    double before = 0, after = 0;
    int gemms = 0, tensor_core = 0;
    for (const plan::Partition& part : p.partitions)
      for (const plan::Stage& st : part.stages)
        for (const plan::TileChoice& t : st.tiles) {
          const te::ComputeOp& op = *p.program.ops[static_cast<size_t>(t.te)];
          const gpu::Tile& chosen = t.tile;
          schedule::TuneOptions o = to;
          if (!chosen.tensor_core) o.precision = gpu::Precision::FP32;
          const std::vector<schedule::TileEstimate> r =
              schedule::rank_tiles(schedule::gemm_problem(op), o);
          const schedule::TileEstimate *f = nullptr, *c = nullptr;
          for (const schedule::TileEstimate& e : r) {
            if (e.tile == (chosen.tensor_core ? fixed_for(chosen.threads()) : gpu::Tile{})) f = &e;
            if (e.tile == chosen) c = &e;
          }
          if (!f || !c) continue;
          ++gemms;
          tensor_core += chosen.tensor_core;
          before += f->total_us;
          after += c->total_us;
          if (verbose)
            std::cout << fmt::format("  {}\n    fixed: {}\n    tuned: {}\n", op.name, f->why(),
                                     t.why);
        }
    std::string name = std::filesystem::path(path).parent_path().filename().string();
    std::cout << fmt::format("{:<40} {:>6} {:>12.1f} {:>12.1f} {:>7.2f}x {:>12.1f}", name, gemms,
                             before, after, after > 0 ? before / after : 0.0, plan_before);
    if (p.est_time_us != plan_before)
      std::cout << fmt::format(" (after tuning {:.1f})", p.est_time_us);
    std::cout << fmt::format("  [{} tensor-core tiles]\n", tensor_core);
  }
  return 0;
}
