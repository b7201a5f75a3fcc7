#include "core/gpu/cost.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

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

}  // namespace souffle::gpu
