/// \file Shared-memory arena planning: one dynamic shared buffer carved by offsets.
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Assigns each shared Allocate of the kernel an offset (16-byte aligned) in one arena: nested
/// buffers stack; a buffer allocated after a sibling statement that is a block or grid barrier
/// reuses the space of the siblings before that barrier (every thread has finished with them).
/// Fills Kernel::shared and launch.dynamic_shared_bytes.
Kernel plan_shared_arena(const Kernel& k);

}  // namespace souffle::loop
