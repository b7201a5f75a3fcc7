// Lowering of the recurrent op family (work in progress; filled by its owner).
#include "core/lower/lower.h"

namespace souffle::lower {

void register_recurrent(Registry& r) { (void)r; }

}  // namespace souffle::lower
