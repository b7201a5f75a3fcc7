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
  /// Tensor-core tiles: shared-memory stages of the mma mainloop's operand ring (2..4), the
  /// tuner's choice; 0: the template's default (mma_pipeline_depth).
  int64_t stages = 0;
  /// Tensor-core tiles under fp16/bf16: operands that are plain reads of f32 tensors stream by
  /// cp.async into an f32 ring, converted into a compute-type tile at each K step (the tuner's
  /// choice); false: converted element by element through registers.
  bool f32_ring = false;
  int64_t warps_m() const { return bm / (16 * tm); }  ///< tensor-core tiles only
  int64_t warps_n() const { return bn / (16 * tn); }  ///< tensor-core tiles only
  int64_t threads() const {
    return tensor_core ? warps_m() * warps_n() * 32 : (bm / tm) * (bn / tn);
  }
  /// "128x64x16 tile 8x4, double-buffered"; "tensor-core tile 64x128x32, warps 2x2 of 2x4
  /// fragments, 3 stages, f32 ring" (the stages only when chosen, the f32 ring when asked).
  std::string describe() const;
  bool operator==(const Tile&) const = default;
};

/// What one block of a tile asks of an SM.
struct TileResources {
  int64_t threads = 0;
  int64_t regs_per_thread = 0;  ///< register tile or fragments, staged elements, overhead
  int64_t smem_bytes = 0;       ///< the operand tiles (every stage of the ring)
  int64_t stages = 0;           ///< tensor-core tiles: the mma mainloop's ring depth
};

/// The element type of a tensor-core operand's plain row-major read that cp.async can copy.
enum class MmaElem : uint8_t {
  None,  ///< no such read (an implicit-GEMM convolution's im2col expression, a transposed B)
  F16,
  BF16,
  F32,
};
/// The element type an operand of `bytes`-wide tensors has at `precision` (4: F32; 2: BF16
/// under bf16, else F16; else None).
MmaElem mma_elem_of(int64_t bytes, Precision precision);

/// How the tensor-core mainloop's operands read global memory.
struct MmaOperands {
  MmaElem a = MmaElem::None, b = MmaElem::None;
};

/// The Ampere mainloop (schedule/gemm_mma.cpp, docs/mainloop.md) that a tensor-core tile
/// builds, as far as resources and pricing need it: what reaches shared memory by cp.async,
/// the ring's depth, its shared bytes and the registers the template keeps.
struct MmaMainloop {
  bool a_async = false, b_async = false;  ///< cp.async of the compute type
  /// cp.async of f32 into an f32 ring (Tile::f32_ring), converted into a compute-type tile of one
  /// stage after each K step's wait
  bool a_wide = false, b_wide = false;
  int64_t stages = 2;         ///< shared stages of the operand ring
  int64_t element_bytes = 2;  ///< the compute type's (fp16/bf16 2, tf32 4)
  int64_t stage_bytes = 0;    ///< one stage of the A and B tiles
  int64_t convert_bytes = 0;  ///< the compute-type tiles wide operands convert into
  int64_t smem_bytes = 0;     ///< the whole ring and those tiles
  /// Operands converted element by element go through registers one stage ahead when those
  /// registers, the fragments and the accumulators stay within 64 per thread; else they are
  /// stored straight into the next stage after the MMAs.
  bool prefetch = false;
  int64_t staged_regs = 0;    ///< registers of that prefetch (0 without it)
  int64_t fragment_regs = 0;  ///< accumulators and the A and B fragments
  /// Registers per thread the built kernel asks of ptxas, an upper estimate checked against
  /// NVRTC (tests/schedule/test_mma_regs.cpp): the accumulators, the A and B fragments of a
  /// whole warp tile twice (ptxas loads the next K slice's while this one computes), 4 per
  /// 16-byte cp.async a thread issues per stage (global and shared addresses, predicate), 3
  /// per element a thread converts from an f32 ring or prefetches through registers (the f32
  /// value, the packed half, its address), 5 per element stored after the MMAs (ptxas hoists
  /// those loads above the MMAs), and 40 for indices and loop counters; at most 255.
  int64_t regs = 0;
  bool any_async() const { return a_async || b_async || a_wide || b_wide; }
  bool any_wide() const { return a_wide || b_wide; }
};

/// The shared bytes per block below which the template's default depth is 3 (else 2).
constexpr int64_t kMmaDefaultShared = 48 << 10;

/// The mainloop of tensor-core tile `t` at `precision` (fp16/bf16/tf32) on `operands`: the ring
/// holds `t.stages` stages (clamped to 2..4), or by default 3 when a copy is asynchronous and 3
/// stages fit kMmaDefaultShared, else 2. With `t.f32_ring` under fp16/bf16, F32 operands are
/// wide (4-byte ring elements, and a 2-byte conversion tile).
MmaMainloop mma_mainloop(const Tile& t, const MmaOperands& operands, Precision precision);

/// Whether tensor-core tile `t` runs the Ampere mainloop: warp tiles of at most 8 fragments.
/// Larger ones (4x4: 128 accumulator registers a lane) stay on the wmma template, whose opaque
/// fragments do not spill (schedule_gemm_tc_fused); tile_resources and
/// mma_mainloop_structure then describe that template (no ring, an fp32 accumulator tile).
bool mma_warp_tile(const Tile& t);

/// The structure the cost model prices (MainloopStructure, mainloop_cost) of tile `t` built as
/// `m`: cp.async waited with wait_group stages - 2 (depth stages - 1) where a copy is
/// asynchronous, else synchronous staging; mma.sync, the epilogue from registers. It is what
/// schedule::price_kernel reads from the built kernel (tested).
MainloopStructure mma_mainloop_structure(const Tile& t, const MmaMainloop& m);

/// The resource table of the GEMM templates: what a block of `t` needs, its SIMT operands
/// `operand_bytes` wide. A tensor-core tile is the Ampere mainloop's (mma_mainloop): a ring of
/// operand tiles in the compute type, no padding and no accumulator tile (the epilogue runs
/// from registers); its operands are `operands`, or where that is not given, plain reads of
/// `operand_bytes`-wide tensors. Registers are the template's own estimate (ptxas decides in
/// the end): the register tile and its row and column operands, or the accumulator and operand
/// fragments, the elements a double-buffered tile or a converting prefetch stages, and 32 for
/// indices, addresses and loop counters.
TileResources tile_resources(const Tile& t, int64_t operand_bytes, Precision precision,
                             const MmaOperands* operands = nullptr);

}  // namespace souffle::gpu
