/// \file Recording what a built kernel touches (emulate/access_record.h) without the model's
/// data: the kernel runs alone in the emulator over zero-filled inputs, which is enough for the
/// access pattern of every kernel whose addresses do not depend on data (a Gather's indices
/// then all read row 0).
#pragma once

#include <string>
#include <vector>

#include "core/emulate/access_record.h"
#include "core/loop/stmt.h"

namespace souffle {

struct MemoryRecordOptions {
  int stage = -1;         ///< StageInfo index to record; -1 the whole kernel
  bool per_warp = false;  ///< also each warp's sets
  /// With `stage` >= 0, also run the kernel's other stages (AccessRecordOptions::only_stage
  /// off): slower, and only then are the edges from the stages that produce its inputs seen.
  bool other_stages = false;
  int64_t max_bytes = int64_t{512} << 20;  ///< AccessRecordOptions::max_bytes
  /// Race and uninitialized-read checks while recording (off: only the recording's cost).
  bool checks = false;
  /// Record (and run) only these blocks (AccessRecordOptions::blocks); empty: see budget_s.
  std::vector<int32_t> blocks{};
  /// With no `blocks` and > 0: record as many blocks as fit in about this many seconds. Three
  /// blocks spread over the grid (over the stage's own blocks, StageInfo::block_offset and
  /// grid_x, where it runs on fewer) are recorded first and timed (their work apart from the run's
  /// setup); if every block fits in what is left the whole grid is recorded, else as many blocks
  /// as fit (at least those three), spread likewise (spread_blocks), and the recording says
  /// which (KernelAccess::blocks). The first run alone may pass the budget. 0, or a kernel with
  /// per-tile flags (all its blocks run anyway): every block.
  double budget_s = 0;
};

/// Runs `kernel` in the emulator over zero inputs, recording (once, or twice under a budget).
/// Throws what the emulator throws (EmulationError) and UserError for a stage index the kernel does
/// not have.
emulate::KernelAccess record_kernel_access(const loop::Kernel& kernel,
                                           const MemoryRecordOptions& options = {});

}  // namespace souffle
