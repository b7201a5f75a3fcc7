#include "core/session/memory_record.h"

#include "core/emulate/emulate.h"
#include "core/support/error.h"

namespace souffle {

emulate::KernelAccess record_kernel_access(const loop::Kernel& kernel,
                                           const MemoryRecordOptions& options) {
  if (options.stage >= static_cast<int>(kernel.stages.size()))
    throw UserError("", kernel.name,
                    "no stage " + std::to_string(options.stage) + " (the kernel has " +
                        std::to_string(kernel.stages.size()) + ")");
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
  emulate::EmulateOptions eo;
  eo.check_races = options.checks;
  eo.check_uninitialized = options.checks;
  eo.access_record = &record;
  emulate::run_kernel(kernel, buffers, eo);
  if (record.kernels.empty())
    throw InternalError("the emulator recorded nothing of kernel " + kernel.name);
  return std::move(record.kernels.front());
}

}  // namespace souffle
