// Lowering of the conv_pool op family (work in progress; filled by its owner).
#include "core/lower/lower.h"

namespace souffle::lower {

void register_conv_pool(Registry& r) { (void)r; }

}  // namespace souffle::lower
