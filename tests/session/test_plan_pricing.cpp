// Plans priced from the kernels actually built: on every sample model and strategy the plan's
// launches, grid barriers and DRAM bytes are those of the kernels compile builds, no estimate is
// below its GPU's physical floor, souffle is never priced above rules on any GPU of
// resources/gpus.json, and a slow grid barrier makes souffle cut into more kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/analysis/analysis.h"
#include "core/gpu/cost.h"
#include "core/loop/mutator.h"
#include "core/schedule/plan_pricer.h"
#include "core/schedule/price.h"
#include "core/session/compile.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

const std::vector<std::string> kModels = {"bert",         "resnext", "lstm",
                                          "efficientnet", "swin",    "mmoe"};

plan::FusionPlan priced(const std::string& model, plan::Strategy s, const gpu::GpuSpec& gpu,
                        gpu::Precision precision = gpu::Precision::FP32) {
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = gpu;
  po.precision = precision;
  po.pricer = schedule::make_pricer(gpu, precision);
  return plan::plan(test::sample_model(model).program, po);
}

/// max(FLOPs at the best peak, compulsory DRAM bytes at bandwidth): inputs and weights read
/// once, outputs written once.
double floor_us(const te::TeProgram& program, const gpu::GpuSpec& gpu, gpu::Precision p) {
  analysis::Analysis a = analysis::analyze(program);
  int64_t flops = 0, bytes = 0;
  for (const analysis::TeInfo& t : a.tes) flops += t.flops;
  for (const analysis::TensorInfo& t : a.tensors) {
    const bool read = t.source != te::TensorNode::Source::Compute && !t.consumers.empty();
    if (read || t.is_output) bytes += t.bytes;
  }
  const double peak = std::max(gpu::peak_flops(gpu, p), gpu::peak_flops(gpu, gpu::Precision::FP32));
  return std::max(double(flops) / peak, double(bytes) / (gpu.dram_bandwidth_gbps * 1e9)) * 1e6;
}

class PlanPricingModel : public testing::TestWithParam<std::string> {};

TEST_P(PlanPricingModel, PlanAgreesWithCompiledKernels) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  const std::string& m = GetParam();
  for (plan::Strategy s : plan::every_strategy()) {
    SCOPED_TRACE(m + " " + plan::strategy_name(s));
    plan::FusionPlan p = priced(m, s, a100);
    plan::verify(p);
    EXPECT_EQ(p.cost_model, "v2: built kernels");
    CompileOptions co;
    co.archs = {};  // build and emit only
    CompileReport rep = compile_plan(p, co);
    ASSERT_TRUE(rep.ok());
    int barriers = 0;
    int64_t dram = 0;
    const gpu::CostConstants c = gpu::cost_constants(a100, p.precision);
    for (const CompiledKernel& k : rep.kernels) {
      loop::for_each_stmt(k.kernel.body, [&](const loop::Stmt& st) {
        barriers += st.kind() == loop::StmtKind::GridBarrier;
      });
      dram += schedule::price_kernel(k.kernel, a100, c, {}).dram_bytes;
    }
    EXPECT_EQ(static_cast<size_t>(p.launches), rep.kernels.size());
    EXPECT_EQ(p.grid_syncs, barriers);
    EXPECT_EQ(p.dram_bytes, dram);
    EXPECT_GE(p.est_time_us, floor_us(test::sample_model(m).program, a100, p.precision));
  }
}

// Sync mode auto: a kernel is never priced above its grid-barrier form, a flags boundary prices
// below the grid barrier it replaces (both prices kept on the boundary and named in its text),
// and the kernels built verify on the emulator against the model's reference outputs.
TEST_P(PlanPricingModel, SyncAutoNeverPricesAboveGridAndVerifies) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  const std::string& m = GetParam();
  plan::PlanOptions po;
  po.gpu = a100;
  po.pricer = schedule::make_pricer(a100, po.precision);
  const plan::FusionPlan grid = plan::plan(test::sample_model(m).program, po);
  po.sync = SyncMode::Auto;
  const plan::FusionPlan autop = plan::plan(test::sample_model(m).program, po);
  EXPECT_EQ(autop.sync, SyncMode::Auto);
  EXPECT_LE(autop.est_time_us, grid.est_time_us + 1e-6);
  EXPECT_LE(autop.grid_syncs, grid.grid_syncs);
  for (const plan::Partition& k : autop.partitions)
    for (const plan::Boundary& b : k.boundaries) {
      if (b.order.kind != BoundaryKind::Flags) continue;
      SCOPED_TRACE(describe(b.order));
      EXPECT_GT(b.order.grid_price_us, 0);
      EXPECT_LT(b.order.flags_price_us, b.order.grid_price_us);
      EXPECT_GT(b.cost_us, 0);
      EXPECT_NE(describe(b.order).find("estimated"), std::string::npos);
    }
  const LoadedModel& model = test::sample_model(m);
  const std::vector<TestDataSet> sets =
      read_test_data(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + m);
  VerifyOptions vo;  // the default element-wise tolerance of the plan's precision
  KernelVerifyReport rep = verify_kernels(model, sets, pipeline_options(po), vo);
  EXPECT_TRUE(rep.ok()) << rep.error;
  EXPECT_EQ(rep.grid_barriers, autop.grid_syncs);
}

INSTANTIATE_TEST_SUITE_P(SampleModels, PlanPricingModel, testing::ValuesIn(kModels));

// Decisions of kind sync: a boundary forced to flags under the grid mode and one forced to a
// grid barrier are built so (marked forced), the kernels verify in the emulator, and orders
// that cannot be taken are refused with the boundary's own reason.
TEST(SyncDecisions, ForcedKindsAreBuiltVerifiedOrRefused) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  plan::PlanOptions po;
  po.gpu = a100;
  po.pricer = schedule::make_pricer(a100, po.precision);
  po.decisions = plan::parse_decisions(
      R"({"version": 1, "edits": [
        {"kind": "sync", "at": "/lstm/LSTM/d0/t1/gates", "order": "flags"},
        {"kind": "sync", "at": "/lstm/LSTM/d0/t2/c", "order": "grid"},
        {"kind": "sync", "at": "/lstm/LSTM/d0/t0/gates", "order": "flags"},
        {"kind": "sync", "at": "/lstm/LSTM/d0/t3/h", "order": "flags"}]})",
      "decisions.json");
  const plan::FusionPlan p = plan::plan(test::sample_model("lstm").program, po);
  ASSERT_EQ(p.applied.size(), 2u);
  ASSERT_EQ(p.refused.size(), 2u);
  EXPECT_NE(p.refused[0].reason.find("starts its kernel"), std::string::npos)
      << p.refused[0].reason;
  // The hidden state reads the cell and the output gate on the gates' tiles (a block barrier).
  EXPECT_NE(p.refused[1].reason.find("stays block (each block reads only what it wrote"),
            std::string::npos)
      << p.refused[1].reason;
  auto boundary_before = [&](const std::string& te) -> const plan::Boundary* {
    for (const plan::Partition& k : p.partitions)
      for (const plan::Boundary& b : k.boundaries)
        if (b.from != b.to && !k.built_stages[size_t(b.to)].tes.empty() &&
            k.built_stages[size_t(b.to)].tes.front() == te)
          return &b;
    return nullptr;
  };
  const plan::Boundary* flags = boundary_before("/lstm/LSTM/d0/t1/gates");
  ASSERT_NE(flags, nullptr);
  EXPECT_EQ(flags->order.kind, BoundaryKind::Flags);
  EXPECT_TRUE(flags->order.forced);
  EXPECT_NE(describe(flags->order).find("ordered so by a decision"), std::string::npos);
  const plan::Boundary* grid = boundary_before("/lstm/LSTM/d0/t2/c");
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->order.kind, BoundaryKind::Grid);
  EXPECT_TRUE(grid->order.forced);
  // An unforced neighbour keeps the proofs' order.
  const plan::Boundary* natural = boundary_before("/lstm/LSTM/d0/t3/c");
  ASSERT_NE(natural, nullptr);
  EXPECT_FALSE(natural->order.forced);
  // The kernels built with the forced orders compute the model's outputs.
  const std::vector<TestDataSet> sets =
      read_test_data(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/lstm");
  VerifyOptions vo;  // the default element-wise tolerance of the plan's precision
  KernelVerifyReport rep =
      verify_kernels(test::sample_model("lstm"), sets, pipeline_options(po), vo);
  EXPECT_TRUE(rep.ok()) << rep.error;
  EXPECT_GT(rep.flag_waits, 0);
}

class PlanPricingGpu : public testing::TestWithParam<size_t> {};

TEST_P(PlanPricingGpu, NoEstimateBelowThePhysicalFloorAndSouffleAtMostRules) {
  const gpu::GpuSpec& gpu = gpu::builtin_gpu_specs()[GetParam()];
  for (const std::string& m : kModels) {
    SCOPED_TRACE(m + " on " + gpu.name);
    const double floor = floor_us(test::sample_model(m).program, gpu, gpu::Precision::FP32);
    plan::FusionPlan rules = priced(m, plan::Strategy::Rules, gpu);
    plan::FusionPlan souffle = priced(m, plan::Strategy::Souffle, gpu);
    EXPECT_GE(rules.est_time_us, floor);
    EXPECT_GE(souffle.est_time_us, floor);
    EXPECT_LE(souffle.est_time_us, rules.est_time_us);
  }
}

/// Every GPU of resources/gpus.json (a test needs the list before main: its size is fixed here
/// and checked).
INSTANTIATE_TEST_SUITE_P(BuiltinGpus, PlanPricingGpu, testing::Range<size_t>(0, 7));

TEST(PlanPricing, EveryBuiltinGpuIsCovered) {
  EXPECT_EQ(gpu::builtin_gpu_specs().size(), 7u);
}

TEST(PlanPricing, ASlowGridBarrierCutsSouffleIntoMoreKernels) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  gpu::GpuSpec slow = a100;
  slow.name = "A100 with a 1,000 us grid barrier";
  slow.grid_sync_overhead_us = 1000;
  for (const std::string& m : {std::string("bert"), std::string("mmoe")}) {
    SCOPED_TRACE(m);
    plan::FusionPlan fast = priced(m, plan::Strategy::Souffle, a100);
    plan::FusionPlan cut = priced(m, plan::Strategy::Souffle, slow);
    plan::FusionPlan rules = priced(m, plan::Strategy::Rules, slow);
    plan::FusionPlan paper = priced(m, plan::Strategy::SoufflePaper, slow);
    EXPECT_GT(cut.kernels(), fast.kernels());
    EXPECT_LE(cut.est_time_us, rules.est_time_us);
    EXPECT_LT(cut.est_time_us, paper.est_time_us);
    EXPECT_EQ(paper.kernels(), priced(m, plan::Strategy::SoufflePaper, a100).kernels());
    // Every cut says which prices it compared.
    bool cheaper = false;
    for (const plan::Partition& k : cut.partitions)
      for (const plan::Decision& d : k.decisions)
        if (d.kind == plan::DecisionKind::CutCheaper) {
          cheaper = true;
          EXPECT_LT(d.split_us, d.merged_us);
        }
    EXPECT_TRUE(cheaper);
  }
}

TEST(PlanPricing, AUserMergeThatPricesSlowerIsAppliedAndFlagged) {
  gpu::GpuSpec slow = gpu::gpu_spec("a100");
  slow.name = "A100 with a 1,000 us grid barrier";
  slow.grid_sync_overhead_us = 1000;
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Souffle;
  po.gpu = slow;
  po.pricer = schedule::make_pricer(slow, gpu::Precision::FP32);
  plan::FusionPlan p = plan::plan(test::sample_model("mmoe").program, po);
  ASSERT_GT(p.kernels(), 2u);
  bool flagged = false;
  for (size_t k = 0; k + 1 < p.partitions.size() && !flagged; ++k) {
    const std::string a = p.program.ops[p.partitions[k].tes.back()]->name;
    const std::string b = p.program.ops[p.partitions[k + 1].tes.front()]->name;
    plan::PlanOptions e = po;
    e.decisions.edits = {{plan::Edit::Kind::Merge, a, b}};
    plan::FusionPlan q = plan::replan(p, e);
    if (q.applied.empty()) continue;
    for (const plan::Partition& part : q.partitions)
      for (const plan::Decision& d : part.decisions)
        if (d.kind == plan::DecisionKind::UserMerge) {
          flagged = true;
          EXPECT_GT(d.merged_us, d.split_us);
          EXPECT_NEAR(part.est_time_us, d.merged_us, 1e-9);
          EXPECT_NE(d.reason.find("priced slower"), std::string::npos);
        }
  }
  EXPECT_TRUE(flagged);
}

TEST(PlanPricing, KernelsAreCachedByPartitionContent) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  auto pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = a100;
  po.pricer = pricer;
  const te::TeProgram& prog = test::sample_model("bert").program;
  plan::FusionPlan p = plan::plan(prog, po);
  // Each partition is built, or priced from its structural twin (the sample BERT's layers).
  const size_t built = pricer->builds();
  EXPECT_EQ(built + pricer->twin_hits(), p.kernels());
  EXPECT_GT(pricer->twin_hits(), 0u);
  // One edit: only the partitions it changed are built again.
  plan::FusionPlan q;
  size_t before = built;
  for (const plan::Partition& k : p.partitions) {
    if (k.tes.size() < 2) continue;
    po.decisions.edits = {{plan::Edit::Kind::Split, p.program.ops[k.tes.back()]->name, ""}};
    before = pricer->builds();
    q = plan::replan(p, po);
    if (!q.applied.empty()) break;
  }
  ASSERT_FALSE(q.applied.empty());
  EXPECT_LE(pricer->builds() - before, 2u);
  EXPECT_GT(pricer->hits(), 0u);
  EXPECT_EQ(q.kernels(), p.kernels() + 1);
  // A plan that transforms the program anew finds every partition it prices in the cache.
  po.decisions.edits.clear();
  const size_t warm = pricer->builds();
  plan::PlanOptions souffle = po;
  souffle.strategy = plan::Strategy::Souffle;
  plan::plan(prog, souffle);
  const size_t souffle_builds = pricer->builds() - warm;
  EXPECT_GT(souffle_builds, 0u);
  plan::plan(prog, souffle);
  EXPECT_EQ(pricer->builds() - warm, souffle_builds);
}

TEST(PlanPricing, KeepingIntermediatesOnChipIsPricedAgainstGlobalScratch) {
  // MMoE's souffle kernel keeps 18 intermediates in shared memory; the decision carries both
  // prices, and the partition priced with them in global scratch is that other price, with
  // their bytes back in DRAM.
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  auto pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Souffle;
  po.gpu = a100;
  po.pricer = pricer;
  plan::FusionPlan p = plan::plan(test::sample_model("mmoe").program, po);
  int decided = 0;
  for (const plan::Partition& part : p.partitions)
    for (const plan::Decision& d : part.decisions) {
      if (d.kind != plan::DecisionKind::KeepOnChip && d.kind != plan::DecisionKind::GlobalScratch)
        continue;
      ++decided;
      ASSERT_FALSE(d.tensors.empty());
      EXPECT_GT(d.merged_us, 0);
      EXPECT_GT(d.split_us, 0);
      plan::Partition global = part;
      global.global_scratch = d.tensors;
      plan::Partition on_chip = part;
      on_chip.global_scratch.clear();
      const plan::PartitionPrice g = pricer->price(p, global), c = pricer->price(p, on_chip);
      ASSERT_TRUE(g.ok() && c.ok());
      EXPECT_NEAR(g.est_time_us, d.split_us, 1e-9);
      EXPECT_NEAR(c.est_time_us, d.merged_us, 1e-9);
      EXPECT_GT(g.dram_bytes, c.dram_bytes);
      for (const std::string& t : d.tensors) {
        EXPECT_NE(std::find(c.on_chip.begin(), c.on_chip.end(), t), c.on_chip.end()) << t;
        EXPECT_EQ(std::find(g.on_chip.begin(), g.on_chip.end(), t), g.on_chip.end()) << t;
      }
      if (d.kind == plan::DecisionKind::KeepOnChip) {
        EXPECT_LE(d.merged_us, d.split_us);
        EXPECT_TRUE(part.global_scratch.empty());
        EXPECT_NEAR(part.est_time_us, d.merged_us, 1e-9);
      } else {
        EXPECT_LT(d.split_us, d.merged_us);
        EXPECT_EQ(part.global_scratch, d.tensors);
        EXPECT_NEAR(part.est_time_us, d.split_us, 1e-9);
      }
    }
  EXPECT_EQ(decided, 1);
}

TEST(PlanPricing, CompileTakesThePricersKernels) {
  // Compile takes the kernels the plan's pricing built (named for their partitions, though
  // priced under another id) instead of building them again, and they are the kernels a fresh
  // build makes, byte for byte. A partition priced from its structural twin's price had no
  // kernels built: compile builds those (and only those); with twins not shared, none.
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  for (const char* m : {"bert", "mmoe"})
    for (plan::Strategy s : {plan::Strategy::Souffle, plan::Strategy::Rules})
      for (bool twins : {true, false}) {
        SCOPED_TRACE(std::string(m) + " " + plan::strategy_name(s) + (twins ? " twins" : ""));
        auto pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
        pricer->set_share_structures(twins);
        plan::PlanOptions po;
        po.strategy = s;
        po.gpu = a100;
        po.pricer = pricer;
        plan::FusionPlan p = plan::plan(test::sample_model(m).program, po);
        CompileOptions co;
        co.archs = {};  // build and emit only
        co.pricer = pricer;
        CompileReport reused = compile_plan(p, co);
        EXPECT_LE(pricer->kernel_builds(), pricer->twin_hits());
        if (!twins) {
          EXPECT_EQ(pricer->kernel_builds(), 0u);
        }
        EXPECT_EQ(pricer->kernel_hits() + pricer->kernel_builds(), size_t(p.kernels()));
        co.pricer = nullptr;
        CompileReport fresh = compile_plan(p, co);
        ASSERT_TRUE(reused.ok());
        ASSERT_EQ(reused.kernels.size(), fresh.kernels.size());
        for (size_t i = 0; i < fresh.kernels.size(); ++i) {
          EXPECT_EQ(reused.kernels[i].name, fresh.kernels[i].name);
          EXPECT_EQ(reused.kernels[i].partition, fresh.kernels[i].partition);
          EXPECT_EQ(reused.kernels[i].cuda, fresh.kernels[i].cuda) << fresh.kernels[i].name;
        }
      }
}

TEST(PlanPricing, AutoBuildsEachKernelsGridFormOnTheWay) {
  // Under sync auto each kernel is built with grid barriers only on the way to pricing flags
  // against them; the pricer keeps that form under the grid key, so the plan's own grid pass
  // (and a later grid plan) builds nothing again, and those kernels are byte for byte what a
  // build under grid makes.
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  for (const char* m : {"lstm", "mmoe"}) {
    SCOPED_TRACE(m);
    auto pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
    plan::PlanOptions po;
    po.strategy = plan::Strategy::Souffle;
    po.gpu = a100;
    po.pricer = pricer;
    po.sync = SyncMode::Auto;
    const te::TeProgram& prog = test::sample_model(m).program;
    plan::plan(prog, po);
    EXPECT_GT(pricer->grid_forms(), 0u);
    const size_t builds = pricer->builds();
    po.sync = SyncMode::Grid;
    plan::FusionPlan grid = plan::plan(prog, po);
    EXPECT_EQ(pricer->builds(), builds);
    plan::PlanOptions fresh_po = po;
    fresh_po.pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
    plan::FusionPlan fresh = plan::plan(prog, fresh_po);
    EXPECT_DOUBLE_EQ(grid.est_time_us, fresh.est_time_us);
    EXPECT_EQ(grid.grid_syncs, fresh.grid_syncs);
    CompileOptions co;
    co.archs = {};  // build and emit only
    co.pricer = pricer;
    const size_t kernel_builds = pricer->kernel_builds();
    CompileReport reused = compile_plan(grid, co);
    EXPECT_EQ(pricer->kernel_builds(), kernel_builds);
    co.pricer = nullptr;
    CompileReport built = compile_plan(grid, co);
    ASSERT_TRUE(reused.ok());
    ASSERT_EQ(reused.kernels.size(), built.kernels.size());
    for (size_t i = 0; i < built.kernels.size(); ++i)
      EXPECT_EQ(reused.kernels[i].cuda, built.kernels[i].cuda) << built.kernels[i].name;
  }
}

TEST(PlanPricing, AnInternalErrorIsNeverPriced) {
  // A bug met while building a partition reaches the caller; a partition that cannot be built
  // (a user-level refusal) is priced as not built, with the reason. The build observer runs
  // inside the build, so it stands in for a failing template or verifier here.
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  auto pricer = std::make_shared<schedule::PlanPricer>(a100, gpu::Precision::FP32);
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = a100;
  po.pricer = pricer;
  const plan::FusionPlan p = plan::plan(test::sample_model("mmoe").program, po);
  ASSERT_FALSE(p.partitions.empty());
  plan::PlanOptions other = po;
  other.gpu = gpu::gpu_spec("h100");  // another GPU, planned without this pricer: its
  other.pricer = nullptr;             // partitions are not in the pricer's cache
  const plan::FusionPlan q = plan::plan(test::sample_model("mmoe").program, other);
  pricer->set_build_observer([](const std::string&, const loop::KernelSet&) {
    throw InternalError("planted bug in a build");
  });
  EXPECT_THROW(pricer->price(q, q.partitions.front()), InternalError);
  pricer->set_build_observer([](const std::string&, const loop::KernelSet&) {
    throw UserError("", "", "planted refusal");
  });
  const plan::PartitionPrice refused = pricer->price(q, q.partitions.back());
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error.find("planted refusal"), std::string::npos) << refused.error;
}

}  // namespace
}  // namespace souffle
