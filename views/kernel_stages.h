/// \file The stage count the explorer shows for a kernel.
#pragma once

#include "core/plan/plan.h"

namespace souffle::views {

/// The stages of the kernels built for `k` (loop::Kernel::stages over its launches,
/// Partition::built_stages) where they were built, else the planner's stages (Partition::stages,
/// which group TEs between planned grid syncs: one is often several kernel stages). Shown beside
/// Partition::grid_syncs, which is likewise the built kernels' grid barriers where they were built.
inline int kernelStages(const plan::Partition& k) {
  return static_cast<int>(k.priced && !k.built_stages.empty() ? k.built_stages.size()
                                                              : k.stages.size());
}

}  // namespace souffle::views
