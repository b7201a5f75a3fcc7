// The tensor-core GEMM template: emulated kernels against the float64 interpreter at each
// precision, NVRTC compiling them for sm_80 and sm_90, and the emulator's warp-collective checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/gpu/nvrtc.h"
#include "core/interp/interpreter.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/schedule/schedule.h"
#include "core/schedule/template_util.h"
#include "core/schedule/tune.h"
#include "core/session/load.h"
#include "core/session/verify_kernels.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using schedule_test::random_data;
using schedule_test::rel_l2;

using gpu::Precision;
using te::Expr;
using te::Tensor;

/// One GEMM-like TE over its inputs.
struct Case {
  std::vector<Tensor> inputs;
  te::Op op;
};

/// Relative L2 error of the emulated kernel for `c` against the float64 interpreter.
double error_of(const Case& c, const loop::Kernel& k) {
  te::TeProgram p;
  p.name = "tc";
  p.inputs = c.inputs;
  p.ops = {c.op};
  p.outputs = {c.op->output};
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    auto d = random_data(c.inputs[i], static_cast<uint32_t>(11 + i));
    in.push_back(d);
    buffers[c.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = {k};
  emulate::Buffers got = emulate::run_kernels(ks, buffers);
  return rel_l2(*got.at(c.op->output->name), *want[0]);
}

loop::Kernel tc_kernel(const Case& c, Precision p, int64_t block = 256) {
  schedule::ScheduleConfig cfg;
  cfg.mma_mainloop = false;  // the wmma template (gemm_mma: test_gemm_mma)
  cfg.precision = p;
  cfg.block = block;
  return schedule::schedule_op(*c.op, cfg);
}

Case matmul(int64_t m, int64_t n, int64_t k) {
  Case c;
  Tensor a = te::make_input("A", {m, k}, DType::Float32);
  Tensor b = te::make_input("B", {k, n}, DType::Float32);
  c.inputs = {a, b};
  c.op = te::reduce("C", {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
  return c;
}

/// Attention-style batched GEMM: [batch, m, k] x [batch, k, n].
Case batched(int64_t batch, int64_t m, int64_t n, int64_t k) {
  Case c;
  Tensor a = te::make_input("Q", {batch, m, k}, DType::Float32);
  Tensor b = te::make_input("K", {batch, k, n}, DType::Float32);
  c.inputs = {a, b};
  c.op = te::reduce("S", {batch, m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], i[1], r[0]}) * te::read(b, {i[0], r[0], i[2]});
                    });
  return c;
}

/// A 3x3 convolution, stride 1, no padding, as an implicit GEMM: rows are output channels
/// (weights), columns the output pixels (input windows), K = input channels x 3 x 3.
Case conv(int64_t cin, int64_t cout, int64_t h, int64_t w) {
  Case c;
  Tensor x = te::make_input("X", {1, cin, h, w}, DType::Float32);
  Tensor wt = te::make_input("W", {cout, cin, 3, 3}, DType::Float32);
  c.inputs = {x, wt};
  c.op = te::reduce("Y", {1, cout, h - 2, w - 2}, DType::Float32, te::ReduceKind::Sum, {cin, 3, 3},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(wt, {i[1], r[0], r[1], r[2]}) *
                             te::read(x, {i[0], r[0], i[2] + r[1], i[3] + r[2]});
                    });
  return c;
}

double tolerance(Precision p) {
  return p == Precision::TF32 ? 1e-3 : 1e-2;
}

void expect_tensor_core(const loop::Kernel& k) {
  bool mma = false;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& s) { mma |= s.as<loop::FragmentMma>() != nullptr; });
  EXPECT_TRUE(mma) << k.stages[0].schedule;
  EXPECT_EQ(k.stages[0].schedule.rfind("gemm_tc", 0), 0u) << k.stages[0].schedule;
}

class GemmTc : public ::testing::TestWithParam<Precision> {};

TEST_P(GemmTc, PlainGemmMatchesReference) {
  Case c = matmul(64, 96, 80);
  loop::Kernel k = tc_kernel(c, GetParam());
  expect_tensor_core(k);
  double e = error_of(c, k);
  std::printf("%s plain 64x96x80: rel L2 %.3g\n", gpu::precision_name(GetParam()), e);
  EXPECT_LE(e, tolerance(GetParam()));
  EXPECT_GT(e, 0.0);  // the operands really were rounded
}

TEST_P(GemmTc, OddSizesNeedGuards) {
  // No dimension divides the tiles: the zero-filled K tail and the M/N guards all act.
  Case c = matmul(37, 45, 23);
  loop::Kernel k = tc_kernel(c, GetParam());
  expect_tensor_core(k);
  double e = error_of(c, k);
  std::printf("%s odd 37x45x23: rel L2 %.3g\n", gpu::precision_name(GetParam()), e);
  EXPECT_LE(e, tolerance(GetParam()));
}

TEST_P(GemmTc, BatchedGemm) {
  Case c = batched(3, 20, 33, 40);
  loop::Kernel k = tc_kernel(c, GetParam());
  expect_tensor_core(k);
  double e = error_of(c, k);
  std::printf("%s batched 3x20x33x40: rel L2 %.3g\n", gpu::precision_name(GetParam()), e);
  EXPECT_LE(e, tolerance(GetParam()));
}

TEST_P(GemmTc, ConvolutionAsImplicitGemm) {
  Case c = conv(5, 24, 9, 10);
  ASSERT_EQ(schedule::classify(*c.op), schedule::ScheduleKind::Gemm);
  loop::Kernel k = tc_kernel(c, GetParam());
  expect_tensor_core(k);
  double e = error_of(c, k);
  std::printf("%s conv 5->24 9x10: rel L2 %.3g\n", gpu::precision_name(GetParam()), e);
  EXPECT_LE(e, tolerance(GetParam()));
}

TEST_P(GemmTc, SmallerBlocksUseFewerWarps) {
  Case c = matmul(40, 70, 33);
  for (int64_t block : {64, 32}) {
    loop::Kernel k = tc_kernel(c, GetParam(), block);
    EXPECT_EQ(k.launch.block_x, block);
    EXPECT_LE(error_of(c, k), tolerance(GetParam()));
  }
}

TEST_P(GemmTc, CompilesWithNvrtcForSm80AndSm90) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  Case c = matmul(37, 45, 23);
  loop::Kernel k = tc_kernel(c, GetParam());
  std::string source = codegen::emit_cuda(k);
  EXPECT_NE(source.find("#include <mma.h>"), std::string::npos);
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileOptions o;
    o.arch = arch;
    gpu::CompileResult r = gpu::compile_cuda(source, "gemm_tc.cu", o);
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_FALSE(r.kernels.empty()) << r.log;
    const gpu::KernelResources& res = r.kernels[0];
    std::printf("%s %s: %d registers, %lld B static shared, %lld B dynamic, spills %lld/%lld\n",
                gpu::precision_name(GetParam()), arch, res.registers,
                static_cast<long long>(res.shared_bytes),
                static_cast<long long>(k.launch.dynamic_shared_bytes),
                static_cast<long long>(res.spill_store_bytes),
                static_cast<long long>(res.spill_load_bytes));
    EXPECT_EQ(res.spill_store_bytes, 0);
  }
}

/// Every fragment, shared tile and output store of `k` that writes `t` (a global tensor).
bool writes(const loop::Kernel& k, const Tensor& t) {
  bool found = false;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    if (const loop::Store* st = s.as<loop::Store>()) found |= st->buffer == t;
  });
  return found;
}

TEST_P(GemmTc, EpilogueBiasGeluResidualCast) {
  // C = A*B, then bias + GELU, a residual add and a cast, all in the store from the shared C
  // tile; odd sizes so the guards act on the epilogue too.
  Case c = matmul(45, 70, 36);
  const Tensor& out = c.op->output;
  Tensor bias = te::make_input("bias", {70}, DType::Float32);
  Tensor res = te::make_input("res", {45, 70}, DType::Float32);
  te::Op gelu = te::compute("D", {45, 70}, DType::Float32, [&](const std::vector<Expr>& i) {
    Expr x = te::read(out, i) + te::read(bias, {i[1]});
    return x * 0.5 * (te::erf(x * 0.7071067811865476) + 1.0);
  });
  te::Op add = te::compute("E", {45, 70}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(gelu->output, i) + te::read(res, i) * 0.5;
  });
  te::Op cast = te::compute("F", {45, 70}, DType::Float16, [&](const std::vector<Expr>& i) {
    return te::cast(DType::Float16, te::read(add->output, i));
  });
  std::vector<te::Op> ops{c.op, gelu, add, cast};
  te::TeProgram prog = schedule_test::program_of(ops);
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < prog.inputs.size(); ++i) {
    auto d = random_data(prog.inputs[i], static_cast<uint32_t>(31 + i));
    in.push_back(d);
    buffers[prog.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(prog, in);
  schedule::ScheduleConfig cfg;
  cfg.mma_mainloop = false;  // the wmma template (gemm_mma: test_gemm_mma)
  cfg.precision = GetParam();
  auto run = [&](const loop::Kernel& k) {
    loop::KernelSet ks;
    ks.kernels = {k};
    return emulate::run_kernels(ks, buffers);
  };
  // Everything written: each tensor matches the reference.
  loop::Kernel all = schedule::schedule_fused(*c.op, {gelu.get(), add.get(), cast.get()}, cfg, {});
  expect_tensor_core(all);
  EXPECT_NE(all.stages[0].schedule.find("epilogue D E F"), std::string::npos)
      << all.stages[0].schedule;
  emulate::Buffers got = run(all);
  for (size_t i = 0; i < ops.size(); ++i) {
    double e = rel_l2(*got.at(ops[i]->output->name), *want[i]);
    std::printf("%s epilogue, all written: %s rel L2 %.3g\n", gpu::precision_name(GetParam()),
                ops[i]->name.c_str(), e);
    EXPECT_LE(e, tolerance(GetParam())) << ops[i]->name;
  }
  // Only the last written: C, D and E stay in registers and never reach global memory.
  loop::Kernel kept = schedule::schedule_fused(*c.op, {gelu.get(), add.get(), cast.get()}, cfg,
                                               {out, gelu->output, add->output});
  ASSERT_EQ(kept.outputs.size(), 1u);
  EXPECT_EQ(kept.outputs[0], cast->output);
  for (const te::Op& op : {c.op, gelu, add}) EXPECT_FALSE(writes(kept, op->output)) << op->name;
  got = run(kept);
  EXPECT_EQ(got.count(out->name), 0u);
  EXPECT_LE(rel_l2(*got.at(cast->output->name), *want[3]), tolerance(GetParam()));
}

TEST_P(GemmTc, EveryTensorCoreTileShapeMatchesReference) {
  // Each warp layout, fragment layout and BK of the tuner's space, on odd sizes (a subset of
  // BK values to stay fast): the template builds what the tuner may ask for.
  Case c = batched(2, 37, 45, 40);
  int checked = 0;
  for (const gpu::Tile& t : schedule::tensor_core_tile_space()) {
    if (t.bk != (t.tm == t.tn ? 16 : 32) && !(t.bm == 256 && t.bk == 64)) continue;
    // Every layout under fp16; the other types (only the operand conversion differs) on the
    // square ones.
    if (GetParam() != Precision::FP16 && (t.tm != t.tn || t.warps_m() != t.warps_n())) continue;
    if (t.double_buffer && t.tm != t.tn) continue;  // two stages: the square fragment layouts
    schedule::ScheduleConfig cfg;
    cfg.mma_mainloop = false;  // the wmma template (gemm_mma: test_gemm_mma)
    cfg.precision = GetParam();
    loop::Kernel k = schedule::schedule_op(*c.op, schedule::with_tile(cfg, t));
    expect_tensor_core(k);
    EXPECT_EQ(k.launch.block_x, t.threads()) << t.describe();
    EXPECT_NE(k.stages[0].schedule.find(t.describe()), std::string::npos)
        << k.stages[0].schedule << " vs " << t.describe();
    EXPECT_LE(error_of(c, k), tolerance(GetParam())) << t.describe();
    ++checked;
  }
  EXPECT_GE(checked, GetParam() == Precision::FP16 ? 80 : 9);
}

INSTANTIATE_TEST_SUITE_P(Precisions, GemmTc,
                         ::testing::Values(Precision::FP16, Precision::BF16, Precision::TF32),
                         [](const auto& info) { return gpu::precision_name(info.param); });

TEST(GemmTcNvrtc, LargeTilesWithEpilogueCompileWithoutSpills) {
  // The tuner's larger tensor-core tiles, with a bias + ReLU epilogue and the GEMM result kept
  // in registers, compile for sm_80 and sm_90; their registers and spills are printed.
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  Case c = matmul(300, 260, 96);
  Tensor bias = te::make_input("bias", {260}, DType::Float32);
  te::Op relu = te::compute("R", {300, 260}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::max(te::read(c.op->output, i) + te::read(bias, {i[1]}), te::imm(DType::Float32, 0));
  });
  for (const gpu::Tile& t :
       {gpu::Tile{64, 64, 32, 2, 2, false, true}, gpu::Tile{128, 128, 32, 4, 4, false, true},
        gpu::Tile{256, 128, 32, 4, 4, false, true}, gpu::Tile{64, 128, 64, 2, 4, false, true},
        gpu::Tile{64, 64, 32, 2, 2, true, true}, gpu::Tile{128, 64, 32, 4, 2, true, true}}) {
    schedule::ScheduleConfig cfg;
    cfg.mma_mainloop = false;  // the wmma template (gemm_mma: test_gemm_mma)
    cfg.precision = Precision::FP16;
    loop::Kernel k =
        schedule::schedule_fused(*c.op, {relu.get()}, schedule::with_tile(cfg, t), {c.op->output});
    std::string source = codegen::emit_cuda(k);
    for (const char* arch : {"sm_80", "sm_90"}) {
      gpu::CompileOptions o;
      o.arch = arch;
      gpu::CompileResult r = gpu::compile_cuda(source, "gemm_tc_epilogue.cu", o);
      ASSERT_TRUE(r.ok) << t.describe() << " " << arch << ": " << r.error;
      ASSERT_FALSE(r.kernels.empty()) << r.log;
      const gpu::KernelResources& res = r.kernels[0];
      std::printf("fp16 %s + epilogue, %s: %d registers, %lld B shared, spills %lld/%lld\n",
                  t.describe().c_str(), arch, res.registers,
                  static_cast<long long>(k.launch.dynamic_shared_bytes),
                  static_cast<long long>(res.spill_store_bytes),
                  static_cast<long long>(res.spill_load_bytes));
      EXPECT_EQ(res.spill_store_bytes, 0) << t.describe() << " " << arch;
    }
  }
}

TEST(GemmTcSelection, Fp32KeepsTheSimtGemm) {
  Case c = matmul(64, 64, 64);
  loop::Kernel k = tc_kernel(c, Precision::FP32);
  EXPECT_EQ(k.stages[0].schedule.rfind("gemm ", 0), 0u) << k.stages[0].schedule;
  EXPECT_LE(error_of(c, k), 1e-6);
}

TEST(GemmTcSelection, Bf16KeepsFewerBitsThanFp16AndTf32) {
  Case c = matmul(64, 64, 128);
  double e32 = error_of(c, tc_kernel(c, Precision::TF32));
  double e16 = error_of(c, tc_kernel(c, Precision::FP16));
  double eb16 = error_of(c, tc_kernel(c, Precision::BF16));
  std::printf("64x64x128: tf32 %.3g, fp16 %.3g, bf16 %.3g\n", e32, e16, eb16);
  // tf32 and fp16 both keep 10 mantissa bits, bf16 only 7.
  EXPECT_LT(e16, eb16);
  EXPECT_LE(e32, 1e-3);
}

TEST(GemmTcPlan, BertFp16TunesTensorCoreTilesAndFusesEpilogues) {
  // BERT's souffle plan under fp16: every GEMM gets a tensor-core tile from the tuner, recorded
  // in the plan; the kernels use those tiles and compute the bias adds and activations after a
  // GEMM in its store. The emulated model stays within the fp16 tolerance.
  LoadedModel m = load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert/model.onnx");
  plan::PlanOptions po;
  po.gpu = gpu::gpu_spec("a100");
  po.precision = Precision::FP16;
  plan::FusionPlan p = plan::plan(m.program, po);
  schedule::ScheduleConfig sc;
  sc.mma_mainloop = false;  // the wmma template (gemm_mma: test_gemm_mma)
  sc.precision = Precision::FP16;
  tune_plan(p, sc);
  int recorded = 0;
  for (const plan::Partition& part : p.partitions)
    for (const plan::Stage& st : part.stages)
      for (const plan::TileChoice& t : st.tiles) {
        ++recorded;
        EXPECT_TRUE(t.tile.tensor_core) << t.why;
        EXPECT_EQ(t.why.rfind("gemm_tc tensor-core tile", 0), 0u) << t.why;
        EXPECT_NE(st.schedule.find("tuned: gemm_tc tensor-core tile"), std::string::npos);
      }
  EXPECT_GT(recorded, 0);
  loop::KernelSet ks = build_plan_kernels(p, sc);
  int tensor_core = 0, fused = 0, tuned = 0;
  for (const loop::Kernel& k : ks.kernels)
    for (const loop::StageInfo& st : k.stages) {
      if (st.schedule.rfind("gemm_tc", 0) != 0) continue;
      ++tensor_core;
      fused += st.schedule.find(", epilogue ") != std::string::npos;
      tuned += st.schedule.find("; tuned: gemm_tc tensor-core tile") != std::string::npos;
    }
  std::printf("bert fp16 souffle: %d tensor-core stages, %d with epilogues, %d tuned\n",
              tensor_core, fused, tuned);
  EXPECT_EQ(tuned, recorded);
  EXPECT_EQ(tuned, tensor_core);
  EXPECT_GT(fused, 0);
}

TEST(GemmTcLstm, GateGemmIsASelectBetweenProducts) {
  // The LSTM sample's gate pre-activations sum over one K axis of I + H a
  // select(k < I, x*W, h*R), which is no Mul; split into select(k < I, x, h) *
  // select(k < I, W, R) they are a GEMM [x|h] x [W|R]. classify() sees them as GEMMs through
  // that split, and the tensor-core template computes them within the fp16 tolerance.
  LoadedModel m = load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/lstm/model.onnx");
  plan::PlanOptions po;
  po.gpu = gpu::gpu_spec("a100");
  plan::FusionPlan p = plan::plan(m.program, po);
  int gates = 0;
  for (const te::Op& op : p.program.ops) {
    if (op->name.size() < 5 || op->name.substr(op->name.size() - 5) != "gates") continue;
    ++gates;
    EXPECT_EQ(schedule::classify(*op), schedule::ScheduleKind::Gemm) << op->name;
    ASSERT_NE(op->body.as<te::Select>(), nullptr) << op->name;
    if (gates > 2) continue;  // the first two steps are checked numerically
    Expr a, b;
    ASSERT_TRUE(schedule::detail::split_product(op->body, a, b)) << op->name;
    auto product = std::make_shared<te::ComputeOp>(*op);
    product->body = a * b;
    ASSERT_EQ(schedule::classify(*product), schedule::ScheduleKind::Gemm) << op->name;
    schedule::GemmProblem gp = schedule::gemm_problem(*product);
    std::printf("%s: batch %lld, M %lld, N %lld, K %lld\n", op->name.c_str(),
                static_cast<long long>(gp.batch), static_cast<long long>(gp.m),
                static_cast<long long>(gp.n), static_cast<long long>(gp.k));
    Case c;
    c.op = op;
    c.inputs = schedule_test::program_of({op}).inputs;
    loop::Kernel k = tc_kernel(Case{c.inputs, product}, Precision::FP16);
    expect_tensor_core(k);
    double e = error_of(c, k);
    std::printf("  fp16 tensor-core kernel vs the original TE: rel L2 %.3g\n", e);
    EXPECT_LE(e, 1e-2);
    EXPECT_GT(e, 0.0);
  }
  EXPECT_GT(gates, 0);
  // The split needs one branch taken per element: a select of a product and a non-product
  // is refused, a zero branch is a zero factor on both sides.
  Tensor x = te::make_input("x", {4, 8}, DType::Float32);
  Tensor w = te::make_input("w", {8, 6}, DType::Float32);
  te::Op sum_plus =
      te::reduce("S", {4, 6}, DType::Float32, te::ReduceKind::Sum, {8},
                 [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                   return te::select(te::lt(r[0], te::int_imm(4)),
                                     te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]}),
                                     te::read(x, {i[0], r[0]}));
                 });
  Expr a, b;
  EXPECT_FALSE(schedule::detail::split_product(sum_plus->body, a, b));
  te::Op masked =
      te::reduce("Z", {4, 6}, DType::Float32, te::ReduceKind::Sum, {8},
                 [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                   return te::select(te::lt(r[0], te::int_imm(5)),
                                     te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]}),
                                     te::imm(DType::Float32, 0));
                 });
  ASSERT_TRUE(schedule::detail::split_product(masked->body, a, b));
  auto product = std::make_shared<te::ComputeOp>(*masked);
  product->body = a * b;
  ASSERT_EQ(schedule::classify(*product), schedule::ScheduleKind::Gemm);
  Case mc{{x, w}, masked};
  EXPECT_LE(error_of(mc, tc_kernel(Case{{x, w}, product}, Precision::FP16)), 1e-2);
}

/// Removes the block barrier between the tile loads and the fragment loads of the K loop.
class DropFirstBarrier : public loop::StmtMutator {
 public:
  loop::Stmt mutate_Seq(const loop::Seq& n, const loop::Stmt& s) override {
    if (done) return StmtMutator::mutate_Seq(n, s);
    std::vector<loop::Stmt> kept;
    for (const loop::Stmt& x : n.stmts) {
      if (!done && x.as<loop::BlockBarrier>()) {
        done = true;
        continue;
      }
      kept.push_back(mutate(x));
    }
    return done ? loop::seq(kept) : StmtMutator::mutate_Seq(n, s);
  }
  bool done = false;
};

TEST(GemmTcEmulator, MissingBarrierBeforeFragmentLoadIsARace) {
  Case c = matmul(32, 32, 32);
  loop::Kernel k = tc_kernel(c, Precision::FP16);
  DropFirstBarrier drop;
  k.body = drop.mutate(k.body);
  ASSERT_TRUE(drop.done);
  try {
    error_of(c, k);
    FAIL() << "no race reported";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("data race"), std::string::npos) << e.what();
  }
}

/// Puts every fragment statement under `if (tx < 16)`: half a warp reaches it.
class HalveWarps : public loop::StmtMutator {
 public:
  explicit HalveWarps(Expr tx) : m_tx(std::move(tx)) {}
  loop::Stmt mutate_FragmentFill(const loop::FragmentFill&, const loop::Stmt& s) override {
    return loop::if_then_else(te::lt(m_tx, te::int_imm(16)), s);
  }

 private:
  Expr m_tx;
};

TEST(GemmTcEmulator, DoubleBufferNeedsItsOneBarrierPerStep) {
  // Two shared stages: the commit of chunk k+1 into the other stage races with warps still
  // reading it unless the step ends with a barrier.
  Case c = matmul(40, 48, 100);
  schedule::ScheduleConfig cfg;
  cfg.mma_mainloop = false;  // the wmma template (gemm_mma: test_gemm_mma)
  cfg.precision = Precision::FP16;
  loop::Kernel k = schedule::schedule_op(
      *c.op, schedule::with_tile(cfg, gpu::Tile{32, 32, 16, 1, 1, true, true}));
  EXPECT_NE(k.stages[0].schedule.find("double-buffered"), std::string::npos);
  EXPECT_LE(error_of(c, k), 1e-2);
  class DropStepBarrier : public loop::StmtMutator {
   protected:
    loop::Stmt mutate_For(const loop::For& f, const loop::Stmt& s) override {
      if (f.var.as<te::Var>()->name != "ko") return loop::StmtMutator::mutate_For(f, s);
      in_k = true;
      loop::Stmt body = mutate(f.body);
      in_k = false;
      return loop::make_for(f.var, f.min, f.extent, f.for_kind, body);
    }
    loop::Stmt mutate_BlockBarrier(const loop::BlockBarrier& b, const loop::Stmt& s) override {
      return in_k ? loop::comment("barrier dropped") : loop::StmtMutator::mutate_BlockBarrier(b, s);
    }
    bool in_k = false;
  };
  k.body = DropStepBarrier().mutate(k.body);
  try {
    error_of(c, k);
    FAIL() << "no race reported";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("race"), std::string::npos) << e.what();
  }
}

TEST(GemmTcEmulator, DivergentWarpIsAnError) {
  Case c = matmul(32, 32, 32);
  loop::Kernel k = tc_kernel(c, Precision::FP16);
  const loop::For* bx = k.body.as<loop::For>();
  const loop::For* tx = bx->body.as<loop::For>();
  HalveWarps half(tx->var);
  k.body = half.mutate(k.body);
  try {
    error_of(c, k);
    FAIL() << "divergent fill_fragment not reported";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("divergent"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("16 of 32 lanes"), std::string::npos) << e.what();
  }
}

TEST(GemmTcLoopIr, PrinterVerifierAndEquality) {
  Case c = matmul(32, 32, 16);
  loop::Kernel k = tc_kernel(c, Precision::FP16, 32);
  std::string text = loop::print(k);
  EXPECT_NE(text.find("fragment matrix_a f16 m16n16k16 C_fa: f16[2]"), std::string::npos) << text;
  EXPECT_NE(text.find("mma_sync C_fc["), std::string::npos) << text;
  EXPECT_NE(text.find("load_matrix_sync C_fb[j] <- C_b["), std::string::npos) << text;
  EXPECT_NE(text.find("store_matrix_sync C_c["), std::string::npos) << text;
  loop::Kernel again = tc_kernel(c, Precision::FP16, 32);
  EXPECT_TRUE(loop::equal(k.body, again.body));
  loop::Kernel other = tc_kernel(c, Precision::BF16, 32);
  EXPECT_FALSE(loop::equal(k.body, other.body));
  loop::verify(k);
  // A fragment used as an ordinary buffer is refused.
  Tensor f = loop::make_fragment_buffer("f", 1, loop::MmaType::F32);
  loop::Kernel bad;
  bad.name = "bad";
  bad.launch.block_x = 32;
  Expr bxv = te::var("bx"), txv = te::var("tx");
  bad.stages = {loop::StageInfo{}};
  bad.body = loop::make_for(
      bxv, 1, loop::ForKind::BlockIdxX,
      loop::make_for(
          txv, 32, loop::ForKind::ThreadIdxX,
          loop::stage(0, loop::fragment_alloc(
                             f, loop::FragmentRole::Accumulator, loop::MmaType::F32, 16, 16, 16,
                             loop::store(f, {te::int_imm(0)}, te::imm(DType::Float32, 1.0))))));
  EXPECT_THROW(loop::verify(bad), InternalError);
}

}  // namespace
}  // namespace souffle
