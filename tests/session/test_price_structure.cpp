// A tensor-core stage is priced from the structure of its mainloop (gpu::mainloop_cost): a
// synchronous mainloop costs its load latency plus its compute, a cp.async pipeline their
// maximum, and no stage is priced at the spec's peak unless a calibration measured that rate
// for its template. The structure is read from the loop IR (schedule::price_kernel): the wmma
// template is synchronous, mma.sync fed by cp.async groups is pipelined with the depth its
// wait_group gives. plan --json names the structure each stage was priced from.
#include <gtest/gtest.h>

#include <cmath>

#include "core/analysis/analysis.h"
#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/loop/mutator.h"
#include "core/loop/stmt.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/session/compile.h"
#include "core/session/plan_json.h"
#include "core/te/builder.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

using gpu::MainloopStructure;
using gpu::Precision;
using te::Expr;
using te::Tensor;

/// A 128x128 block tile of 8 warps, k 32 per trip, f16 operands.
MainloopStructure structure(MainloopStructure::Staging staging, int depth) {
  MainloopStructure m;
  m.staging = staging;
  m.depth = depth;
  m.instruction = staging == MainloopStructure::Staging::Pipelined ? "mma.sync" : "wmma";
  m.warps = 8;
  m.tile_elems = 128 * 128;
  m.k_per_step = 32;
  m.operand_bytes = 2;
  m.epilogue_through_shared = staging == MainloopStructure::Staging::Synchronous;
  return m;
}

/// A 4096-cubed GEMM in 128x128 tiles of 256 threads, two blocks per SM by shared memory.
gpu::StageWork gemm_4096(const MainloopStructure& m) {
  gpu::StageWork w;
  w.flops = 2LL * 4096 * 4096 * 4096;
  w.tensor_core = true;
  w.mainloop = m;
  w.grid = (4096 / 128) * (4096 / 128);
  w.block = 256;
  w.regs = 128;
  w.smem = 64 * 1024;
  return w;
}

double rate_tflops(const gpu::StageWork& w, const gpu::StageCost& c) {
  return double(w.flops) / (c.flop_us * 1e-6) / 1e12;
}

TEST(MainloopCost, SynchronousIsLoadPlusComputePipelinedTheirMaximum) {
  for (const char* name : {"a100", "h100", "h200"}) {
    const gpu::GpuSpec spec = gpu::gpu_spec(name);
    for (Precision p : {Precision::FP16, Precision::BF16, Precision::TF32}) {
      SCOPED_TRACE(std::string(name) + " " + gpu::precision_name(p));
      const gpu::CostConstants c = gpu::cost_constants(spec, p);
      gpu::StageWork sync = gemm_4096(structure(MainloopStructure::Staging::Synchronous, 1));
      gpu::StageWork pipe = gemm_4096(structure(MainloopStructure::Staging::Pipelined, 3));
      if (p == Precision::TF32) sync.mainloop.operand_bytes = pipe.mainloop.operand_bytes = 4;
      const gpu::StageCost s = gpu::stage_cost(spec, c, sync);
      const gpu::StageCost q = gpu::stage_cost(spec, c, pipe);
      ASSERT_TRUE(s.mainloop.priced);
      ASSERT_TRUE(q.mainloop.priced);
      EXPECT_FALSE(s.mainloop.calibrated);
      // Synchronous: one trip costs the load (latency and transfer) plus the compute.
      EXPECT_NEAR(s.mainloop.step_us, s.mainloop.compute_us + s.mainloop.load_us, 1e-9);
      // Pipelined: the greater of the compute and the load, the latency spread over the depth.
      EXPECT_LT(q.mainloop.step_us, q.mainloop.compute_us + q.mainloop.load_us);
      EXPECT_GE(q.mainloop.step_us, q.mainloop.compute_us);
      EXPECT_GE(q.mainloop.step_us, q.mainloop.load_us / 3 - 1e-12);
      EXPECT_GT(s.flop_us, q.flop_us);
      // Neither reaches the spec's peak.
      const double peak = gpu::peak_flops(spec, p) / 1e12;
      EXPECT_LT(rate_tflops(sync, s), 0.95 * peak);
      EXPECT_LT(rate_tflops(pipe, q), 0.95 * peak);
      EXPECT_NE(s.mainloop.from.find("compute + load"), std::string::npos) << s.mainloop.from;
      EXPECT_NE(q.mainloop.from.find("cp.async depth 3"), std::string::npos) << q.mainloop.from;
    }
  }
}

TEST(MainloopCost, DeeperPipelinesHideMoreLatencyUpToTheirMaximum) {
  const gpu::GpuSpec spec = gpu::gpu_spec("h200");
  const gpu::CostConstants c = gpu::cost_constants(spec, Precision::FP16);
  double last = 1e300;
  for (int depth : {1, 2, 3, 4}) {
    gpu::StageWork w = gemm_4096(structure(MainloopStructure::Staging::Pipelined, depth));
    w.smem = 200 * 1024;  // one block per SM: nothing else hides its latency
    const gpu::StageCost q = gpu::stage_cost(spec, c, w);
    EXPECT_LE(q.flop_us, last) << depth;
    last = q.flop_us;
  }
  gpu::StageWork one = gemm_4096(structure(MainloopStructure::Staging::Pipelined, 1));
  gpu::StageWork three = gemm_4096(structure(MainloopStructure::Staging::Pipelined, 3));
  one.smem = three.smem = 200 * 1024;
  EXPECT_GT(gpu::stage_cost(spec, c, one).flop_us, gpu::stage_cost(spec, c, three).flop_us);
}

/// A tile mostly past the problem's edge (M = 1 of a 128-row tile) runs every trip of its K
/// loop: its price has as many trips as the loop IR runs, not the fewer its own FLOPs would fill.
TEST(MainloopCost, AnEdgeTileRunsEveryTripOfItsLoop) {
  const gpu::GpuSpec spec = gpu::gpu_spec("h100");
  const gpu::CostConstants c = gpu::cost_constants(spec, Precision::FP16);
  gpu::StageWork w = gemm_4096(structure(MainloopStructure::Staging::Pipelined, 3));
  w.flops = 2LL * 1 * 4096 * 4096;  // M = 1: one row of each 128-row tile is real
  w.grid = 4096 / 128;
  const gpu::StageCost unknown = gpu::stage_cost(spec, c, w);
  w.mainloop.trips = 4096 / 32;
  const gpu::StageCost known = gpu::stage_cost(spec, c, w);
  ASSERT_TRUE(known.mainloop.priced);
  EXPECT_LT(unknown.mainloop.steps, 4096 / 32);
  EXPECT_EQ(known.mainloop.steps, 4096 / 32);
  EXPECT_GT(known.flop_us, unknown.flop_us);
}

/// The rule: a tensor-core stage reaches the spec's peak only at a rate a calibration measured
/// for its own template; a calibration of another template leaves it to its structure.
TEST(MainloopCost, NoStageAtPeakWithoutACalibrationOfItsTemplate) {
  const gpu::GpuSpec spec = gpu::gpu_spec("h200");
  const MainloopStructure pipe = structure(MainloopStructure::Staging::Pipelined, 4);
  gpu::StageWork w = gemm_4096(pipe);
  // Tensor cores with no mainloop recognized are priced as the synchronous template.
  gpu::StageWork bare = w;
  bare.mainloop = MainloopStructure{};
  const gpu::CostConstants spec_only = gpu::cost_constants(spec, Precision::FP16);
  const double peak = gpu::peak_flops(spec, Precision::FP16) / 1e12;
  for (const gpu::StageWork& x : {w, bare}) {
    const gpu::StageCost s = gpu::stage_cost(spec, spec_only, x);
    EXPECT_TRUE(s.mainloop.priced);
    EXPECT_LT(rate_tflops(x, s), 0.95 * peak);
  }
  gpu::Calibration cal;
  cal.device = "NVIDIA H200";
  cal.gemm_fp16_tflops = peak;  // as if the runner timed the peak
  cal.gemm_fp16_template = pipe.template_name();
  const gpu::CostConstants same = gpu::cost_constants(spec, Precision::FP16, &cal);
  EXPECT_TRUE(same.tensor_calibrated);
  const gpu::StageCost measured = gpu::stage_cost(spec, same, w);
  EXPECT_TRUE(measured.mainloop.calibrated);
  // The measured rate, less only the tail of the last wave.
  EXPECT_GT(rate_tflops(w, measured), 0.95 * peak);
  EXPECT_LE(rate_tflops(w, measured), peak * (1 + 1e-9));
  // The same rate measured on the synchronous template says nothing of the pipelined one.
  cal.gemm_fp16_template = "";  // files before the field: the synchronous wmma template
  const gpu::CostConstants other = gpu::cost_constants(spec, Precision::FP16, &cal);
  EXPECT_EQ(other.tensor_template, "wmma, synchronous");
  const gpu::StageCost structural = gpu::stage_cost(spec, other, w);
  EXPECT_FALSE(structural.mainloop.calibrated);
  EXPECT_LT(rate_tflops(w, structural), 0.95 * peak);
}

// ---- from the loop IR ----

/// C = A x B, 512 x 512 x 512, on the tensor-core template at fp16.
te::Op matmul_op() {
  Tensor a = te::make_input("A", {512, 512}, DType::Float32);
  Tensor b = te::make_input("B", {512, 512}, DType::Float32);
  return te::reduce("mm", {512, 512}, DType::Float32, te::ReduceKind::Sum, {512},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

int64_t flops_of(const std::string& te) {
  return te == "mm" ? 2LL * 512 * 512 * 512 : 0;
}

/// One stage computing "mm" (512 cubed) in 64 blocks of 4 warps, a 64x64 tile each, 16 trips
/// of k 32, 26 KB of shared memory: `body` is its mainloop.
loop::Kernel gemm_kernel(const std::string& name, const Tensor& a, const Tensor& b,
                         loop::Stmt body) {
  loop::Kernel k;
  k.name = name;
  k.inputs = {a, b};
  k.launch.grid_x = 64;
  k.launch.block_x = 128;
  k.launch.dynamic_shared_bytes = 26 * 1024;
  loop::StageInfo info;
  info.name = "stage0_mm";
  info.tes = {"mm"};
  info.grid_x = 64;
  info.block_x = 128;
  k.stages = {info};
  k.body = loop::stage(0, std::move(body));
  return k;
}

constexpr int64_t kTrips = 16;

/// The wmma template's mainloop, written by hand: per trip, the A and B panels stored into
/// shared memory by ordinary stores, a barrier, fragment loads and MMAs, a barrier; the
/// accumulators go back through a shared tile.
loop::Kernel synchronous_wmma() {
  const Tensor a = te::make_input("A16", {512, 512}, DType::Float16);
  const Tensor b = te::make_input("B16", {512, 512}, DType::Float16);
  Tensor sa = loop::make_buffer("sa", {64, 32}, DType::Float16);
  Tensor sb = loop::make_buffer("sb", {32, 64}, DType::Float16);
  Tensor sc = loop::make_buffer("sc", {64, 64}, DType::Float32);
  Tensor fa = loop::make_fragment_buffer("fa", 2, loop::MmaType::F16);
  Tensor fb = loop::make_fragment_buffer("fb", 2, loop::MmaType::F16);
  Tensor acc = loop::make_fragment_buffer("acc", 4, loop::MmaType::F32);
  Expr kt = te::var("kt");
  Expr zero = te::imm(DType::Int64, 0);
  loop::Stmt trip = loop::seq({
      loop::store(sa, {zero, zero}, te::read(a, {zero, kt})),
      loop::store(sb, {zero, zero}, te::read(b, {kt, zero})),
      loop::block_barrier(),
      loop::fragment_load(fa, zero, sa, {zero, zero}),
      loop::fragment_load(fb, zero, sb, {zero, zero}),
      loop::fragment_mma(acc, zero, fa, zero, fb, zero, acc, zero),
      loop::block_barrier(),
  });
  loop::Stmt body = loop::seq({loop::make_for(kt, kTrips, loop::ForKind::Serial, trip),
                               loop::fragment_store(sc, {zero, zero}, acc, zero)});
  body = loop::fragment_alloc(acc, loop::FragmentRole::Accumulator, loop::MmaType::F32, 16, 16, 16,
                              body);
  body =
      loop::fragment_alloc(fb, loop::FragmentRole::MatrixB, loop::MmaType::F16, 16, 16, 16, body);
  body =
      loop::fragment_alloc(fa, loop::FragmentRole::MatrixA, loop::MmaType::F16, 16, 16, 16, body);
  for (const Tensor& t : {sa, sb, sc}) body = loop::allocate(t, loop::MemScope::Shared, body);
  return gemm_kernel("synchronous", a, b, body);
}

/// The Ampere mainloop written by hand over the same tile: per trip, cp.async copies of the A
/// and B panels, a commit, wait_group `pending`, a barrier, ldmatrix and mma.sync into 32
/// accumulator registers per thread (the epilogue from registers).
loop::Kernel pipelined_mma(int64_t pending) {
  const Tensor a = te::make_input("A16", {512, 512}, DType::Float16);
  const Tensor b = te::make_input("B16", {512, 512}, DType::Float16);
  Tensor sa = loop::make_buffer("sa", {3, 64, 32}, DType::Float16);
  Tensor sb = loop::make_buffer("sb", {3, 32, 64}, DType::Float16);
  Tensor fa = loop::make_buffer("fa", {8}, DType::Float16);
  Tensor fb = loop::make_buffer("fb", {4}, DType::Float16);
  Tensor acc = loop::make_buffer("acc", {32}, DType::Float32);
  Expr kt = te::var("kt");
  Expr zero = te::imm(DType::Int64, 0);
  loop::Stmt trip = loop::seq({
      loop::async_copy(sa, {zero, zero, zero}, a, {zero, kt}, 16),
      loop::async_copy(sb, {zero, zero, zero}, b, {kt, zero}, 16),
      loop::async_commit(),
      loop::async_wait(pending),
      loop::block_barrier(),
      loop::matrix_load(fa, zero, 4, false, sa, {zero, zero, zero}),
      loop::matrix_load(fb, zero, 2, true, sb, {zero, zero, zero}),
      loop::mma_sync(loop::MmaType::F16, acc, zero, fa, zero, fb, zero, acc, zero),
  });
  loop::Stmt body = loop::make_for(kt, kTrips, loop::ForKind::Serial, trip);
  for (const Tensor& t : {fa, fb, acc}) body = loop::allocate(t, loop::MemScope::Local, body);
  for (const Tensor& t : {sa, sb}) body = loop::allocate(t, loop::MemScope::Shared, body);
  return gemm_kernel("pipelined", a, b, body);
}

TEST(PriceStructure, SynchronousWmmaIsPricedSlowerThanAPipelineOfTheSameTile) {
  const loop::Kernel sync = synchronous_wmma();
  const loop::Kernel pipe = pipelined_mma(2);
  for (const char* name : {"a100", "h100", "h200"}) {
    SCOPED_TRACE(name);
    const gpu::GpuSpec spec = gpu::gpu_spec(name);
    const gpu::CostConstants c = gpu::cost_constants(spec, Precision::FP16);
    const schedule::KernelPrice ps = schedule::price_kernel(sync, spec, c, flops_of);
    ASSERT_EQ(ps.stages.size(), 1u);
    const gpu::MainloopStructure& s = ps.stages[0].work.mainloop;
    EXPECT_EQ(s.staging, MainloopStructure::Staging::Synchronous);
    EXPECT_EQ(s.depth, 1);
    EXPECT_EQ(s.instruction, "wmma");
    EXPECT_EQ(s.warps, 4);
    EXPECT_EQ(s.tile_elems, 64 * 64);
    EXPECT_EQ(s.k_per_step, 32);
    EXPECT_EQ(s.operand_bytes, 2);
    EXPECT_TRUE(s.epilogue_through_shared);
    EXPECT_TRUE(ps.stages[0].cost.mainloop.priced);

    const schedule::KernelPrice pp = schedule::price_kernel(pipe, spec, c, flops_of);
    ASSERT_EQ(pp.stages.size(), 1u);
    const gpu::MainloopStructure& q = pp.stages[0].work.mainloop;
    EXPECT_EQ(q.staging, MainloopStructure::Staging::Pipelined);
    EXPECT_EQ(q.depth, 3);  // wait_group 2: two groups in flight beside the one computed
    EXPECT_EQ(q.instruction, "mma.sync");
    EXPECT_EQ(q.tile_elems, s.tile_elems);
    EXPECT_EQ(q.k_per_step, s.k_per_step);
    EXPECT_FALSE(q.epilogue_through_shared);
    // Same work, tile and launch: the structure alone makes the difference.
    EXPECT_GT(ps.stages[0].cost.flop_us, pp.stages[0].cost.flop_us)
        << schedule::print(ps) << schedule::print(pp);
    const double peak = gpu::peak_flops(spec, Precision::FP16);
    for (const schedule::KernelPrice* p : {&ps, &pp})
      EXPECT_LT(double(p->stages[0].work.flops) / (p->stages[0].cost.flop_us * 1e-6), peak);
    // wait_group 0 keeps nothing in flight: a pipeline of depth 1 gains nothing on latency.
    const schedule::KernelPrice p0 = schedule::price_kernel(pipelined_mma(0), spec, c, flops_of);
    EXPECT_EQ(p0.stages[0].work.mainloop.depth, 1);
    EXPECT_GE(p0.stages[0].cost.flop_us, pp.stages[0].cost.flop_us);
  }
}

/// The template the scheduler builds today is recognized, whatever it is: a known structure,
/// pipelined (depth >= 2) exactly when its loop IR copies with cp.async.
TEST(PriceStructure, TheScheduledTemplateIsRecognized) {
  schedule::ScheduleConfig cfg;
  cfg.precision = Precision::FP16;
  cfg.block = 128;
  const loop::Kernel k = schedule::schedule_op(*matmul_op(), cfg);
  bool async = false, mma = false;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    async |= s.kind() == loop::StmtKind::AsyncCopy;
    mma |= s.kind() == loop::StmtKind::MmaSync || s.kind() == loop::StmtKind::FragmentMma;
  });
  ASSERT_TRUE(mma);
  const gpu::GpuSpec spec = gpu::gpu_spec("h200");
  const schedule::KernelPrice p =
      schedule::price_kernel(k, spec, gpu::cost_constants(spec, Precision::FP16), flops_of);
  ASSERT_FALSE(p.stages.empty());
  const gpu::MainloopStructure& m = p.stages[0].work.mainloop;
  ASSERT_TRUE(m.known()) << schedule::print(p);
  EXPECT_EQ(m.staging == MainloopStructure::Staging::Pipelined, async) << m.describe();
  if (async) {
    EXPECT_GE(m.depth, 2) << m.describe();
  }
  EXPECT_GT(m.k_per_step, 0) << m.describe();
  EXPECT_GT(m.tile_elems, 0);
}

/// Every tensor-core stage of the sample models' plans, priced on the spec alone, stays below
/// the spec's peak, is priced from a structure, and plan --json names it with the stage's price.
TEST(PriceStructure, SampleModelsNeverAtPeakAndPlanJsonNamesTheStructure) {
  struct Case {
    const char* model;
    const char* gpu;
    Precision precision;
  };
  for (const Case& cs :
       {Case{"bert", "h200", Precision::FP16}, Case{"swin", "a100", Precision::TF32},
        Case{"resnext", "h100", Precision::BF16}}) {
    SCOPED_TRACE(std::string(cs.model) + " " + cs.gpu + " " + gpu::precision_name(cs.precision));
    const gpu::GpuSpec spec = gpu::gpu_spec(cs.gpu);
    const LoadedModel& m = test::sample_model(cs.model);
    plan::PlanOptions po;
    po.gpu = spec;
    po.precision = cs.precision;
    const auto pricer = schedule::make_pricer(spec, cs.precision);
    po.pricer = pricer;
    const plan::FusionPlan p = plan::plan(m.program, po);
    CompileOptions co;
    co.archs = {};
    co.pricer = pricer;
    const CompileReport rep = compile_plan(p, co);
    ASSERT_TRUE(rep.ok());
    std::map<std::string, int64_t> flops;
    for (const analysis::TeInfo& t : analysis::analyze(p.program).tes) flops[t.name] = t.flops;
    const gpu::CostConstants c = gpu::cost_constants(spec, cs.precision);
    const double peak = gpu::peak_flops(spec, cs.precision);
    int tensor_stages = 0;
    for (const CompiledKernel& k : rep.kernels) {
      const schedule::KernelPrice kp = schedule::price_kernel(
          k.kernel, spec, c, [&](const std::string& te) { return flops[te]; }, k.register_cap);
      for (const schedule::StagePrice& st : kp.stages) {
        if (!st.work.tensor_core || st.work.flops == 0) continue;
        ++tensor_stages;
        EXPECT_TRUE(st.cost.mainloop.priced) << st.name;
        EXPECT_TRUE(st.work.mainloop.known()) << st.name;
        EXPECT_FALSE(st.cost.mainloop.calibrated);
        EXPECT_LT(double(st.work.flops) / (st.cost.flop_us * 1e-6), 0.95 * peak) << st.name;
      }
    }
    EXPECT_GT(tensor_stages, 0);
    // plan --json: each tensor-core stage's structure and price, as the pricer priced it.
    const nlohmann::json j = plan_json(cs.model, p);
    int named = 0;
    for (const nlohmann::json& q : j["partitions"]) {
      if (!q.contains("built_stages")) continue;
      for (const nlohmann::json& b : q["built_stages"]) {
        ASSERT_TRUE(b.contains("est_us"));
        EXPECT_GE(b["est_us"].get<double>(), 0);
        if (!b.contains("mainloop")) continue;
        ++named;
        const std::string s = b["mainloop"]["structure"].get<std::string>();
        const std::string from = b["mainloop"]["priced_from"].get<std::string>();
        EXPECT_NE(from.find("structure: " + s), std::string::npos) << from;
        EXPECT_GT(b["est_us"].get<double>(), 0);
      }
    }
    EXPECT_EQ(named, tensor_stages);
    // The partitions' estimates add up to the plan's.
    double sum = 0;
    for (const plan::Partition& q : p.partitions) sum += q.est_time_us;
    EXPECT_NEAR(sum, p.est_time_us, 1e-6 * std::max(1.0, p.est_time_us));
  }
}

}  // namespace
}  // namespace souffle
