/// \file The exact semantics of the Ampere-class warp statements (loop::MmaSync, MatrixLoad,
/// AsyncCopy) that the emulator runs: the PTX ISA's per-lane fragment layouts, one warp's
/// m16n8k16 / m16n8k8 MMA, and the shared-memory bank model that counts conflicts.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/loop/stmt.h"

namespace souffle::emulate::mma {

/// (row, column) in the operand's matrix (A: 16 x k, B: k x 8, C/D: 16 x 8) of element `i` of
/// the registers lane `lane` holds for an mma.sync of `type` (see loop::MmaSync).
std::pair<int, int> fragment_position(loop::MmaType type, loop::FragmentRole role, int lane, int i);

/// D = A x B + C for one warp. a, b, c hold lane l's elements at [l * n + i] with n =
/// loop::mma_sync_elements(type, role); d is written the same way. tf32 operands are rounded
/// (cvt.rna) first; products are exact in double and each output's sum is rounded to f32 once.
void warp_mma(loop::MmaType type, const std::vector<double>& a, const std::vector<double>& b,
              const std::vector<double>& c, std::vector<double>& d);

/// Rounds an f32 to tf32 (10-bit mantissa), to nearest with ties away from zero (cvt.rna).
double round_tf32(double x);

/// The element lane `lane` receives from row `row` (16 bytes) of one 8x8 ldmatrix matrix:
/// for 16-bit elements (row, element index) pairs for its two registers' halves; see
/// loop::MatrixLoad. Returns {row, column} of the source element for half `h` (0 or 1).
std::pair<int, int> ldmatrix_source(int lane, int h, bool trans, int element_bytes);

/// Shared memory as 32 banks of 4 bytes. One warp-wide access: the byte address of each lane
/// taking part (-1: not taking part) and the bytes per lane (1..16). Accesses wider than 4
/// bytes are served in phases (8 bytes: half-warps, 16 bytes: quarter-warps); in a phase, each
/// bank serves one 4-byte word per wavefront (lanes reading one word share it). Returns the
/// wavefronts of the access; `ideal` is set to the fewest possible (the phases with a lane).
int64_t wavefronts(const std::vector<int64_t>& byte_addr, int64_t width, int64_t& ideal);

/// The same for ldmatrix: each 8x8 matrix's eight 16-byte rows are one phase.
int64_t ldmatrix_wavefronts(const std::vector<int64_t>& row_addr, int64_t count, int64_t& ideal);

}  // namespace souffle::emulate::mma
