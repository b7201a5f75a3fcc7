#include "core/schedule/tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "core/schedule/template_util.h"

namespace souffle::schedule {

using detail::ceil_div;

namespace {

/// FMAs an SM needs in flight to keep its FP32 pipes busy (lanes x dependent-issue latency,
/// rounded up over the GPUs in resources/gpus.json); fewer resident accumulators leave it idle.
constexpr double kInflightFmas = 512;
/// Warps an SM needs resident to issue every clock (one per scheduler).
constexpr double kMinWarpsPerSm = 4;
/// FMAs per shared-memory word loaded that keep a register tile compute-bound (an SM issues
/// about twice as many FP32 FMAs as 4-byte shared loads per clock).
constexpr double kReuseNeeded = 2;
/// The edge of an MMA fragment.
constexpr int64_t kFragEdge = 16;
/// Independent MMAs an SM needs in flight to keep its tensor cores busy (4 sub-partitions, each
/// issuing back to back only across a few independent accumulators).
constexpr double kInflightMmas = 16;
/// MMAs per fragment loaded from shared memory that keep a warp tile compute-bound: at the
/// tensor-core rate one 16x16 fragment load (512 bytes at 128 bytes a clock) takes as long as
/// one MMA on an SM's tensor cores, for fp16/bf16 and tf32 alike.
constexpr double kTcReuseNeeded = 1;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string mb(int64_t bytes) {
  double v = double(bytes) / 1e6;
  return fmt(v >= 10 ? "%.0f MB" : v >= 0.1 ? "%.2f MB" : "%.4f MB", v);
}

gpu::MmaOperands operands_of(const GemmProblem& p, gpu::Precision precision) {
  const gpu::MmaElem plain = gpu::mma_elem_of(p.in_bytes, precision);
  return p.operands_known ? p.operands : gpu::MmaOperands{plain, plain};
}

/// The estimate of `t` on `p`, or false when the tile does not fit the GPU.
bool estimate_at(const GemmProblem& p, const gpu::Tile& t, const TuneOptions& o, TileEstimate& e) {
  const gpu::GpuSpec& s = o.gpu;
  e = {};
  e.tile = t;
  e.threads = t.threads();
  if (e.threads < s.warp_size || e.threads > s.max_threads_per_block) return false;
  if (o.limits.threads > 0 && e.threads != o.limits.threads) return false;
  // tf32's B fragments are read with 32-bit shared loads, rows t and t + 4 of eight columns;
  // the swizzle keeps those on distinct banks only in rows of 8 or more 16-byte chunks
  // (docs/mainloop.md): narrower tiles of the Ampere mainloop meet bank conflicts.
  if (t.tensor_core && o.precision == gpu::Precision::TF32 && gpu::mma_warp_tile(t) &&
      t.bn * 4 < 8 * 16)
    return false;
  const gpu::MmaOperands ops = operands_of(p, o.precision);
  const gpu::TileResources r = gpu::tile_resources(t, p.in_bytes, o.precision, &ops);
  e.regs_per_thread = r.regs_per_thread;
  e.smem_bytes = r.smem_bytes;
  if (e.regs_per_thread > s.max_registers_per_thread) return false;
  if (e.smem_bytes > s.max_shared_memory_per_block) return false;
  gpu::Occupancy occ = gpu::occupancy(s, static_cast<int>(e.threads),
                                      static_cast<int>(e.regs_per_thread), e.smem_bytes);
  if (occ.blocks_per_sm <= 0) return false;
  e.blocks_per_sm = occ.blocks_per_sm;
  e.co_resident = occ.total_blocks;
  e.limited_by = occ.limited_by;
  const int64_t mt = ceil_div(p.m, t.bm), nt = ceil_div(p.n, t.bn), ks = ceil_div(p.k, t.bk);
  e.blocks = p.batch * mt * nt;
  if (o.limits.fit_co_resident && e.blocks > e.co_resident) return false;
  e.waves = double(e.blocks) / double(e.co_resident);

  // Compute: whole tiles (padding included) at the SM's share of the peak, discounted when
  // the register tile reuses shared loads too little or too few accumulators are resident.
  const double sm_rate = gpu::peak_flops(s, o.precision) / s.sm_count;
  const double block_flops = 2.0 * double(t.bm * t.bn) * double(ks * t.bk);
  // The register tile's reuse of shared loads: a thread's tm x tn FMAs per tm + tn words, or a
  // warp's tm x tn MMAs per tm + tn fragments.
  const double reuse = std::min(1.0, double(t.tm * t.tn) / double(t.tm + t.tn) /
                                         (t.tensor_core ? kTcReuseNeeded : kReuseNeeded));
  auto wave_us = [&](int64_t blocks_on_sm) {
    const double warps = double(blocks_on_sm * e.threads) / s.warp_size;
    const double inflight = t.tensor_core
                                ? warps * double(t.tm * t.tn) / kInflightMmas
                                : double(blocks_on_sm * e.threads * t.tm * t.tn) / kInflightFmas;
    double busy = std::min(1.0, inflight) * std::min(1.0, warps / kMinWarpsPerSm);
    return double(blocks_on_sm) * block_flops / (sm_rate * reuse * busy) * 1e6;
  };
  const int64_t full = e.blocks / e.co_resident, rem = e.blocks % e.co_resident;
  e.compute_us = double(full) * wave_us(e.blocks_per_sm) +
                 (rem > 0 ? wave_us(ceil_div(rem, s.sm_count)) : 0.0);

  // Memory: every block loads its A row panel and B column panel and writes its tile once;
  // a grid on few SMs cannot draw the whole bandwidth (one SM draws about twice its share).
  e.load_bytes =
      p.batch * (p.m * p.k * nt + p.k * p.n * mt) * p.in_bytes + p.batch * p.m * p.n * p.out_bytes;
  const double active = double(std::min<int64_t>(e.blocks, s.sm_count)) / s.sm_count;
  const double bw = s.dram_bandwidth_gbps * 1e9 * std::min(1.0, 2.0 * active);
  e.memory_us = double(e.load_bytes) / bw * 1e6;

  // Double buffering overlaps a tile's loads with the previous tile's math; a single buffer
  // exposes them except where other resident blocks fill the gap.
  const double hi = std::max(e.compute_us, e.memory_us), lo = std::min(e.compute_us, e.memory_us);
  e.total_us = t.double_buffer ? hi : hi + lo / e.blocks_per_sm;
  return true;
}

/// Tensor-core tile `e.tile` (estimate_at filled) priced from the structure it builds:
///  - the mainloop (gpu::mma_mainloop_structure, gpu::stage_cost's mainloop_cost, as
///    schedule::price_kernel prices the built stage) on the FLOPs the tile computes, padding
///    included (whole bm x bn tiles, ceil(k / bk) trips of bk), at the occupancy its registers
///    and shared memory leave, over the waves of its grid;
///  - the operand traffic of the whole grid: each block reads its A row panel and B column
///    panel, and writes its output tile. A panel's first read comes from DRAM; its re-reads by
///    other blocks from L2 where the reuse distance in launch order fits the L2 (a tensor
///    touched again within the L2's size is an L2 hit, as price_kernel takes it) or the
///    readers share a wave, else from DRAM again; at the bandwidth cost model v2 gives the
///    grid (gpu::stage_cost: a grid on few SMs, or with few warps per SM, draws less);
///  - a pipelined mainloop (cp.async) overlaps the traffic with the MMAs: its K loop costs the
///    greater of the two; synchronous staging exposes the loads: the MMAs plus the greater of
///    the traffic and the mainloop's own loads. Then the pipeline's fill and the epilogue per
///    wave.
/// Sets mainloop_us, compute_us (the K loop's MMAs and shared traffic), memory_us (the
/// traffic), dram_bytes, l2_bytes and total_us.
void price_structure(const GemmProblem& p, TileEstimate& e, const TuneOptions& o,
                     const gpu::CostConstants& cc) {
  const gpu::Tile& t = e.tile;
  const gpu::MmaMainloop m = gpu::mma_mainloop(t, operands_of(p, o.precision), o.precision);
  const int64_t mt = ceil_div(p.m, t.bm), nt = ceil_div(p.n, t.bn), ks = ceil_div(p.k, t.bk);
  gpu::StageWork w;
  w.flops = 2 * p.batch * (mt * t.bm) * (nt * t.bn) * (ks * t.bk);
  w.tensor_core = true;
  w.mainloop = gpu::mma_mainloop_structure(t, m);
  w.grid = e.blocks;
  w.block = e.threads;
  w.regs = static_cast<int>(e.regs_per_thread);
  w.smem = e.smem_bytes;
  const gpu::StageCost sc = gpu::stage_cost(o.gpu, cc, w);
  const gpu::MainloopCost& ml = sc.mainloop;
  e.mainloop_us = ml.total_us;
  const double waves = double(std::max<int64_t>(sc.waves, 1));
  const double trips = waves * double(ml.steps);

  // Operand traffic. Blocks run N tile fastest, then M, then the batch (schedule/gemm_mma.cpp),
  // so the nt blocks that share an A row panel run one after another: its first read comes
  // from DRAM, the others from L2. The blocks sharing a B column panel are a row of tiles
  // apart: an L2 hit while B and one A panel fit the L2 (touched again within the L2's size),
  // or while they run in the same wave; else B comes from DRAM once per wave's rows.
  const int64_t a_bytes = p.m * p.k * p.in_bytes, b_bytes = p.k * p.n * p.in_bytes;
  const int64_t out_bytes = p.batch * p.m * p.n * p.out_bytes;
  const int64_t rows_per_wave = std::max<int64_t>(1, e.co_resident / nt);
  const int64_t b_reads = b_bytes + t.bm * p.k * p.in_bytes <= cc.l2_bytes
                              ? 1
                              : std::min<int64_t>(mt, ceil_div(mt, rows_per_wave));
  e.dram_bytes = p.batch * (a_bytes + b_reads * b_bytes) + out_bytes;
  e.l2_bytes = p.batch * (a_bytes * (nt - 1) + b_bytes * (mt - b_reads));
  // At the bandwidth cost model v2 gives the grid (price_kernel's stage_cost: the SMs it
  // occupies, each drawing at most a few times its share, and only with enough warps).
  gpu::StageWork mw = w;
  mw.flops = 0;
  mw.tensor_core = false;
  mw.dram_read_bytes = e.dram_bytes - out_bytes;
  mw.write_bytes = out_bytes;
  mw.l2_read_bytes = e.l2_bytes;
  const gpu::StageCost msc = gpu::stage_cost(o.gpu, cc, mw);
  e.memory_us = msc.dram_us + msc.l2_us;

  // The K loop: MMAs and shared traffic, loads overlapped (pipelined) or exposed (synchronous).
  const bool pipelined = w.mainloop.staging == gpu::MainloopStructure::Staging::Pipelined;
  e.compute_us = trips * ml.compute_us;
  const double loop = pipelined ? std::max(trips * ml.step_us, e.memory_us)
                                : e.compute_us + std::max(e.memory_us, trips * ml.load_us);
  e.total_us = std::max(loop + waves * (ml.fill_us + ml.epilogue_us), sc.flop_us);
}

/// `t` (tensor-core, depth open) at the depth, and for f32 operands under fp16/bf16 the staging
/// (an f32 ring or the conversion through registers), that price_structure prices lowest:
/// 2..4 stages where a copy is asynchronous (deeper rings hide more of the load's latency but
/// take shared memory, and so co-resident blocks), else 2 (the converted operands run one
/// stage ahead whatever the ring holds). Of equal prices the lower mainloop, then the
/// shallower.
bool estimate(const GemmProblem& p, const gpu::Tile& t, const TuneOptions& o,
              const gpu::CostConstants& cc, TileEstimate& e) {
  if (!t.tensor_core || t.stages > 0 || cc.tensor_tflops <= 0 || !gpu::mma_warp_tile(t)) {
    if (!estimate_at(p, t, o, e)) return false;
    if (t.tensor_core && cc.tensor_tflops > 0) price_structure(p, e, o, cc);
    return true;
  }
  // f32 operands under fp16/bf16: converted through registers, or an f32 cp.async ring (twice
  // the ring's shared memory and a conversion per K step, the copies asynchronous).
  const gpu::MmaOperands ops = operands_of(p, o.precision);
  const bool may_widen = o.precision != gpu::Precision::TF32 &&
                         (ops.a == gpu::MmaElem::F32 || ops.b == gpu::MmaElem::F32);
  bool found = false;
  for (bool ring : {false, true}) {
    if (ring && !may_widen) continue;
    gpu::Tile tr = t;
    tr.f32_ring = ring;
    const bool async = gpu::mma_mainloop(tr, ops, o.precision).any_async();
    for (int64_t d = 2; d <= (async ? 4 : 2); ++d) {
      gpu::Tile td = tr;
      td.stages = d;
      TileEstimate ed;
      if (!estimate_at(p, td, o, ed)) continue;
      price_structure(p, ed, o, cc);
      // The lowest total; of equal totals (the traffic bounds both) the lower mainloop, which
      // leaves more slack to the traffic; then the shallower.
      const bool lower = ed.total_us < e.total_us * (1 - 1e-9);
      const bool equal = !lower && ed.total_us <= e.total_us * (1 + 1e-9);
      if (!found || lower || (equal && ed.mainloop_us < e.mainloop_us * (1 - 1e-9))) {
        e = std::move(ed);
        found = true;
      }
    }
  }
  return found;
}

bool better(const TileEstimate& a, const TileEstimate& b) {
  auto close = [](double x, double y) { return std::abs(x - y) <= 1e-6 * std::max(x, y); };
  if (!close(a.total_us, b.total_us)) return a.total_us < b.total_us;
  if (a.load_bytes != b.load_bytes) return a.load_bytes < b.load_bytes;
  if (!close(a.waves, b.waves)) return a.waves < b.waves;
  const gpu::Tile &x = a.tile, &y = b.tile;
  return std::make_tuple(x.double_buffer, x.bm * x.bn, x.bk, x.tm * x.tn, x.bm, x.tm) >
         std::make_tuple(y.double_buffer, y.bm * y.bn, y.bk, y.tm * y.tn, y.bm, y.tm);
}

}  // namespace

ScheduleConfig with_tile(ScheduleConfig c, const gpu::Tile& t) {
  if (t.tensor_core) {
    c.tc_tile = t;
    return c;
  }
  c.tc_tile.bm = 0;  // a tensor-core GEMM given a SIMT tile keeps its tile from the block size
  c.gemm_tile = t;
  return c;
}

GemmProblem gemm_problem(const te::ComputeOp& op) {
  detail::GemmParts g;
  SOUFFLE_CHECK(detail::match_gemm(op, g), "gemm_problem: " + op.name + " is not GEMM-like");
  GemmProblem p;
  p.batch = detail::extent_product(g.batch);
  p.m = detail::extent_product(g.rows);
  p.n = detail::extent_product(g.cols);
  p.k = detail::extent_product(op.reduce_axes);
  p.in_bytes = std::max<int64_t>(dtype_size(g.a.dtype()), dtype_size(g.b.dtype()));
  p.out_bytes = dtype_size(op.output->dtype);
  p.operands = detail::mma_operands(op, g);
  p.operands_known = true;
  return p;
}

std::vector<gpu::Tile> tile_space() {
  std::vector<gpu::Tile> out;
  // BN 1 serves matrix-vector products (depthwise convolutions); BM 256 lets them fill a block.
  for (int64_t bm : {16, 32, 64, 128, 256})
    for (int64_t bn : {1, 16, 32, 64, 128})
      for (int64_t bk : {8, 16, 32})
        for (int64_t tm : {1, 2, 4, 8})
          for (int64_t tn : {1, 2, 4, 8})
            for (bool db : {false, true})
              if (tm <= bm && tn <= bn) out.push_back({bm, bn, bk, tm, tn, db});
  return out;
}

std::vector<gpu::Tile> tensor_core_tile_space() {
  std::vector<gpu::Tile> out;
  for (int64_t wm : {1, 2, 4})
    for (int64_t wn : {1, 2, 4})
      for (int64_t fm : {1, 2, 4})
        for (int64_t fn : {1, 2, 4})
          for (int64_t bk : {16, 32, 64})
            // Single-buffered only for now: the template double-buffers (with_tile), but its
            // staged registers (one per element) push ptxas past 230 registers per thread.
            out.push_back({wm * fm * kFragEdge, wn * fn * kFragEdge, bk, fm, fn, false, true});
  return out;
}

std::string TileEstimate::why() const {
  std::string s = (tile.tensor_core ? "gemm_tc " : "gemm ") + tile.describe() + ", " +
                  std::to_string(blocks) + " blocks = " + fmt("%.2f", waves) + " waves (" +
                  std::to_string(blocks_per_sm) + " per SM";
  if (!limited_by.empty()) s += ", " + limited_by;
  s += "), " + mb(load_bytes) + " loaded";
  if (tile.tensor_core && mainloop_us > 0) {
    s += " (DRAM " + mb(dram_bytes) + ", L2 " + mb(l2_bytes) + "), model " + fmt("%.2f", total_us) +
         " us (K loop compute " + fmt("%.2f", compute_us) + ", traffic " + fmt("%.2f", memory_us) +
         "), mainloop " + fmt("%.2f", mainloop_us) + " us";
  } else {
    s += ", model " + fmt("%.2f", total_us) + " us (compute " + fmt("%.2f", compute_us) +
         ", memory " + fmt("%.2f", memory_us) + ")";
  }
  if (measured_us >= 0) s += ", measured " + fmt("%.2f", measured_us) + " us";
  return s;
}

namespace {

/// Everything rank_tiles reads: the problem, the GPU's name and figures (doubles exactly, in
/// hexadecimal), the precision and the limits.
std::string rank_key(const GemmProblem& p, const TuneOptions& o) {
  const gpu::GpuSpec& g = o.gpu;
  std::string key = g.name + "|" + g.compute_capability;
  for (int64_t v : {p.batch,
                    p.m,
                    p.n,
                    p.k,
                    p.in_bytes,
                    p.out_bytes,
                    static_cast<int64_t>(o.precision),
                    static_cast<int64_t>(p.operands_known),
                    static_cast<int64_t>(p.operands.a),
                    static_cast<int64_t>(p.operands.b),
                    o.limits.threads,
                    static_cast<int64_t>(o.limits.fit_co_resident),
                    int64_t{g.sm_count},
                    int64_t{g.max_threads_per_sm},
                    int64_t{g.max_threads_per_block},
                    int64_t{g.max_blocks_per_sm},
                    int64_t{g.registers_per_sm},
                    int64_t{g.max_registers_per_block},
                    int64_t{g.max_registers_per_thread},
                    g.shared_memory_per_sm,
                    g.max_shared_memory_per_block,
                    g.reserved_shared_memory_per_block,
                    int64_t{g.warp_size},
                    g.l2_bytes,
                    g.dram_bytes})
    key += "|" + std::to_string(v);
  for (double v : {g.dram_bandwidth_gbps, g.peak_fp32_tflops, g.peak_tf32_tflops,
                   g.peak_fp16_tflops, g.launch_overhead_us, g.grid_sync_overhead_us}) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "|%a", v);
    key += buf;
  }
  return key;
}

}  // namespace

bool estimate_tile(const GemmProblem& p, const gpu::Tile& t, const TuneOptions& o,
                   TileEstimate& out) {
  SOUFFLE_CHECK(o.gpu.sm_count > 0, "estimate_tile: no GPU spec");
  const bool tc = o.precision != gpu::Precision::FP32;
  return estimate(p, t, o, gpu::cost_constants(o.gpu, tc ? o.precision : gpu::Precision::FP32),
                  out);
}

std::vector<TileEstimate> rank_tiles(const GemmProblem& p, const TuneOptions& o) {
  SOUFFLE_CHECK(o.gpu.sm_count > 0, "rank_tiles: no GPU spec");
  // A pure function of its key that a plan asks again for every candidate kernel holding a
  // GEMM, and for every GEMM of the same shape: its answers are kept (up to kKept keys; then
  // they start over).
  constexpr size_t kKept = 1024;
  static std::mutex mutex;
  static std::unordered_map<std::string, std::vector<TileEstimate>> kept;
  const std::string key = rank_key(p, o);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kept.find(key);
    if (it != kept.end()) return it->second;
  }
  std::vector<TileEstimate> out;
  const bool tc = o.precision != gpu::Precision::FP32;
  const gpu::CostConstants cc = gpu::cost_constants(o.gpu, o.precision);
  for (const gpu::Tile& t : tc ? tensor_core_tile_space() : tile_space()) {
    TileEstimate e;
    if (estimate(p, t, o, cc, e)) out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), better);
  std::lock_guard<std::mutex> lock(mutex);
  if (kept.size() >= kKept) kept.clear();
  kept.emplace(key, out);
  return out;
}

std::string TuneResult::reason() const {
  if (ranked.empty()) return "no tile fits";
  std::string s = best().why() + "; best of " + std::to_string(ranked.size());
  if (measured) s += " (measured)";
  if (ranked.size() > 1) {
    const TileEstimate& n = ranked[1];
    s += ", next " + n.tile.describe() + " at " +
         fmt("%.2f", n.measured_us >= 0 ? n.measured_us : n.total_us) + " us";
  }
  return s;
}

TuneResult tune_gemm(const te::ComputeOp& op, const TuneOptions& o) {
  TuneResult r;
  // The kernels take the SIMT template for a GEMM the tensor cores cannot (integer operands):
  // rank its tiles at the FP32 rate.
  detail::GemmParts g;
  detail::match_gemm(op, g);
  ScheduleConfig sc;
  sc.precision = o.precision;
  TuneOptions ranking = o;
  if (!detail::tensor_core_eligible(op, g, sc)) ranking.precision = gpu::Precision::FP32;
  r.ranked = rank_tiles(gemm_problem(op), ranking);
  if (!o.measure || r.ranked.empty()) return r;
  size_t top = std::min(o.measure_top, r.ranked.size());
  std::vector<TileEstimate> head(r.ranked.begin(), r.ranked.begin() + static_cast<long>(top));
  std::vector<double> times = o.measure(op, head);
  SOUFFLE_CHECK(times.size() == head.size(), "tune: the measure gave another count of times");
  for (size_t i = 0; i < top; ++i) head[i].measured_us = times[i];
  // Measured tiles first, fastest first; failed ones after them in model order.
  std::stable_sort(head.begin(), head.end(), [](const TileEstimate& a, const TileEstimate& b) {
    bool ok_a = a.measured_us >= 0, ok_b = b.measured_us >= 0;
    if (ok_a != ok_b) return ok_a;
    return ok_a && a.measured_us < b.measured_us;
  });
  std::copy(head.begin(), head.end(), r.ranked.begin());
  // Measured only when some candidate was: with none, the model's order stands as it was.
  r.measured = std::any_of(times.begin(), times.end(), [](double t) { return t >= 0; });
  return r;
}

}  // namespace souffle::schedule
