#include "core/gpu/tile.h"
#include "core/support/int_math.h"

namespace souffle::gpu {

namespace {

/// Registers a GEMM thread needs beyond its tiles: indices, addresses, loop counters.
constexpr int64_t kRegOverhead = 32;
/// Tensor cores: the registers a thread holds of an A or B fragment (16x16 halves or 16x8 tf32
/// over 32 lanes) and of an fp32 accumulator fragment.
constexpr int64_t kOperandFragRegs = 4, kAccFragRegs = 8;

}  // namespace

std::string Tile::describe() const {
  if (tensor_core)
    return "tensor-core tile " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
           std::to_string(bk) + ", warps " + std::to_string(warps_m()) + "x" +
           std::to_string(warps_n()) + " of " + std::to_string(tm) + "x" + std::to_string(tn) +
           " fragments" + (double_buffer ? ", double-buffered" : "");
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " tile " +
         std::to_string(tm) + "x" + std::to_string(tn) + (double_buffer ? ", double-buffered" : "");
}

TileResources tile_resources(const Tile& t, int64_t operand_bytes, Precision precision) {
  TileResources r;
  r.threads = t.threads();
  if (r.threads <= 0) return r;
  if (t.tensor_core) {
    // Operand tiles in the compute type with the template's row padding, and the fp32 tile the
    // accumulators are stored through (the arena stacks them).
    const int64_t ct = precision == Precision::TF32 ? 4 : 2, pad = ct == 2 ? 8 : 4;
    // Double buffering stages the next chunk's elements in registers, one each (converted
    // one by one; ptxas does not pack the halves).
    const int64_t staged =
        t.double_buffer ? ceil_div(t.bm * t.bk, r.threads) + ceil_div(t.bk * t.bn, r.threads) : 0;
    r.regs_per_thread =
        kAccFragRegs * t.tm * t.tn + kOperandFragRegs * (t.tm + t.tn) + staged + kRegOverhead;
    r.smem_bytes = (t.bm * (t.bk + pad) + t.bk * (t.bn + pad)) * ct * (t.double_buffer ? 2 : 1) +
                   t.bm * (t.bn + 4) * 4;
    return r;
  }
  const int64_t per_a = ceil_div(t.bm * t.bk, r.threads), per_b = ceil_div(t.bk * t.bn, r.threads);
  r.regs_per_thread =
      t.tm * t.tn + t.tm + t.tn + (t.double_buffer ? per_a + per_b : 0) + kRegOverhead;
  r.smem_bytes = (t.bm * t.bk + t.bk * t.bn) * operand_bytes * (t.double_buffer ? 2 : 1);
  return r;
}

}  // namespace souffle::gpu
