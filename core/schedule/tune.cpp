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

/// The mainloop of tensor-core tile `e.tile` built on `p` priced from its structure, as
/// schedule::price_kernel prices the built stage: its blocks on their SMs at the occupancy its
/// registers and shared memory leave.
double mainloop_us(const GemmProblem& p, const TileEstimate& e, const TuneOptions& o,
                   const gpu::CostConstants& cc) {
  const gpu::MmaMainloop m = gpu::mma_mainloop(e.tile, operands_of(p, o.precision), o.precision);
  gpu::StageWork w;
  w.flops = 2 * p.batch * p.m * p.n * p.k;
  w.tensor_core = true;
  w.mainloop = gpu::mma_mainloop_structure(e.tile, m);
  w.grid = e.blocks;
  w.block = e.threads;
  w.regs = static_cast<int>(e.regs_per_thread);
  w.smem = e.smem_bytes;
  return gpu::stage_cost(o.gpu, cc, w).mainloop.total_us;
}

/// `t` (tensor-core, depth open) at the depth whose mainloop prices lowest: 2..4 stages where a
/// copy is asynchronous (deeper rings hide more of the load's latency but take shared memory,
/// and so co-resident blocks), else 2 (the converted operands run one stage ahead whatever the
/// ring holds). The shallower of equal prices.
bool estimate(const GemmProblem& p, const gpu::Tile& t, const TuneOptions& o,
              const gpu::CostConstants& cc, TileEstimate& e) {
  if (!t.tensor_core || t.stages > 0 || cc.tensor_tflops <= 0 || !gpu::mma_warp_tile(t)) {
    if (!estimate_at(p, t, o, e)) return false;
    if (t.tensor_core && cc.tensor_tflops > 0) e.mainloop_us = mainloop_us(p, e, o, cc);
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
      ed.mainloop_us = mainloop_us(p, ed, o, cc);
      if (!found || ed.mainloop_us < e.mainloop_us * (1 - 1e-9)) {
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
  s += "), " + mb(load_bytes) + " loaded, model " + fmt("%.2f", total_us) + " us (compute " +
       fmt("%.2f", compute_us) + ", memory " + fmt("%.2f", memory_us) + ")";
  if (tile.tensor_core && mainloop_us > 0) s += ", mainloop " + fmt("%.2f", mainloop_us) + " us";
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
