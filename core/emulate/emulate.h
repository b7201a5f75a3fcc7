/// \file CPU emulation of loop-IR kernels: every block and thread, shared and local memory, both
/// barriers, per-tile flags, atomics and warp shuffles, with out-of-bounds, uninitialized-read,
/// data-race and deadlock checks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/emulate/access_record.h"
#include "core/loop/stmt.h"
#include "core/support/tensor_data.h"

namespace souffle::emulate {

/// A kernel did something a GPU would not do correctly: an out-of-bounds access, a read of
/// memory nothing wrote, a data race, a barrier in divergent code. Names the kernel and stage.
class EmulationError : public std::runtime_error {
 public:
  EmulationError(std::string kernel, std::string stage, std::string detail);
  const std::string& kernel() const { return m_kernel; }
  const std::string& stage() const { return m_stage; }
  const std::string& detail() const { return m_detail; }

 private:
  std::string m_kernel, m_stage, m_detail;
};

/// Shared-memory bank accounting of one kind of warp-wide access in one stage (32 banks of 4
/// bytes; see emulate/mma_sync.h for the phases of wide accesses and ldmatrix).
struct BankStats {
  int64_t accesses = 0;    ///< warp-wide instructions
  int64_t wavefronts = 0;  ///< wavefronts they took
  int64_t conflicts = 0;   ///< wavefronts beyond the fewest possible (0: conflict-free)
};
/// "kernel/stage" -> "KIND BUFFER" (KIND "ldmatrix", "cp.async", "ld.shared" or "st.shared",
/// BUFFER the shared buffer's name) -> stats.
using BankReport = std::map<std::string, std::map<std::string, BankStats>>;

struct EmulateOptions {
  /// Shared memory: two threads of one block touch one address between two barriers, at least
  /// one writing. Global memory: two blocks do so between two grid barriers. Atomics excepted.
  bool check_races = true;
  /// A read of an element no one wrote (kernel outputs and scratch start unwritten).
  bool check_uninitialized = true;
  /// Optional: what the clock of timeline records measured (kernels with loop::TimelineRecord
  /// statements, docs/timeline.md), added up over the kernels run; their records come back in
  /// `buffers` under the timeline buffer's name.
  struct Timeline* timeline = nullptr;
  /// The `flag_epoch` argument of this launch (see loop::FlagRelease): 1 for counters that
  /// start at zero, one more for each run over the same counters.
  int64_t flag_epoch = 1;
  /// Optional: called as a stage starts (kernel name, stage index, stages in the kernel), for a
  /// progress line on long runs. All threads run a stage together, so once per stage; under
  /// per-tile flags, where blocks run as tasks, once per block that reaches it.
  std::function<void(const std::string& kernel, int stage, int stages)> progress;
  /// Optional: where to count shared-memory bank conflicts of every warp-wide shared access
  /// (ldmatrix, cp.async, plain loads and stores), per kernel and stage. Off when null.
  BankReport* bank_conflicts = nullptr;
  /// Optional: where to record which elements each block (and warp) of the kernel and stage
  /// its options name reads and writes (emulate/access_record.h). Off when null, at the cost
  /// of one null test per access.
  AccessRecord* access_record = nullptr;
};

/// Global buffers by tensor name.
using Buffers = std::map<std::string, std::shared_ptr<TensorData>>;

/// What the emulator's timeline clock measured (emulated cycles: one per loop-IR statement a
/// warp runs, see emulate/timeline_clock.h; never a GPU time).
struct Timeline {
  int64_t barrier_wait_cycles = 0;  ///< thread 0's waits at recorded barriers and flag waits
  int kernels = 0;                  ///< instrumented kernels run
};

/// Runs one kernel. Inputs are looked up by name in `buffers` (constants fall back to their
/// data); outputs missing from `buffers` are created. Elements of buffers passed in count as
/// written. The kernel's flag counters are taken from `buffers` when there (a later run over
/// the same counters), zeroed otherwise, and returned in it with the outputs.
///
/// A kernel with per-tile flags runs its blocks as cooperative tasks: a block runs until it
/// releases a counter or waits on one that is not met, then the next block in order runs. A wait
/// that no block can satisfy any more (every block waiting or finished) is an EmulationError
/// "deadlock" naming the stage and block; a read of another block's store that neither a grid
/// barrier nor an awaited release orders is a data race. Throws EmulationError.
void run_kernel(const loop::Kernel& kernel, Buffers& buffers, const EmulateOptions& options = {});

/// Runs the kernels in order over shared global buffers and returns every global buffer
/// (model outputs and intermediates) by name. Uninitialized-read checking spans kernels.
Buffers run_kernels(const loop::KernelSet& kernels, const Buffers& inputs,
                    const EmulateOptions& options = {});

}  // namespace souffle::emulate
