/// \file The tensor-core tile a GEMM template built a stage with, as a typed value: the three
/// tensor-core templates (schedule/gemm_tc.cpp, gemm_mma.cpp, gemm_wgmma.cpp) record it on the
/// stage they produce (loop::StageInfo::tensor_core) and the pricer reads it there
/// (schedule::price_kernel, cooperative_register_budget); the stage's schedule text says the
/// same for people and is never read back.
#pragma once

#include <cstdint>

namespace souffle {

/// Which tensor-core GEMM template built a stage.
enum class TcTemplate : uint8_t {
  None,     ///< not a tensor-core GEMM stage
  Wmma,     ///< wmma fragments staged synchronously (gemm_tc)
  MmaSync,  ///< the Ampere mainloop: cp.async ring, ldmatrix and mma.sync (gemm_mma)
  Wgmma,    ///< the Hopper mainloop: warpgroup MMA from shared descriptors (gemm_wgmma)
};

/// "gemm_tc", "gemm_mma", "gemm_wgmma" (the first word of the stage's schedule text); "" for
/// None.
inline const char* tc_template_name(TcTemplate t) {
  switch (t) {
    case TcTemplate::None:
      return "";
    case TcTemplate::Wmma:
      return "gemm_tc";
    case TcTemplate::MmaSync:
      return "gemm_mma";
    case TcTemplate::Wgmma:
      return "gemm_wgmma";
  }
  return "?";
}

/// The block tile of a tensor-core GEMM stage as its template built it.
struct TensorCoreTile {
  TcTemplate kind = TcTemplate::None;
  int64_t bm = 0, bn = 0, bk = 0;  ///< the block tile (elements)
  /// 16x16 fragments per warp along M and N as the tile names them (gpu::Tile tm, tn), and the
  /// block's warps (wgmma: four per warpgroup).
  int64_t fm = 0, fn = 0, warps = 0;
  /// Shared stages of the operand tiles: the ring's depth (mma.sync, wgmma); wmma 2 when
  /// double-buffered, else 1.
  int64_t stages = 0;
  /// Some operand streams by cp.async into an f32 ring, converted at each K step (mma.sync under
  /// fp16/bf16 only).
  bool f32_ring = false;
  /// Registers per thread the template needs, where it estimates them (mma.sync:
  /// gpu::MmaMainloop::regs); 0 otherwise (wmma's opaque fragments, wgmma).
  int64_t regs = 0;
  bool operator==(const TensorCoreTile&) const = default;
};

}  // namespace souffle
