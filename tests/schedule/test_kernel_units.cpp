// The kernels of a plan do what the plan says: views folded into their readers' indexing,
// reductions with their element-wise consumers in one stage, and no grid barrier (nor a
// cooperative launch) for the strategies that launch without grid synchronization.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/emulate/emulate.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/schedule/kernel_units.h"
#include "core/session/load.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"
#include "core/te/builder.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

using te::Expr;

const LoadedModel& model(const std::string& name) {
  return test::sample_model(name);
}

plan::FusionPlan plan_of(const te::TeProgram& prog, plan::Strategy s) {
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = gpu::gpu_spec("a100");
  return plan::plan(prog, po);
}

KernelBuildOptions split() {
  KernelBuildOptions o;
  o.split_launches = true;
  return o;
}

int grid_barriers(const loop::Kernel& k) {
  int n = 0;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& s) { n += s.as<loop::GridBarrier>() != nullptr; });
  return n;
}

bool has(const std::vector<te::Tensor>& ts, const std::string& name) {
  return std::any_of(ts.begin(), ts.end(), [&](const te::Tensor& t) { return t->name == name; });
}

const te::ComputeOp* op_named(const te::TeProgram& p, const std::string& name) {
  for (const te::Op& op : p.ops)
    if (op->name == name) return op.get();
  return nullptr;
}

/// The kernel computing the TE whose name ends with `suffix`.
const loop::Kernel* kernel_of(const loop::KernelSet& ks, const std::string& suffix) {
  for (const loop::Kernel& k : ks.kernels)
    for (const loop::StageInfo& st : k.stages)
      for (const std::string& te : st.tes)
        if (te.size() >= suffix.size() &&
            te.compare(te.size() - suffix.size(), suffix.size(), suffix) == 0)
          return &k;
  return nullptr;
}

TEST(KernelUnits, BertViewsFoldIntoTheAttentionGemm) {
  plan::FusionPlan p = plan_of(model("bert").program, plan::Strategy::Rules);
  KernelProgram kp = fold_views(p);
  const std::string views[] = {"/layers.0/Reshape", "/layers.0/Transpose", "/layers.0/Reshape_1",
                               "/layers.0/Transpose_2"};
  for (const std::string& v : views) {
    const te::ComputeOp* op = op_named(p.program, v);
    ASSERT_NE(op, nullptr) << v;
    size_t i = 0;
    while (p.program.ops[i].get() != op) ++i;
    EXPECT_TRUE(kp.dropped(i)) << v;
  }
  loop::KernelSet ks = build_plan_kernels(p, {}, split());
  const loop::Kernel* k = kernel_of(ks, "/layers.0/MatMul/matmul");
  ASSERT_NE(k, nullptr);
  // One stage: the GEMM reads the projections through the composed index maps.
  ASSERT_EQ(k->stages.size(), 1u) << loop::print(*k);
  EXPECT_NE(k->stages[0].schedule.find("views folded into its indexing: /layers.0/Reshape"),
            std::string::npos)
      << k->stages[0].schedule;
  for (const std::string& v : views) {
    EXPECT_FALSE(has(k->inputs, op_named(p.program, v)->output->name)) << v;
    EXPECT_FALSE(has(k->outputs, op_named(p.program, v)->output->name)) << v;
  }
  EXPECT_EQ(grid_barriers(*k), 0);
}

TEST(KernelUnits, LayerNormVarianceStoresInvStdInItsEpilogue) {
  plan::FusionPlan p = plan_of(model("bert").program, plan::Strategy::Rules);
  loop::KernelSet ks = build_plan_kernels(p, {}, split());
  const loop::Kernel* k = kernel_of(ks, "/layers.0/attn_norm/LayerNormalization/var");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->stages.size(), 1u) << loop::print(*k);
  EXPECT_NE(k->stages[0].schedule.find("epilogue /layers.0/attn_norm/LayerNormalization/inv_std"),
            std::string::npos)
      << k->stages[0].schedule;
  // The variance is read by nothing else: it stays in a register.
  EXPECT_FALSE(has(
      k->outputs, op_named(p.program, "/layers.0/attn_norm/LayerNormalization/var")->output->name));
  EXPECT_EQ(k->outputs.size(), 1u);
  EXPECT_FALSE(k->launch.cooperative);
}

/// x[64, 48] -> a = 2x + 1 -> b = a transposed, times 3: the rules strategy fuses b into a's
/// kernel (one-to-one, injective), but a block of b reads elements of a other blocks write.
te::TeProgram transposed_chain() {
  te::Tensor x = te::make_input("x", {64, 48}, DType::Float32);
  te::Op a = te::compute("a", {64, 48}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(x, {i[0], i[1]}) * te::float_imm(2) + te::float_imm(1);
  });
  te::Op b = te::compute("b", {48, 64}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(a->output, {i[1], i[0]}) * te::float_imm(3);
  });
  te::TeProgram p;
  p.name = "chain";
  p.inputs = {x};
  p.ops = {a, b};
  p.outputs = {b->output};
  return p;
}

TEST(KernelUnits, PartitionNeedingAGridBarrierIsSplitIntoLaunches) {
  te::TeProgram prog = transposed_chain();
  plan::FusionPlan p = plan_of(prog, plan::Strategy::Rules);
  ASSERT_EQ(p.partitions.size(), 1u) << plan::print(p);
  loop::KernelSet ks = build_plan_kernels(p, {}, split());
  ASSERT_EQ(ks.kernels.size(), 2u);
  const std::string base = "kernel" + std::to_string(p.partitions[0].id);
  EXPECT_EQ(ks.kernels[0].name, base + ".0");
  EXPECT_EQ(ks.kernels[1].name, base + ".1");
  for (const loop::Kernel& k : ks.kernels) EXPECT_EQ(kernel_partition(k.name), p.partitions[0].id);
  EXPECT_EQ(kernel_partition("kernel12"), 12);
  EXPECT_EQ(kernel_partition("kernel12.3"), 12);
  EXPECT_EQ(kernel_partition("kernel"), -1);
  EXPECT_EQ(kernel_partition("kernel1x"), -1);
  EXPECT_EQ(kernel_partition("kernel1."), -1);
  EXPECT_NE(ks.kernels[1].stages[0].schedule.find("a launch of its own (" + base +
                                                  ".1): it reads a across blocks"),
            std::string::npos)
      << ks.kernels[1].stages[0].schedule;
  for (const loop::Kernel& k : ks.kernels) {
    EXPECT_EQ(grid_barriers(k), 0);
    EXPECT_FALSE(k.launch.cooperative);
  }
  // Without split_launches: one kernel for the partition, cooperative, with its grid barrier.
  loop::KernelSet one = build_plan_kernels(p);
  ASSERT_EQ(one.kernels.size(), 1u);
  EXPECT_EQ(grid_barriers(one.kernels[0]), 1);
  EXPECT_TRUE(one.kernels[0].launch.cooperative);
  // The souffle strategy composes the chain (vertical transform): one kernel.
  EXPECT_EQ(build_plan_kernels(plan_of(prog, plan::Strategy::Souffle)).kernels.size(), 1u);
  // The two launches compute b.
  auto x = std::make_shared<TensorData>(DType::Float32, std::vector<int64_t>{64, 48});
  for (int64_t i = 0; i < x->numel(); ++i) x->set_f64(i, static_cast<double>(i % 17) - 8);
  std::vector<ConstTensorPtr> want = interp::run(prog, {x});
  emulate::Buffers got = emulate::run_kernels(ks, {{"x", x}});
  const TensorData& b = *got.at("b");
  for (int64_t i = 0; i < b.numel(); ++i) ASSERT_EQ(b.get_f64(i), want[0]->get_f64(i)) << i;
}

/// Every sample model: the rules and unfused kernels hold no grid barrier and no cooperative
/// launch; souffle's grid barriers stay within what merging its plan's stages can need.
TEST(KernelUnits, RulesAndUnfusedKernelsHaveNoGridBarrier) {
  for (const char* name : {"bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"}) {
    for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Unfused}) {
      plan::FusionPlan p = plan_of(model(name).program, s);
      tune_plan(p);
      loop::KernelSet ks = build_plan_kernels(p, {}, split());
      EXPECT_GE(ks.kernels.size(), p.kernels() / 2) << name;
      for (const loop::Kernel& k : ks.kernels) {
        EXPECT_EQ(grid_barriers(k), 0) << name << " " << plan::strategy_name(s) << " " << k.name;
        EXPECT_FALSE(k.launch.cooperative) << name << " " << k.name;
      }
    }
  }
}

/// A partition's kernels built alone (what the planner prices: views folded and readers found
/// through the program's index, only the partition walked) are those the whole plan's build
/// gives it (BERT's rules kernels fold views); a plan whose index is missing or of another
/// program builds the same.
TEST(KernelUnits, PartitionBuiltAloneIsItsKernelInThePlan) {
  for (const char* name : {"bert", "mmoe"}) {
    for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::SoufflePaper}) {
      const std::string what = std::string(name) + " " + plan::strategy_name(s);
      plan::FusionPlan p = plan_of(model(name).program, s);
      ASSERT_TRUE(p.index && p.index->indexes(p.program)) << what;
      const PlanBuild b = plan_build(p);
      const loop::KernelSet whole = build_plan_kernels(p, b.config, b.options);
      std::map<int, std::string> by_partition;
      for (const loop::Kernel& k : whole.kernels)
        by_partition[kernel_partition(k.name)] += loop::print(k);
      size_t folded = 0;
      for (const plan::Partition& part : p.partitions) {
        loop::KernelSet alone = build_partition_kernels(p, part, b.config, b.options);
        std::string text;
        for (const loop::Kernel& k : alone.kernels) text += loop::print(k);
        EXPECT_EQ(text, by_partition[part.id]) << what << " kernel" << part.id;
        for (const loop::Kernel& k : alone.kernels)
          for (const loop::StageInfo& st : k.stages)
            folded += st.schedule.find("folded into its indexing") != std::string::npos;
      }
      if (std::string(name) == "bert" && s == plan::Strategy::Rules) {
        EXPECT_GT(folded, 0u) << what;
      }
      plan::FusionPlan stale = p;
      stale.index = std::make_shared<const te::ProgramIndex>(model("lstm").program);
      EXPECT_EQ(loop::print(build_plan_kernels(stale, b.config, b.options)), loop::print(whole))
          << what;
      stale.index = nullptr;
      EXPECT_EQ(loop::print(build_plan_kernels(stale, b.config, b.options)), loop::print(whole))
          << what;
    }
  }
}

int stages_saying(const loop::Kernel& k, const std::string& what) {
  int n = 0;
  for (const loop::StageInfo& st : k.stages) n += st.schedule.find(what) != std::string::npos;
  return n;
}

/// The sample LSTM's souffle kernel keeps each layer's recurrent weights in shared memory: the
/// first gate GEMM of a layer loads them, every later step reads them there (each layer keeps
/// its blocks from wave to wave, also when the first layer has finished), priced below
/// streaming them, and verifies in the emulator. Off, every step streams them.
TEST(KernelUnits, SampleLstmKeepsItsRecurrentWeightsInSharedMemory) {
  const LoadedModel& m = model("lstm");
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Souffle;
  po.gpu = gpu::gpu_spec("a100");
  const plan::FusionPlan p = plan::plan(m.program, po);
  PlanBuild b = plan_build(p);
  const loop::KernelSet with = build_plan_kernels(p, b.config, b.options);
  ASSERT_EQ(with.kernels.size(), 1u);
  const loop::Kernel& k = with.kernels[0];
  EXPECT_EQ(stages_saying(k, "weights loaded into the shared panel"), 2);
  EXPECT_EQ(stages_saying(k, "weights read from the shared panel"), 30);
  const std::vector<BuildChoice>& choices = k.stages[0].choices;
  auto panels = std::find_if(choices.begin(), choices.end(), [](const BuildChoice& c) {
    return c.kind == ChoiceKind::WeightPanels;
  });
  ASSERT_NE(panels, choices.end()) << k.stages[0].schedule;
  EXPECT_TRUE(panels->kept);
  EXPECT_LT(panels->price_kept_us, panels->price_other_us);
  b.options.weight_panels = false;
  const loop::KernelSet without = build_plan_kernels(p, b.config, b.options);
  EXPECT_EQ(stages_saying(without.kernels.at(0), "shared panel"), 0);
  // The arena grows by the panel (K = 64 inputs + 64 hidden by a 32-column tile of floats)
  // at most: the GEMMs' B tiles are gone.
  const int64_t grown =
      k.launch.dynamic_shared_bytes - without.kernels.at(0).launch.dynamic_shared_bytes;
  EXPECT_GT(grown, 0);
  EXPECT_LE(grown, 128 * 32 * 4);
  std::vector<TestDataSet> sets =
      read_test_data(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/lstm");
  KernelVerifyReport r = verify_kernels(m, sets, pipeline_options(po), {});
  EXPECT_TRUE(r.ok()) << r.error;
}

/// The rules and unfused kernels of the small sample model still verify in the emulator.
TEST(KernelUnits, MmoeKernelsStillVerify) {
  const LoadedModel& m = model("mmoe");
  std::vector<TestDataSet> sets =
      read_test_data(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe");
  for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Unfused}) {
    PipelineOptions po;
    po.strategy = s;
    po.gpu = gpu::gpu_spec("a100");
    KernelVerifyReport r = verify_kernels(m, sets, po, {});
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.grid_barriers, 0);
  }
}

}  // namespace
}  // namespace souffle
