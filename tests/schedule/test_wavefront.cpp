// Waves: independent stages of a cooperative kernel side by side on disjoint blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/schedule/wavefront.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

/// Two recurrent layers over `steps` steps, as an LSTM stack unrolls: a_t = a_{t-1} W (a GEMM)
/// and b_t = (a_t + b_{t-1}) V. Program order: every a, then every b.
std::vector<te::Op> two_layers(int steps) {
  const int64_t rows = 4, n = 32;
  Tensor x = te::make_input("x", {rows, n}, DType::Float32);
  Tensor y = te::make_input("y", {rows, n}, DType::Float32);
  Tensor w = te::make_input("w", {n, n}, DType::Float32);
  Tensor v = te::make_input("v", {n, n}, DType::Float32);
  std::vector<te::Op> a, b;
  Tensor prev = x;
  for (int t = 0; t < steps; ++t) {
    te::Op op = te::reduce("a" + std::to_string(t), {rows, n}, DType::Float32, te::ReduceKind::Sum,
                           {n}, [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                             return te::read(prev, {i[0], k[0]}) * te::read(w, {k[0], i[1]});
                           });
    a.push_back(op);
    prev = op->output;
  }
  prev = y;
  for (int t = 0; t < steps; ++t) {
    Tensor in = a[static_cast<size_t>(t)]->output;
    te::Op op = te::reduce("b" + std::to_string(t), {rows, n}, DType::Float32, te::ReduceKind::Sum,
                           {n}, [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                             return (te::read(in, {i[0], k[0]}) + te::read(prev, {i[0], k[0]})) *
                                    te::read(v, {k[0], i[1]});
                           });
    b.push_back(op);
    prev = op->output;
  }
  std::vector<te::Op> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return all;
}

std::vector<loop::Kernel> stages_of(const std::vector<te::Op>& ops) {
  schedule::ScheduleConfig c = schedule_test::small_gemm_tile(4, 8, 8);
  c.block = 8;
  std::vector<loop::Kernel> out;
  for (const te::Op& op : ops) out.push_back(schedule::schedule_op(*op, c));
  return out;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Wavefront, LevelsTwoLayersIntoDiagonalWaves) {
  const int steps = 4;
  std::vector<loop::Kernel> stages = stages_of(two_layers(steps));
  const schedule::WaveLayout l = schedule::pack_waves(stages, 64);
  // a_t at level t, b_t at level t + 1: steps + 1 levels against program order's intervals
  // (a chain of `steps`, then b_0 beside a_{steps-1}, then a chain of steps - 1).
  EXPECT_EQ(l.levels, steps + 1);
  EXPECT_EQ(l.program_intervals, 2 * steps - 1);
  ASSERT_TRUE(l.changes());
  ASSERT_EQ(l.order.size(), stages.size());
  // A topological order: every stage after the stages whose outputs it reads.
  std::map<const te::TensorNode*, size_t> pos;
  for (size_t i = 0; i < l.order.size(); ++i)
    for (const Tensor& t : stages[l.order[i]].outputs) pos[t.get()] = i;
  for (size_t i = 0; i < l.order.size(); ++i)
    for (const Tensor& t : stages[l.order[i]].inputs) {
      auto it = pos.find(t.get());
      if (it != pos.end()) {
        EXPECT_LT(it->second, i) << t->name;
      }
    }
  // Stages of one wave on disjoint blocks, within the grid.
  std::map<int, std::vector<size_t>> waves;
  for (size_t i = 0; i < stages.size(); ++i) waves[l.wave[i]].push_back(i);
  int widest = 0;
  for (const auto& [w, members] : waves) {
    widest = std::max<int>(widest, static_cast<int>(members.size()));
    for (size_t x : members)
      for (size_t y : members)
        if (x < y) {
          const int64_t xe = l.offset[x] + stages[x].launch.grid_x;
          const int64_t ye = l.offset[y] + stages[y].launch.grid_x;
          EXPECT_TRUE(xe <= l.offset[y] || ye <= l.offset[x]) << x << " and " << y;
        }
    for (size_t x : members) EXPECT_LE(l.offset[x] + stages[x].launch.grid_x, l.grid);
  }
  EXPECT_EQ(widest, 2);  // a_t beside b_{t-1}
  EXPECT_LE(l.grid, 64);
}

TEST(Wavefront, NoGainKeepsProgramOrder) {
  // One chain: nothing can run beside anything.
  std::vector<te::Op> ops = two_layers(3);
  ops.resize(3);
  const schedule::WaveLayout l = schedule::pack_waves(stages_of(ops), 64);
  EXPECT_FALSE(l.changes());
  EXPECT_EQ(l.levels, 3);
}

TEST(Wavefront, TightGridSplitsAWave) {
  std::vector<loop::Kernel> stages = stages_of(two_layers(4));
  int64_t widest = 0;
  for (const loop::Kernel& k : stages) widest = std::max(widest, k.launch.grid_x);
  // Room for one stage at a time: every wave holds one stage, all at block 0.
  const schedule::WaveLayout l = schedule::pack_waves(stages, widest);
  for (size_t i = 0; i < stages.size(); ++i) EXPECT_EQ(l.offset[i], 0);
  EXPECT_EQ(l.grid, widest);
}

/// The stages merged in `l`'s order at its offsets.
loop::Kernel merged_in_waves(const std::vector<loop::Kernel>& stages,
                             const schedule::WaveLayout& l) {
  schedule::MergeOptions mo;
  std::vector<loop::Kernel> ordered;
  for (size_t i : l.order) {
    ordered.push_back(stages[i]);
    mo.block_offsets.push_back(l.offset[i]);
    mo.waves.push_back(l.wave[i]);
  }
  return schedule::merge_stages(std::move(ordered), "waves", mo);
}

TEST(Wavefront, LanesKeepEachLayerOnItsBlocks) {
  const int steps = 4;
  const std::vector<te::Op> ops = two_layers(steps);
  const std::vector<loop::Kernel> stages = stages_of(ops);
  const size_t last = 2 * steps - 1;  // b_3, alone in the last wave
  const int64_t g = stages[0].launch.grid_x;
  const schedule::WaveLayout plain = schedule::pack_waves(stages, 64);
  EXPECT_EQ(plain.offset[last], 0);  // the lowest free blocks
  // Layer a's steps in one lane, layer b's in another: b keeps the blocks it first got.
  std::vector<std::string> lanes(stages.size(), "a");
  for (size_t i = steps; i < stages.size(); ++i) lanes[i] = "b";
  const schedule::WaveLayout l = schedule::pack_waves(stages, 64, lanes);
  for (size_t t = 0; t < steps; ++t) {
    EXPECT_EQ(l.offset[t], 0) << t;
    EXPECT_EQ(l.offset[steps + t], g) << t;
  }
  EXPECT_EQ(l.wave, plain.wave);  // the same waves, the same grid
  EXPECT_EQ(l.grid, plain.grid);
  // A stage that follows another takes its blocks where they are free.
  std::vector<int> follow(stages.size(), -1);
  follow[last] = 1;  // a_1, at block 0
  EXPECT_EQ(schedule::pack_waves(stages, 64, lanes, follow).offset[last], 0);
  // Where the home is taken in a wave, the lowest free blocks: b_0 told to follow a_1, beside
  // which it runs, cannot.
  follow[last] = -1;
  follow[steps] = 1;
  const schedule::WaveLayout taken = schedule::pack_waves(stages, 64, lanes, follow);
  EXPECT_EQ(taken.offset[steps], g);
  // Merged as laid out, the kernel computes what the program does.
  EXPECT_LE(schedule_test::emulated_error(ops, {merged_in_waves(stages, l)}, 11), 1e-5);
}

TEST(Wavefront, MergedWavesComputeWhatTheProgramDoesWithFewerGridBarriers) {
  const std::vector<te::Op> ops = two_layers(4);
  const std::vector<loop::Kernel> stages = stages_of(ops);
  const schedule::WaveLayout l = schedule::pack_waves(stages, 64);
  const loop::Kernel packed = merged_in_waves(stages, l);
  const loop::Kernel plain = schedule::merge_stages(stages, "plain", schedule::MergeOptions{});
  const std::string pt = loop::print(packed), qt = loop::print(plain);
  EXPECT_EQ(count(pt, "grid_barrier()"), l.levels - 1) << pt;
  EXPECT_EQ(count(qt, "grid_barrier()"), l.program_intervals - 1);
  EXPECT_EQ(packed.launch.grid_x, l.grid);
  // The offsets table: one row per stage placed at a block offset.
  ASSERT_EQ(packed.tables.size(), 1u);
  int at_offset = 0;
  for (size_t i = 0; i < stages.size(); ++i) at_offset += l.offset[i] > 0;
  EXPECT_EQ(packed.tables[0]->shape[0], at_offset);
  for (const loop::StageInfo& si : packed.stages) EXPECT_GE(si.wave, 0);
  // Both compute the program, in the emulator against the interpreter.
  EXPECT_LE(schedule_test::emulated_error(ops, {packed}, 11), 1e-5);
  EXPECT_LE(schedule_test::emulated_error(ops, {plain}, 11), 1e-5);
}

TEST(Wavefront, AWaveIsPricedAsItsWorkTogetherNeverBelowItsSlowestStage) {
  const std::vector<loop::Kernel> stages = stages_of(two_layers(4));
  const schedule::WaveLayout l = schedule::pack_waves(stages, 64);
  const loop::Kernel packed = merged_in_waves(stages, l);
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  const gpu::CostConstants c = gpu::cost_constants(spec, gpu::Precision::FP32);
  const schedule::KernelPrice p = schedule::price_kernel(packed, spec, c, {});
  double sum = 0, slowest_sum = 0;
  std::map<int, double> slowest;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    sum += p.stages[s].cost.total_us;
    double& w = slowest[packed.stages[s].wave];
    w = std::max(w, p.stages[s].cost.total_us);
  }
  for (const auto& [w, us] : slowest) slowest_sum += us;
  EXPECT_LE(p.stages_us, sum + 1e-9);
  EXPECT_GE(p.stages_us, slowest_sum - 1e-9);
  EXPECT_LT(p.stages_us, sum);  // side by side is cheaper than one after the other
}

}  // namespace
}  // namespace souffle
