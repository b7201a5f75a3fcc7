// souffle-cli calibrate: the runner measures the device (launch overhead, grid-barrier cost
// against the grid size, copy bandwidth) and writes the calibration file the cost model reads;
// with --from-timeline, per-template corrections of the stage estimates read from a GPU's
// timeline documents instead.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/gpu/calibration.h"
#include "core/gpu/device.h"
#include "core/session/profile.h"
#include "core/session/runner_client.h"
#include "core/session/timeline_calibration.h"
#include "core/support/error.h"

namespace souffle::cli {

namespace {

int calibrate_from_timelines(const CalibrateCliOptions& o) {
  std::optional<gpu::Calibration> base;
  if (!o.base.empty()) base = gpu::load_calibration(o.base);
  gpu::Calibration c = calibration_from_timelines(o.from_timeline, base);
  const std::string text = gpu::calibration_json(c);
  {
    std::ofstream f(o.out, std::ios::trunc);
    f << text;
    if (!f) throw UserError(o.out, "", "cannot write the calibration file");
  }
  if (o.json) {
    std::cout << text;
    return 0;
  }
  std::cout << fmt::format(
      "stage estimates of {} corrected per schedule template (measured / "
      "estimated, median over its stages; the pricer's figures stay "
      "estimates):\n",
      c.device);
  for (const gpu::StageCorrection& s : c.stage_corrections)
    std::cout << "  " << s.describe() << "\n";
  std::cout << "wrote " << o.out << " (plan --calibration " << o.out << " prices with it)\n";
  return 0;
}

}  // namespace

int run_calibrate(const CalibrateCliOptions& o) {
  if (o.out.empty()) throw UserError("--out FILE is needed: where the calibration file goes");
  if (!o.from_timeline.empty()) return calibrate_from_timelines(o);
  if (!o.base.empty())
    throw UserError(
        "--calibration FILE goes with --from-timeline: it names the calibration the "
        "timeline's corrections join");
  ProfileOptions po;
  po.backend = "cuda";
  po.runner = o.runner;
  std::string why = profile_unavailable_reason(po);
  if (!why.empty() && o.runner.empty() && !gpu::cuda_device().available())
    why = gpu::cuda_device().reason +
          ": calibration measures a GPU (--runner CMD uses one elsewhere)";
  if (!why.empty()) throw UserError(why);
  std::string cmd = o.runner.empty() ? "'" + default_runner_path() + "'" : o.runner;
  cmd += " --backend cuda";
  nlohmann::json answer;
  try {
    RunnerProcess p(cmd);
    nlohmann::json h = p.call({{"op", "hello"}, {"protocol", 1}}, 60);
    if (h.contains("unavailable"))
      throw UserError(h["unavailable"].get<std::string>() + " (runner: " + cmd + ")");
    answer = p.call({{"op", "calibrate"}, {"out", o.out}}, o.timeout_s);
  } catch (const RunnerFailure& e) {
    std::cerr << "error: calibration failed: " << e.what() << "\n";
    return 1;
  }
  gpu::Calibration c = gpu::parse_calibration(answer["calibration"].dump(), o.out);
  if (o.json) {
    std::cout << answer["calibration"].dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{} (cc {}, {} SMs, driver {}), {}\n", c.device, c.compute_capability,
                           c.sm_count, c.driver_version, c.date)
            << fmt::format("  launch overhead {:.2f} us back to back, {:.2f} us as graph nodes\n",
                           c.launch_overhead_us, c.graph_launch_us);
  for (const gpu::BarrierSample& s : c.grid_barrier)
    std::cout << fmt::format("  grid barrier at {:5d} blocks ({} per SM): {:.2f} us\n", s.blocks,
                             s.blocks_per_sm, s.us);
  std::cout << fmt::format("  fit: {:.3f} us + {:.5f} us per block\n", c.grid_barrier_fit.base,
                           c.grid_barrier_fit.slope)
            << fmt::format("  copy bandwidth {:.0f} GB/s\n", c.dram_bandwidth_gbps);
  auto rate = [&](const char* what, double tflops, const std::string& tile) {
    if (tflops > 0)
      std::cout << fmt::format("  {} GEMM (4096 cubed, the project's kernel) {:.1f} TFLOP/s: {}\n",
                               what, tflops, tile);
    else
      std::cout << fmt::format("  {} GEMM: not measured (the spec's peak is used)\n", what);
  };
  rate("fp32 SIMT", c.gemm_fp32_tflops, c.gemm_fp32_tile);
  rate("fp16 tensor-core", c.gemm_fp16_tflops, c.gemm_fp16_tile);
  if (!c.gemm_note.empty()) std::cout << "  (" << c.gemm_note << ")\n";
  std::cout << "wrote " << o.out << "\n";
  return 0;
}

}  // namespace souffle::cli
