#include "core/gpu/cost.h"

#include <algorithm>

namespace souffle::gpu {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::FP16:
      return "fp16";
  }
  return "?";
}

double peak_flops(const GpuSpec& spec, Precision p) {
  double tflops = spec.peak_fp32_tflops;
  if (p == Precision::TF32 && spec.peak_tf32_tflops > 0) tflops = spec.peak_tf32_tflops;
  if (p == Precision::FP16 && spec.peak_fp16_tflops > 0) tflops = spec.peak_fp16_tflops;
  return tflops * 1e12;
}

int64_t on_chip_capacity(const GpuSpec& spec) {
  return int64_t{spec.sm_count} * spec.shared_memory_per_sm;
}

KernelTraffic kernel_traffic(const std::vector<KernelTensor>& tensors, int64_t on_chip_bytes) {
  KernelTraffic t;
  int64_t left = on_chip_bytes;
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
    if (k.bytes <= left) {
      left -= k.bytes;
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
