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
  // 64x64 block tile of 2x2 warps, each 2x2 fragments: 128 threads.
  Tile t{64, 64, 32, 2, 2, false, true};
  EXPECT_EQ(t.warps_m(), 2);
  EXPECT_EQ(t.warps_n(), 2);
  TileResources r = tile_resources(t, 4, Precision::FP16);
  EXPECT_EQ(r.threads, 128);
  EXPECT_EQ(r.regs_per_thread, 8 * 4 + 4 * 4 + 32);
  // fp16 operand tiles padded by 8 halves a row, and the fp32 accumulator tile padded by 4.
  EXPECT_EQ(r.smem_bytes, (64 * (32 + 8) + 32 * (64 + 8)) * 2 + 64 * (64 + 4) * 4);
  // tf32 operands are 4 bytes, padded by 4.
  EXPECT_EQ(tile_resources(t, 4, Precision::TF32).smem_bytes,
            (64 * (32 + 4) + 32 * (64 + 4)) * 4 + 64 * (64 + 4) * 4);
  EXPECT_EQ(t.describe(), "tensor-core tile 64x64x32, warps 2x2 of 2x2 fragments");
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
