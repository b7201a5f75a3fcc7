// An element-wise TE scheduled on the tiles of the GEMM it reads (an LSTM's cell update over its
// interleaved gates): the merge proves the dependence block-owned, and the kernel computes what
// the program does, with the GEMM's tiles in one round or in several.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>

#include "core/loop/stmt.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;
using Idx = std::vector<Expr>;

constexpr int64_t kRows = 3, kUnits = 12, kGroup = 4, kK = 20;

/// gates[r, 4u + g] = sum_k x[r, k] * w[g * units + u, k] (W's rows gathered so that a unit's
/// four gates sit side by side, as the LSTM lowering lays them out), then cell[r, u] from the
/// unit's four gates, read at `col(u, g)`.
struct Cell {
  te::Op gates, cell;
};
Cell cell_of(const std::function<Expr(const Expr& u, int64_t g)>& col) {
  Tensor x = te::make_input("x", {kRows, kK}, DType::Float32);
  Tensor w = te::make_input("w", {kGroup * kUnits, kK}, DType::Float32);
  Cell c;
  c.gates = te::reduce("gates", {kRows, kGroup * kUnits}, DType::Float32, te::ReduceKind::Sum, {kK},
                       [&](const Idx& i, const Idx& k) {
                         Expr row = te::floormod(i[1], te::int_imm(kGroup)) * te::int_imm(kUnits) +
                                    te::floordiv(i[1], te::int_imm(kGroup));
                         return te::read(x, {i[0], k[0]}) * te::read(w, {row, k[0]});
                       });
  Tensor g = c.gates->output;
  c.cell = te::compute("cell", {kRows, kUnits}, DType::Float32, [&](const Idx& i) {
    auto at = [&](int64_t k) { return te::read(g, {i[0], col(i[1], k)}); };
    return te::sigmoid(at(0)) * te::tanh(at(3)) + te::sigmoid(at(2)) * at(1);
  });
  return c;
}

Cell interleaved() {
  return cell_of([](const Expr& u, int64_t g) { return u * te::int_imm(kGroup) + te::int_imm(g); });
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The GEMM and its cell update merged: the cell on the GEMM's tiles where it can be.
loop::Kernel merged(const Cell& c, const schedule::ScheduleConfig& config, bool* aligned) {
  loop::Kernel g = schedule::schedule_fused(*c.gates, {}, config);
  std::optional<loop::Kernel> on_tiles = schedule::schedule_on_gemm_tiles(
      *c.cell, *c.gates, config.gemm_tile, g.launch.block_x, config);
  *aligned = on_tiles.has_value();
  schedule::ScheduleConfig own = config;  // the GEMM's block, as a partition's stages share one
  own.block = g.launch.block_x;
  loop::Kernel cell = on_tiles ? std::move(*on_tiles) : schedule::schedule_op(*c.cell, own);
  return schedule::merge_stages({g, cell}, "cell");
}

TEST(TileAligned, TheCellUpdateOnItsGatesTilesNeedsABlockBarrierOnly) {
  const Cell c = interleaved();
  // 8-column tiles hold two units' gates: 3 x 48 in 4 x 8 tiles is 6 tiles.
  for (int64_t cap : {0, 4}) {
    SCOPED_TRACE("grid cap " + std::to_string(cap));
    schedule::ScheduleConfig config = schedule_test::small_gemm_tile(4, 8, 8);
    config.grid_cap = cap;
    bool aligned = false;
    const loop::Kernel k = merged(c, config, &aligned);
    ASSERT_TRUE(aligned);
    const std::string text = loop::print(k);
    EXPECT_EQ(count(text, "grid_barrier()"), 0) << text;
    ASSERT_EQ(k.boundaries.size(), 1u);
    EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Block);
    EXPECT_EQ(k.launch.grid_x, cap > 0 ? cap : 6);
    EXPECT_NE(k.stages.back().schedule.find("tiles of gates"), std::string::npos);
    EXPECT_LE(schedule_test::emulated_error({c.gates, c.cell}, {k}, 5), 1e-5);
  }
}

TEST(TileAligned, TheSameUpdateOnItsOwnMappingNeedsAGridBarrier) {
  // The gates of a unit a tile apart (gate-major columns, as ONNX lays them out): no alignment.
  const Cell apart = cell_of([](const Expr& u, int64_t g) { return u + te::int_imm(g * kUnits); });
  schedule::ScheduleConfig config = schedule_test::small_gemm_tile(4, 8, 8);
  bool aligned = true;
  const loop::Kernel k = merged(apart, config, &aligned);
  EXPECT_FALSE(aligned);
  EXPECT_EQ(count(loop::print(k), "grid_barrier()"), 1);
  EXPECT_LE(schedule_test::emulated_error({apart.gates, apart.cell}, {k}, 5), 1e-5);
}

TEST(TileAligned, OnlyReadsWithinAUnitsGroupAndTilesOfWholeGroupsAlign) {
  const Cell c = interleaved();
  schedule::ScheduleConfig config = schedule_test::small_gemm_tile(4, 8, 8);
  loop::Kernel g = schedule::schedule_fused(*c.gates, {}, config);
  const int64_t threads = g.launch.block_x;
  EXPECT_TRUE(
      schedule::schedule_on_gemm_tiles(*c.cell, *c.gates, config.gemm_tile, threads, config));
  // A tile of 6 columns splits a unit's four gates over two tiles.
  gpu::Tile six = config.gemm_tile;
  six.bn = 6;
  EXPECT_FALSE(schedule::schedule_on_gemm_tiles(*c.cell, *c.gates, six, threads, config));
  // A read past the unit's group (the next unit's first gate).
  const Cell past = cell_of([](const Expr& u, int64_t g) {
    return u * te::int_imm(kGroup) + te::int_imm(g == 3 ? kGroup : g);
  });
  EXPECT_FALSE(
      schedule::schedule_on_gemm_tiles(*past.cell, *past.gates, config.gemm_tile, threads, config));
  // A GEMM is no element-wise TE, and a TE that does not read the GEMM does not align.
  EXPECT_FALSE(
      schedule::schedule_on_gemm_tiles(*c.gates, *c.gates, config.gemm_tile, threads, config));
  const Cell other = interleaved();
  EXPECT_FALSE(
      schedule::schedule_on_gemm_tiles(*other.cell, *c.gates, config.gemm_tile, threads, config));
}

}  // namespace
}  // namespace souffle
