// The GEMM tile type and its resource table: threads, registers and shared memory per block
// for SIMT and tensor-core tiles, as the tuner, the schedules and the planner read them.
#include <gtest/gtest.h>

#include "core/gpu/tile.h"

namespace souffle::gpu {
namespace {

TEST(Tile, SimtResources) {
  // 128x128 block tile, 8x8 per thread: 256 threads; 64 accumulators + 8 + 8 operands + 32.
  Tile t{128, 128, 16, 8, 8, false, false};
  TileResources r = tile_resources(t, 4, Precision::FP32);
  EXPECT_EQ(r.threads, 256);
  EXPECT_EQ(r.regs_per_thread, 64 + 16 + 32);
  EXPECT_EQ(r.smem_bytes, (128 * 16 + 16 * 128) * 4);
  // Double-buffered: the next chunk staged in registers (8 of A and 8 of B a thread), two
  // shared stages.
  t.double_buffer = true;
  r = tile_resources(t, 4, Precision::FP32);
  EXPECT_EQ(r.regs_per_thread, 64 + 16 + 8 + 8 + 32);
  EXPECT_EQ(r.smem_bytes, (128 * 16 + 16 * 128) * 4 * 2);
  // 2-byte operands halve the shared tiles.
  EXPECT_EQ(tile_resources(t, 2, Precision::FP32).smem_bytes, (128 * 16 + 16 * 128) * 2 * 2);
  EXPECT_EQ(t.describe(), "128x128x16 tile 8x8, double-buffered");
}

TEST(Tile, TensorCoreResources) {
  // 64x64 block tile of 2x2 warps, each 2x2 fragments: 128 threads, on the Ampere mainloop.
  Tile t{64, 64, 32, 2, 2, false, true};
  EXPECT_EQ(t.warps_m(), 2);
  EXPECT_EQ(t.warps_n(), 2);
  EXPECT_TRUE(mma_warp_tile(t));
  // f32 tensors under fp16: converted element by element (32 a thread, past the prefetch's 64
  // registers), so a ring of 2 unpadded fp16 stages and no accumulator tile.
  TileResources r = tile_resources(t, 4, Precision::FP16);
  EXPECT_EQ(r.threads, 128);
  EXPECT_EQ(r.stages, 2);
  // Accumulators 2 x 4 tiles of 4 (32), A fragments 2 x 4 registers and B 4 x 2 halves pairs
  // (16, twice: the next K slice's), 40 overhead and 5 for each of the 32 elements stored after
  // the MMAs: 264, at most 255 (NVRTC: 249 on sm_80, tests/schedule/test_mma_regs.cpp).
  EXPECT_EQ(r.regs_per_thread, 255);
  EXPECT_EQ(mma_mainloop(t, {MmaElem::F32, MmaElem::F32}, Precision::FP16).regs, 255);
  // The f16 ring: 4 cp.async of 16 bytes a thread per stage instead (32 + 32 + 16 + 40).
  EXPECT_EQ(tile_resources(t, 2, Precision::FP16).regs_per_thread, 120);
  EXPECT_EQ(r.smem_bytes, 2 * (64 * 32 + 32 * 64) * 2);
  // f16 tensors stream by cp.async: 3 stages by default (24 KB within 48 KB), any depth asked.
  EXPECT_EQ(tile_resources(t, 2, Precision::FP16).smem_bytes, 3 * (64 * 32 + 32 * 64) * 2);
  t.stages = 4;
  EXPECT_EQ(tile_resources(t, 2, Precision::FP16).smem_bytes, 4 * (64 * 32 + 32 * 64) * 2);
  EXPECT_EQ(tile_resources(t, 2, Precision::FP16).stages, 4);
  // tf32 operands are 4 bytes.
  EXPECT_EQ(tile_resources(t, 4, Precision::TF32).smem_bytes, 4 * (64 * 32 + 32 * 64) * 4);
  EXPECT_EQ(t.describe(), "tensor-core tile 64x64x32, warps 2x2 of 2x2 fragments, 4 stages");
  t.stages = 0;
  EXPECT_EQ(t.describe(), "tensor-core tile 64x64x32, warps 2x2 of 2x2 fragments");
  // A small converted tile prefetches through registers: 16x16 elements of A and B per 32x32x16
  // block of 4 warps of one fragment is 2 + 2 staged registers.
  Tile s{32, 32, 16, 1, 1, false, true};
  MmaMainloop m = mma_mainloop(s, {MmaElem::F32, MmaElem::F32}, Precision::BF16);
  EXPECT_TRUE(m.prefetch);
  EXPECT_EQ(m.staged_regs, 4 + 4);
  // Warp tiles of 4x4 fragments stay on wmma: padded operand tiles and the fp32 C tile.
  Tile w{128, 128, 32, 4, 4, false, true};
  EXPECT_FALSE(mma_warp_tile(w));
  EXPECT_EQ(tile_resources(w, 4, Precision::FP16).smem_bytes,
            (128 * (32 + 8) + 32 * (128 + 8)) * 2 + 128 * (128 + 4) * 4);
}

TEST(Tile, EmptyTileAsksNothing) {
  Tile t{64, 64, 16, 128, 128, false, false};  // register tile larger than the block tile
  TileResources r = tile_resources(t, 4, Precision::FP32);
  EXPECT_EQ(r.threads, 0);
  EXPECT_EQ(r.regs_per_thread, 0);
  EXPECT_EQ(r.smem_bytes, 0);
}

}  // namespace
}  // namespace souffle::gpu
