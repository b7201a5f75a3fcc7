// Weight panels: GEMM stages of one kernel that multiply by the same weights keep the block's
// slice of them in a kernel-lifetime shared buffer. Which stages may keep one, which of them
// load it, the kernels computing what the program does, and a wrong reuse caught by the
// emulator.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/schedule/weight_panel.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;
using Idx = std::vector<Expr>;

constexpr int64_t kRows = 4, kWidth = 16, kSteps = 4;

/// y_t[r, n] = sum_k y_{t-1}[r, k] * w[n, k] for t = 1..kSteps, y_0 = x: one weight matrix read
/// by every step, as a recurrent layer reads its R.
struct Chain {
  Tensor x, w;
  std::vector<te::Op> steps;
};
Chain chain() {
  Chain c;
  c.x = te::make_input("x", {kRows, kWidth}, DType::Float32);
  c.w = te::make_input("w", {kWidth, kWidth}, DType::Float32);
  Tensor prev = c.x;
  for (int64_t t = 1; t <= kSteps; ++t) {
    te::Op op = te::reduce("y" + std::to_string(t), {kRows, kWidth}, DType::Float32,
                           te::ReduceKind::Sum, {kWidth}, [&](const Idx& i, const Idx& k) {
                             return te::read(prev, {i[0], k[0]}) * te::read(c.w, {i[1], k[0]});
                           });
    prev = op->output;
    c.steps.push_back(op);
  }
  return c;
}

/// 4 x 8 tiles of 8-deep K chunks: each step is 2 tiles (2 blocks), its panel 16 x 8.
schedule::ScheduleConfig config() {
  return schedule_test::small_gemm_tile(4, 8, 8, true);
}

std::set<const te::TensorNode*> outputs_of(const Chain& c) {
  std::set<const te::TensorNode*> out;
  for (const te::Op& op : c.steps) out.insert(op->output.get());
  return out;
}

std::optional<schedule::PanelShape> shape_of(const te::ComputeOp& op,
                                             const schedule::ScheduleConfig& c,
                                             const std::set<const te::TensorNode*>& written) {
  return schedule::weight_panel_shape(
      op, c, [&](const te::TensorNode* t) { return written.count(t) > 0; });
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The chain's steps merged into one kernel, step i at block offsets[i]; each step's panel as
/// `assign_weight_panels` says, or as `planted` overrides it.
loop::Kernel merged(const Chain& c, const std::vector<int64_t>& offsets,
                    schedule::PanelAssignment* assignment = nullptr,
                    const std::vector<std::optional<bool>>& planted = {}) {
  const schedule::ScheduleConfig cfg = config();
  const std::set<const te::TensorNode*> written = outputs_of(c);
  std::vector<std::optional<schedule::PanelShape>> shapes;
  std::vector<int64_t> grids;
  for (const te::Op& op : c.steps) {
    shapes.push_back(shape_of(*op, cfg, written));
    grids.push_back(2);
  }
  schedule::PanelAssignment a =
      schedule::assign_weight_panels(shapes, offsets, grids, 48 * 1024, "chain");
  std::vector<loop::Kernel> stages;
  for (size_t i = 0; i < c.steps.size(); ++i) {
    std::optional<schedule::WeightPanel> p = a.stage[i];
    if (i < planted.size() && planted[i] && p) p->load = *planted[i];
    stages.push_back(schedule::schedule_fused(*c.steps[i], {}, cfg, {}, p ? &*p : nullptr));
  }
  schedule::MergeOptions mo;
  mo.kernel_shared = a.buffers;
  mo.block_offsets = offsets;
  if (assignment) *assignment = a;
  return schedule::merge_stages(std::move(stages), "chain", mo);
}

std::vector<te::Op> ops_of(const Chain& c) {
  return c.steps;
}

TEST(WeightPanel, OnlyASimtGemmOverWeightsWithOneTilePerBlockKeepsOne) {
  const Chain c = chain();
  const std::set<const te::TensorNode*> written = outputs_of(c);
  const std::optional<schedule::PanelShape> s = shape_of(*c.steps[1], config(), written);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rows, 16);
  EXPECT_EQ(s->cols, 8);
  EXPECT_EQ(s->bytes(), 16 * 8 * 4);
  // Every step reads the same weights the same way: one key.
  EXPECT_EQ(shape_of(*c.steps[3], config(), written)->key, s->key);
  // B read from a tensor the kernel writes is no weight.
  std::set<const te::TensorNode*> w_written = written;
  w_written.insert(c.w.get());
  EXPECT_FALSE(shape_of(*c.steps[1], config(), w_written));
  // Tiles in rounds: a block computes two tiles in one stage.
  schedule::ScheduleConfig capped = config();
  capped.grid_cap = 1;
  EXPECT_FALSE(shape_of(*c.steps[1], capped, written));
  // Tensor cores: not taken.
  schedule::ScheduleConfig tf32 = config();
  tf32.precision = gpu::Precision::TF32;
  tf32.block = 128;
  EXPECT_FALSE(shape_of(*c.steps[1], tf32, written));
  // Other weights, another key.
  Chain other = chain();
  EXPECT_NE(shape_of(*other.steps[1], config(), outputs_of(other))->key, s->key);
}

schedule::PanelShape shape(const std::string& key, int64_t rows = 16, int64_t cols = 8) {
  schedule::PanelShape s;
  s.key = key;
  s.rows = rows;
  s.cols = cols;
  return s;
}

TEST(WeightPanel, AStageLoadsUnlessItsBlocksHoldItsWeightsForItsTiles) {
  using Shapes = std::vector<std::optional<schedule::PanelShape>>;
  // One weight at one offset: the first stage loads, the others read.
  schedule::PanelAssignment a = schedule::assign_weight_panels(
      Shapes{shape("A"), shape("A"), shape("A")}, {0, 0, 0}, {4, 4, 4}, 48 * 1024, "k");
  ASSERT_EQ(a.buffers.size(), 1u);
  EXPECT_EQ(a.groups, 1);
  EXPECT_EQ(a.loads, 1);
  EXPECT_EQ(a.reuses, 2);
  EXPECT_TRUE(a.stage[0]->load);
  EXPECT_FALSE(a.stage[2]->load);
  // Moved to other blocks, or by part of a tile range (a block would compute another tile):
  // loaded again there.
  a = schedule::assign_weight_panels(Shapes{shape("A"), shape("A"), shape("A"), shape("A")},
                                     {0, 4, 4, 2}, {4, 4, 4, 4}, 48 * 1024, "k");
  EXPECT_EQ(a.loads, 3);
  EXPECT_EQ(a.reuses, 1);
  EXPECT_FALSE(a.stage[2]->load);
  EXPECT_TRUE(a.stage[3]->load);
  // Two weights of one shape on the same blocks, in turn: each would reload every time, so
  // neither keeps a panel; on blocks of their own both do, in one buffer.
  a = schedule::assign_weight_panels(Shapes{shape("A"), shape("B"), shape("A"), shape("B")},
                                     {0, 0, 0, 0}, {4, 4, 4, 4}, 48 * 1024, "k");
  EXPECT_TRUE(a.buffers.empty());
  EXPECT_FALSE(a.stage[0]);
  a = schedule::assign_weight_panels(Shapes{shape("A"), shape("B"), shape("A"), shape("B")},
                                     {0, 4, 0, 4}, {4, 4, 4, 4}, 48 * 1024, "k");
  EXPECT_EQ(a.buffers.size(), 1u);
  EXPECT_EQ(a.groups, 2);
  EXPECT_EQ(a.loads, 2);
  EXPECT_EQ(a.reuses, 2);
  // Weights read once, stages without a shape, and panels past the budget: none.
  a = schedule::assign_weight_panels(Shapes{shape("A"), std::nullopt, shape("B")}, {0, 0, 0},
                                     {4, 4, 4}, 48 * 1024, "k");
  EXPECT_TRUE(a.buffers.empty());
  a = schedule::assign_weight_panels(Shapes{shape("A"), shape("A")}, {0, 0}, {4, 4}, 16 * 8 * 4 - 1,
                                     "k");
  EXPECT_TRUE(a.buffers.empty());
  // Two shapes, room for one: the one that saves more loads.
  a = schedule::assign_weight_panels(
      Shapes{shape("A"), shape("A"), shape("B", 32, 8), shape("B", 32, 8), shape("B", 32, 8)},
      {0, 0, 4, 4, 4}, {4, 4, 4, 4, 4}, 32 * 8 * 4 + 32, "k");
  ASSERT_EQ(a.buffers.size(), 1u);
  EXPECT_FALSE(a.stage[0]);
  EXPECT_TRUE(a.stage[2]);
  EXPECT_EQ(a.reuses, 2);
}

TEST(WeightPanel, AChainReadsItsWeightsOnceAndComputesWhatTheProgramDoes) {
  const Chain c = chain();
  schedule::PanelAssignment a;
  const loop::Kernel k = merged(c, {0, 0, 0, 0}, &a);
  EXPECT_EQ(a.loads, 1);
  EXPECT_EQ(a.reuses, 3);
  const std::string text = loop::print(k);
  // w is read by the first step's panel load only; every step reads the panel.
  EXPECT_EQ(count(text, "w["), 1) << text;
  EXPECT_EQ(count(text, "chain_weights["), 1 + kSteps) << text;
  EXPECT_EQ(count(k.stages[0].schedule, "loaded into the shared panel"), 1);
  EXPECT_EQ(count(k.stages[3].schedule, "read from the shared panel"), 1);
  // The panel lives for the whole kernel, beside what the stages use.
  bool found = false;
  for (const loop::SharedSlot& s : k.shared) found |= s.buffer->name == "chain_weights";
  EXPECT_TRUE(found);
  EXPECT_LE(schedule_test::emulated_error(ops_of(c), {k}, 3), 1e-5);
  // Also with the steps moving between blocks: loaded again on new blocks, not on blocks that
  // still hold the weights for the same tiles.
  const loop::Kernel moved = merged(c, {0, 2, 2, 0}, &a);
  EXPECT_EQ(a.loads, 2);
  EXPECT_FALSE(a.stage[3]->load);
  EXPECT_LE(schedule_test::emulated_error(ops_of(c), {moved}, 4), 1e-5);
  // The cost model sees the weights read once: fewer L2 bytes than streaming them every step.
  std::vector<loop::Kernel> plain;
  for (const te::Op& op : c.steps) plain.push_back(schedule::schedule_fused(*op, {}, config()));
  const loop::Kernel streamed = schedule::merge_stages(std::move(plain), "chain");
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  const gpu::CostConstants costs = gpu::cost_constants(spec, gpu::Precision::FP32);
  const int64_t w_bytes = kWidth * kWidth * 4;
  EXPECT_EQ(schedule::price_kernel(streamed, spec, costs, nullptr).l2_bytes -
                schedule::price_kernel(k, spec, costs, nullptr).l2_bytes,
            (kSteps - 1) * w_bytes);
}

TEST(WeightPanel, AStageThatWouldReadAnotherTilesPanelIsCaughtByTheEmulator) {
  const Chain c = chain();
  // Step 2 runs one block further on: block 1 now holds the weights of tile 0, block 0 those of
  // tile 0 too. Step 3 back at block 0 must load again (block 1 computes tile 1 there).
  schedule::PanelAssignment a;
  const loop::Kernel right = merged(c, {0, 1, 0, 0}, &a);
  ASSERT_TRUE(a.stage[2] && a.stage[2]->load);
  EXPECT_LE(schedule_test::emulated_error(ops_of(c), {right}, 3), 1e-5);
  // Planted: step 3 told to reuse what its blocks hold computes tile 1 with tile 0's weights.
  const loop::Kernel wrong = merged(c, {0, 1, 0, 0}, nullptr, {std::nullopt, std::nullopt, false});
  EXPECT_GT(schedule_test::emulated_error(ops_of(c), {wrong}, 3), 1e-2);
  // A block that never loaded the panel: the emulator names the read.
  const loop::Kernel never = merged(c, {0, 0, 2, 2}, nullptr, {std::nullopt, std::nullopt, false});
  try {
    schedule_test::emulated_error(ops_of(c), {never}, 3);
    ADD_FAILURE() << "no error for a read of a panel never loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("never-written chain_weights"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace souffle
