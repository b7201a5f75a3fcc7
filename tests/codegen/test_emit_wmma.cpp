// Golden text of an emitted tensor-core kernel: the CUDA C of a small fp16 GEMM as the WMMA
// template schedules it (fragment declarations, load/mma/store calls, the shared tiles and the
// store from the accumulator tile), and NVRTC compiling that text.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/schedule/schedule.h"
#include "core/schedule/tune.h"
#include "core/te/builder.h"

namespace souffle::codegen {
namespace {

/// C[32, 32] = A[32, 32] x B[32, 32] under fp16, one warp of 2x2 fragments, BK 16.
loop::Kernel wmma_gemm() {
  te::Tensor a = te::make_input("A", {32, 32}, DType::Float32);
  te::Tensor b = te::make_input("B", {32, 32}, DType::Float32);
  te::Op c = te::reduce("C", {32, 32}, DType::Float32, te::ReduceKind::Sum, {32},
                        [&](const std::vector<te::Expr>& i, const std::vector<te::Expr>& k) {
                          return te::read(a, {i[0], k[0]}) * te::read(b, {k[0], i[1]});
                        });
  schedule::ScheduleConfig cfg;
  cfg.precision = gpu::Precision::FP16;
  cfg.mma_mainloop = false;  // the wmma template
  return schedule::schedule_op(*c, schedule::with_tile(cfg, {32, 32, 16, 2, 2, false, true}));
}

const char* kWmmaGemm = R"CUDA(#include <cuda_fp16.h>
#include <mma.h>
namespace wmma = nvcuda::wmma;

// kernel `C`: grid 1 x block 32, dynamic shared 7424 B
// params: A (input f32[32, 32]), B (input f32[32, 32]), C (output f32[32, 32])
extern "C" __global__ void __launch_bounds__(32) C(
    const float* __restrict__ A,
    const float* __restrict__ B,
    float* __restrict__ C) {
  extern __shared__ __align__(128) unsigned char souffle_smem[];
  const long long tx = (long long)threadIdx.x;
  // stage 0 `C`: gemm_tc f16 tensor-core tile 32x32x16, warps 1x1 of 2x2 fragments, mma m16n16k16 (grid 1, block 32)
  //   C
  {
    __half* const C_a = reinterpret_cast<__half*>(souffle_smem + 0);  // 1536 B of the arena
    __half* const C_b = reinterpret_cast<__half*>(souffle_smem + 1536);  // 1280 B of the arena
    float* const C_c = reinterpret_cast<float*>(souffle_smem + 2816);  // 4608 B of the arena
    const long long warp = tx / 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> C_fc[4];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> C_fb[2];
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> C_fa[2];
    #pragma unroll
    for (long long i = 0; i < 4; ++i) {
      wmma::fill_fragment(C_fc[i], 0.0f);
    }
    // first K tile of operand a
    for (long long la = 0; la < 16; ++la) {
      const long long ea = la * 32 + tx;
      const long long ia = ea / 16;
      const long long ja = ea % 16;
      C_a[ia * 24 + ja] = ia < 32 && ja < 32 ? __float2half(A[ia * 32 + ja]) : __float2half(0.0f);
    }
    // first K tile of operand b
    for (long long lb = 0; lb < 16; ++lb) {
      const long long eb = lb * 32 + tx;
      const long long ib = eb / 32;
      const long long jb = eb % 32;
      C_b[ib * 40 + jb] = ib < 32 && jb < 32 ? __float2half(B[ib * 32 + jb]) : __float2half(0.0f);
    }
    for (long long ko = 0; ko < 2; ++ko) {
      __syncthreads();
      #pragma unroll
      for (long long i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(C_fa[i], &C_a[(warp * 32 + i * 16) * 24], 24);
      }
      #pragma unroll
      for (long long j = 0; j < 2; ++j) {
        wmma::load_matrix_sync(C_fb[j], &C_b[j * 16], 40);
      }
      #pragma unroll
      for (long long i = 0; i < 2; ++i) {
        #pragma unroll
        for (long long j = 0; j < 2; ++j) {
          wmma::mma_sync(C_fc[i * 2 + j], C_fa[i], C_fb[j], C_fc[i * 2 + j]);
        }
      }
      __syncthreads();
      if (ko + 1 < 2) {
        for (long long la_1 = 0; la_1 < 16; ++la_1) {
          const long long ea_1 = la_1 * 32 + tx;
          const long long ia_1 = ea_1 / 16;
          const long long ja_1 = ea_1 % 16;
          const long long gja = (ko + 1) * 16 + ja_1;
          C_a[ia_1 * 24 + ja_1] = ia_1 < 32 && gja < 32 ? __float2half(A[ia_1 * 32 + gja]) : __float2half(0.0f);
        }
        for (long long lb_1 = 0; lb_1 < 16; ++lb_1) {
          const long long eb_1 = lb_1 * 32 + tx;
          const long long ib_1 = eb_1 / 32;
          const long long jb_1 = eb_1 % 32;
          const long long gib = (ko + 1) * 16 + ib_1;
          C_b[ib_1 * 40 + jb_1] = gib < 32 && jb_1 < 32 ? __float2half(B[gib * 32 + jb_1]) : __float2half(0.0f);
        }
      }
    }
    #pragma unroll
    for (long long i = 0; i < 2; ++i) {
      #pragma unroll
      for (long long j = 0; j < 2; ++j) {
        wmma::store_matrix_sync(&C_c[(warp * 32 + i * 16) * 36 + j * 16], C_fc[i * 2 + j], 36, wmma::mem_row_major);
      }
    }
    __syncthreads();
    for (long long lc = 0; lc < 32; ++lc) {
      const long long ec = lc * 32 + tx;
      const long long ic = ec / 32;
      const long long jc = ec % 32;
      if (ic < 32 && jc < 32) {
        C[ic * 32 + jc] = C_c[ic * 36 + jc];
      }
    }
  }
}

)CUDA";

TEST(CodegenWmma, Fp16GemmGolden) {
  // On a deliberate change of the template or the emitter, the test prints the new text.
  const std::string src = emit_cuda(wmma_gemm());
  if (src != kWmmaGemm) std::printf("%s", src.c_str());
  EXPECT_EQ(src, kWmmaGemm);
}

TEST(CodegenWmma, GoldenCompilesWithNvrtc) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileOptions o;
    o.arch = arch;
    gpu::CompileResult r = gpu::compile_cuda(kWmmaGemm, "wmma_gemm.cu", o);
    ASSERT_TRUE(r.ok) << arch << ": " << r.error;
    ASSERT_EQ(r.kernels.size(), 1u) << r.log;
    EXPECT_EQ(r.kernels[0].spill_store_bytes, 0) << arch;
  }
}

}  // namespace
}  // namespace souffle::codegen
