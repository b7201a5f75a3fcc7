/// \file Cost model v2 over built kernels: each stage's FLOPs, global bytes (DRAM or L2 by reuse
/// distance), grid and resources priced by gpu::stage_cost, plus launches and grid barriers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/gpu/cost.h"
#include "core/loop/stmt.h"

namespace souffle::schedule {

/// One stage of a kernel as the model read and priced it.
struct StagePrice {
  std::string name;  ///< StageInfo::name
  gpu::StageWork work;
  gpu::StageCost cost;
};

/// A priced kernel: what was built, and its time.
struct KernelPrice {
  std::string name;
  int grid_barriers = 0, block_barriers = 0;  ///< every barrier statement of the body
  /// Stages separated from the stage before by a grid barrier (not one inside a stage, such as
  /// a reduction's rows split over blocks): where the kernel could be cut in two.
  std::vector<size_t> after_barrier;
  int64_t flops = 0;
  int64_t dram_bytes = 0;    ///< global bytes read from DRAM (not served by L2) and written
  int64_t l2_bytes = 0;      ///< global reads served by L2 (reused within the L2's size)
  int64_t global_bytes = 0;  ///< every global read and write of its stages
  int regs = 0;              ///< registers per thread assumed (its local buffers, capped)
  int64_t co_resident = 0;   ///< blocks of its launch configuration resident at once
  int flag_waits = 0;        ///< flag wait statements (one per awaited producer stage and boundary)
  /// barrier_us: the grid barriers, and the per-tile flag releases and waits
  /// (gpu::flag_wait_cost_us of each flags boundary).
  double stages_us = 0, launch_us = 0, barrier_us = 0;
  double total_us = 0;  ///< stages + launch + grid barriers and flags
  std::vector<StagePrice> stages;
  std::vector<std::string> on_chip;  ///< intermediates kept in shared memory (residents)
};

/// FLOPs of a TE by name (loop::StageInfo::tes); 0 for a name it does not know.
using FlopsOf = std::function<int64_t(const std::string&)>;

/// Prices `k` on `spec` with `constants`: each stage reads and writes the global tensors its
/// statements touch, each once (a tensor's whole size); a read of a tensor the kernel touched
/// within the L2's size since is an L2 read, the first touch of each tensor a DRAM read (the
/// kernel starts with a cold L2). Shared-memory residents and register intermediates are not
/// global, so they cost no bytes. Registers per thread: 24 plus the stage's local buffers
/// (register tiles, fragments), at most `register_cap` for a cooperative kernel (0: 255).
KernelPrice price_kernel(const loop::Kernel& k, const gpu::GpuSpec& spec,
                         const gpu::CostConstants& constants, const FlopsOf& flops_of,
                         int register_cap = 0);

/// The registers per thread a cooperative kernel of `stages` is planned and capped at:
/// `registers` (PlanKernelOptions::cooperative_registers), or more where an mma mainloop stage
/// needs more (its template's gpu::MmaMainloop::regs, StageInfo::tensor_core), so that the cap
/// compile_plan sets never makes it spill.
int64_t cooperative_register_budget(const std::vector<loop::StageInfo>& stages, int registers);

/// The stage names, bound, grid, waves and times of `p`, one line per stage.
std::string print(const KernelPrice& p);

}  // namespace souffle::schedule
