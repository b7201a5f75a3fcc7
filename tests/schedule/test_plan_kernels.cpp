// build_plan_kernels and build_partition_kernels on small hand-made plans: the kernels and
// stages a partition becomes (one cooperative kernel, or several launches where the strategy
// cannot synchronize the grid), the three priced choices recorded as typed BuildChoice values
// whose prices are those of the two forms built (the kept one no dearer), and the errors: a
// partition that cannot be built is a KernelBuildError, an internal failure propagates as
// std::logic_error.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/loop/mutator.h"
#include "core/plan/plan.h"
#include "core/schedule/build_choice.h"
#include "core/schedule/plan_kernels.h"
#include "core/schedule/price.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

te::Op matmul(const std::string& name, const Tensor& a, const Tensor& b) {
  return te::reduce(name, {a->shape[0], b->shape[1]}, DType::Float32, te::ReduceKind::Sum,
                    {a->shape[1]}, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

te::Op relu(const std::string& name, const Tensor& in) {
  return te::compute(name, in->shape, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::max(te::read(in, i), te::imm(DType::Float32, 0));
  });
}

/// A plan over the program of `ops` for the A100 whose partitions are `parts` (op indices, one
/// stage per TE), as a strategy would hand it to the builder.
plan::FusionPlan plan_of(const std::vector<te::Op>& ops, plan::Strategy s,
                         const std::vector<std::vector<int>>& parts) {
  plan::FusionPlan p;
  p.strategy = s;
  p.gpu_spec = gpu::gpu_spec("a100");
  p.gpu = p.gpu_spec.name;
  p.program = schedule_test::program_of(ops);
  p.input = p.program;
  for (size_t i = 0; i < parts.size(); ++i) {
    plan::Partition part;
    part.id = static_cast<int>(i);
    part.tes = parts[i];
    for (int te : parts[i]) {
      plan::Stage st;
      st.tes = {te};
      st.kind = plan::StageKind::Compute;
      part.stages.push_back(st);
    }
    p.partitions.push_back(part);
  }
  return p;
}

/// Small untuned tiles so that 32 x 32 problems have several blocks.
schedule::ScheduleConfig config() {
  return schedule_test::small_gemm_tile(16, 8, 4);
}

/// The same, double-buffered (the tile a weight panel is read with).
schedule::ScheduleConfig double_buffered() {
  return schedule_test::small_gemm_tile(16, 8, 4, true);
}

schedule::KernelBuildOptions options(SyncMode sync) {
  schedule::KernelBuildOptions o;
  o.tune = false;
  o.sync = sync;
  return o;
}

int grid_barriers(const loop::Kernel& k) {
  int n = 0;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& s) { n += s.as<loop::GridBarrier>() != nullptr; });
  return n;
}

std::vector<std::vector<std::string>> stage_tes(const loop::Kernel& k) {
  std::vector<std::vector<std::string>> out;
  for (const loop::StageInfo& st : k.stages) out.push_back(st.tes);
  return out;
}

std::vector<BuildChoice> choices_of(const loop::Kernel& k, ChoiceKind kind) {
  std::vector<BuildChoice> out;
  for (const BuildChoice& c : k.stages.front().choices)
    if (c.kind == kind) out.push_back(c);
  // Only the first stage carries them.
  for (size_t i = 1; i < k.stages.size(); ++i) EXPECT_TRUE(k.stages[i].choices.empty());
  return out;
}

/// The cost model's estimate of `k` as the builder priced it (no FLOPs: the hand-made plans
/// have no analysis, and the builder takes FLOPs from there).
double price_of(const loop::Kernel& k) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  const gpu::CostConstants c = gpu::cost_constants(a100, gpu::Precision::FP32);
  return schedule::price_kernel(
             k, a100, c, [](const std::string&) { return int64_t{0}; }, 128)
      .total_us;
}

/// A priced choice as the rule says: both forms priced, the kept one no dearer, strictly
/// cheaper when the candidate form was kept, and told in the kernel's schedule text.
void expect_cheaper_kept(const BuildChoice& c, const loop::Kernel& k) {
  EXPECT_GT(c.price_kept_us, 0);
  EXPECT_GT(c.price_other_us, 0);
  EXPECT_LE(c.price_kept_us, c.price_other_us);
  if (c.kept) {
    EXPECT_LT(c.price_kept_us, c.price_other_us);
  }
  EXPECT_NE(k.stages.front().schedule.find(schedule::describe(c)), std::string::npos)
      << k.stages.front().schedule;
}

/// h = x w1, r = relu(h), y = r w2: the GEMM of y reads every column tile of r.
struct TwoGemms {
  Tensor x = te::make_input("x", {32, 16}, DType::Float32);
  Tensor w1 = te::make_input("w1", {16, 32}, DType::Float32);
  Tensor w2 = te::make_input("w2", {32, 32}, DType::Float32);
  te::Op h = matmul("h", x, w1);
  te::Op r = relu("r", h->output);
  te::Op y = matmul("y", r->output, w2);
  std::vector<te::Op> ops() const { return {h, r, y}; }
};

/// One partition of a souffle plan: one cooperative kernel named after it, the ReLU computed
/// in the first GEMM's store loop (one stage for both), a grid barrier before the second GEMM
/// naming r; under grid sync nothing is priced, so no choice is recorded.
TEST(PlanKernels, SoufflePartitionIsOneCooperativeKernelOfItsStages) {
  const TwoGemms g;
  const plan::FusionPlan p = plan_of(g.ops(), plan::Strategy::Souffle, {{0, 1, 2}});
  const loop::KernelSet ks = schedule::build_plan_kernels(p, config(), options(SyncMode::Grid));
  ASSERT_EQ(ks.kernels.size(), 1u);
  const loop::Kernel& k = ks.kernels[0];
  EXPECT_EQ(k.name, "kernel0");
  EXPECT_EQ(stage_tes(k), (std::vector<std::vector<std::string>>{{"h", "r"}, {"y"}}));
  EXPECT_EQ(grid_barriers(k), 1);
  EXPECT_TRUE(k.launch.cooperative);
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Grid);
  EXPECT_EQ(k.boundaries[0].tensor, "r");
  EXPECT_TRUE(k.stages[0].choices.empty());
  EXPECT_LE(schedule_test::emulated_error(g.ops(), ks.kernels, 11, true), 1e-5);

  // Partition by partition: the same kernel as in the whole plan's build.
  const loop::KernelSet alone =
      schedule::build_partition_kernels(p, p.partitions[0], config(), options(SyncMode::Grid));
  ASSERT_EQ(alone.kernels.size(), 1u);
  EXPECT_EQ(loop::print(alone.kernels[0]), loop::print(k));
}

/// Two partitions: two kernels, each named after its partition, in partition order.
TEST(PlanKernels, EachPartitionIsItsOwnKernel) {
  const TwoGemms g;
  const plan::FusionPlan p = plan_of(g.ops(), plan::Strategy::Souffle, {{0, 1}, {2}});
  const loop::KernelSet ks = schedule::build_plan_kernels(p, config(), options(SyncMode::Grid));
  ASSERT_EQ(ks.kernels.size(), 2u);
  EXPECT_EQ(ks.kernels[0].name, "kernel0");
  EXPECT_EQ(ks.kernels[1].name, "kernel1");
  EXPECT_EQ(stage_tes(ks.kernels[0]), (std::vector<std::vector<std::string>>{{"h", "r"}}));
  EXPECT_EQ(stage_tes(ks.kernels[1]), (std::vector<std::vector<std::string>>{{"y"}}));
  for (const loop::Kernel& k : ks.kernels) {
    EXPECT_EQ(grid_barriers(k), 0) << k.name;
    EXPECT_FALSE(k.launch.cooperative) << k.name;
  }
  EXPECT_LE(schedule_test::emulated_error(g.ops(), ks.kernels, 12, true), 1e-5);
}

/// Under rules, which launches without grid synchronization, the stage that would need a grid
/// barrier starts a launch of its own: kernel0.0 and kernel0.1, neither cooperative; the second
/// says why, naming the tensor it reads across blocks, and its first boundary is the launch.
TEST(PlanKernels, RulesSplitsAtTheGridBarrierNamingTheTensor) {
  const TwoGemms g;
  const plan::FusionPlan p = plan_of(g.ops(), plan::Strategy::Rules, {{0, 1, 2}});
  schedule::KernelBuildOptions o = options(SyncMode::Grid);
  o.split_launches = true;
  const loop::KernelSet ks = schedule::build_plan_kernels(p, config(), o);
  ASSERT_EQ(ks.kernels.size(), 2u);
  EXPECT_EQ(ks.kernels[0].name, "kernel0.0");
  EXPECT_EQ(ks.kernels[1].name, "kernel0.1");
  EXPECT_EQ(schedule::kernel_partition(ks.kernels[1].name), 0);
  EXPECT_EQ(stage_tes(ks.kernels[0]), (std::vector<std::vector<std::string>>{{"h", "r"}}));
  EXPECT_EQ(stage_tes(ks.kernels[1]), (std::vector<std::vector<std::string>>{{"y"}}));
  for (const loop::Kernel& k : ks.kernels) {
    EXPECT_EQ(grid_barriers(k), 0) << k.name;
    EXPECT_FALSE(k.launch.cooperative) << k.name;
  }
  const loop::Kernel& second = ks.kernels[1];
  EXPECT_NE(second.stages[0].schedule.find(
                "a launch of its own (kernel0.1): it reads r across blocks, and this strategy "
                "launches without grid synchronization"),
            std::string::npos)
      << second.stages[0].schedule;
  ASSERT_FALSE(second.boundaries.empty());
  EXPECT_EQ(second.boundaries[0].kind, BoundaryKind::Launch);
  EXPECT_EQ(second.boundaries[0].tensor, "r");
  EXPECT_LE(schedule_test::emulated_error(g.ops(), ks.kernels, 13, true), 1e-5);

  // Without split_launches the same partition stays one (cooperative) kernel.
  o.split_launches = false;
  const loop::KernelSet one = schedule::build_plan_kernels(p, config(), o);
  ASSERT_EQ(one.kernels.size(), 1u);
  EXPECT_EQ(one.kernels[0].name, "kernel0");
  EXPECT_EQ(grid_barriers(one.kernels[0]), 1);
}

/// Sync auto: the boundary before y could take per-tile flags (each block of y awaits the 4
/// column tiles of its rows of r, fewer than the grid), so the builder builds the kernel with
/// flags and with grid barriers only and keeps the cheaper. The choice's prices are those of
/// the two kernels, and the grid-barrier form it hands back is what sync grid builds.
TEST(PlanKernels, SyncAutoRecordsFlagsAgainstGridBarriers) {
  // Narrow h: each block of y awaits the one tile of its rows of r, out of a grid of 128.
  TwoGemms g;
  g.x = te::make_input("x", {256, 16}, DType::Float32);
  g.w1 = te::make_input("w1", {16, 8}, DType::Float32);
  g.w2 = te::make_input("w2", {8, 64}, DType::Float32);
  g.h = matmul("h", g.x, g.w1);
  g.r = relu("r", g.h->output);
  g.y = matmul("y", g.r->output, g.w2);
  const plan::FusionPlan p = plan_of(g.ops(), plan::Strategy::Souffle, {{0, 1, 2}});
  loop::KernelSet grid_form;
  schedule::KernelBuildOptions o = options(SyncMode::Auto);
  o.grid_form = &grid_form;
  const loop::KernelSet ks = schedule::build_plan_kernels(p, config(), o);
  ASSERT_EQ(ks.kernels.size(), 1u);
  const loop::Kernel& k = ks.kernels[0];
  const std::vector<BuildChoice> sync = choices_of(k, ChoiceKind::SyncForm);
  ASSERT_EQ(sync.size(), 1u) << k.stages[0].schedule;
  const BuildChoice& c = sync[0];
  expect_cheaper_kept(c, k);
  EXPECT_NE(c.price_kept_us, c.price_other_us);
  // On the A100 a wait on one tile prices well below a barrier over 128 blocks.
  EXPECT_TRUE(c.kept) << k.stages[0].schedule;
  EXPECT_TRUE(c.reason.empty());
  const bool flags =
      std::any_of(k.boundaries.begin(), k.boundaries.end(),
                  [](const StageBoundary& b) { return b.kind == BoundaryKind::Flags; });
  EXPECT_EQ(flags, c.kept);
  EXPECT_EQ(grid_barriers(k), c.kept ? 0 : 1);
  EXPECT_EQ(choices_of(k, ChoiceKind::WeightPanels).size(), 0u);
  EXPECT_EQ(choices_of(k, ChoiceKind::Waves).size(), 0u);

  const loop::KernelSet grid = schedule::build_plan_kernels(p, config(), options(SyncMode::Grid));
  ASSERT_EQ(grid_form.kernels.size(), 1u);
  EXPECT_EQ(loop::print(grid_form.kernels[0]), loop::print(grid.kernels[0]));
  EXPECT_DOUBLE_EQ(price_of(grid.kernels[0]), c.other_us());
  EXPECT_LE(schedule_test::emulated_error(g.ops(), ks.kernels, 14, true), 1e-5);
}

/// r1 = relu(x w), r2 = relu(r1 w): two GEMMs by the same weight w (32 x 32).
std::vector<te::Op> shared_weight_gemms() {
  Tensor x = te::make_input("x", {32, 32}, DType::Float32);
  Tensor w = te::make_input("w", {32, 32}, DType::Float32);
  te::Op m1 = matmul("m1", x, w);
  te::Op r1 = relu("r1", m1->output);
  te::Op m2 = matmul("m2", r1->output, w);
  te::Op r2 = relu("r2", m2->output);
  return {m1, r1, m2, r2};
}

/// r1 = relu(x w), r2 = relu(r1 w): both GEMMs multiply by w, which nothing in the kernel
/// writes, so the builder builds the kernel with w's slices kept in shared memory and with each
/// stage streaming them, and keeps the cheaper. The price of the form not kept is that of the
/// kernel built with weight panels off, which records no such choice.
TEST(PlanKernels, SharedWeightsRecordPanelsAgainstStreaming) {
  const std::vector<te::Op> ops = shared_weight_gemms();
  const plan::FusionPlan p = plan_of(ops, plan::Strategy::Souffle, {{0, 1, 2, 3}});
  const loop::KernelSet ks =
      schedule::build_plan_kernels(p, double_buffered(), options(SyncMode::Grid));
  ASSERT_EQ(ks.kernels.size(), 1u);
  const loop::Kernel& k = ks.kernels[0];
  EXPECT_EQ(stage_tes(k), (std::vector<std::vector<std::string>>{{"m1", "r1"}, {"m2", "r2"}}));
  const std::vector<BuildChoice> panels = choices_of(k, ChoiceKind::WeightPanels);
  ASSERT_EQ(panels.size(), 1u) << k.stages[0].schedule;
  const BuildChoice& c = panels[0];
  expect_cheaper_kept(c, k);
  EXPECT_TRUE(c.reason.empty());
  int in_panel = 0;
  for (const loop::StageInfo& st : k.stages) in_panel += !st.weight_panel.empty();
  EXPECT_EQ(in_panel, c.kept ? 2 : 0);
  if (c.kept) {
    EXPECT_TRUE(k.stages[0].weight_panel_load);
    EXPECT_FALSE(k.stages[1].weight_panel_load);
  }

  schedule::KernelBuildOptions off = options(SyncMode::Grid);
  off.weight_panels = false;
  const loop::KernelSet streamed = schedule::build_plan_kernels(p, double_buffered(), off);
  ASSERT_EQ(streamed.kernels.size(), 1u);
  EXPECT_TRUE(streamed.kernels[0].stages[0].choices.empty());
  for (const loop::StageInfo& st : streamed.kernels[0].stages) EXPECT_TRUE(st.weight_panel.empty());
  EXPECT_DOUBLE_EQ(price_of(streamed.kernels[0]), c.other_us());
  EXPECT_LE(schedule_test::emulated_error(ops, ks.kernels, 15, true), 1e-5);
}

/// Two independent chains a2 = (x wa1) wa2 and b2 = (y wb1) wb2 given in program order need a
/// grid barrier after each first GEMM; packed in two waves side by side ({a1, b1}, {a2, b2})
/// one barrier does. The builder prices both and keeps the cheaper, saying what the waves are;
/// the price of the form not kept is that of the kernel built with waves off.
TEST(PlanKernels, IndependentChainsRecordWavesAgainstProgramOrder) {
  Tensor x = te::make_input("x", {32, 16}, DType::Float32);
  Tensor y = te::make_input("y", {32, 16}, DType::Float32);
  Tensor wa1 = te::make_input("wa1", {16, 32}, DType::Float32);
  Tensor wa2 = te::make_input("wa2", {32, 32}, DType::Float32);
  Tensor wb1 = te::make_input("wb1", {16, 32}, DType::Float32);
  Tensor wb2 = te::make_input("wb2", {32, 32}, DType::Float32);
  te::Op a1 = matmul("a1", x, wa1);
  te::Op a2 = matmul("a2", a1->output, wa2);
  te::Op b1 = matmul("b1", y, wb1);
  te::Op b2 = matmul("b2", b1->output, wb2);
  const std::vector<te::Op> ops = {a1, a2, b1, b2};
  const plan::FusionPlan p = plan_of(ops, plan::Strategy::Souffle, {{0, 1, 2, 3}});
  const loop::KernelSet ks = schedule::build_plan_kernels(p, config(), options(SyncMode::Grid));
  ASSERT_EQ(ks.kernels.size(), 1u);
  const loop::Kernel& k = ks.kernels[0];
  const std::vector<BuildChoice> waves = choices_of(k, ChoiceKind::Waves);
  ASSERT_EQ(waves.size(), 1u) << k.stages[0].schedule;
  const BuildChoice& c = waves[0];
  expect_cheaper_kept(c, k);
  EXPECT_FALSE(c.reason.empty());
  // One grid barrier fewer prices below program order.
  EXPECT_TRUE(c.kept) << k.stages[0].schedule;
  EXPECT_EQ(grid_barriers(k), c.kept ? 1 : 2);
  int packed = 0;
  for (const loop::StageInfo& st : k.stages) packed += st.wave >= 0;
  EXPECT_EQ(packed, c.kept ? 4 : 0);

  schedule::KernelBuildOptions off = options(SyncMode::Grid);
  off.waves = false;
  const loop::KernelSet in_order = schedule::build_plan_kernels(p, config(), off);
  ASSERT_EQ(in_order.kernels.size(), 1u);
  const loop::Kernel& o = in_order.kernels[0];
  EXPECT_TRUE(o.stages[0].choices.empty());
  EXPECT_EQ(stage_tes(o), (std::vector<std::vector<std::string>>{{"a1"}, {"a2"}, {"b1"}, {"b2"}}));
  EXPECT_EQ(grid_barriers(o), 2);
  EXPECT_DOUBLE_EQ(price_of(o), c.other_us());
  EXPECT_LE(schedule_test::emulated_error(ops, ks.kernels, 16, true), 1e-5);
}

/// A partition naming a TE the program does not have cannot be built: a KernelBuildError (a
/// user-level error, not a bug) naming the kernel.
TEST(PlanKernels, UnbuildablePartitionIsAKernelBuildError) {
  const TwoGemms g;
  plan::FusionPlan p = plan_of(g.ops(), plan::Strategy::Souffle, {{0, 1, 2}});
  p.partitions[0].stages[2].tes = {99};
  try {
    schedule::build_partition_kernels(p, p.partitions[0], config(), options(SyncMode::Grid));
    FAIL() << "built a kernel of TE 99";
  } catch (const schedule::KernelBuildError& e) {
    EXPECT_EQ(e.kernel(), "kernel0");
    EXPECT_EQ(e.te(), "");
    EXPECT_EQ(e.detail(), "TE index 99 out of range");
    EXPECT_EQ(std::string(e.what()), "kernel0: TE index 99 out of range");
  }
}

/// A TE whose body reads through a variable no loop binds is a broken invariant, not a
/// partition that cannot be built: the internal error comes through as std::logic_error and
/// is not turned into a KernelBuildError.
TEST(PlanKernels, InternalFailurePropagatesAsLogicError) {
  Tensor x = te::make_input("x", {64}, DType::Float32);
  te::Op ok = relu("ok", x);
  auto broken = std::make_shared<te::ComputeOp>(*ok);
  broken->name = "broken";
  broken->output = te::make_compute_tensor("broken", x->shape, DType::Float32);
  broken->body = te::read(x, {te::var("unbound")});
  const plan::FusionPlan p = plan_of({ok, broken}, plan::Strategy::Souffle, {{0, 1}});
  bool logic = false, build_error = false;
  try {
    schedule::build_plan_kernels(p, config(), options(SyncMode::Grid));
  } catch (const schedule::KernelBuildError&) {
    build_error = true;
  } catch (const std::logic_error& e) {
    logic = true;
    // The scheduled stage's verifier, not something before it.
    EXPECT_NE(std::string(e.what()).find("kernel broken: unbound var unbound"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(build_error);
  EXPECT_TRUE(logic);
}

/// The same two GEMMs by w with the single-buffered tile (the untuned default): with a weight
/// panel the K loop loads only A's next tile, B's tile buffer not being allocated (the load of
/// B's next tile was left in once, and the kernel failed its verifier).
TEST(PlanKernels, WeightPanelsWithASingleBufferedTile) {
  const std::vector<te::Op> ops = shared_weight_gemms();
  const plan::FusionPlan p = plan_of(ops, plan::Strategy::Souffle, {{0, 1, 2, 3}});
  const loop::KernelSet ks = schedule::build_plan_kernels(p, config(), options(SyncMode::Grid));
  ASSERT_EQ(ks.kernels.size(), 1u);
  const loop::Kernel& k = ks.kernels[0];
  const std::vector<BuildChoice> panels = choices_of(k, ChoiceKind::WeightPanels);
  ASSERT_EQ(panels.size(), 1u) << k.stages[0].schedule;
  expect_cheaper_kept(panels[0], k);
  // Both forms were built to price the choice, the panel one with this tile; the kept one runs.
  int in_panel = 0;
  for (const loop::StageInfo& st : k.stages) in_panel += !st.weight_panel.empty();
  EXPECT_EQ(in_panel, panels[0].kept ? 2 : 0);
  EXPECT_LE(schedule_test::emulated_error(ops, ks.kernels, 16, true), 1e-5);
}

}  // namespace
}  // namespace souffle
