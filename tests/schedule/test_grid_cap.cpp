// Grids capped at what a cooperative kernel can keep co-resident: GEMM blocks loop over their
// output tiles and grid-stride templates stride further, each emulated against the
// interpreter; and a sample model planned for a GPU too small for its kernels' natural grids
// builds kernels within that GPU's co-resident blocks that still compute the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/emulate/emulate.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/spec.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/schedule/schedule.h"
#include "core/session/compile.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"
#include "core/te/builder.h"
#include "tests/sample_model.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

/// The worst relative L2 error of `kernel` (emulated) against the interpreter over the outputs
/// of `ops` that the kernel writes.
double error_of(const std::vector<te::Op>& ops, const loop::Kernel& kernel) {
  return schedule_test::emulated_error(ops, {kernel}, 5, true);
}

te::Op matmul(const std::string& name, const Tensor& a, const Tensor& b) {
  const int64_t k = a->shape.back();
  const bool batched = a->shape.size() == 3;
  Shape out =
      batched ? Shape{a->shape[0], a->shape[1], b->shape[2]} : Shape{a->shape[0], b->shape[1]};
  return te::reduce(name, out, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      if (batched)
                        return te::read(a, {i[0], i[1], r[0]}) * te::read(b, {i[0], r[0], i[2]});
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

/// A bias and a ReLU after `mm` (its epilogue).
std::vector<te::Op> bias_relu(const te::Op& mm, const Tensor& bias) {
  const Shape& s = mm->output->shape;
  te::Op add = te::compute("biased", s, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(mm->output, i) + te::read(bias, {i.back()});
  });
  te::Op relu = te::compute("relu", s, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::max(te::read(add->output, i), te::imm(DType::Float32, 0));
  });
  return {add, relu};
}

schedule::ScheduleConfig small_tile(bool db, int64_t cap) {
  schedule::ScheduleConfig c = schedule_test::small_gemm_tile(16, 8, 4, db);
  c.grid_cap = cap;
  return c;
}

bool has_tile_rounds(const loop::Kernel& k) {
  bool found = false;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    const loop::For* f = s.as<loop::For>();
    found |= f && f->var.as<te::Var>()->name == "round";
  });
  return found;
}

TEST(GridCap, SimtGemmBlocksLoopOverTheirTiles) {
  // 37 x 29 with 16 x 8 tiles: 3 x 4 = 12 tiles. Five blocks take 3 rounds, the last one with
  // two blocks idle (guarded); four blocks take exactly 3 rounds.
  Tensor a = te::make_input("A", {37, 19}, DType::Float32);
  Tensor b = te::make_input("B", {19, 29}, DType::Float32);
  Tensor bias = te::make_input("bias", {29}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  std::vector<te::Op> ep = bias_relu(mm, bias);
  for (bool db : {false, true})
    for (int64_t cap : {5, 4, 1}) {
      SCOPED_TRACE(std::string(db ? "double-buffered" : "single") + ", cap " + std::to_string(cap));
      loop::Kernel k =
          schedule::schedule_fused(*mm, {ep[0].get(), ep[1].get()}, small_tile(db, cap));
      EXPECT_EQ(k.launch.grid_x, cap);
      EXPECT_TRUE(has_tile_rounds(k));
      const std::string rounds = std::to_string((12 + cap - 1) / cap);
      EXPECT_NE(k.stages[0].schedule.find("12 tiles in " + rounds + " rounds of " +
                                          std::to_string(cap) + " blocks"),
                std::string::npos)
          << k.stages[0].schedule;
      EXPECT_LE(error_of({mm, ep[0], ep[1]}, k), 1e-6);
    }
  // A cap at or above the tile count changes nothing: one tile per block, no loop.
  loop::Kernel plain = schedule::schedule_op(*mm, small_tile(false, 0));
  loop::Kernel roomy = schedule::schedule_op(*mm, small_tile(false, 12));
  EXPECT_EQ(loop::print(plain), loop::print(roomy));
  EXPECT_FALSE(has_tile_rounds(plain));
  EXPECT_EQ(plain.launch.grid_x, 12);
}

TEST(GridCap, TensorCoreGemmBlocksLoopOverTheirTiles) {
  // Batched 3 x (70 x 40) x (40 x 70) on 64 x 64 tensor-core tiles: 3 x 2 x 2 = 12 tiles over
  // 5 blocks. The accumulators are filled again each round, and the shared C tile of one round
  // is read before the next round's K loop overwrites the operand tiles.
  Tensor q = te::make_input("Q", {3, 70, 40}, DType::Float32);
  Tensor kt = te::make_input("K", {3, 40, 70}, DType::Float32);
  Tensor bias = te::make_input("bias", {70}, DType::Float32);
  te::Op mm = matmul("S", q, kt);
  std::vector<te::Op> ep = bias_relu(mm, bias);
  for (gpu::Precision p : {gpu::Precision::FP16, gpu::Precision::TF32}) {
    schedule::ScheduleConfig c;
    c.precision = p;
    c.mma_mainloop = false;  // the wmma template
    c.grid_cap = 5;
    loop::Kernel k = schedule::schedule_fused(*mm, {ep[0].get(), ep[1].get()}, c);
    EXPECT_EQ(k.stages[0].schedule.rfind("gemm_tc", 0), 0u) << k.stages[0].schedule;
    EXPECT_EQ(k.launch.grid_x, 5);
    EXPECT_TRUE(has_tile_rounds(k));
    EXPECT_LE(error_of({mm, ep[0], ep[1]}, k), 1e-2);
  }
}

TEST(GridCap, GridStrideTemplatesStayWithinTheCap) {
  Tensor x = te::make_input("X", {50, 300}, DType::Float32);
  te::Op ew = te::compute("tanh", {50, 300}, DType::Float32,
                          [&](const std::vector<Expr>& i) { return te::tanh(te::read(x, i)); });
  te::Op sum = te::reduce("rowsum", {50}, DType::Float32, te::ReduceKind::Sum, {300},
                          [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                            return te::read(x, {i[0], r[0]});
                          });
  Tensor y = te::make_input("Y", {200, 20}, DType::Float32);
  te::Op shortrows = te::reduce("rowmax", {200}, DType::Float32, te::ReduceKind::Max, {20},
                                [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                  return te::read(y, {i[0], r[0]});
                                });
  schedule::ScheduleConfig c;
  c.grid_cap = 7;
  c.cross_block_rows = 0;
  for (const te::Op& op : {ew, sum, shortrows}) {
    SCOPED_TRACE(op->name);
    loop::Kernel k = schedule::schedule_op(*op, c);
    EXPECT_LE(k.launch.grid_x, 7);
    EXPECT_LE(error_of({op}, k), 1e-6);
  }
}

TEST(GridCap, ExactBlockReductionPadsShortRows) {
  // A row of 49 elements reduced by 256 threads, as when a merged kernel's barrier stages all
  // run on the block of its GEMMs: the threads past the row add the identity.
  Tensor x = te::make_input("X", {30, 49}, DType::Float32);
  te::Op mean = te::reduce("mean", {30}, DType::Float32, te::ReduceKind::Sum, {49},
                           [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                             return te::read(x, {i[0], r[0]}) * te::imm(DType::Float32, 1.0 / 49);
                           });
  schedule::ScheduleConfig c;
  EXPECT_EQ(schedule::schedule_op(*mean, c).launch.block_x, 64);
  c.exact_block = true;
  loop::Kernel k = schedule::schedule_op(*mean, c);
  EXPECT_EQ(k.launch.block_x, 256);
  EXPECT_LE(error_of({mean}, k), 1e-6);
}

TEST(GridCap, FirstRoundWeightTileIsPrefetchedBeforeTheGridBarrier) {
  // s = row sums of x (a block reduction), then z = (x * s) x w on 16 x 16 tiles: 3 x 3 = 9
  // tiles over 2 blocks (5 rounds). The weight tile of round 0 is loaded before the barrier,
  // those of later rounds in the loop.
  Tensor x = te::make_input("x", {40, 96}, DType::Float32);
  Tensor w = te::make_input("w", {96, 36}, DType::Float32);
  te::Op s = te::reduce("s", {40}, DType::Float32, te::ReduceKind::Sum, {96},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                          return te::read(x, {i[0], k[0]});
                        });
  te::Op z = te::reduce("z", {40, 36}, DType::Float32, te::ReduceKind::Sum, {96},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                          return (te::read(x, {i[0], k[0]}) * te::read(s->output, {i[0]})) *
                                 te::read(w, {k[0], i[1]});
                        });
  for (bool db : {false, true}) {
    SCOPED_TRACE(db ? "double-buffered" : "single");
    schedule::ScheduleConfig c = schedule_test::small_gemm_tile(16, 16, 8, db);
    c.block = 64;  // the GEMM's 64 threads, as the reduction
    c.cross_block_rows = 0;
    c.grid_cap = 2;
    schedule::MergeOptions o;
    o.arena_growth = 4096;  // room for the tile beside the reduction's partials
    loop::Kernel k = schedule::merge_stages(
        {schedule::schedule_op(*s, c), schedule::schedule_op(*z, c)}, "k", o);
    EXPECT_EQ(k.launch.grid_x, 2);
    EXPECT_NE(k.stages[1].schedule.find("first K tile of b prefetched before the grid barrier"),
              std::string::npos)
        << k.stages[1].schedule;
    const std::string text = loop::print(k);
    const size_t pre = text.find("prefetched before the grid barrier (first round of tiles)");
    ASSERT_NE(pre, std::string::npos) << text;
    EXPECT_LT(pre, text.find("grid_barrier()"));
    EXPECT_LE(error_of({s, z}, k), 1e-5);
  }
}

/// The A100 with only `sms` SMs: the sample models' souffle kernels want more blocks than such
/// a GPU keeps co-resident.
gpu::GpuSpec small_gpu(int sms) {
  gpu::GpuSpec g = gpu::gpu_spec("a100");
  g.name = "A100 with " + std::to_string(sms) + " SMs";
  g.sm_count = sms;
  return g;
}

plan::PlanOptions souffle_on(const gpu::GpuSpec& g) {
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Souffle;
  po.gpu = g;
  return po;
}

/// Every cooperative kernel's grid fits `g` at the registers the build assumes.
void expect_co_resident(const loop::KernelSet& ks, const gpu::GpuSpec& g, int& capped) {
  const KernelBuildOptions defaults;
  for (const loop::Kernel& k : ks.kernels) {
    if (!k.launch.cooperative) continue;
    const int64_t fit =
        gpu::max_active_blocks(g, static_cast<int>(k.launch.block_x),
                               defaults.cooperative_registers, k.launch.dynamic_shared_bytes);
    EXPECT_LE(k.launch.grid_x, fit) << k.name;
    for (const loop::StageInfo& st : k.stages)
      capped += st.schedule.find("kernel grid capped at") != std::string::npos;
  }
}

TEST(GridCap, SampleModelsOnASmallGpuStayCoResidentAndMatchTheirReference) {
  for (const auto& [name, sms] : {std::pair<std::string, int>{"bert", 2}, {"efficientnet", 2}}) {
    SCOPED_TRACE(name);
    const gpu::GpuSpec g = small_gpu(sms);
    const LoadedModel& m = test::sample_model(name);
    plan::FusionPlan p = plan::plan(m.program, souffle_on(g));
    EXPECT_EQ(p.gpu_spec.sm_count, sms);
    loop::KernelSet ks = build_plan_kernels(p);
    int capped = 0;
    expect_co_resident(ks, g, capped);
    EXPECT_GT(capped, 0) << "no kernel needed a cap: the test no longer tests it";
    // The whole model, emulated, against its PyTorch reference.
    std::vector<TestDataSet> sets =
        read_test_data(std::filesystem::path(test::sample_model_path(name)).parent_path());
    KernelVerifyReport rep =
        verify_kernels(m, sets, pipeline_options(souffle_on(g)), VerifyOptions{});
    EXPECT_TRUE(rep.ok()) << rep.error;
    EXPECT_LE(rep.outputs.max_rel_l2, 1e-4);
  }
}

TEST(GridCap, CappedKernelsCompileAndFitTheirGpu) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const gpu::GpuSpec g = small_gpu(2);
  plan::FusionPlan p = plan::plan(test::sample_model("bert").program, souffle_on(g));
  CompileOptions o;
  o.archs = {"sm_80"};
  CompileReport r = compile_plan(p, o);
  EXPECT_TRUE(r.ok());
  int cooperative = 0;
  for (const CompiledKernel& k : r.kernels) {
    cooperative += k.launch.cooperative;
    EXPECT_TRUE(k.ok()) << k.name << ": " << k.error;
    if (k.launch.cooperative) {
      EXPECT_LE(k.launch.grid_x, k.co_resident) << k.name;
    }
  }
  EXPECT_GT(cooperative, 0);
}

}  // namespace
}  // namespace souffle
