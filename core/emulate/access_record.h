/// \file What the emulator saw a kernel touch: for one kernel (or one stage of it), which elements
/// of each global tensor and shared buffer every block (and, when asked, every warp) read and
/// wrote, and when (stage and grid-barrier epoch), how often each element was read, which tensors
/// carry data between stages through global memory, and which producer blocks' writes a consumer
/// block read after a grid barrier or flag wait. Recording is off unless
/// EmulateOptions::access_record points at an AccessRecord; off, it costs one null test per
/// access. Memory pictures (report/memory_picture.h) are drawn from it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/support/dtype.h"
#include "core/support/tensor_data.h"

namespace souffle::emulate {

/// What to record.
struct AccessRecordOptions {
  std::string kernel;     ///< the kernel to record (loop::Kernel::name); "" every kernel run
  int stage = -1;         ///< that kernel's stage (StageInfo index); -1 the whole kernel
  bool per_warp = false;  ///< also keep each warp's own sets (UnitAccess::warp >= 0)
  /// With `stage` >= 0: run only that stage's statements (barriers between stages still run;
  /// not for kernels with per-tile flags, whose waits need every release). Much faster on a
  /// kernel of many stages, and exact for accesses whose addresses do not depend on data; the
  /// kernel's values are then not its results, and no producer-consumer edge into the stage is
  /// seen (its producers do not run). Use with the emulator's checks off.
  bool only_stage = false;
  /// The recording's memory (bitmaps while running, counters per element) stops growing here:
  /// accesses past it are not recorded, `truncated` is set and `note` says what was left out.
  int64_t max_bytes = int64_t{512} << 20;
  /// Record only these blocks (any order; repeats and blocks past the grid are dropped); empty
  /// (or none left): every block. Without per-tile flags only these blocks run at all (their
  /// threads, none other), which is exact for their accesses: a block's addresses depend on its own
  /// indices, loops and the launch shape (grid-stride loops read gridDim, not the blocks that run),
  /// its barriers and shuffles stay within it, and a grid barrier is passed by the blocks that run.
  /// Not exact where addresses depend on data other blocks wrote. With flags every block runs
  /// and only these are recorded. Producer-consumer edges are seen only between these blocks.
  std::vector<int32_t> blocks;
};

/// A set of flat (row-major) element indices of one tensor as sorted, disjoint, non-adjacent
/// half-open ranges [first, second).
struct ElementRanges {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t count() const;           ///< elements in the set
  bool contains(int64_t e) const;  ///< binary search
  bool empty() const { return ranges.empty(); }
  /// The set as a sorted list of indices (for tests and small sets).
  std::vector<int64_t> elements() const;
};

/// The union of `sets` (sorted, adjacent and overlapping ranges merged).
ElementRanges unite(const std::vector<const ElementRanges*>& sets);

/// When an access happened, in the kernel's own order: blocks between two grid barriers are
/// unordered on a GPU, so a block's accesses are placed at (epoch, stage) and an animation
/// plays the blocks of one epoch in block order.
struct AccessPhase {
  int epoch = 0;   ///< grid barriers the kernel had passed (0 before the first)
  int stage = -1;  ///< StageInfo index; -1 outside every Stage (a kernel's prologue)
  friend bool operator==(const AccessPhase&, const AccessPhase&) = default;
  friend auto operator<=>(const AccessPhase&, const AccessPhase&) = default;
};

/// What one block (warp == -1) or one warp of it read and wrote of one tensor in one phase.
struct UnitAccess {
  int32_t block = 0;
  int32_t warp = -1;  ///< warp within the block; -1: the whole block
  AccessPhase phase;
  ElementRanges reads, writes;
};

enum class TensorRole : uint8_t {
  Input,    ///< a kernel input (model input, weight, constant, an earlier kernel's result)
  Output,   ///< a kernel output
  Scratch,  ///< global memory the kernel allocates itself, or an output a later stage of the
            ///< same kernel reads back: data that crosses a stage boundary through global memory
  Shared,   ///< a shared-memory buffer (one copy per block; elements index the block's copy)
};
const char* tensor_role_name(TensorRole r);

/// One tensor's accesses.
struct TensorAccess {
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  TensorRole role = TensorRole::Input;
  int64_t numel = 0;
  /// Sorted by (phase, block, warp); one entry per (phase, block, warp) that touched it.
  std::vector<UnitAccess> units;
  /// Per element: reads by any thread (element-wise loads; a tile load counts each element).
  /// Empty for a shared buffer (its copies are per block) or when the recording was cut.
  std::vector<int32_t> read_count;
  /// Per element: the index in KernelAccess::frames of its first access, -1 never touched.
  std::vector<int32_t> first_touch;
  int64_t element_reads = 0, element_writes = 0;  ///< accesses (one per element per thread)
  /// Distinct elements read / written by each block, summed over blocks and phases: the global
  /// traffic of a kernel that caches nothing between accesses of one block (x dtype size for
  /// bytes).
  int64_t block_elements_read = 0, block_elements_written = 0;
  /// For Shared: the buffer's bytes per block (its SharedSlot), 0 otherwise.
  int64_t shared_bytes = 0;
};

/// A consumer block read, in a later stage, elements that another (producer) block wrote: the
/// data a grid barrier or flag wait between the two stages had to order.
struct ProducerEdge {
  std::string tensor;
  int32_t producer_block = 0, consumer_block = 0;
  AccessPhase producer, consumer;  ///< the write's and the read's phase
  int64_t elements = 0;            ///< distinct elements read
};

/// One frame of an animation: the accesses of one block in one phase, in play order (phase,
/// then block).
struct AccessFrame {
  AccessPhase phase;
  int32_t block = 0;
};

/// What one kernel run touched.
struct KernelAccess {
  std::string kernel;
  int stage = -1;  ///< the recorded stage, -1 the whole kernel
  int64_t grid = 1, block_threads = 1;
  std::vector<std::string> stage_names;      ///< StageInfo::name by index
  std::vector<std::string> stage_schedules;  ///< StageInfo::schedule by index
  std::vector<TensorAccess> tensors;         ///< global tensors first (kernel order), then shared
  std::vector<ProducerEdge> edges;           ///< sorted by (consumer phase, consumer, producer)
  std::vector<AccessFrame> frames;           ///< every (phase, block) that touched anything
  int grid_barriers = 0;                     ///< passed during the run
  /// The blocks recorded when not every block was (AccessRecordOptions::blocks), ascending;
  /// empty: every block. The other blocks' accesses are in no set, count or frame.
  std::vector<int32_t> blocks;
  bool truncated = false;
  std::string note;  ///< why truncated, what was left out

  const TensorAccess* find(const std::string& name) const;
  /// The accesses of `block` (warp -1) to `tensor` merged over phases (or in `phase` only).
  ElementRanges block_reads(const std::string& tensor, int32_t block) const;
  ElementRanges block_writes(const std::string& tensor, int32_t block) const;
};

/// "8 of 216 blocks recorded (0, 27, 54, …): the other blocks' accesses are not drawn" for a
/// recording of some blocks only; "" when every block was recorded.
std::string sample_note(const KernelAccess& k);

/// `n` blocks of a grid of `grid`, spread evenly over it (the first and, for n > 1, the last
/// block included), ascending; every block when n >= grid.
std::vector<int32_t> spread_blocks(int64_t grid, int64_t n);

/// Set EmulateOptions::access_record to one of these to record; run_kernel / run_kernels append
/// one KernelAccess per recorded kernel run.
struct AccessRecord {
  AccessRecordOptions options;
  std::vector<KernelAccess> kernels;
};

/// "A: block 3 read rows 0..63 of 128 (8192 elements) ..." a few lines per tensor, for logs
/// and tests.
std::string describe(const KernelAccess& k, size_t max_lines = 40);

}  // namespace souffle::emulate
