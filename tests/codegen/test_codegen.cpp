#include "core/codegen/codegen_cuda.h"

#include <gtest/gtest.h>

#include "core/codegen/source_map.h"
#include "core/gpu/nvrtc.h"
#include "core/loop/verify.h"
#include "tests/codegen/kernels.h"

namespace souffle::codegen {
namespace {

using namespace souffle::codegen::testing;

// ---- golden text: what a person reads when mapping a line back to the model ----

const char* kElementwise = R"CUDA(// kernel `exp_mul`: grid 4 x block 256, dynamic shared 0 B
// params: x (input f32[1000]), block_0_Mul_output_0 (output f32[1000])
extern "C" __global__ void __launch_bounds__(256) exp_mul(
    const float* __restrict__ x,
    float* __restrict__ block_0_Mul_output_0) {
  const long long bx = (long long)blockIdx.x;
  const long long tx = (long long)threadIdx.x;
  // stage 0 `exp_mul`: injective (grid 4, block 256)
  //   Mul_1 <- /block.0/Mul (Mul)
  {
    const long long i = bx * 256 + tx;
    if (i < 1000) {
      block_0_Mul_output_0[i] = expf(x[i]) * 2.0f;
    }
  }
}

)CUDA";

const char* kRowMax = R"CUDA(static __device__ __forceinline__ float souffle_max(float a, float b) {
  if (a != a || b != b) return a + b;
  return a < b ? b : a;
}

// kernel `row_max`: grid 64 x block 32, dynamic shared 0 B
// params: x (input f32[64, 100]), row_max (output f32[64])
extern "C" __global__ void __launch_bounds__(32) row_max(
    const float* __restrict__ x,
    float* __restrict__ row_max) {
  const long long bx = (long long)blockIdx.x;
  const long long tx = (long long)threadIdx.x;
  // stage 0 `row_max`: reduction, shared tree over 32 threads (grid 64, block 32)
  //   ReduceMax_2 <- /head/ReduceMax (ReduceMax)
  {
    __shared__ float red[32];
    float acc[1];
    acc[0] = __int_as_float((int)0xff800000u);
    for (long long kk = 0; kk < 4; ++kk) {
      const long long c = kk * 32 + tx;
      if (c < 100) {
        acc[0] = souffle_max(acc[0], x[bx * 100 + c]);
      }
    }
    red[tx] = acc[0];
    __syncthreads();
    #pragma unroll
    for (long long s = 0; s < 5; ++s) {
      const long long w = 16 >> s;
      if (tx < w) {
        red[tx] = souffle_max(red[tx], red[tx + w]);
      }
      __syncthreads();
    }
    if (tx == 0) {
      row_max[bx] = red[0];
    }
  }
}

)CUDA";

const char* kTwoStage = R"CUDA(#ifndef _CG_LIMIT_INCLUDED_DEPENDENCIES
#define _CG_LIMIT_INCLUDED_DEPENDENCIES
#endif
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// kernel `fused_add_mul`: grid 4 x block 128, dynamic shared 0 B, cooperative launch
// params: x (input f32[2, 256]), t (output f32[2, 256]), y (output f32[2, 256]), total (output f32[])
extern "C" __global__ void __launch_bounds__(128, 1) fused_add_mul(
    const float* __restrict__ x,
    float* __restrict__ t,
    float* __restrict__ y,
    float* __restrict__ total) {
  cg::grid_group grid = cg::this_grid();
  const long long bx = (long long)blockIdx.x;
  const long long tx = (long long)threadIdx.x;
  // stage 0 `stage0_add`: injective (grid 4, block 128)
  //   Add_0 <- Add_0 (Add)
  {
    const long long i = bx * 128 + tx;
    t[i / 256 * 256 + i % 256] = x[i / 256 * 256 + i % 256] + 1.0f;
  }
  grid.sync();
  // stage 1 `stage1_mul`: injective (grid 4, block 128)
  //   Mul_1 <- Mul_1 (Mul)
  {
    const long long i_1 = bx * 128 + tx;
    const long long n = (i_1 + 1) % 512;
    y[i_1 / 256 * 256 + i_1 % 256] = t[n / 256 * 256 + n % 256] * t[i_1 / 256 * 256 + i_1 % 256];
    atomicAdd(&total[0], t[n / 256 * 256 + n % 256] * t[i_1 / 256 * 256 + i_1 % 256]);
  }
}

)CUDA";

// The same kernel with each stage in a function of its own (what kernels of many stages get).
const char* kTwoStageOutlined = R"CUDA(#ifndef _CG_LIMIT_INCLUDED_DEPENDENCIES
#define _CG_LIMIT_INCLUDED_DEPENDENCIES
#endif
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// `fused_add_mul_stage0`: a stage of kernel `fused_add_mul`, called by each of its threads (compiled and register-allocated on its own)
// params: x (input f32[2, 256]), t (output f32[2, 256])
static __device__ __noinline__ void fused_add_mul_stage0(
    const float* __restrict__ x,
    float* __restrict__ t) {
  const long long bx = (long long)blockIdx.x;
  const long long tx = (long long)threadIdx.x;
  // stage 0 `stage0_add`: injective (grid 4, block 128)
  //   Add_0 <- Add_0 (Add)
  {
    const long long i = bx * 128 + tx;
    t[i / 256 * 256 + i % 256] = x[i / 256 * 256 + i % 256] + 1.0f;
  }
}

// `fused_add_mul_stage1`: a stage of kernel `fused_add_mul`, called by each of its threads (compiled and register-allocated on its own)
// params: t (input f32[2, 256]), y (output f32[2, 256]), total (output f32[])
static __device__ __noinline__ void fused_add_mul_stage1(
    const float* __restrict__ t,
    float* __restrict__ y,
    float* __restrict__ total) {
  const long long bx = (long long)blockIdx.x;
  const long long tx = (long long)threadIdx.x;
  // stage 1 `stage1_mul`: injective (grid 4, block 128)
  //   Mul_1 <- Mul_1 (Mul)
  {
    const long long i = bx * 128 + tx;
    const long long n = (i + 1) % 512;
    y[i / 256 * 256 + i % 256] = t[n / 256 * 256 + n % 256] * t[i / 256 * 256 + i % 256];
    atomicAdd(&total[0], t[n / 256 * 256 + n % 256] * t[i / 256 * 256 + i % 256]);
  }
}

// kernel `fused_add_mul`: grid 4 x block 128, dynamic shared 0 B, cooperative launch
// params: x (input f32[2, 256]), t (output f32[2, 256]), y (output f32[2, 256]), total (output f32[])
extern "C" __global__ void __launch_bounds__(128, 1) fused_add_mul(
    const float* __restrict__ x,
    float* __restrict__ t,
    float* __restrict__ y,
    float* __restrict__ total) {
  cg::grid_group grid = cg::this_grid();
  fused_add_mul_stage0(x, t);  // runs stage 0 `stage0_add`
  grid.sync();
  fused_add_mul_stage1(t, y, total);  // runs stage 1 `stage1_mul`
}

)CUDA";

const char* kWarpSum = R"CUDA(// kernel `row_sum`: grid 2 x block 64, dynamic shared 0 B
// params: x (input f32[4, 32]), row_sum (output f32[4])
extern "C" __global__ void __launch_bounds__(64) row_sum(
    const float* __restrict__ x,
    float* __restrict__ row_sum) {
  const long long bx = (long long)blockIdx.x;
  const long long tx = (long long)threadIdx.x;
  // stage 0 `row_sum`: reduction, warp shuffles, one warp per row (grid 2, block 64)
  //   ReduceSum_3 <- /head/ReduceSum (ReduceSum)
  {
    const long long row = bx * 2 + tx / 32;
    const long long lane = tx % 32;
    float acc[1];
    float shfl[1];
    acc[0] = x[row * 32 + lane];
    shfl[0] = __shfl_xor_sync(0xffffffffu, acc[0], 16);
    acc[0] = acc[0] + shfl[0];
    shfl[0] = __shfl_xor_sync(0xffffffffu, acc[0], 8);
    acc[0] = acc[0] + shfl[0];
    shfl[0] = __shfl_xor_sync(0xffffffffu, acc[0], 4);
    acc[0] = acc[0] + shfl[0];
    shfl[0] = __shfl_xor_sync(0xffffffffu, acc[0], 2);
    acc[0] = acc[0] + shfl[0];
    shfl[0] = __shfl_xor_sync(0xffffffffu, acc[0], 1);
    acc[0] = acc[0] + shfl[0];
    if (lane == 0) {
      row_sum[row] = acc[0];
    }
  }
}

)CUDA";

const char* kVectorAxpb = R"CUDA(// kernel `axpb`: grid 1 x block 32, dynamic shared 0 B
// params: x (input f32[2, 64]), s (input f32[2]), b (input f32[64]), y (output f32[2, 64])
extern "C" __global__ void __launch_bounds__(32) axpb(
    const float* __restrict__ x,
    const float* __restrict__ s,
    const float* __restrict__ b,
    float* __restrict__ y) {
  const long long tx = (long long)threadIdx.x;
  // stage 0 `axpb`: injective grid-stride, 4-wide vectors (grid 1, block 32)
  //   Add_4 <- /head/Add (Add)
  {
    const long long r = tx / 16;
    const long long q = tx % 16;
    __align__(16) float x_vec[4];
    __align__(16) float b_vec[4];
    __align__(16) float y_vec[4];
    *reinterpret_cast<float4*>(&x_vec[0]) = *reinterpret_cast<const float4*>(&x[r * 64 + q * 4]);
    *reinterpret_cast<float4*>(&b_vec[0]) = *reinterpret_cast<const float4*>(&b[q * 4]);
    #pragma unroll
    for (long long v_2 = 0; v_2 < 4; ++v_2) {
      y_vec[v_2] = x_vec[v_2] * s[r] + b_vec[v_2];
    }
    *reinterpret_cast<float4*>(&y[r * 64 + q * 4]) = *reinterpret_cast<const float4*>(&y_vec[0]);
  }
}

)CUDA";

void expect_compiles(const std::string& source, const std::string& name) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileOptions o;
    o.arch = arch;
    gpu::CompileResult r = gpu::compile_cuda(source, name + ".cu", o);
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.error;
    EXPECT_EQ(r.log.find("warning"), std::string::npos) << r.log;
    EXPECT_FALSE(r.cubin.empty());
    EXPECT_FALSE(r.kernels.empty());
  }
}

TEST(CodegenCuda, ElementwiseGolden) {
  loop::Kernel k = elementwise_kernel();
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_EQ(src, kElementwise);
  expect_compiles(src, "exp_mul");
}

TEST(CodegenCuda, ReductionGolden) {
  loop::Kernel k = row_max_kernel();
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_EQ(src, kRowMax);
  expect_compiles(src, "row_max");
}

TEST(CodegenCuda, TwoStageGridBarrierGolden) {
  loop::Kernel k = two_stage_kernel();
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_EQ(src, kTwoStage);
  expect_compiles(src, "fused_add_mul");
}

TEST(CodegenCuda, OutlinedStagesGolden) {
  loop::Kernel k = two_stage_kernel();
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  const std::string src = emit_cuda(k, o);
  EXPECT_EQ(src, kTwoStageOutlined);
  expect_compiles(src, "fused_add_mul");
  // Each stage's lines still map back to it, inside its function, and so does its call.
  const SourceMap m = emit_cuda_mapped(k, o).map;
  ASSERT_EQ(m.spans.size(), 4u);
  EXPECT_EQ(m.spans[0].stage, 0);
  EXPECT_EQ(m.spans[1].stage, 1);
  EXPECT_EQ(m.spans[1].nodes, std::vector<std::string>{"Mul_1"});
  EXPECT_EQ(m.spans[2].stage, 0);
  EXPECT_EQ(m.spans[2].first_line, m.spans[2].last_line);
  EXPECT_EQ(m.spans[3].stage, 1);
  // Auto keeps a kernel of few stages inline, as it was.
  EXPECT_EQ(emit_cuda(k), kTwoStage);
  // A register cap replaces the launch bounds (CUDA takes one of the two).
  o.max_registers = 40;
  const std::string capped = emit_cuda(k, o);
  EXPECT_NE(capped.find("void __maxnreg__(40) fused_add_mul("), std::string::npos) << capped;
  EXPECT_EQ(capped.find("__launch_bounds__"), std::string::npos);
  expect_compiles(capped, "fused_add_mul");
}

TEST(CodegenCuda, OutlinedStagesThatRunTheSameCodeShareOneFunction) {
  loop::Kernel k = loop::plan_shared_arena(repeated_stage_kernel());
  loop::verify(k);
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  const std::string src = emit_cuda(k, o);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = src.find(what); p != std::string::npos; p = src.find(what, p + 1)) ++n;
    return n;
  };
  // Six stages, four functions: "a * 2" (stages 0, 1 and 3), "a + 1", the copy to shared
  // memory, and the read back from it. Stages 4 and 5 use the shared buffer that lives across
  // them through a pointer, so they are outlined too.
  EXPECT_EQ(count("static __device__ __noinline__"), 4u) << src;
  EXPECT_EQ(count("// runs stage "), 6u) << src;
  EXPECT_NE(src.find("repeated_stage0(x, t1);  // runs stage 0 `t1`"), std::string::npos) << src;
  EXPECT_NE(src.find("repeated_stage0(t1, t2);  // runs stage 1 `t2`"), std::string::npos);
  EXPECT_NE(src.find("repeated_stage2(t2, t3);  // runs stage 2 `t3`"), std::string::npos);
  EXPECT_NE(src.find("repeated_stage0(t3, t4);  // runs stage 3 `t4`"), std::string::npos);
  EXPECT_NE(src.find("repeated_stage4(t4, s);  // runs stage 4 `to_smem`"), std::string::npos);
  EXPECT_NE(src.find("repeated_stage5(s, y);  // runs stage 5 `y`"), std::string::npos);
  EXPECT_EQ(src.find("repeated_stage1("), std::string::npos);
  expect_compiles(src, "repeated");
  // A function's lines map to the stage it was emitted for; every stage, one sharing another's
  // function too, is found at its call.
  const SourceMap m = emit_cuda_mapped(k, o).map;
  ASSERT_EQ(m.spans.size(), 10u);
  EXPECT_EQ(m.spans[0].stage, 0);
  EXPECT_EQ(m.spans[1].stage, 2);
  std::vector<int> called;
  for (size_t i = 4; i < m.spans.size(); ++i) called.push_back(m.spans[i].stage);
  EXPECT_EQ(called, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(m.spans_of_node("t4").size(), 1u);  // stage 3 runs stage 0's function
}

TEST(CodegenCuda, StagesReadingOtherRowsOfATensorShareOneFunction) {
  loop::Kernel k = row_steps_kernel();
  loop::verify(k);
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;  // every call written out (test_roll rolls them)
  const std::string src = emit_cuda(k, o);
  // The row each step reads is passed as a pointer into x; y0's predecessor is h0.
  size_t functions = 0;
  for (size_t p = src.find("static __device__ __noinline__"); p != std::string::npos;
       p = src.find("static __device__ __noinline__", p + 1))
    ++functions;
  EXPECT_EQ(functions, 1u) << src;
  EXPECT_NE(src.find("steps_stage0(x, h0, y0);"), std::string::npos) << src;
  EXPECT_NE(src.find("steps_stage0(x + 128, y0, y1);"), std::string::npos) << src;
  EXPECT_NE(src.find("steps_stage0(x + 384, y2, y3);"), std::string::npos) << src;
  EXPECT_NE(src.find("// params: x (input f32[1, 128])"), std::string::npos) << src;
  expect_compiles(src, "steps");
}

TEST(CodegenCuda, WarpShuffleReductionGolden) {
  loop::Kernel k = warp_sum_kernel();
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_EQ(src, kWarpSum);
  expect_compiles(src, "row_sum");
  // Plain C runs threads one after another: it has no lanes to exchange with.
  CodeGenC c;
  EXPECT_THROW(c.add_kernel(k), InternalError);
}

TEST(CodegenCuda, VectorizedInjectiveGolden) {
  loop::Kernel k = vector_axpb_kernel();
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_EQ(src, kVectorAxpb);
  expect_compiles(src, "axpb");
}

TEST(CodegenCuda, HalfPrecisionUsesHalfTypesAndFloatMath) {
  const std::string src = emit_cuda(elementwise_kernel(DType::Float16));
  EXPECT_NE(src.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_NE(src.find("const __half* __restrict__ x"), std::string::npos);
  EXPECT_NE(src.find("__float2half(expf(__half2float(x[i])))"), std::string::npos) << src;
  expect_compiles(src, "exp_mul_f16");
  const std::string bf = emit_cuda(elementwise_kernel(DType::BFloat16));
  EXPECT_NE(bf.find("__nv_bfloat16"), std::string::npos);
  expect_compiles(bf, "exp_mul_bf16");
}

TEST(CodegenCuda, KernelSetSharesOnePreambleAndNamesUniquely) {
  loop::KernelSet ks;
  ks.kernels = {row_max_kernel(), row_max_kernel(), two_stage_kernel()};
  const std::string src = emit_cuda(ks);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = src.find(what); p != std::string::npos; p = src.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("float souffle_max(float a, float b)"), 1u);
  EXPECT_EQ(count("#include <cooperative_groups.h>"), 1u);
  EXPECT_EQ(cuda_kernel_names(ks),
            (std::vector<std::string>{"row_max", "row_max_1", "fused_add_mul"}));
  EXPECT_NE(src.find("void __launch_bounds__(32) row_max_1("), std::string::npos);
  expect_compiles(src, "set");
}

TEST(CodegenCuda, ParamsAreInputsThenOutputs) {
  auto ps = kernel_params(two_stage_kernel());
  ASSERT_EQ(ps.size(), 4u);
  EXPECT_EQ(ps[0].name, "x");
  EXPECT_EQ(ps[0].role, KernelParam::Role::Input);
  EXPECT_EQ(ps[3].name, "total");
  EXPECT_EQ(ps[3].role, KernelParam::Role::Output);
}

TEST(CodegenCuda, IdentifiersFromOnnxNames) {
  EXPECT_EQ(c_identifier("/encoder/layer.0/Add_output_0"), "encoder_layer_0_Add_output_0");
  EXPECT_EQ(c_identifier("123"), "t_123");
  EXPECT_EQ(c_identifier("a__b"), "a_b");
  std::set<std::string> taken;
  EXPECT_EQ(unique_function_name("float", taken), "float_1");
  EXPECT_EQ(unique_function_name("k", taken), "k");
  EXPECT_EQ(unique_function_name("k", taken), "k_1");
}

TEST(CodegenCuda, ExpressionsOfEveryKindCompile) {
  // One injective kernel whose body touches every expression kind and the helpers.
  te::Tensor x = te::make_input("x", {64}, DType::Float32);
  te::Tensor xi = te::make_input("xi", {64}, DType::Int64);
  te::Tensor y = te::make_compute_tensor("y", {64}, DType::Float32);
  te::Tensor yi = te::make_compute_tensor("yi", {64}, DType::Int32);
  te::Tensor yb = te::make_compute_tensor("yb", {64}, DType::Bool);
  Expr bx = te::var("bx"), tx = te::var("tx");
  Expr v = te::read(x, {tx}), n = te::read(xi, {tx});
  Expr f = te::sigmoid(v) + te::erf(v) * te::tanh(v) - te::call(te::CallFn::Rsqrt, {te::abs(v)});
  f = f + te::call(te::CallFn::Sign, {v}) + te::call(te::CallFn::Round, {v}) +
      te::pow(v, te::float_imm(2.0)) + te::floormod(v, te::float_imm(3.0)) +
      te::floordiv(v, te::float_imm(3.0)) + te::min(v, te::float_imm(1.0));
  f = te::select(te::call(te::CallFn::IsNaN, {v}), te::float_imm(0.0), f);
  f = f + te::cast(DType::Float32,
                   te::floordiv(n, te::int_imm(-3)) + te::floormod(n, ic(5)) + te::max(n, ic(2)));
  Expr i = te::cast(DType::Int32, te::binary(te::BinaryOp::BitAnd, n, ic(7)) +
                                      te::binary(te::BinaryOp::Shl, n, ic(2)));
  Expr b = te::logical_or(te::logical_and(te::lt(v, te::float_imm(0.5)), te::ne(n, ic(3))),
                          te::logical_not(te::call(te::CallFn::IsPosInf, {v})));
  loop::Kernel k;
  k.name = "all_kinds";
  k.inputs = {x, xi};
  k.outputs = {y, yi, yb};
  k.launch.block_x = 64;
  k.body =
      bind_threads(bx, 1, tx, 64,
                   loop::seq({loop::store(y, {tx}, f), loop::store(yi, {tx}, i),
                              loop::store(yb, {tx}, b), loop::comment("a trailing backslash \\")}));
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_NE(src.find("souffle_floordiv(xi[tx], -3ll)"), std::string::npos) << src;
  EXPECT_NE(src.find("souffle_sigmoid"), std::string::npos);
  expect_compiles(src, "all_kinds");
}

TEST(CodegenCuda, FloorDivisionOfAProvenNonNegativePrintsAsC) {
  // The bounds engine, not the sign of the dividend alone: floormod(n, 8) is in [0, 8) whatever
  // n is, so floordiv(floormod(n, 8) * 8, 4) needs no helper; floordiv(n, 4) of data still does.
  te::Tensor xi = te::make_input("xi", {64}, DType::Int64);
  te::Tensor yi = te::make_compute_tensor("yi", {64}, DType::Int64);
  Expr bx = te::var("bx"), tx = te::var("tx");
  Expr n = te::read(xi, {tx});
  Expr v = te::floordiv(te::floormod(n, ic(8)) * ic(8), ic(4)) + te::floordiv(n, ic(4));
  loop::Kernel k;
  k.name = "proven_sign";
  k.inputs = {xi};
  k.outputs = {yi};
  k.launch.block_x = 64;
  k.body = bind_threads(bx, 1, tx, 64, loop::store(yi, {tx}, v));
  loop::verify(k);
  const std::string src = emit_cuda(k);
  EXPECT_NE(src.find("souffle_floormod(xi[tx], 8ll) * 8 / 4"), std::string::npos) << src;
  EXPECT_NE(src.find("souffle_floordiv(xi[tx], 4ll)"), std::string::npos) << src;
}

}  // namespace
}  // namespace souffle::codegen

namespace souffle::codegen {
namespace {

TEST(CodegenCuda, FlagReleaseAndWaitCompile) {
  loop::Kernel k = testing::flag_stage_kernel();
  loop::verify(k);
  const std::string src = emit_cuda(k);
  // The counters are a parameter, the epoch an argument after the buffers; no grid group.
  EXPECT_NE(src.find("    int* __restrict__ t_ready,\n    long long souffle_flag_epoch) {\n"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("cooperative_groups"), std::string::npos) << src;
  // Release: block barrier, then thread 0 fences and counts.
  EXPECT_NE(src.find("    __syncthreads();\n"
                     "    if (threadIdx.x == 0) {\n"
                     "      __threadfence();\n"
                     "      atomicAdd(&t_ready[bx], 1);\n"
                     "    }\n"),
            std::string::npos)
      << src;
  // Wait: thread 0 spins with acquire loads up to epoch * releases per run, fences, barrier.
  EXPECT_NE(src.find("const long long flag_target = souffle_flag_epoch * 1LL;"), std::string::npos)
      << src;
  EXPECT_NE(src.find("while (souffle_ld_acquire(&t_ready[flag_tile]) < flag_target) {}"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("ld.acquire.gpu.b32"), std::string::npos) << src;
  EXPECT_NE(src.find("      __threadfence();\n    }\n    __syncthreads();\n"), std::string::npos)
      << src;
  expect_compiles(src, "fused_add_mul_flags");
  // Stages that release or wait on flags themselves stay inline (stage functions do not take
  // the epoch); here both do.
  CudaEmitOptions always;
  always.outlining = StageOutlining::Always;
  EXPECT_EQ(emit_cuda(k, always), src);
  // Plain C runs blocks one after another: a block waiting on a later one would never return.
  CodeGenC c;
  EXPECT_THROW(c.add_kernel(k), InternalError);
}

}  // namespace
}  // namespace souffle::codegen
