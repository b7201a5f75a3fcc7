/// \file Repeated stage calls rolled into loops: in a kernel whose stages are outlined into
/// functions, the statements of its body that repeat with other tensors (an LSTM step and the
/// next, a BERT layer and the next) become one loop over the repetitions, each tensor that
/// changes taken from a table of the kernel's pointers and each number that changes computed
/// from the repetition (tables that are shifted windows of one another, a step's state and the
/// next step's, are one table read at an offset). The kernel does exactly the same calls in the
/// same order (checked by expanding the loop again); its source and PTX shrink from one call per
/// stage to one per repeated pattern, which is what NVRTC's time grows with on recurrent models.
/// A rolled line stands for the stages and boundaries of every repetition (EmittedLine), so the
/// source map finds every stage at its call; a rolled call's comment names them for the reader
/// ("// runs stage 13 `name` (in repetition r of 11: stage 13 + 12r)").
#pragma once

#include <cstdint>
#include <string>

#include "core/codegen/emitted.h"

namespace souffle::codegen {

struct RollStats {
  int loops = 0;              ///< loops made
  int64_t statements = 0;     ///< top-level statements of the kernels' bodies before
  int64_t rolled = 0;         ///< of those, the ones now inside a loop
  int64_t table_entries = 0;  ///< entries of the loops' tables (numbers and pointers)
};

/// The unit `unit` (as CodeGenCuda emits it) with the top-level statements of each
/// `extern "C" __global__` kernel's body that repeat at least `min_repeats` times rolled into
/// loops. Only statements whose every line the emitter marked repeatable (stage calls, guards on
/// the block index, barriers, shared-arena pointers, flag releases and waits) are rolled;
/// anything else stays as it is. `stats` (optional) says what was done.
void roll_repeated_statements(EmittedUnit& unit, int min_repeats = 3, RollStats* stats = nullptr);

}  // namespace souffle::codegen
