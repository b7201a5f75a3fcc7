// Every kernel the schedules produce for the sample models' TEs is emitted and compiled by NVRTC
// for sm_80 and sm_90 with zero errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/schedule/schedule.h"
#include "core/session/load.h"

namespace souffle::codegen {
namespace {

void compile_model(const std::string& model) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel m =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + model + "/model.onnx");
  loop::KernelSet ks = schedule::schedule_program(m.program);
  ASSERT_FALSE(ks.kernels.empty());
  const std::string src = emit_cuda(ks);
  const std::vector<std::string> names = cuda_kernel_names(ks);
  const auto t1 = std::chrono::steady_clock::now();
  // One translation unit per arch: the kernels share the preamble and NVRTC's start-up cost.
  std::vector<gpu::CompileJob> jobs;
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileJob j;
    j.source = src;
    j.name = model + "_kernels.cu";
    j.options.arch = arch;
    jobs.push_back(j);
  }
  std::vector<gpu::CompileResult> results = gpu::compile_cuda_many(jobs);
  const auto t2 = std::chrono::steady_clock::now();
  for (const gpu::CompileResult& r : results) {
    ASSERT_TRUE(r.ok) << r.arch << ": " << r.error.substr(0, 20000);
    EXPECT_EQ(r.log.find("error"), std::string::npos);
    ASSERT_EQ(r.kernels.size(), names.size()) << r.arch;
    int max_regs = 0;
    int64_t spills = 0;
    for (const std::string& n : names) {
      const gpu::KernelResources* kr = r.find_kernel(n);
      ASSERT_NE(kr, nullptr) << n;
      EXPECT_GT(kr->registers, 0) << n;
      max_regs = std::max(max_regs, kr->registers);
      spills += kr->spill_store_bytes;
    }
    std::printf("%s %s: %zu kernels, %zu source lines, max %d registers, %lld spill bytes\n",
                model.c_str(), r.arch.c_str(), names.size(),
                static_cast<size_t>(std::count(src.begin(), src.end(), '\n')), max_regs,
                static_cast<long long>(spills));
  }
  std::printf("%s: load+schedule+emit %.0f ms, NVRTC (2 archs in parallel) %.0f ms\n",
              model.c_str(), std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
}

TEST(CodegenModels, MmoeKernelsCompile) {
  compile_model("mmoe");
}

TEST(CodegenModels, BertKernelsCompile) {
  compile_model("bert");
}

}  // namespace
}  // namespace souffle::codegen
