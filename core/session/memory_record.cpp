#include "core/session/memory_record.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/emulate/emulate.h"
#include "core/support/error.h"

namespace souffle {

namespace {

emulate::KernelAccess record_once(const loop::Kernel& kernel, const MemoryRecordOptions& options,
                                  std::vector<int32_t> blocks) {
  emulate::Buffers buffers;
  for (const te::Tensor& t : kernel.inputs) {
    if (t->source == te::TensorNode::Source::Constant && t->data) continue;
    buffers[t->name] = std::make_shared<TensorData>(t->dtype, t->shape);
  }
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
  emulate::run_kernel(kernel, buffers, eo);
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
  const int64_t grid = kernel.launch.grid_x;
  if (!options.blocks.empty() || options.budget_s <= 0 || grid <= 1)
    return record_once(kernel, options, options.blocks);
  // Under a budget: block 0 alone, timed (its time includes the run's fixed costs, so the
  // estimate below errs on the short side), then as many blocks as the rest of the budget holds.
  const auto t0 = std::chrono::steady_clock::now();
  emulate::KernelAccess one = record_once(kernel, options, {0});
  const double per_block =
      std::max(1e-6, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const double left = options.budget_s - per_block;
  const auto fit = static_cast<int64_t>(std::floor(left / per_block));
  if (fit >= grid) return record_once(kernel, options, {});
  if (fit <= 1) return one;
  return record_once(kernel, options, emulate::spread_blocks(grid, fit));
}

}  // namespace souffle
