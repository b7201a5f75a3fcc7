/// \file Cost model v1: per-kernel DRAM traffic and a roofline time on a GPU spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu/spec.h"

namespace souffle::gpu {

/// The compute type of GEMM-like kernels, and so which peak arithmetic rate their FLOPs run at:
/// fp32 on the SIMT cores, tf32/fp16/bf16 on the tensor cores (fp32 accumulation).
enum class Precision : uint8_t { FP32, TF32, FP16, BF16 };
const char* precision_name(Precision p);  ///< "fp32", "tf32", "fp16", "bf16"
/// The precision named `name` ("fp32", "tf32", "fp16", "bf16", any case); UserError otherwise.
Precision parse_precision(const std::string& name);
/// Peak FLOP/s of `spec` at `p`; falls back to FP32 where the GPU has no such rate. BF16 runs at
/// the FP16 tensor-core rate on GPUs that have bf16 tensor cores (compute capability 8.0 on).
double peak_flops(const GpuSpec& spec, Precision p);

/// How one tensor touches one kernel.
struct KernelTensor {
  std::string name;
  int64_t bytes = 0;
  bool produced_inside = false;  ///< written by a stage of this kernel
  bool needed_outside = false;   ///< read by a later kernel or a model output
  /// Read by a stage of this kernel that is separated from its producer by a grid sync (it must
  /// survive the sync); false when every reader is in the producer's stage (registers).
  bool crosses_sync = false;
  /// Stages (in the kernel's order) from the producer to the last reader inside the kernel: the
  /// tensor occupies on-chip memory only over this range. -1 when unknown (the whole kernel).
  int first_stage = -1, last_stage = -1;
};

struct KernelTraffic {
  int64_t dram_bytes = 0;
  int64_t read_bytes = 0, write_bytes = 0;
  std::vector<std::string> on_chip;  ///< intermediates kept in shared memory/registers
  std::vector<std::string> spilled;  ///< intermediates too big for on-chip memory (round trip)
};

/// On-chip bytes a grid-synchronized kernel can keep across syncs: shared memory of every SM
/// (registers are left to the stages themselves).
int64_t on_chip_capacity(const GpuSpec& spec);

/// Each global tensor is read once and written once per kernel: tensors not produced inside are
/// read; tensors needed outside are written. An intermediate (produced and read only inside) costs
/// nothing when its readers share its producer's stage, and is kept on chip across syncs when it
/// fits the remaining on-chip capacity (largest first is not attempted: tensors are taken in the
/// given order); otherwise it is written and read back.
/// Places the tensors that cross a grid sync on chip while, at every stage of their live range,
/// the tensors live there fit in `on_chip_bytes` (first touch first); the rest round-trip DRAM.
KernelTraffic kernel_traffic(const std::vector<KernelTensor>& tensors, int64_t on_chip_bytes);

struct KernelCost {
  double compute_us = 0, memory_us = 0, launch_us = 0, sync_us = 0;
  double total_us = 0;           ///< max(compute, memory) + launch + syncs
  const char* bound = "memory";  ///< "compute" or "memory"
};

/// Roofline: max(flops / peak, bytes / bandwidth) plus the launch overhead plus the grid-sync
/// overhead per sync.
KernelCost kernel_cost(const GpuSpec& spec, int64_t flops, int64_t dram_bytes, int grid_syncs,
                       Precision precision = Precision::FP32);

}  // namespace souffle::gpu
