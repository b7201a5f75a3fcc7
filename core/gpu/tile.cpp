#include "core/gpu/tile.h"

#include <algorithm>

#include "core/support/int_math.h"

namespace souffle::gpu {

namespace {

/// Registers a GEMM thread needs beyond its tiles: indices, addresses, loop counters.
constexpr int64_t kRegOverhead = 32;
/// The mma mainloop's prefetch of converted operands stays within this many registers per
/// thread, fragments and accumulators included (schedule/gemm_mma.cpp).
constexpr int64_t kPrefetchRegs = 64;

}  // namespace

std::string Tile::describe() const {
  if (tensor_core)
    return "tensor-core tile " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
           std::to_string(bk) + ", warps " + std::to_string(warps_m()) + "x" +
           std::to_string(warps_n()) + " of " + std::to_string(tm) + "x" + std::to_string(tn) +
           " fragments" + (double_buffer ? ", double-buffered" : "") +
           (stages > 0 ? ", " + std::to_string(stages) + " stages" : "") +
           (f32_ring ? ", f32 ring" : "");
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " tile " +
         std::to_string(tm) + "x" + std::to_string(tn) + (double_buffer ? ", double-buffered" : "");
}

MmaElem mma_elem_of(int64_t bytes, Precision precision) {
  if (bytes == 4) return MmaElem::F32;
  if (bytes == 2) return precision == Precision::BF16 ? MmaElem::BF16 : MmaElem::F16;
  return MmaElem::None;
}

MmaMainloop mma_mainloop(const Tile& t, const MmaOperands& operands, Precision precision) {
  MmaMainloop m;
  const int64_t es = precision == Precision::TF32 ? 4 : 2;
  m.element_bytes = es;
  // cp.async copies the compute type as it is: f16 under fp16, bf16 under bf16, f32 under tf32.
  const MmaElem same = precision == Precision::TF32   ? MmaElem::F32
                       : precision == Precision::BF16 ? MmaElem::BF16
                                                      : MmaElem::F16;
  m.a_async = operands.a == same;
  m.b_async = operands.b == same;
  const bool wide = t.f32_ring && es == 2;
  m.a_wide = wide && operands.a == MmaElem::F32;
  m.b_wide = wide && operands.b == MmaElem::F32;
  m.stage_bytes = t.bm * t.bk * (m.a_wide ? 4 : es) + t.bk * t.bn * (m.b_wide ? 4 : es);
  m.convert_bytes = ((m.a_wide ? t.bm * t.bk : 0) + (m.b_wide ? t.bk * t.bn : 0)) * es;
  if (t.stages > 0) {
    m.stages = std::clamp<int64_t>(t.stages, 2, 4);
  } else {
    m.stages = m.any_async() && 3 * m.stage_bytes + m.convert_bytes <= kMmaDefaultShared ? 3 : 2;
  }
  m.smem_bytes = m.stages * m.stage_bytes + m.convert_bytes;
  // Per lane: tm x 2tn accumulator tiles of 16x8 (4 f32 each); A fragments of the tm 16-row
  // tiles and B fragments of one pair of n8 tiles (8 halves or 4 tf32 elements, and 4 or 2).
  const int64_t na = es == 4 ? 4 : 8, nb = es == 4 ? 2 : 4;
  m.fragment_regs = t.tm * 2 * t.tn * 4 + (t.tm * na + 2 * nb) * es / 4;
  const int64_t threads = std::max<int64_t>(t.threads(), 1);
  const int64_t staged = (m.a_async || m.a_wide ? 0 : ceil_div(t.bm * t.bk, threads)) +
                         (m.b_async || m.b_wide ? 0 : ceil_div(t.bk * t.bn, threads));
  m.prefetch = staged + m.fragment_regs <= kPrefetchRegs;
  m.staged_regs = m.prefetch ? staged : 0;
  // The template's registers (MmaMainloop::regs); fitted on NVRTC's sm_80 figures of fp16
  // (f16 copies, f32 rings, f32 stored after the MMAs) and tf32 tiles from 32x32x16 to
  // 128x128x32, which it covers.
  const int64_t all_b = t.tn * 2 * nb;  // the B fragments of every n8 tile of the warp tile
  const int64_t operand_frags = (t.tm * na + all_b) * es / 4;
  auto chunks = [&](int64_t elems, int64_t bytes) { return ceil_div(elems * bytes / 16, threads); };
  const int64_t a_elems = t.bm * t.bk, b_elems = t.bk * t.bn;
  int64_t copies = 0, converted = 0, stored = 0;
  if (m.a_async || m.a_wide) copies += chunks(a_elems, m.a_wide ? 4 : es);
  if (m.b_async || m.b_wide) copies += chunks(b_elems, m.b_wide ? 4 : es);
  if (m.a_wide) converted += ceil_div(a_elems, threads);
  if (m.b_wide) converted += ceil_div(b_elems, threads);
  (m.prefetch ? converted : stored) += staged;
  m.regs = std::min<int64_t>(
      255, t.tm * 2 * t.tn * 4 + 2 * operand_frags + 4 * copies + 3 * converted + 5 * stored + 40);
  return m;
}

bool mma_warp_tile(const Tile& t) {
  return t.tm * t.tn <= 8;
}

MainloopStructure mma_mainloop_structure(const Tile& t, const MmaMainloop& m) {
  MainloopStructure s;
  if (!mma_warp_tile(t)) {
    s.staging = MainloopStructure::Staging::Synchronous;
    s.instruction = "wmma";
    s.warps = t.threads() / 32;
    s.tile_elems = t.bm * t.bn;
    s.k_per_step = t.bk;
    s.operand_bytes = static_cast<int>(m.element_bytes);
    s.epilogue_through_shared = true;
    return s;
  }
  s.staging = m.any_async() ? MainloopStructure::Staging::Pipelined
                            : MainloopStructure::Staging::Synchronous;
  s.depth = m.any_async() ? static_cast<int>(m.stages - 1) : 1;
  s.instruction = "mma.sync";
  s.warps = t.threads() / 32;
  s.tile_elems = t.bm * t.bn;
  s.k_per_step = t.bk;
  // A wide ring stages 4-byte elements (copied, then read once more to convert).
  s.operand_bytes = static_cast<int>(m.any_wide() ? 4 : m.element_bytes);
  s.epilogue_through_shared = false;
  return s;
}

TileResources tile_resources(const Tile& t, int64_t operand_bytes, Precision precision,
                             const MmaOperands* operands) {
  TileResources r;
  r.threads = t.threads();
  if (r.threads <= 0) return r;
  if (t.tensor_core && !mma_warp_tile(t)) {
    // The wmma template: operand tiles in the compute type with its row padding (two stages
    // when double-buffered, the next chunk staged in registers one element each), and the fp32
    // tile the accumulators are stored through (the arena stacks them).
    const int64_t ct = precision == Precision::TF32 ? 4 : 2, pad = ct == 2 ? 8 : 4;
    const int64_t staged =
        t.double_buffer ? ceil_div(t.bm * t.bk, r.threads) + ceil_div(t.bk * t.bn, r.threads) : 0;
    r.regs_per_thread = 8 * t.tm * t.tn + 4 * (t.tm + t.tn) + staged + kRegOverhead;
    r.smem_bytes = (t.bm * (t.bk + pad) + t.bk * (t.bn + pad)) * ct * (t.double_buffer ? 2 : 1) +
                   t.bm * (t.bn + 4) * 4;
    return r;
  }
  if (t.tensor_core) {
    const MmaOperands plain{mma_elem_of(operand_bytes, precision),
                            mma_elem_of(operand_bytes, precision)};
    const MmaMainloop m = mma_mainloop(t, operands ? *operands : plain, precision);
    r.regs_per_thread = m.regs;
    r.smem_bytes = m.smem_bytes;
    r.stages = m.stages;
    return r;
  }
  const int64_t per_a = ceil_div(t.bm * t.bk, r.threads), per_b = ceil_div(t.bk * t.bn, r.threads);
  r.regs_per_thread =
      t.tm * t.tn + t.tm + t.tn + (t.double_buffer ? per_a + per_b : 0) + kRegOverhead;
  r.smem_bytes = (t.bm * t.bk + t.bk * t.bn) * operand_bytes * (t.double_buffer ? 2 : 1);
  return r;
}

}  // namespace souffle::gpu
