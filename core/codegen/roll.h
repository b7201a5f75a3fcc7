/// \file Repeated stage calls rolled into loops: in a kernel whose stages are outlined into
/// functions, the statements of its body that repeat with other tensors (an LSTM step and the
/// next, a BERT layer and the next) become one loop over the repetitions, each tensor that
/// changes taken from a table of the kernel's pointers and each number that changes computed
/// from the repetition (tables that are shifted windows of one another, a step's state and the
/// next step's, are one table read at an offset). The kernel does exactly the same calls in the
/// same order (checked by expanding the loop again); its source and PTX shrink from one call per
/// stage to one per repeated pattern, which is what NVRTC's time grows with on recurrent models.
/// A rolled call's comment names the stage each repetition runs ("// runs stage 13 `name` (in
/// repetition r of 11: stage 13 + 12r)"), so the source map finds every stage at its call.
#pragma once

#include <cstdint>
#include <string>

namespace souffle::codegen {

struct RollStats {
  int loops = 0;              ///< loops made
  int64_t statements = 0;     ///< top-level statements of the kernels' bodies before
  int64_t rolled = 0;         ///< of those, the ones now inside a loop
  int64_t table_entries = 0;  ///< entries of the loops' tables (numbers and pointers)
};

/// The translation unit `cuda` (as emit_cuda writes it) with the top-level statements of each
/// `extern "C" __global__` kernel's body that repeat at least `min_repeats` times rolled into
/// loops. Only statements made of stage calls, guards on the block index, barriers and
/// shared-arena pointers are rolled; anything else stays as it is. `stats` (optional) says what
/// was done.
std::string roll_repeated_statements(const std::string& cuda, int min_repeats = 3,
                                     RollStats* stats = nullptr);

}  // namespace souffle::codegen
