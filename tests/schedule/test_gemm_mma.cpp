// The Ampere-class mainloop (core/schedule/gemm_mma.cpp, docs/mainloop.md): the warp statements'
// exact layouts in the emulator, GEMMs at each precision against the float64 interpreter, zero
// bank conflicts with the swizzled layout and conflicts without it, a dropped cp.async wait seen
// as a wrong result, NVRTC for sm_80 and sm_90, and the sample models' tensor-core stages.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/emulate/mma_sync.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/sass.h"
#include "core/gpu/spec.h"
#include "core/interp/interpreter.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/schedule/plan_pricer.h"
#include "core/schedule/schedule.h"
#include "core/schedule/template_util.h"
#include "core/session/load.h"
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

Case matmul(int64_t m, int64_t n, int64_t k, DType t = DType::Float32) {
  Case c;
  Tensor a = te::make_input("A", {m, k}, t);
  Tensor b = te::make_input("B", {k, n}, t);
  c.inputs = {a, b};
  c.op = te::reduce("C", {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      Expr x = te::cast(DType::Float32, te::read(a, {i[0], r[0]}));
                      Expr y = te::cast(DType::Float32, te::read(b, {r[0], i[1]}));
                      return x * y;
                    });
  return c;
}

struct Outcome {
  double error = 0;
  emulate::BankReport banks;
};

Outcome run(const Case& c, const loop::Kernel& k, const emulate::EmulateOptions& base = {}) {
  te::TeProgram p;
  p.name = "mma";
  p.inputs = c.inputs;
  p.ops = {c.op};
  p.outputs = {c.op->output};
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    auto d = random_data(c.inputs[i], static_cast<uint32_t>(5 + i));
    in.push_back(d);
    buffers[c.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  Outcome r;
  emulate::EmulateOptions o = base;
  o.bank_conflicts = &r.banks;
  loop::KernelSet ks;
  ks.kernels = {k};
  emulate::Buffers got = emulate::run_kernels(ks, buffers, o);
  r.error = rel_l2(*got.at(c.op->output->name), *want[0]);
  return r;
}

schedule::ScheduleConfig config(Precision p) {
  schedule::ScheduleConfig cfg;
  cfg.precision = p;
  cfg.block = 128;
  return cfg;
}

int64_t total(const emulate::BankReport& r, const std::string& kind, bool conflicts) {
  int64_t n = 0;
  for (const auto& [stage, kinds] : r) {
    for (const auto& [k, st] : kinds)
      if (k.rfind(kind + " ", 0) == 0) n += conflicts ? st.conflicts : st.accesses;
  }
  return n;
}

int64_t all_conflicts(const emulate::BankReport& r) {
  int64_t n = 0;
  for (const auto& [stage, kinds] : r)
    for (const auto& [kind, st] : kinds) n += st.conflicts;
  return n;
}

bool has(const loop::Kernel& k, loop::StmtKind kind) {
  bool found = false;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) { found |= s.kind() == kind; });
  return found;
}

TEST(MmaSyncLayout, FragmentPositionsCoverEachOperandOnce) {
  // Every (row, col) of A, B and C is held by exactly one (lane, element), as the PTX ISA's
  // figures for m16n8k16 and m16n8k8 lay them out.
  using loop::FragmentRole;
  for (loop::MmaType t : {loop::MmaType::F16, loop::MmaType::TF32}) {
    const int k = static_cast<int>(loop::mma_sync_k(t));
    for (FragmentRole role :
         {FragmentRole::MatrixA, FragmentRole::MatrixB, FragmentRole::Accumulator}) {
      const int rows = role == FragmentRole::MatrixB ? k : 16;
      const int cols = role == FragmentRole::MatrixA ? k : 8;
      std::vector<int> seen(static_cast<size_t>(rows * cols), 0);
      const int n = static_cast<int>(loop::mma_sync_elements(t, role));
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < n; ++i) {
          auto [r, c] = emulate::mma::fragment_position(t, role, lane, i);
          ASSERT_TRUE(r >= 0 && r < rows && c >= 0 && c < cols);
          ++seen[static_cast<size_t>(r * cols + c)];
        }
      for (int s : seen) EXPECT_EQ(s, 1);
    }
  }
  // Spot checks from the ISA: f16 A a4 of lane 5 is (row 1, col 10); tf32 B b1 of lane 6 is
  // (row 6, col 1); C c3 of lane 31 is (row 15, col 7).
  EXPECT_EQ(emulate::mma::fragment_position(loop::MmaType::F16, loop::FragmentRole::MatrixA, 5, 4),
            std::make_pair(1, 10));
  EXPECT_EQ(emulate::mma::fragment_position(loop::MmaType::TF32, loop::FragmentRole::MatrixB, 6, 1),
            std::make_pair(6, 1));
  EXPECT_EQ(
      emulate::mma::fragment_position(loop::MmaType::F16, loop::FragmentRole::Accumulator, 31, 3),
      std::make_pair(15, 7));
}

TEST(MmaSyncLayout, BankModel) {
  // 32 lanes reading consecutive words: one wavefront; a stride of 32 words: 32.
  std::vector<int64_t> a(32), b(32);
  for (int l = 0; l < 32; ++l) {
    a[static_cast<size_t>(l)] = 4 * l;
    b[static_cast<size_t>(l)] = 128 * l;
  }
  int64_t ideal = 0;
  EXPECT_EQ(emulate::mma::wavefronts(a, 4, ideal), 1);
  EXPECT_EQ(emulate::mma::wavefronts(b, 4, ideal), 32);
  // ldmatrix rows 128 bytes apart share banks: 8 wavefronts per matrix.
  std::vector<int64_t> rows(8);
  for (int r = 0; r < 8; ++r) rows[static_cast<size_t>(r)] = 128 * r;
  EXPECT_EQ(emulate::mma::ldmatrix_wavefronts(rows, 1, ideal), 8);
  EXPECT_EQ(ideal, 1);
}

class MmaGemm : public ::testing::TestWithParam<Precision> {};

TEST_P(MmaGemm, MatchesReferenceWithoutBankConflicts) {
  // Staged (converted) operands for fp16/bf16 from f32 tensors, cp.async for tf32 and for f16
  // tensors; sizes that need every guard. fp16/bf16 within 1e-2, tf32 1e-3; not one bank
  // conflict in any shared access of the stage.
  const Precision p = GetParam();
  const double tol = p == Precision::TF32 ? 1e-3 : 1e-2;
  std::vector<Case> cases = {matmul(64, 96, 80), matmul(37, 45, 70), matmul(128, 64, 256)};
  if (p == Precision::FP16) cases.push_back(matmul(64, 64, 96, DType::Float16));
  if (p == Precision::BF16) cases.push_back(matmul(64, 64, 96, DType::BFloat16));
  for (const Case& c : cases) {
    loop::Kernel k = schedule::schedule_op(*c.op, config(p));
    const std::string& sched = k.stages[0].schedule;
    EXPECT_EQ(sched.rfind("gemm_mma", 0), 0u) << sched;
    EXPECT_TRUE(has(k, loop::StmtKind::MmaSync));
    EXPECT_TRUE(has(k, loop::StmtKind::MatrixLoad));
    Outcome r = run(c, k);
    std::printf(
        "%s %s: rel L2 %.3g; ldmatrix %lld, cp.async %lld, ld.shared %lld, st.shared %lld\n",
        gpu::precision_name(p), sched.c_str(), r.error,
        static_cast<long long>(total(r.banks, "ldmatrix", false)),
        static_cast<long long>(total(r.banks, "cp.async", false)),
        static_cast<long long>(total(r.banks, "ld.shared", false)),
        static_cast<long long>(total(r.banks, "st.shared", false)));
    EXPECT_LE(r.error, tol) << sched;
    EXPECT_GT(r.error, 0.0);  // the compute type rounds: the emulator is not running f32
    EXPECT_GT(total(r.banks, "ldmatrix", false), 0);
    EXPECT_EQ(all_conflicts(r.banks), 0) << sched;
    const bool async = sched.find("cp.async") != std::string::npos;
    EXPECT_EQ(has(k, loop::StmtKind::AsyncCopy), async);
    if (async) {
      EXPECT_GT(total(r.banks, "cp.async", false), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, MmaGemm,
                         ::testing::Values(Precision::FP16, Precision::BF16, Precision::TF32),
                         [](const auto& info) { return gpu::precision_name(info.param); });

TEST(MmaGemm, EpilogueFromRegistersAndBatches) {
  // Bias + ReLU computed from the accumulator registers (the GEMM result never stored), and a
  // batched GEMM; both within the fp16 tolerance.
  Case c = matmul(70, 90, 48);
  Tensor bias = te::make_input("bias", {90}, DType::Float32);
  te::Op relu = te::compute("R", {70, 90}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::max(te::read(c.op->output, i) + te::read(bias, {i[1]}), te::imm(DType::Float32, 0));
  });
  loop::Kernel k =
      schedule::schedule_fused(*c.op, {relu.get()}, config(Precision::FP16), {c.op->output});
  EXPECT_NE(k.stages[0].schedule.find("epilogue from registers"), std::string::npos);
  te::TeProgram p;
  p.inputs = {c.inputs[0], c.inputs[1], bias};
  p.ops = {c.op, relu};
  p.outputs = {relu->output};
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    auto d = random_data(p.inputs[i], static_cast<uint32_t>(21 + i));
    in.push_back(d);
    buffers[p.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = {k};
  emulate::Buffers got = emulate::run_kernels(ks, buffers);
  EXPECT_EQ(got.count(c.op->output->name), 0u);
  EXPECT_LE(rel_l2(*got.at(relu->output->name), *want[0]), 1e-2);

  Tensor a = te::make_input("A", {3, 40, 32}, DType::Float32);
  Tensor b = te::make_input("B", {3, 32, 24}, DType::Float32);
  Case bc;
  bc.inputs = {a, b};
  bc.op = te::reduce("C", {3, 40, 24}, DType::Float32, te::ReduceKind::Sum, {32},
                     [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                       return te::read(a, {i[0], i[1], r[0]}) * te::read(b, {i[0], r[0], i[2]});
                     });
  for (Precision pr : {Precision::FP16, Precision::TF32}) {
    Outcome r = run(bc, schedule::schedule_op(*bc.op, config(pr)));
    EXPECT_LE(r.error, pr == Precision::TF32 ? 1e-3 : 1e-2);
    EXPECT_EQ(all_conflicts(r.banks), 0);
  }
}

TEST(MmaGemm, UnswizzledLayoutHasBankConflicts) {
  // The same tiles laid out row-major: ldmatrix's eight rows fall on the same banks.
  for (Precision p : {Precision::FP16, Precision::TF32}) {
    Case c = matmul(64, 64, 64);
    schedule::detail::GemmParts g;
    ASSERT_TRUE(schedule::detail::match_gemm(*c.op, g));
    schedule::detail::MmaOptions o;
    o.swizzle = false;
    loop::Kernel k = schedule::detail::schedule_gemm_mma(*c.op, g, {}, {}, config(p), o);
    EXPECT_NE(k.stages[0].schedule.find("unswizzled"), std::string::npos);
    Outcome r = run(c, k);
    EXPECT_LE(r.error, p == Precision::TF32 ? 1e-3 : 1e-2);  // still right, only slower
    std::printf("%s unswizzled: %lld ldmatrix conflicts (%lld accesses)\n", gpu::precision_name(p),
                static_cast<long long>(total(r.banks, "ldmatrix", true)),
                static_cast<long long>(total(r.banks, "ldmatrix", false)));
    EXPECT_GT(total(r.banks, "ldmatrix", true), 0);
  }
}

TEST(MmaGemm, DroppedAsyncWaitReadsStaleSharedMemory) {
  // tf32 operands stream by cp.async; without the K loop's wait_group the MMAs read the stages
  // before the copies land. With uninitialized reads allowed the emulator shows it as a wrong
  // result; with the default checks, as a read of never-written shared memory.
  Case c = matmul(64, 64, 128);
  schedule::detail::GemmParts g;
  ASSERT_TRUE(schedule::detail::match_gemm(*c.op, g));
  schedule::ScheduleConfig cfg = config(Precision::TF32);
  loop::Kernel good = schedule::detail::schedule_gemm_mma(*c.op, g, {}, {}, cfg);
  ASSERT_TRUE(has(good, loop::StmtKind::AsyncCopy));
  EXPECT_LE(run(c, good).error, 1e-3);
  schedule::detail::MmaOptions o;
  o.drop_wait = true;
  loop::Kernel bad = schedule::detail::schedule_gemm_mma(*c.op, g, {}, {}, cfg, o);
  emulate::EmulateOptions lax;
  lax.check_uninitialized = false;
  lax.check_races = false;
  const double e = run(c, bad, lax).error;
  std::printf("without the wait: rel L2 %.3g\n", e);
  EXPECT_GT(e, 0.1);
  EXPECT_THROW(run(c, bad), emulate::EmulationError);
}

TEST(MmaGemm, OldTemplateStaysSelectable) {
  Case c = matmul(64, 64, 64);
  schedule::ScheduleConfig cfg = config(Precision::FP16);
  cfg.mma_mainloop = false;
  loop::Kernel k = schedule::schedule_op(*c.op, cfg);
  EXPECT_EQ(k.stages[0].schedule.rfind("gemm_tc", 0), 0u);
  EXPECT_FALSE(has(k, loop::StmtKind::MmaSync));
}

TEST(MmaGemm, PrinterAndEquality) {
  Case c = matmul(32, 32, 32);
  loop::Kernel k = schedule::schedule_op(*c.op, config(Precision::FP16));
  const std::string text = loop::print(k);
  EXPECT_NE(text.find("ldmatrix.x4.trans"), std::string::npos);
  EXPECT_NE(text.find("mma.sync m16n8k16 f16"), std::string::npos);
  loop::Kernel k2 = schedule::schedule_op(*c.op, config(Precision::FP16));
  EXPECT_TRUE(loop::equal(k.body, k2.body));
  loop::Kernel t = schedule::schedule_op(*matmul(32, 32, 32).op, config(Precision::TF32));
  EXPECT_NE(loop::print(t).find("cp.async.cg 16B"), std::string::npos);
  EXPECT_NE(loop::print(t).find("cp.async.wait_group 1"), std::string::npos);
}

TEST(MmaGemm, NvrtcCompilesForSm80AndSm90) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (Precision p : {Precision::FP16, Precision::BF16, Precision::TF32}) {
    Case c = p == Precision::FP16 ? matmul(128, 128, 64, DType::Float16) : matmul(128, 128, 64);
    loop::Kernel k = schedule::schedule_op(*c.op, config(p));
    const std::string source = codegen::emit_cuda(k);
    EXPECT_NE(source.find("mma.sync.aligned.m16n8k"), std::string::npos);
    EXPECT_NE(source.find("ldmatrix.sync.aligned"), std::string::npos);
    for (const char* arch : {"sm_80", "sm_90"}) {
      gpu::CompileOptions o;
      o.arch = arch;
      gpu::CompileResult r = gpu::compile_cuda(source, "gemm_mma.cu", o);
      ASSERT_TRUE(r.ok) << gpu::precision_name(p) << " " << arch << ": " << r.error;
      ASSERT_FALSE(r.kernels.empty());
      std::printf("%s %s: %d registers, spills %lld\n", gpu::precision_name(p), arch,
                  r.kernels[0].registers, static_cast<long long>(r.kernels[0].spill_store_bytes));
      EXPECT_EQ(r.kernels[0].spill_store_bytes, 0);
    }
  }
}

/// A tensor-core tile of the Ampere mainloop whose f32 operands take the f32 cp.async ring.
schedule::ScheduleConfig ring_config(Precision p, gpu::Tile t, int64_t stages) {
  schedule::ScheduleConfig cfg = config(p);
  t.stages = stages;
  t.f32_ring = true;
  cfg.tc_tile = t;
  return cfg;
}

TEST(MmaGemm, F32RingUnderFp16AndBf16MatchesReferenceWithoutBankConflicts) {
  // f32 tensors under fp16/bf16 stream by cp.async into an f32 ring and are converted into the
  // ldmatrix tile at each K step: within the fp16/bf16 tolerance of the float64 interpreter,
  // as close as the conversion through registers, and not one bank conflict in any shared
  // access (the f32 copies, the conversion's reads and writes, ldmatrix).
  struct T {
    gpu::Tile tile;
    int64_t stages;
    Case c;
  };
  int runs = 0;
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    for (const T& t : {T{{64, 64, 32, 2, 2, false, true}, 3, matmul(64, 96, 80)},
                       T{{32, 64, 16, 1, 2, false, true}, 2, matmul(37, 45, 70)},
                       T{{64, 32, 64, 2, 1, false, true}, 4, matmul(128, 64, 256)}}) {
      const loop::Kernel k = schedule::schedule_op(*t.c.op, ring_config(p, t.tile, t.stages));
      const std::string& sched = k.stages[0].schedule;
      EXPECT_NE(sched.find("(A cp.async"), std::string::npos) << sched;
      EXPECT_NE(sched.find("f32, converted at each K step, B cp.async"), std::string::npos)
          << sched;
      EXPECT_NE(sched.find(std::to_string(t.stages) + " stages"), std::string::npos) << sched;
      EXPECT_TRUE(has(k, loop::StmtKind::AsyncCopy));
      EXPECT_TRUE(has(k, loop::StmtKind::MatrixLoad));
      const Outcome r = run(t.c, k);
      // The same tile converting through registers.
      schedule::ScheduleConfig regs = ring_config(p, t.tile, 2);
      regs.tc_tile.f32_ring = false;
      const loop::Kernel kr = schedule::schedule_op(*t.c.op, regs);
      EXPECT_FALSE(has(kr, loop::StmtKind::AsyncCopy));
      const double reg_error = run(t.c, kr).error;
      std::printf(
          "%s %s: rel L2 %.3g (through registers %.3g); ldmatrix %lld, cp.async %lld, "
          "ld.shared %lld, st.shared %lld, %lld shared bytes\n",
          gpu::precision_name(p), sched.c_str(), r.error, reg_error,
          static_cast<long long>(total(r.banks, "ldmatrix", false)),
          static_cast<long long>(total(r.banks, "cp.async", false)),
          static_cast<long long>(total(r.banks, "ld.shared", false)),
          static_cast<long long>(total(r.banks, "st.shared", false)),
          static_cast<long long>(k.launch.dynamic_shared_bytes));
      EXPECT_LE(r.error, 1e-2) << sched;
      EXPECT_GT(r.error, 0.0);
      EXPECT_LE(r.error, 1.5 * reg_error + 1e-6) << sched;
      EXPECT_GT(total(r.banks, "cp.async", false), 0);
      EXPECT_GT(total(r.banks, "ld.shared", false), 0);  // the conversion's reads of the ring
      EXPECT_EQ(all_conflicts(r.banks), 0) << sched;
      // The ring holds f32: twice the bytes of a compute-type ring, plus one converted stage.
      const int64_t elems = t.tile.bm * t.tile.bk + t.tile.bk * t.tile.bn;
      EXPECT_EQ(k.launch.dynamic_shared_bytes, t.stages * elems * 4 + elems * 2);
      ++runs;
    }
  }
  EXPECT_EQ(runs, 6);
}

TEST(MmaGemm, F32RingCompilesWithoutSpillsAndCopiesAsynchronously) {
  // NVRTC (sm_80): 128x128x64 from f32 tensors, tile 64x64x32 at 3 stages, fp16 and bf16: no
  // spills and LDGSTS in the SASS (the conversion through registers has none).
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    Case c = matmul(128, 128, 64);
    const gpu::Tile t{64, 64, 32, 2, 2, false, true};
    schedule::ScheduleConfig ring = ring_config(p, t, 3), regs = ring_config(p, t, 2);
    regs.tc_tile.f32_ring = false;
    int reg_count[2] = {0, 0};
    for (int w = 0; w < 2; ++w) {
      const loop::Kernel k = schedule::schedule_op(*c.op, w == 0 ? ring : regs);
      gpu::CompileOptions o;
      o.arch = "sm_80";
      o.use_cache = false;
      const gpu::CompileResult r = gpu::compile_cuda(codegen::emit_cuda(k), "gemm_mma.cu", o);
      ASSERT_TRUE(r.ok) << r.error;
      ASSERT_EQ(r.kernels.size(), 1u);
      EXPECT_EQ(r.kernels[0].spill_store_bytes + r.kernels[0].spill_load_bytes, 0);
      reg_count[w] = r.kernels[0].registers;
      const gpu::Disassembly d = gpu::disassemble(r.cubin, "gemm_mma.cu");
      ASSERT_TRUE(d.ok) << d.error;
      std::printf(
          "%s sm_80 %s: %d registers, %lld spill bytes, %lld LDGSTS, %lld LDSM, %lld HMMA\n",
          gpu::precision_name(p), k.stages[0].schedule.c_str(), r.kernels[0].registers,
          static_cast<long long>(r.kernels[0].spill_store_bytes),
          static_cast<long long>(d.listing.mix.async_copy),
          static_cast<long long>(d.listing.mix.ldsm), static_cast<long long>(d.listing.mix.mma));
      if (w == 0) {
        EXPECT_GT(d.listing.mix.async_copy, 0);
      } else {
        EXPECT_EQ(d.listing.mix.async_copy, 0);
      }
      EXPECT_GT(d.listing.mix.ldsm, 0);
      EXPECT_GT(d.listing.mix.mma, 0);
    }
    std::printf("%s: %d registers with the f32 ring, %d converting through registers\n",
                gpu::precision_name(p), reg_count[0], reg_count[1]);
  }
}

TEST(MmaGemm, SampleModelsUseTheMainloopAndVerify) {
  // Every tensor-core stage of the sample MMoE and BERT under souffle at fp16 (and MMoE
  // at bf16 and tf32) runs the new mainloop; the kernels verify against the data sets and not
  // one shared access of their stages has a bank conflict.
  struct M {
    const char* name;
    Precision p;
  };
  for (const M& mm : {M{"mmoe", Precision::FP16}, M{"mmoe", Precision::BF16},
                      M{"mmoe", Precision::TF32}, M{"bert", Precision::FP16}}) {
    const std::string dir = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + mm.name;
    LoadedModel m = load_model(dir + "/model.onnx");
    std::vector<TestDataSet> sets = read_test_data(dir);
    ASSERT_FALSE(sets.empty());
    plan::PlanOptions po;
    po.gpu = gpu::gpu_spec("a100");
    po.precision = mm.p;
    po.pricer = schedule::make_pricer(po.gpu, po.precision);
    KernelVerifyReport rep = verify_kernels(m, sets, pipeline_options(po), VerifyOptions{});
    ASSERT_TRUE(rep.ok()) << mm.name << ": " << rep.error;
    int mma = 0, wmma = 0, attention = 0;
    std::map<std::string, std::string> mainloop;  // "kernel/stage" of the mainloop stages
    std::set<std::string> attention_mma;          // "kernel/stage" of attention on tensor cores
    for (const loop::Kernel& k : rep.built.kernels)
      for (const loop::StageInfo& st : k.stages) {
        if (st.schedule.rfind("gemm_mma", 0) == 0) {
          ++mma;
          mainloop[k.name + "/" + st.name] = st.schedule;
        }
        wmma += st.schedule.rfind("gemm_tc", 0) == 0;
        if (st.schedule.rfind("fused attention", 0) == 0) {
          ++attention;
          // At fp16 and bf16 the attention's two matmuls are on tensor cores too.
          EXPECT_NE(st.schedule.find("on tensor cores"), std::string::npos) << st.schedule;
          attention_mma.insert(k.name + "/" + st.name);
        }
      }
    EXPECT_GT(mma, 0) << mm.name;
    EXPECT_EQ(wmma, 0) << mm.name;
    if (std::string(mm.name) == "bert") {
      EXPECT_GT(attention, 0);
    }
    // Bank accounting over the same kernels and inputs.
    emulate::Buffers in;
    ASSERT_EQ(m.program.inputs.size(), sets[0].inputs.size());
    for (size_t i = 0; i < m.program.inputs.size(); ++i)
      in[m.program.inputs[i]->name] = std::make_shared<TensorData>(*sets[0].inputs[i]);
    emulate::BankReport banks;
    emulate::EmulateOptions o;
    o.bank_conflicts = &banks;
    emulate::run_kernels(rep.built, in, o);
    int64_t conflicts = 0, ldsm = 0, attention_ldsm = 0;
    for (const auto& [stage, kinds] : banks) {
      if (attention_mma.count(stage)) {
        // The fused attention's fragments come from padded tiles: no ldmatrix conflicts (its
        // element-wise fills and the score tile's stores are no part of a mainloop).
        for (const auto& [kind, st] : kinds) {
          if (kind.rfind("ldmatrix", 0) != 0) continue;
          attention_ldsm += st.accesses;
          EXPECT_EQ(st.conflicts, 0) << mm.name << " " << stage << " " << kind;
        }
        continue;
      }
      if (!mainloop.count(stage)) continue;
      // A cp.async whose source the merge keeps in shared memory becomes element stores into
      // the operand tile (merge.cpp), which are no part of the template's mainloop: left out.
      const std::string& sched = mainloop[stage];
      for (const auto& [kind, st] : kinds) {
        const bool rebased = kind.rfind("st.shared ", 0) == 0 &&
                             ((kind.size() > 2 && kind.compare(kind.size() - 2, 2, "_a") == 0 &&
                               sched.find("(A cp.async") != std::string::npos) ||
                              (kind.size() > 2 && kind.compare(kind.size() - 2, 2, "_b") == 0 &&
                               sched.find("B cp.async") != std::string::npos));
        if (rebased) continue;
        conflicts += st.conflicts;
        ldsm += kind.rfind("ldmatrix", 0) == 0 ? st.accesses : 0;
        EXPECT_EQ(st.conflicts, 0)
            << mm.name << " " << stage << " " << kind << " (" << sched << ")";
      }
    }
    std::printf(
        "%s %s: %d mainloop stages, %lld ldmatrix, %lld bank conflicts in them; %d fused "
        "attention stages, %lld ldmatrix\n",
        mm.name, gpu::precision_name(mm.p), mma, static_cast<long long>(ldsm),
        static_cast<long long>(conflicts), attention, static_cast<long long>(attention_ldsm));
    EXPECT_GT(ldsm, 0);
    if (attention > 0) {
      EXPECT_GT(attention_ldsm, 0);
    }
  }
}

}  // namespace
}  // namespace souffle
