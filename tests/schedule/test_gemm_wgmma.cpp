// The Hopper mainloop (core/schedule/gemm_wgmma.cpp, docs/mainloop.md): GEMMs of several shapes
// (ragged ones included) at fp16 and bf16 through wgmma m64nNk16 in the emulator against the
// float64 interpreter, a fused epilogue from the wgmma accumulator layout, dropped waits caught,
// the selection rules, NVRTC for sm_90a (no spills, HGMMA in the SASS) beside the Ampere
// mainloop on sm_90, and the sample BERT verified at kernel level on an H100 plan with it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/sass.h"
#include "core/gpu/spec.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/plan/plan.h"
#include "core/schedule/gemm_wgmma.h"
#include "core/schedule/plan_pricer.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/sass_report.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"
#include "core/te/builder.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using gpu::Precision;
using schedule_test::random_data;
using schedule_test::rel_l2;
using te::Expr;
using te::Tensor;

struct Case {
  std::vector<Tensor> inputs;
  te::Op op;
};

/// C = A x B, A [m, k]; B [k, n], or [n, k] when `bt` (K innermost: B copies by cp.async).
Case matmul(int64_t m, int64_t n, int64_t k, DType t = DType::Float32, bool bt = false) {
  Case c;
  Tensor a = te::make_input("A", {m, k}, t);
  Tensor b = te::make_input("B", bt ? Shape{n, k} : Shape{k, n}, t);
  c.inputs = {a, b};
  c.op = te::reduce("C", {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      Expr x = te::cast(DType::Float32, te::read(a, {i[0], r[0]}));
                      Expr y =
                          te::cast(DType::Float32, te::read(b, bt ? std::vector<Expr>{i[1], r[0]}
                                                                  : std::vector<Expr>{r[0], i[1]}));
                      return x * y;
                    });
  return c;
}

/// Runs `k` on random inputs in the emulator; rel. L2 of `out` against the interpreter running
/// `ops`.
double error_of(const std::vector<Tensor>& inputs, const std::vector<te::Op>& ops,
                const loop::Kernel& k, const emulate::EmulateOptions& o = {}) {
  te::TeProgram p;
  p.name = "wgmma";
  p.inputs = inputs;
  p.ops = ops;
  p.outputs = {ops.back()->output};
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto d = random_data(inputs[i], static_cast<uint32_t>(11 + i));
    in.push_back(d);
    buffers[inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = {k};
  emulate::Buffers got = emulate::run_kernels(ks, buffers, o);
  return rel_l2(*got.at(ops.back()->output->name), *want[0]);
}

/// The Hopper mainloop's config: a block of `warps` warps and, when bm > 0, that tile.
schedule::ScheduleConfig hopper(Precision p, int64_t bm = 0, int64_t bn = 0, int64_t bk = 32,
                                int64_t tm = 2, int64_t tn = 2) {
  schedule::ScheduleConfig c;
  c.precision = p;
  c.block = 128;
  c.wgmma_mainloop = true;
  if (bm > 0) {
    c.tc_tile = gpu::Tile{bm, bn, bk, tm, tn, false, true};
    c.block = (bm / (16 * tm)) * (bn / (16 * tn)) * 32;
  }
  return c;
}

bool has(const loop::Kernel& k, loop::StmtKind kind) {
  bool found = false;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) { found |= s.kind() == kind; });
  return found;
}

TEST(WgmmaGemm, ShapesMatchTheInterpreter) {
  // One warpgroup (64x64x32), two along M (128x128x64), two along N (64x128x32); f32 tensors
  // (converted), f16/bf16 tensors (A by cp.async), B stored N x K (B by cp.async too); ragged
  // M, N and K that need every guard. Not one bank conflict in the staging's shared writes (the
  // wgmma's own reads are not modelled).
  struct T {
    int64_t m, n, k;
    bool same_type, bt;
    schedule::ScheduleConfig (*cfg)(Precision);
  };
  auto one = [](Precision p) { return hopper(p); };
  auto two_m = [](Precision p) { return hopper(p, 128, 128, 64, 2, 4); };
  auto two_n = [](Precision p) { return hopper(p, 64, 128, 32, 1, 4); };
  const T cases[] = {{128, 128, 64, false, false, one}, {100, 72, 88, false, false, one},
                     {37, 45, 70, true, false, one},    {128, 128, 64, true, false, two_m},
                     {150, 200, 96, true, true, two_m}, {96, 136, 40, false, true, two_n},
                     {64, 128, 256, true, false, two_n}};
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    const DType st = p == Precision::FP16 ? DType::Float16 : DType::BFloat16;
    for (const T& t : cases) {
      Case c = matmul(t.m, t.n, t.k, t.same_type ? st : DType::Float32, t.bt);
      const loop::Kernel k = schedule::schedule_op(*c.op, t.cfg(p));
      const std::string& sched = k.stages[0].schedule;
      ASSERT_EQ(sched.rfind("gemm_wgmma", 0), 0u) << sched;
      EXPECT_TRUE(has(k, loop::StmtKind::WgmmaMma));
      EXPECT_FALSE(has(k, loop::StmtKind::MmaSync));
      EXPECT_EQ(has(k, loop::StmtKind::AsyncCopy), sched.find("cp.async") != std::string::npos);
      if (t.same_type) {
        EXPECT_NE(sched.find("A cp.async"), std::string::npos) << sched;
      }
      if (t.same_type && t.bt) {
        EXPECT_NE(sched.find("B cp.async"), std::string::npos) << sched;
      }
      emulate::BankReport banks;
      emulate::EmulateOptions o;
      o.bank_conflicts = &banks;
      const double e = error_of(c.inputs, {c.op}, k, o);
      // The staging's shared writes (cp.async into core matrices, converted 2-byte stores).
      int64_t accesses = 0, conflicts = 0;
      for (const auto& [stage, kinds] : banks)
        for (const auto& [kind, st] : kinds) {
          accesses += st.accesses;
          conflicts += st.conflicts;
        }
      std::printf("%s %lldx%lldx%lld: %s: rel L2 %.3g; %lld shared accesses, %lld conflicts\n",
                  gpu::precision_name(p), static_cast<long long>(t.m), static_cast<long long>(t.n),
                  static_cast<long long>(t.k), sched.c_str(), e, static_cast<long long>(accesses),
                  static_cast<long long>(conflicts));
      EXPECT_LE(e, 1e-2) << sched;
      EXPECT_GT(accesses, 0);
      EXPECT_EQ(conflicts, 0) << sched;
      EXPECT_GT(e, 0.0);  // the operands are rounded to the compute type
    }
  }
}

TEST(WgmmaGemm, FusedEpilogueFromTheAccumulatorLayout) {
  // Bias + GELU (tanh form) + residual computed per accumulator element; the GEMM's own result
  // stays in registers.
  const int64_t m = 96, n = 80, k = 48;
  Case c = matmul(m, n, k);
  Tensor bias = te::make_input("bias", {n}, DType::Float32);
  Tensor res = te::make_input("res", {m, n}, DType::Float32);
  auto f = [](double v) { return te::imm(DType::Float32, v); };
  te::Op act = te::compute("G", {m, n}, DType::Float32, [&](const std::vector<Expr>& i) {
    Expr x = te::read(c.op->output, i) + te::read(bias, {i[1]});
    Expr inner = f(0.7978845608) * (x + f(0.044715) * x * x * x);
    return f(0.5) * x * (f(1) + te::tanh(inner)) + te::read(res, i);
  });
  const loop::Kernel kern =
      schedule::schedule_fused(*c.op, {act.get()}, hopper(Precision::FP16), {c.op->output});
  const std::string& sched = kern.stages[0].schedule;
  EXPECT_EQ(sched.rfind("gemm_wgmma", 0), 0u) << sched;
  EXPECT_NE(sched.find("epilogue G"), std::string::npos) << sched;
  const double e = error_of({c.inputs[0], c.inputs[1], bias, res}, {c.op, act}, kern);
  std::printf("bias + GELU + residual: rel L2 %.3g\n", e);
  EXPECT_LE(e, 1e-2);
}

TEST(WgmmaGemm, DroppedWaitsAreCaught) {
  // f16 tensors: A and B (N x K) stream by cp.async. Without the K loop's cp.async wait the
  // wgmmas read stages the copies have not filled (never-written shared memory, or with that
  // check off a wrong result); without the wgmma wait the epilogue reads accumulators no wgmma
  // has written yet.
  Case c = matmul(64, 64, 128, DType::Float16, true);
  schedule::detail::GemmParts g;
  ASSERT_TRUE(schedule::detail::match_gemm(*c.op, g));
  const schedule::ScheduleConfig cfg = hopper(Precision::FP16);
  EXPECT_LE(
      error_of(c.inputs, {c.op}, schedule::detail::schedule_gemm_wgmma(*c.op, g, {}, {}, cfg)),
      1e-2);
  schedule::detail::WgmmaOptions copy;
  copy.drop_copy_wait = true;
  const loop::Kernel no_copy_wait =
      schedule::detail::schedule_gemm_wgmma(*c.op, g, {}, {}, cfg, copy);
  try {
    error_of(c.inputs, {c.op}, no_copy_wait);
    ADD_FAILURE() << "wgmmas reading stages before their cp.async wait passed";
  } catch (const emulate::EmulationError& e) {
    std::printf("without the cp.async wait: %s\n", e.what());
  }
  emulate::EmulateOptions lax;
  lax.check_uninitialized = false;
  lax.check_races = false;
  const double stale = error_of(c.inputs, {c.op}, no_copy_wait, lax);
  std::printf("without the cp.async wait: rel L2 %.3g\n", stale);
  EXPECT_GT(stale, 0.1);
  schedule::detail::WgmmaOptions mma;
  mma.drop_wgmma_wait = true;
  const loop::Kernel no_mma_wait =
      schedule::detail::schedule_gemm_wgmma(*c.op, g, {}, {}, cfg, mma);
  try {
    error_of(c.inputs, {c.op}, no_mma_wait);
    ADD_FAILURE() << "accumulators read before their wgmma wait passed";
  } catch (const emulate::EmulationError& e) {
    // The epilogue read the zeroed registers (stale), and the wgmmas were still in flight when
    // the accumulators' scope ended.
    EXPECT_NE(std::string(e.what()).find("never waited for"), std::string::npos) << e.what();
  }
}

TEST(WgmmaGemm, SelectionRules) {
  Case c = matmul(64, 64, 64);
  auto sched = [&](const schedule::ScheduleConfig& cfg) {
    return schedule::schedule_op(*c.op, cfg).stages[0].schedule;
  };
  EXPECT_EQ(sched(hopper(Precision::FP16)).rfind("gemm_wgmma", 0), 0u);
  EXPECT_EQ(sched(hopper(Precision::BF16)).rfind("gemm_wgmma", 0), 0u);
  // Off, tf32, a tile of 32 rows, a block of two warps: the Ampere mainloop.
  schedule::ScheduleConfig off = hopper(Precision::FP16);
  off.wgmma_mainloop = false;
  EXPECT_EQ(sched(off).rfind("gemm_mma", 0), 0u);
  EXPECT_EQ(sched(hopper(Precision::TF32)).rfind("gemm_mma", 0), 0u);
  EXPECT_EQ(sched(hopper(Precision::FP16, 32, 64, 32, 1, 2)).rfind("gemm_mma", 0), 0u);
  schedule::ScheduleConfig two_warps = hopper(Precision::FP16);
  two_warps.block = 64;
  EXPECT_EQ(sched(two_warps).rfind("gemm_mma", 0), 0u);
  std::string why;
  EXPECT_FALSE(schedule::detail::wgmma_split(hopper(Precision::TF32), &why).ok());
  EXPECT_NE(why.find("tf32"), std::string::npos) << why;
  const schedule::detail::WgmmaSplit s =
      schedule::detail::wgmma_split(hopper(Precision::FP16, 128, 128, 64, 2, 4));
  EXPECT_EQ(s.groups_m, 2);
  EXPECT_EQ(s.groups_n, 1);
  EXPECT_EQ(s.n, 128);
}

TEST(WgmmaGemm, NvrtcSm90aHasHgmmaAndNoSpills) {
  ASSERT_TRUE(gpu::nvrtc_available()) << "this build has no NVRTC";
  ASSERT_NE(gpu::find_nvdisasm(), "") << gpu::nvdisasm_missing_message();
  // 128x128x64 tiles (8 warps) of a 128x128x64 GEMM, f16 tensors (A by cp.async) and f32 ones
  // under bf16 (converted), on sm_90a; the Ampere mainloop's same tile on sm_90 beside them.
  struct K {
    const char* what;
    Precision p;
    DType t;
    bool hopper;
  };
  for (const K& kc : {K{"f16 tensors", Precision::FP16, DType::Float16, true},
                      K{"bf16 from f32", Precision::BF16, DType::Float32, true},
                      K{"f16 tensors", Precision::FP16, DType::Float16, false}}) {
    Case c = matmul(128, 128, 64, kc.t);
    schedule::ScheduleConfig cfg = hopper(kc.p, 128, 128, 64, 2, 4);
    cfg.wgmma_mainloop = kc.hopper;
    const loop::Kernel k = schedule::schedule_op(*c.op, cfg);
    const std::string src = codegen::emit_cuda(k);
    gpu::CompileOptions o;
    o.arch = kc.hopper ? "sm_90a" : "sm_90";
    o.use_cache = false;
    const auto t0 = std::chrono::steady_clock::now();
    const gpu::CompileResult r = gpu::compile_cuda(src, "gemm_wgmma.cu", o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].spill_store_bytes + r.kernels[0].spill_load_bytes, 0);
    const gpu::Disassembly d = gpu::disassemble(r.cubin, "gemm_wgmma.cu");
    ASSERT_TRUE(d.ok) << d.error;
    int64_t hgmma = 0, hmma = 0, ldgsts = 0;
    for (const gpu::SassFunction& fn : d.listing.functions)
      for (const gpu::SassInstruction& in : fn.code) {
        hgmma += in.opcode == "HGMMA";
        hmma += in.opcode == "HMMA";
        ldgsts += in.opcode == "LDGSTS";
      }
    std::printf(
        "%s %s (%s): %d registers, %lld spill bytes, %lld HGMMA, %lld HMMA, %lld LDGSTS, "
        "%.0f ms\n",
        o.arch.c_str(), kc.what, k.stages[0].schedule.c_str(), r.kernels[0].registers,
        static_cast<long long>(r.kernels[0].spill_store_bytes), static_cast<long long>(hgmma),
        static_cast<long long>(hmma), static_cast<long long>(ldgsts), ms);
    if (kc.hopper) {
      EXPECT_GT(hgmma, 0);
      EXPECT_EQ(hmma, 0);
      EXPECT_NE(r.ptx.find("fence.proxy.async.shared::cta"), std::string::npos);
    } else {
      EXPECT_EQ(hgmma, 0);
      EXPECT_GT(hmma, 0);
    }
    if (kc.t == DType::Float16) {
      EXPECT_GT(ldgsts, 0);
    }
  }
}

TEST(WgmmaGemm, PricedByItsStructureBelowPeak) {
  // The same 2048-cubed GEMM in 128x128x32 tiles of 8 warps on an H100, f16 tensors: the
  // Hopper mainloop is priced from its structure (wgmma, cp.async pipeline, 2 warpgroups), its
  // MMAs faster than the Ampere mainloop's of the same tile (mma.sync at its share of the peak on
  // sm_90), below the spec's peak; neither is calibrated.
  Case c = matmul(2048, 2048, 2048, DType::Float16, true);
  const gpu::GpuSpec spec = gpu::gpu_spec("h100");
  const gpu::CostConstants k = gpu::cost_constants(spec, Precision::FP16);
  auto flops = [](const std::string&) -> int64_t { return 2LL * 2048 * 2048 * 2048; };
  schedule::ScheduleConfig cfg = hopper(Precision::FP16, 128, 128, 32, 2, 4);
  const schedule::KernelPrice wg =
      schedule::price_kernel(schedule::schedule_op(*c.op, cfg), spec, k, flops);
  cfg.wgmma_mainloop = false;
  const schedule::KernelPrice mma =
      schedule::price_kernel(schedule::schedule_op(*c.op, cfg), spec, k, flops);
  ASSERT_EQ(wg.stages.size(), 1u);
  ASSERT_EQ(mma.stages.size(), 1u);
  const gpu::MainloopStructure& s = wg.stages[0].work.mainloop;
  EXPECT_EQ(s.instruction, "wgmma");
  EXPECT_EQ(s.staging, gpu::MainloopStructure::Staging::Pipelined);
  EXPECT_EQ(s.tile_elems, 128 * 128);
  EXPECT_EQ(s.warps, 8);
  EXPECT_EQ(mma.stages[0].work.mainloop.instruction, "mma.sync");
  EXPECT_FALSE(wg.stages[0].cost.mainloop.calibrated);
  const double peak = gpu::peak_flops(spec, Precision::FP16);
  const double rate_wg = double(flops("")) / (wg.stages[0].cost.flop_us * 1e-6),
               rate_mma = double(flops("")) / (mma.stages[0].cost.flop_us * 1e-6);
  std::printf("h100 2048^3 fp16, 128x128x32 tiles: wgmma %.0f, mma.sync %.0f of %.0f TFLOP/s\n%s\n",
              rate_wg / 1e12, rate_mma / 1e12, peak / 1e12,
              wg.stages[0].cost.mainloop.from.c_str());
  EXPECT_LT(rate_wg, 0.95 * peak);
  // Its MMA instruction runs at a larger share of the peak. (Per-trip compute times are not
  // compared: they depend on how many blocks of each template the SM holds at once.)
  EXPECT_GT(wg.stages[0].cost.mainloop.mma_tflops, mma.stages[0].cost.mainloop.mma_tflops);
  EXPECT_LT(wg.stages[0].cost.mainloop.mma_tflops, wg.stages[0].cost.mainloop.peak_tflops);
  EXPECT_GE(rate_wg, rate_mma);
}

TEST(WgmmaGemm, SampleBertVerifiesOnTheHopperMainloop) {
  // The sample BERT under souffle at fp16 planned for an H100 with the Hopper mainloop: its
  // GEMM stages run wgmma and the kernels verify against the model's data set in the emulator;
  // on an A100 the same option leaves every stage on mma.sync.
  const std::string dir = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert";
  LoadedModel m = load_model(dir + "/model.onnx");
  std::vector<TestDataSet> sets = read_test_data(dir);
  ASSERT_FALSE(sets.empty());
  for (const char* gpu_name : {"h100", "a100"}) {
    plan::PlanOptions po;
    po.gpu = gpu::gpu_spec(gpu_name);
    po.precision = Precision::FP16;
    po.wgmma = true;
    const auto pricer = schedule::make_pricer(po.gpu, po.precision);
    po.pricer = pricer;
    KernelVerifyReport rep = verify_kernels(m, sets, pipeline_options(po), VerifyOptions{});
    ASSERT_TRUE(rep.ok()) << gpu_name << ": " << rep.error;
    int wgmma = 0, mma = 0;
    for (const loop::Kernel& k : rep.built.kernels)
      for (const loop::StageInfo& st : k.stages) {
        wgmma += st.schedule.rfind("gemm_wgmma", 0) == 0;
        mma += st.schedule.rfind("gemm_mma", 0) == 0;
      }
    std::printf("bert fp16 on %s with wgmma: %d stages on wgmma, %d on mma.sync\n", gpu_name, wgmma,
                mma);
    if (std::string(gpu_name) == "h100") {
      EXPECT_GT(wgmma, 0);
      // Built, emitted and compiled as `compile` does: sm_90 becomes sm_90a for its kernel,
      // whose SASS holds the HGMMAs without a spill.
      ASSERT_TRUE(gpu::nvrtc_available()) << "this build has no NVRTC";
      ASSERT_NE(gpu::find_nvdisasm(), "") << gpu::nvdisasm_missing_message();
      CompileOptions co;
      co.archs = {};  // compiled with line information below
      co.pricer = pricer;
      const CompileReport cr = compile_plan(plan::plan(m.program, po), co);
      ASSERT_TRUE(cr.ok());
      const auto sass = sass_of_all(cr.kernels, {"sm_90"});
      int64_t mma = 0;
      for (const std::vector<KernelSass>& per_arch : sass) {
        ASSERT_TRUE(per_arch[0].ok) << per_arch[0].kernel << ": " << per_arch[0].error;
        EXPECT_EQ(per_arch[0].spill_bytes, 0) << per_arch[0].kernel;
        mma += per_arch[0].mix.mma;
        std::printf("%s sm_90a: %d registers, %lld spill bytes, %lld MMA instructions\n",
                    per_arch[0].kernel.c_str(), per_arch[0].registers,
                    static_cast<long long>(per_arch[0].spill_bytes),
                    static_cast<long long>(per_arch[0].mix.mma));
      }
      EXPECT_GT(mma, 0);
    } else {
      EXPECT_EQ(wgmma, 0);
      EXPECT_GT(mma, 0);
    }
  }
}

}  // namespace
}  // namespace souffle
