/// \file Cost model v1: per-kernel DRAM traffic and a roofline time on a GPU spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu/spec.h"

namespace souffle::gpu {

/// Which peak arithmetic rate a kernel's FLOPs run at.
enum class Precision : uint8_t { FP32, TF32, FP16 };
const char* precision_name(Precision p);  ///< "fp32", "tf32", "fp16"
/// Peak FLOP/s of `spec` at `p`; falls back to FP32 where the GPU has no such rate.
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
