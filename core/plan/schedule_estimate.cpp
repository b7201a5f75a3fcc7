#include "core/plan/schedule_estimate.h"

#include <fmt/format.h>
#include <algorithm>
#include "core/support/int_math.h"

namespace souffle::plan {

namespace {

/// The planner's tiles read operands 4 bytes wide (fp32).
constexpr int64_t kElem = 4;

PlannerTile tile(int64_t m, int64_t n, int64_t tm, int64_t tn, int64_t regs) {
  return {{m, n, 32, tm, tn, true, false}, regs};
}

}  // namespace

const std::vector<PlannerTile>& tile_candidates() {
  static const std::vector<PlannerTile> c = {
      tile(128, 128, 8, 8, 128), tile(128, 64, 8, 4, 96), tile(64, 64, 8, 4, 96),
      tile(64, 32, 4, 4, 64),    tile(32, 32, 4, 4, 64),
  };
  return c;
}

std::string ScheduleEstimate::describe() const {
  return fmt::format("{}x{} tiles, {} blocks of {} threads", tile.bm, tile.bn, blocks,
                     resources.threads);
}

void gemm_view(const Shape& shape, bool conv, int64_t& batch, int64_t& m, int64_t& n) {
  batch = 1;
  m = 1;
  n = 1;
  size_t r = shape.size();
  if (conv && r >= 4) {
    m = shape[r - 3];
    n = shape[r - 4] * shape[r - 2] * shape[r - 1];
    for (size_t i = 0; i + 4 < r; ++i) batch *= shape[i];
    return;
  }
  if (r == 0) return;
  n = shape.back();
  if (r >= 2) m = shape[r - 2];
  for (size_t i = 0; i + 2 < r; ++i) batch *= shape[i];
}

std::vector<ScheduleEstimate> estimate_schedules(const analysis::TeInfo& te,
                                                 const gpu::GpuSpec& spec) {
  std::vector<ScheduleEstimate> out;
  int64_t batch, m, n;
  gemm_view(te.shape, te.origin_op.find("Conv") != std::string::npos, batch, m, n);
  int64_t points = std::max<int64_t>(1, batch * m * n);
  // The reduction depth a tile walks: the TE's iterations per output element.
  int64_t depth = std::max<int64_t>(1, te.iterations / points);
  double flop_per_point = double(te.flops) / double(points);
  double sm_flops = spec.peak_fp32_tflops * 1e12 / std::max(spec.sm_count, 1);
  double sm_bw = spec.dram_bandwidth_gbps * 1e9 / std::max(spec.sm_count, 1);
  for (const PlannerTile& pt : tile_candidates()) {
    const gpu::Tile& c = pt.tile;
    ScheduleEstimate e;
    e.tile = c;
    e.resources = gpu::tile_resources(c, kElem, gpu::Precision::FP32);
    e.resources.regs_per_thread = pt.regs_per_thread;
    const gpu::TileResources& r = e.resources;
    e.batch = batch;
    e.m = m;
    e.n = n;
    e.blocks = batch * ceil_div(m, c.bm) * ceil_div(n, c.bn);
    gpu::Occupancy occ = gpu::occupancy(spec, static_cast<int>(r.threads),
                                        static_cast<int>(r.regs_per_thread), r.smem_bytes);
    e.co_resident = occ.total_blocks;
    if (occ.blocks_per_sm <= 0 || spec.sm_count <= 0) {
      e.est_us = 1e30;
      out.push_back(e);
      continue;
    }
    // Blocks resident on one SM in the busiest wave share its FLOPs and bandwidth.
    int64_t waves = ceil_div(e.blocks, e.co_resident);
    int64_t per_sm = std::min<int64_t>(occ.blocks_per_sm, ceil_div(e.blocks, spec.sm_count));
    double tile_flops = flop_per_point * double(c.bm * c.bn);
    double tile_bytes = double(c.bm + c.bn) * double(depth) * kElem + double(c.bm * c.bn) * kElem;
    double wave_us = std::max(tile_flops * per_sm / sm_flops, tile_bytes * per_sm / sm_bw) * 1e6;
    e.est_us = double(waves) * wave_us;
    out.push_back(e);
  }
  return out;
}

ScheduleEstimate best_schedule(const analysis::TeInfo& te, const gpu::GpuSpec& spec) {
  std::vector<ScheduleEstimate> all = estimate_schedules(te, spec);
  SOUFFLE_CHECK(!all.empty(), "no tile candidates");
  size_t best = 0;
  for (size_t i = 1; i < all.size(); ++i)
    if (all[i].est_us < all[best].est_us * 0.99) best = i;
  return all[best];
}

}  // namespace souffle::plan
