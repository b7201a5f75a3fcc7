#include "core/session/memory_record.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/emulate/emulate.h"
#include "core/support/error.h"

namespace souffle {

namespace {

/// Blocks a budgeted recording runs first (MemoryRecordOptions::budget_s).
constexpr int64_t kProbeBlocks = 3;

/// Zero inputs for `kernel` (constants with data are the kernel's own).
emulate::Buffers zero_inputs(const loop::Kernel& kernel) {
  emulate::Buffers buffers;
  for (const te::Tensor& t : kernel.inputs) {
    if (t->source == te::TensorNode::Source::Constant && t->data) continue;
    buffers[t->name] = std::make_shared<TensorData>(t->dtype, t->shape);
  }
  return buffers;
}

/// One recorded run over `inputs` (which it leaves as they were: a kernel does not write its
/// inputs). `work_s`, when given, gets the seconds from the first stage run to the end: the
/// blocks' own work, without the run's setup.
emulate::KernelAccess record_once(const loop::Kernel& kernel, const MemoryRecordOptions& options,
                                  const emulate::Buffers& inputs, std::vector<int32_t> blocks,
                                  double* work_s = nullptr) {
  emulate::Buffers buffers = inputs;
  emulate::AccessRecord record;
  record.options.kernel = kernel.name;
  record.options.stage = options.stage;
  record.options.per_warp = options.per_warp;
  record.options.only_stage = options.stage >= 0 && !options.other_stages && !options.checks;
  record.options.max_bytes = options.max_bytes;
  record.options.blocks = std::move(blocks);
  emulate::EmulateOptions eo;
  eo.check_races = options.checks;
  eo.check_uninitialized = options.checks;
  eo.access_record = &record;
  using Clock = std::chrono::steady_clock;
  Clock::time_point first{};
  bool started = false;
  if (work_s)
    eo.progress = [&](const std::string&, int, int) {
      if (!started) first = Clock::now();
      started = true;
    };
  const Clock::time_point t0 = Clock::now();
  emulate::run_kernel(kernel, buffers, eo);
  if (work_s)
    *work_s = std::chrono::duration<double>(Clock::now() - (started ? first : t0)).count();
  if (record.kernels.empty())
    throw InternalError("the emulator recorded nothing of kernel " + kernel.name);
  return std::move(record.kernels.front());
}

}  // namespace

emulate::KernelAccess record_kernel_access(const loop::Kernel& kernel,
                                           const MemoryRecordOptions& options) {
  if (options.stage >= static_cast<int>(kernel.stages.size()))
    throw UserError("", kernel.name,
                    "no stage " + std::to_string(options.stage) + " (the kernel has " +
                        std::to_string(kernel.stages.size()) + ")");
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  const emulate::Buffers inputs = zero_inputs(kernel);
  const int64_t grid = kernel.launch.grid_x;
  // With per-tile flags every block runs whatever is recorded: a sample would save nothing.
  if (!options.blocks.empty() || options.budget_s <= 0 || grid <= 1 || !kernel.flags.empty())
    return record_once(kernel, options, inputs, options.blocks);
  // Under a budget: a few blocks spread over the grid first, their work timed apart from the
  // run's setup. The emulator runs a statement for all of its threads at once, so a run's time
  // grows less than linearly with its blocks: the probe's time per block bounds the cost of
  // more blocks from above. If every block fits in what is left, the whole grid; else, if more
  // blocks fit than the probe holds, as many as fit; else the probe.
  // The blocks spread over are the stage's own (StageInfo::block_offset, grid_x) where it runs
  // on fewer than the kernel's: the others have nothing of it to draw.
  int64_t first = 0, span = grid;
  if (options.stage >= 0) {
    const loop::StageInfo& st = kernel.stages[static_cast<size_t>(options.stage)];
    if (st.grid_x >= 1 && st.block_offset >= 0 && st.block_offset + st.grid_x <= grid) {
      first = st.block_offset;
      span = st.grid_x;
    }
  }
  auto spread = [&](int64_t n) {
    std::vector<int32_t> b = emulate::spread_blocks(span, n);
    for (int32_t& x : b) x = static_cast<int32_t>(x + first);
    return b;
  };
  const std::vector<int32_t> probe_blocks = spread(kProbeBlocks);
  double work = 0;
  const Clock::time_point t1 = Clock::now();
  emulate::KernelAccess probe = record_once(kernel, options, inputs, probe_blocks, &work);
  const Clock::time_point t2 = Clock::now();
  const auto probed = static_cast<int64_t>(probe_blocks.size());
  const double per_block = std::max(1e-6, work / static_cast<double>(probed));
  const double setup = std::max(0.0, std::chrono::duration<double>(t2 - t1).count() - work);
  const double left = options.budget_s - std::chrono::duration<double>(t2 - t0).count() - setup;
  const auto fit = static_cast<int64_t>(std::floor(left / per_block));
  if (fit >= grid) return record_once(kernel, options, inputs, {});
  if (fit <= probed) return probe;
  return record_once(kernel, options, inputs, spread(fit));
}

}  // namespace souffle
