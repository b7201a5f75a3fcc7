/// \file One GEMM tile type and its resource table, shared by the planner, the tuner and the
/// schedule templates.
#pragma once

#include <cstdint>
#include <string>

#include "core/gpu/cost.h"

namespace souffle::gpu {

/// One tile of the GEMM templates. SIMT: a bm x bn block tile over the output, K staged bk at
/// a time through shared memory, each thread a tm x tn register tile ((bm/tm) x (bn/tn)
/// threads). With `tensor_core`: the tensor-core template's block tile whose warps each hold
/// tm x tn 16x16 fragments ((bm/16/tm) x (bn/16/tn) warps).
struct Tile {
  int64_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  /// Two shared-memory stages of the operand tiles: the next K chunk is loaded into registers
  /// while this one is computed.
  bool double_buffer = false;
  bool tensor_core = false;
  int64_t warps_m() const { return bm / (16 * tm); }  ///< tensor-core tiles only
  int64_t warps_n() const { return bn / (16 * tn); }  ///< tensor-core tiles only
  int64_t threads() const {
    return tensor_core ? warps_m() * warps_n() * 32 : (bm / tm) * (bn / tn);
  }
  /// "128x64x16 tile 8x4, double-buffered"; "tensor-core tile 64x128x32, warps 2x2 of 2x4
  /// fragments".
  std::string describe() const;
  bool operator==(const Tile&) const = default;
};

/// What one block of a tile asks of an SM.
struct TileResources {
  int64_t threads = 0;
  int64_t regs_per_thread = 0;  ///< register tile or fragments, staged elements, overhead
  int64_t smem_bytes = 0;       ///< the operand tiles (both stages), and the tensor-core
                                ///< template's fp32 accumulator tile
};

/// The resource table of the GEMM templates: what a block of `t` needs, its SIMT operands
/// `operand_bytes` wide, a tensor-core tile's operands converted to the compute type of
/// `precision` (tf32: 4 bytes, fp16/bf16: 2). Registers are the template's own estimate
/// (ptxas decides in the end): the register tile and its row and column operands, or the
/// accumulator and operand fragments, the elements a double-buffered tile stages, and 32 for
/// indices, addresses and loop counters.
TileResources tile_resources(const Tile& t, int64_t operand_bytes, Precision precision);

}  // namespace souffle::gpu
