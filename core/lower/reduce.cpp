// Lowering of the reduce op family (work in progress; filled by its owner).
#include "core/lower/lower.h"

namespace souffle::lower {

void register_reduce(Registry& r) { (void)r; }

}  // namespace souffle::lower
