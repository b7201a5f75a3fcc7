// The GEMM benchmark kernel the runner's calibration and `compile --tune measure` time: the
// project's own templates, emulated against the interpreter at small sizes, and compiled by NVRTC
// at the calibration's size.
#include <gtest/gtest.h>

#include "../schedule/schedule_test_util.h"
#include "core/gpu/nvrtc.h"
#include "core/session/gemm_bench.h"
#include "core/support/error.h"

namespace souffle {
namespace {

/// Relative L2 error of `b`'s kernel in the emulator against the interpreter on random A and B.
double emulated_error(const GemmBench& b) {
  te::TeProgram p = schedule_test::program_of({b.op});
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    auto d = schedule_test::random_data(p.inputs[i], static_cast<uint32_t>(3 + i));
    in.push_back(d);
    buffers[p.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = {b.kernel};
  emulate::Buffers got = emulate::run_kernels(ks, buffers);
  return schedule_test::rel_l2(*got.at("C"), *want[0]);
}

schedule::GemmProblem problem(int64_t batch, int64_t m, int64_t n, int64_t k) {
  schedule::GemmProblem p;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

TEST(GemmBench, TunedSimtKernelMatchesInterpreter) {
  // Edge tiles on both axes and a partial K step, with the tuner's tile for an A100.
  GemmBench b =
      make_gemm_bench(problem(1, 70, 50, 40), gpu::gpu_spec("a100"), gpu::Precision::FP32);
  EXPECT_FALSE(b.tile.tensor_core);
  EXPECT_NE(b.why.find("best of"), std::string::npos) << b.why;
  EXPECT_LT(emulated_error(b), 1e-5);
  EXPECT_DOUBLE_EQ(b.flops(), 2.0 * 70 * 50 * 40);
}

TEST(GemmBench, BatchedAndGivenTile) {
  gpu::Tile t{16, 16, 8, 2, 2, true};
  GemmBench b =
      make_gemm_bench(problem(3, 33, 20, 17), gpu::gpu_spec("h100"), gpu::Precision::FP32, &t);
  EXPECT_EQ(b.why, "given");
  EXPECT_EQ(b.kernel.launch.block_x, 64);
  EXPECT_LT(emulated_error(b), 1e-5);
}

TEST(GemmBench, TensorCoreKernelMatchesInterpreter) {
  GemmBench b =
      make_gemm_bench(problem(1, 48, 64, 80), gpu::gpu_spec("h100"), gpu::Precision::FP16);
  EXPECT_TRUE(b.tile.tensor_core);
  EXPECT_LT(emulated_error(b), 5e-3);  // fp16 operands, fp32 accumulation
}

TEST(GemmBench, RefusesATileOfTheOtherTemplate) {
  gpu::Tile simt{64, 64, 16, 4, 4, false};
  try {
    make_gemm_bench(problem(1, 64, 64, 64), gpu::gpu_spec("h100"), gpu::Precision::FP16, &simt);
    FAIL() << "a SIMT tile ran the fp16 template";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("SIMT tile cannot run the fp16 GEMM"), std::string::npos)
        << e.what();
  }
}

TEST(GemmBench, CalibrationSizeCompilesForHopper) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const int64_t n = kCalibrationGemmSize;
  for (gpu::Precision p : {gpu::Precision::FP32, gpu::Precision::FP16}) {
    GemmBench b = make_gemm_bench(problem(1, n, n, n), gpu::gpu_spec("h200"), p);
    ASSERT_EQ(b.params.size(), 3u);
    EXPECT_EQ(b.params[0].tensor->name, "A");
    EXPECT_EQ(b.params[1].tensor->name, "B");
    EXPECT_EQ(b.params[2].tensor->name, "C");
    EXPECT_EQ(b.params[2].role, codegen::KernelParam::Role::Output);
    EXPECT_FALSE(b.kernel.launch.cooperative);
    EXPECT_DOUBLE_EQ(gemm_bench_expected(b, 0.5, 0.25), n * 0.125);
    gpu::CompileOptions o;
    o.arch = "sm_90";
    gpu::CompileResult r = gpu::compile_cuda(b.cuda, "gemm_bench.cu", o);
    ASSERT_TRUE(r.ok) << gpu::precision_name(p) << ": " << r.error.substr(0, 4000);
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].name, b.name);
    EXPECT_EQ(r.kernels[0].spill_store_bytes, 0) << gpu::precision_name(p) << " " << b.why;
  }
}

}  // namespace
}  // namespace souffle
