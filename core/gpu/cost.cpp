#include "core/gpu/cost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "core/support/error.h"

namespace souffle::gpu {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::FP16:
      return "fp16";
    case Precision::BF16:
      return "bf16";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16})
    if (n == precision_name(p)) return p;
  throw UserError("unknown precision '" + name + "' (fp32, tf32, fp16 or bf16)");
}

namespace {

/// bf16 tensor cores arrived with compute capability 8.0 (Ampere); the datasheets give them the
/// fp16 rate there.
bool has_bf16_tensor_cores(const GpuSpec& spec) {
  return std::atof(spec.compute_capability.c_str()) >= 8.0;
}

}  // namespace

double peak_flops(const GpuSpec& spec, Precision p) {
  double tflops = spec.peak_fp32_tflops;
  if (p == Precision::TF32 && spec.peak_tf32_tflops > 0) tflops = spec.peak_tf32_tflops;
  if (p == Precision::FP16 && spec.peak_fp16_tflops > 0) tflops = spec.peak_fp16_tflops;
  if (p == Precision::BF16 && spec.peak_fp16_tflops > 0 && has_bf16_tensor_cores(spec))
    tflops = spec.peak_fp16_tflops;
  return tflops * 1e12;
}

int64_t on_chip_capacity(const GpuSpec& spec) {
  return int64_t{spec.sm_count} * spec.shared_memory_per_sm;
}

KernelTraffic kernel_traffic(const std::vector<KernelTensor>& tensors, int64_t on_chip_bytes) {
  KernelTraffic t;
  // Bytes on chip per stage; a tensor without a known range occupies every stage.
  int stages = 1;
  for (const KernelTensor& k : tensors) stages = std::max(stages, k.last_stage + 1);
  std::vector<int64_t> used(static_cast<size_t>(stages), 0);
  for (const KernelTensor& k : tensors) {
    if (!k.produced_inside) {
      t.read_bytes += k.bytes;
      continue;
    }
    if (k.needed_outside) {
      // Written once; readers inside the kernel use the on-chip copy they were given.
      t.write_bytes += k.bytes;
      continue;
    }
    if (!k.crosses_sync) continue;  // registers of the producing stage
    bool known = k.first_stage >= 0 && k.last_stage >= k.first_stage;
    size_t lo = known ? static_cast<size_t>(k.first_stage) : 0;
    size_t hi = known ? static_cast<size_t>(k.last_stage) : used.size() - 1;
    int64_t peak = 0;
    for (size_t s = lo; s <= hi; ++s) peak = std::max(peak, used[s]);
    if (peak + k.bytes <= on_chip_bytes) {
      for (size_t s = lo; s <= hi; ++s) used[s] += k.bytes;
      t.on_chip.push_back(k.name);
    } else {
      t.write_bytes += k.bytes;
      t.read_bytes += k.bytes;
      t.spilled.push_back(k.name);
    }
  }
  t.dram_bytes = t.read_bytes + t.write_bytes;
  return t;
}

KernelCost kernel_cost(const GpuSpec& spec, int64_t flops, int64_t dram_bytes, int grid_syncs,
                       Precision precision) {
  KernelCost c;
  double peak = peak_flops(spec, precision);
  double bw = spec.dram_bandwidth_gbps * 1e9;
  c.compute_us = peak > 0 ? double(flops) / peak * 1e6 : 0;
  c.memory_us = bw > 0 ? double(dram_bytes) / bw * 1e6 : 0;
  c.launch_us = spec.launch_overhead_us;
  c.sync_us = spec.grid_sync_overhead_us * grid_syncs;
  c.bound = c.compute_us > c.memory_us ? "compute" : "memory";
  c.total_us = std::max(c.compute_us, c.memory_us) + c.launch_us + c.sync_us;
  return c;
}

// ---- cost model v2 ----

CostConstants cost_constants(const GpuSpec& spec, Precision precision,
                             const Calibration* calibration) {
  CostConstants c;
  c.precision = precision;
  c.launch_us = spec.launch_overhead_us;
  c.dram_gbps = spec.dram_bandwidth_gbps;
  c.l2_bytes = spec.l2_bytes;
  c.simt_tflops = spec.peak_fp32_tflops;
  c.tensor_tflops = precision == Precision::FP32 ? 0 : peak_flops(spec, precision) / 1e12;
  if (c.tensor_tflops <= spec.peak_fp32_tflops) c.tensor_tflops = 0;
  c.barrier_us = spec.grid_sync_overhead_us;
  c.flag_release_us = kFlagReleaseShare * c.barrier_us;
  c.flag_poll_us = kFlagPollShare * c.barrier_us;
  c.source = "spec " + spec.name;
  if (calibration) {
    const Calibration& k = *calibration;
    c.calibration = calibration;
    c.calibrated = true;
    std::vector<std::string> used;
    if (k.launch_overhead_us > 0) {
      c.launch_us = k.launch_overhead_us;
      used.push_back("launch");
    }
    if (k.dram_bandwidth_gbps > 0) {
      c.dram_gbps = k.dram_bandwidth_gbps;
      used.push_back("bandwidth");
    }
    if (k.gemm_fp32_tflops > 0) {
      c.simt_tflops = k.gemm_fp32_tflops;
      used.push_back("fp32 GEMM rate");
    }
    if (k.gemm_fp16_tflops > 0 && c.tensor_tflops > 0) {
      c.tensor_tflops = k.gemm_fp16_tflops;
      c.tensor_calibrated = true;
      c.tensor_template =
          k.gemm_fp16_template.empty() ? std::string("wmma, synchronous") : k.gemm_fp16_template;
      used.push_back("tensor-core GEMM rate (" + c.tensor_template + ")");
    }
    if (k.has_barrier()) {
      used.push_back(k.has_flags() ? "grid barrier against grid size"
                                   : "grid barrier against grid size (flag costs as shares of it)");
      const double base = grid_barrier_us(k, std::max(spec.sm_count, 1));
      c.flag_release_us = kFlagReleaseShare * base;
      c.flag_poll_us = kFlagPollShare * base;
    }
    if (k.has_flags()) {
      // A measured round is a release and one awaited tile; each further tile one more poll.
      used.push_back("per-tile flag release and wait");
      c.flag_poll_us = k.flag_tile_us > 0 ? k.flag_tile_us : c.flag_poll_us;
      c.flag_release_us = std::max(0.0, k.flag_round_us - c.flag_poll_us);
    }
    if (!k.stage_corrections.empty()) {
      std::string t;
      for (const StageCorrection& sc : k.stage_corrections)
        t += (t.empty() ? "" : ", ") + sc.template_name;
      const StageCorrection& f = k.stage_corrections.front();
      used.push_back(fmt::format(
          "stage estimates corrected per template ({}) by timelines "
          "measured on {}{}{}",
          t, f.device, f.driver_version > 0 ? ", driver " + std::to_string(f.driver_version) : "",
          f.date.empty() ? "" : ", " + f.date));
    }
    std::string what;
    for (const std::string& u : used) what += (what.empty() ? "" : ", ") + u;
    c.source = fmt::format("calibration {} (device {}{}): {}; the rest from spec {}",
                           k.file.empty() ? std::string("(in memory)") : k.file, k.device,
                           k.date.empty() ? "" : ", " + k.date, what.empty() ? "nothing" : what,
                           spec.name);
  }
  c.l2_gbps = c.dram_gbps * kL2BandwidthFactor;
  return c;
}

void apply_stage_correction(StageCost& cost, const StageCorrection& sc) {
  cost.total_us *= sc.ratio;
  cost.correction = sc.ratio;
  cost.corrected =
      "estimate x " + fmt::format("{:.3g}", sc.ratio) + ", the correction for " + sc.describe();
}

double flag_wait_cost_us(const CostConstants& c, int64_t tiles, int waits) {
  return std::max(waits, 0) *
         (c.flag_release_us + c.flag_poll_us * double(std::max<int64_t>(tiles, 1)));
}

double grid_barrier_cost_us(const GpuSpec& spec, const CostConstants& c, int64_t blocks) {
  if (c.calibration && c.calibration->has_barrier())
    return grid_barrier_us(*c.calibration, static_cast<int>(std::max<int64_t>(blocks, 1)));
  const double per_sm = double(std::max<int64_t>(blocks, 1)) / std::max(spec.sm_count, 1);
  return c.barrier_us * (0.75 + 0.25 * per_sm);
}

namespace {

/// Warps per SM that hide the latency of arithmetic (SIMT FMA chains, tensor-core MMAs) and of
/// memory (enough loads in flight to draw the SM's share of the bandwidth).
constexpr double kComputeWarps = 8, kTensorWarps = 4, kMemoryWarps = 16;
/// One SM draws at most this multiple of its fair share of DRAM or L2 bandwidth.
constexpr double kSmBandwidthShare = 4;

}  // namespace

std::string MainloopStructure::template_name() const {
  const std::string inst = instruction.empty() ? std::string("wmma") : instruction;
  if (staging == Staging::Pipelined) return fmt::format("{}, cp.async depth {}", inst, depth);
  return inst + ", synchronous";
}

std::string MainloopStructure::describe() const {
  if (!known()) return "no tensor-core mainloop";
  return fmt::format("{}; {} warps, {}-element tile, k {} per trip, {}-byte operands, epilogue {}",
                     template_name(), warps, tile_elems, k_per_step, operand_bytes,
                     epilogue_through_shared ? "through shared memory" : "from registers");
}

double mma_instruction_share(const GpuSpec& spec, const std::string& instruction) {
  const double cc = std::atof(spec.compute_capability.c_str());
  // wgmma is the only path to the full rate on 9.x; wmma compiles to the same HMMA as mma.sync.
  if (cc >= 9.0 && instruction != "wgmma") return 0.62;
  // wgmma itself: the best published wgmma GEMMs (cuBLAS, CUTLASS) reach about 75-80% of the
  // H100's dense peak at large sizes (clocks drop under the tensor pipe's power draw); ours,
  // never measured, is priced at 0.8 of the peak for the instruction, before its structure.
  if (cc >= 9.0) return 0.8;
  return 1.0;
}

int fp32_lanes_per_sm(const GpuSpec& spec) {
  const double cc = std::atof(spec.compute_capability.c_str());
  return cc >= 8.55 ? 128 : 64;
}

double sm_clock_ghz(const GpuSpec& spec) {
  const double per_clock = 2.0 * fp32_lanes_per_sm(spec) * std::max(spec.sm_count, 1);
  const double ghz = spec.peak_fp32_tflops * 1e3 / per_clock;
  return ghz > 0 ? ghz : 1.0;
}

MainloopCost mainloop_cost(const GpuSpec& spec, const CostConstants& c, const StageWork& w,
                           int64_t per_sm, int64_t waves) {
  MainloopCost m;
  if (!w.tensor_core || w.flops <= 0 || c.tensor_tflops <= 0) return m;
  MainloopStructure s = w.mainloop;
  std::string assumed;
  if (!s.known()) {
    // Tensor cores without a recognized mainloop: the wmma template's defaults.
    s.staging = MainloopStructure::Staging::Synchronous;
    s.instruction = "wmma";
    s.warps = std::max<int64_t>(1, (w.block + 31) / 32);
    s.tile_elems = 64 * 64;
    s.k_per_step = 32;
    s.operand_bytes = c.precision == Precision::TF32 ? 4 : 2;
    s.epilogue_through_shared = true;
    assumed = " (structure assumed: none recognized)";
  }
  m.priced = true;
  const int sms = std::max(spec.sm_count, 1);
  const int64_t grid = std::max<int64_t>(w.grid, 1);
  const double blocks = double(std::max<int64_t>(per_sm, 1));
  const double block_flops = double(w.flops) / double(grid);
  m.peak_tflops = peak_flops(spec, c.precision) / 1e12;
  if (c.tensor_calibrated && c.tensor_template == s.template_name()) {
    m.calibrated = true;
    m.mma_tflops = c.tensor_tflops;
    m.steps = 1;
    m.step_us = blocks * block_flops / (c.tensor_tflops * 1e12 / sms) * 1e6;
    m.compute_us = m.step_us;
    m.total_us = double(std::max<int64_t>(waves, 1)) * m.step_us;
    m.from = fmt::format("calibration: {} measured at {:.1f} TFLOP/s", s.template_name(),
                         c.tensor_tflops);
    return m;
  }
  m.mma_tflops = m.peak_tflops * mma_instruction_share(spec, s.instruction);
  const double mma_sm = m.mma_tflops * 1e12 / sms;  // FLOP/s of one SM
  const double clock = sm_clock_ghz(spec) * 1e9;
  const double smem_bw = kSharedBytesPerClock * clock;  // bytes/s of one SM
  const double l2_sm = c.l2_gbps * 1e9 / sms;           // the SM's fair share of L2
  const double latency = kMainloopLatencyClocks / clock;
  const double tile = double(std::max<int64_t>(s.tile_elems, 256));
  const double warps = double(std::max<int64_t>(s.warps, 1));
  const double es = double(std::max(s.operand_bytes, 1));
  const double k_trip = s.k_per_step > 0 ? double(s.k_per_step) : 32.0;
  const double reduction = block_flops / (2 * tile);  // k of the block's dot products
  m.steps = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(reduction / k_trip)));
  m.steps = std::max(m.steps, s.trips);
  const double kk = reduction / double(m.steps);
  // Block and warp tiles taken as squares of the accumulator counts.
  // wgmma reads its operands from shared memory once per warpgroup (four warps), not per warp.
  const double readers = s.instruction == "wgmma" ? std::max(1.0, warps / 4) : warps;
  const double edge = std::sqrt(tile), warp_edge = std::sqrt(tile / readers);
  // An f32 ring under fp16/bf16 (4-byte staged operands of a 2-byte MMA, Tile::f32_ring): each
  // trip converts the ring's stage into the compute-type tile (4 bytes read and 2 written an
  // element), behind a second block barrier, and ldmatrix reads the 2-byte tile.
  const double mma_es = c.precision == Precision::TF32 ? 4.0 : 2.0;
  const bool ring = s.instruction == "mma.sync" && es > mma_es;
  const double tile_bytes = 2 * edge * kk * es;  // the A and B panels of one trip
  const double ldsm_bytes =
      readers * 2 * warp_edge * kk * (ring ? mma_es : es);  // each reader's rows, columns
  const double convert_bytes = ring ? 2 * edge * kk * (es + mma_es) : 0.0;
  const double mma = blocks * 2 * tile * kk / mma_sm;
  // reads + staging writes (+ the ring's conversion)
  const double shared = blocks * (ldsm_bytes + tile_bytes + convert_bytes) / smem_bw;
  double compute = std::max(mma, shared) + kPipeInterference * std::min(mma, shared);
  if (ring) {
    // Within one block the conversion and its barrier come before the trip's ldmatrix and
    // MMAs; co-resident blocks overlap them with their own MMAs, one block cannot.
    const double one = convert_bytes / smem_bw + kBlockBarrierClocks / clock +
                       std::max(mma, blocks * ldsm_bytes / smem_bw) / blocks;
    compute = std::max(compute, one);
  }
  const double transfer = blocks * tile_bytes / l2_sm;
  const double load = latency + transfer;
  const bool pipelined = s.staging == MainloopStructure::Staging::Pipelined;
  const int depth = pipelined ? std::max(s.depth, 1) : 1;
  const double step = pipelined ? std::max({compute, transfer, load / depth}) : compute + load;
  m.compute_us = compute * 1e6;
  m.load_us = load * 1e6;
  m.step_us = step * 1e6;
  // A pipeline waits for its first tile once per block; the epilogue writes the tile (through
  // a shared tile and back, or straight from registers) behind one store latency.
  m.fill_us = pipelined ? latency * 1e6 : 0;
  m.epilogue_us =
      (latency + (s.epilogue_through_shared ? blocks * tile * 4 * 2 / smem_bw : 0)) * 1e6;
  m.total_us = double(std::max<int64_t>(waves, 1)) *
               (double(m.steps) * m.step_us + m.fill_us + m.epilogue_us);
  m.from = fmt::format(
      "structure: {}{}; {} trips of {} per SM ({} MMA at {:.0f} of {:.0f} TFLOP/s peak: compute "
      "{:.3f} us, load {:.3f} us = latency {:.3f} + transfer {:.3f}) + fill {:.3f} + epilogue "
      "{:.3f} per wave",
      s.describe(), assumed, m.steps, pipelined ? "max(compute, load / depth)" : "compute + load",
      s.instruction, m.mma_tflops, m.peak_tflops, m.compute_us, m.load_us, latency * 1e6,
      transfer * 1e6, m.fill_us, m.epilogue_us);
  return m;
}

StageCost stage_cost(const GpuSpec& spec, const CostConstants& c, const StageWork& w) {
  StageCost out;
  const int sms = std::max(spec.sm_count, 1);
  const int64_t grid = std::max<int64_t>(w.grid, 1);
  const int64_t block = std::max<int64_t>(w.block, 1);
  Occupancy occ = occupancy(spec, static_cast<int>(block), std::max(w.regs, 1), w.smem);
  const int bps = std::max(occ.blocks_per_sm, 1);
  out.blocks_per_sm = occ.blocks_per_sm;
  const int64_t slots = int64_t{bps} * sms;
  out.waves = (grid + slots - 1) / slots;
  // The busiest SM runs `per_sm` blocks in each wave; the stage lasts as long as it does.
  const int64_t per_sm = std::min<int64_t>(bps, (grid + sms - 1) / sms);
  const double share = double(out.waves * per_sm) / double(grid);
  const double warps = double(per_sm) * double((block + 31) / 32);
  auto fill = [&](double need) { return std::min(1.0, warps / need); };

  const double rate =
      (w.tensor_core && c.tensor_tflops > 0 ? c.tensor_tflops : c.simt_tflops) * 1e12;
  if (rate > 0 && w.flops > 0) {
    const double roof = double(w.flops) / rate;
    const double sm_rate = rate / sms * fill(w.tensor_core ? kTensorWarps : kComputeWarps);
    out.flop_us = std::max(roof, double(w.flops) * share / sm_rate) * 1e6;
    if (w.tensor_core && c.tensor_tflops > 0) {
      // A tensor-core stage is priced from how its mainloop is built, never at the peak alone.
      out.mainloop = mainloop_cost(spec, c, w, per_sm, out.waves);
      // A calibrated rate of the same template keeps the measured rate at the stage's fill.
      if (out.mainloop.priced && !out.mainloop.calibrated)
        out.flop_us = std::max(roof * 1e6, out.mainloop.total_us);
    }
    out.efficiency = roof * 1e6 / out.flop_us;
  }
  auto mem_us = [&](int64_t bytes, double gbps) {
    if (bytes <= 0 || gbps <= 0) return 0.0;
    const double bw = gbps * 1e9;
    const double sm_bw = std::min(bw, kSmBandwidthShare * bw / sms) * fill(kMemoryWarps);
    return std::max(double(bytes) / bw, double(bytes) * share / sm_bw) * 1e6;
  };
  out.dram_us = mem_us(w.dram_read_bytes + w.write_bytes, c.dram_gbps);
  out.l2_us = mem_us(w.l2_read_bytes, c.l2_gbps);
  const double mem = out.dram_us + out.l2_us;
  out.bound = out.flop_us > mem ? "compute" : "memory";
  out.total_us = std::max(out.flop_us, mem);
  return out;
}

}  // namespace souffle::gpu
