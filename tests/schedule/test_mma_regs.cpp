// The register estimate of a kernel whose stage runs the Ampere mma mainloop (price_kernel,
// gpu::mma_mainloop) against the registers NVRTC gives the built kernel without a cap: the
// estimate must not be below them, or the planned residency needs a cap that makes the kernel
// spill (issue 29: the fp16 sample BERT).

#include <gtest/gtest.h>

#include <cstdio>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"
#include "tests/schedule/matmul_te.h"

namespace souffle {
namespace {

using gpu::Precision;
using te::Expr;
using te::Tensor;

using test_te::matmul;

TEST(MmaRegs, EstimateCoversWhatNvrtcUses) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  struct T {
    gpu::Tile tile;
    Precision p;
    DType in;
    bool ring;
  };
  const gpu::GpuSpec spec = gpu::gpu_spec("a100");
  const gpu::CostConstants cc = gpu::cost_constants(spec, Precision::FP16);
  int checked = 0;
  for (const T& t : {T{{32, 32, 16, 1, 1, false, true}, Precision::FP16, DType::Float32, true},
                     T{{32, 32, 16, 1, 1, false, true}, Precision::FP16, DType::Float32, false},
                     T{{32, 32, 64, 1, 1, false, true}, Precision::FP16, DType::Float32, true},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float32, true},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float32, false},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::FP16, DType::Float16, false},
                     T{{128, 128, 32, 2, 4, false, true}, Precision::FP16, DType::Float16, false},
                     T{{32, 32, 16, 1, 1, false, true}, Precision::TF32, DType::Float32, false},
                     T{{64, 64, 32, 2, 2, false, true}, Precision::TF32, DType::Float32, false}}) {
    const te::Op op = matmul(256, 256, 256, t.in);
    schedule::ScheduleConfig cfg;
    cfg.precision = t.p;
    cfg.block = 128;
    gpu::Tile tile = t.tile;
    tile.f32_ring = t.ring;
    cfg.tc_tile = tile;
    const loop::Kernel k = schedule::schedule_op(*op, cfg);
    gpu::CompileOptions o;
    o.arch = "sm_80";
    const gpu::CompileResult r = gpu::compile_cuda(codegen::emit_cuda(k), "mma_regs.cu", o);
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.kernels.size(), 1u);
    const schedule::KernelPrice kp =
        schedule::price_kernel(k, spec, cc, [](const std::string&) { return int64_t{0}; });
    std::printf("%s %s: NVRTC %d registers (spills %lld), estimate %d\n", gpu::precision_name(t.p),
                k.stages[0].schedule.c_str(), r.kernels[0].registers,
                static_cast<long long>(r.kernels[0].spill_store_bytes), kp.regs);
    EXPECT_GE(kp.regs, r.kernels[0].registers) << k.stages[0].schedule;
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

}  // namespace
}  // namespace souffle
