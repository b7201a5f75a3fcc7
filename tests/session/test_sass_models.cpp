// SASS check of the sample models' souffle plans at fp16, for sm_80 and sm_90: every stage whose
// loop IR computes with tensor cores has MMA instructions (HMMA/HGMMA) on its CUDA lines (or, for
// a stage calling the function of an earlier stage of the same code, on that function's), every
// stage whose loop IR copies with cp.async has LDGSTS/UTMALDG, no tensor-core stage touches local
// memory and ptxas spills nothing in its kernel. Only kernels with a tensor-core stage are
// compiled (with line information) and disassembled with nvdisasm.
//
// CTest runs BERT, ResNeXt and MMoE (about 30 s from a cold compile cache); Swin, EfficientNet
// and LSTM compile for minutes as one merged kernel each and run with SOUFFLE_SASS_ALL_MODELS=1
// (docs/sass.md has the last run). Known spills are listed below with a bound.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/gpu/sass.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/compile.h"
#include "core/session/sass_report.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

/// Spills known today, by model: the most bytes ptxas may spill in its tensor-core kernel on
/// either arch, and with them local memory in its tensor-core stages (MMoE's merged kernel: 8
/// bytes, one LDL and one STL in a gate GEMM, on sm_80 or sm_90 as the template changes). Any
/// other model spills nothing; the list only shrinks.
const std::map<std::string, int64_t> kKnownSpills = {{"mmoe", 8}};

class SassModel : public testing::TestWithParam<std::string> {};

TEST_P(SassModel, TensorCoreStagesHaveMmaAndNoLocalMemory) {
  ASSERT_TRUE(gpu::nvrtc_available()) << "this build has no NVRTC";
  ASSERT_NE(gpu::find_nvdisasm(), "") << gpu::nvdisasm_missing_message();
  const std::string model = GetParam();
  const auto t0 = std::chrono::steady_clock::now();
  const gpu::GpuSpec spec = gpu::gpu_spec("h200");
  plan::PlanOptions po;
  po.gpu = spec;
  po.precision = gpu::Precision::FP16;
  const auto pricer = schedule::make_pricer(spec, po.precision);
  po.pricer = pricer;
  const plan::FusionPlan p = plan::plan(test::sample_model(model).program, po);
  CompileOptions co;
  co.archs = {};  // built and emitted here; compiled with line information below
  co.pricer = pricer;
  const CompileReport rep = compile_plan(p, co);
  ASSERT_TRUE(rep.ok());
  std::vector<CompiledKernel> tc;
  for (const CompiledKernel& k : rep.kernels)
    for (const StageSass& st : stage_expectations(k.kernel))
      if (st.tensor_core) {
        tc.push_back(k);
        break;
      }
  ASSERT_FALSE(tc.empty()) << model << " at fp16 has no tensor-core stage";
  const auto sass = sass_of_all(tc, {"sm_80", "sm_90"});
  for (size_t a = 0; a < 2; ++a) {
    int stages = 0, own = 0, async_stages = 0;
    gpu::SassMix mix;
    int64_t spills = 0;
    int regs = 0;
    for (const std::vector<KernelSass>& per_arch : sass) {
      const KernelSass& s = per_arch[a];
      ASSERT_TRUE(s.ok) << s.kernel << " " << s.arch << ": " << s.error;
      mix += s.mix;
      spills += s.spill_bytes;
      regs = std::max(regs, s.registers);
      for (const StageSass& st : s.stages) {
        if (!st.tensor_core) continue;
        ++stages;
        async_stages += st.async_copy;
        if (!st.mma_in_source) continue;
        ++own;
        EXPECT_GT(st.mix.mma, 0) << s.kernel << " " << s.arch << " " << st.name;
        if (st.async_copy) {
          EXPECT_GT(st.mix.async_copy, 0) << s.kernel << " " << s.arch << " " << st.name;
        }
        if (!kKnownSpills.count(model)) {
          EXPECT_EQ(st.mix.local_load + st.mix.local_store, 0)
              << s.kernel << " " << s.arch << " " << st.name;
        }
      }
    }
    const std::string key = model + " " + (a == 0 ? "sm_80" : "sm_90");
    auto known = kKnownSpills.find(model);
    EXPECT_LE(spills, known == kKnownSpills.end() ? 0 : known->second) << key;
    if (known != kKnownSpills.end()) {
      EXPECT_LE(mix.local_load + mix.local_store, 2) << key;
    }
    EXPECT_GT(own, 0) << key;
    std::printf(
        "%s fp16: %zu kernels with tensor cores; %d tensor-core stages (%d with their own code, "
        "%d with cp.async); %lld instructions, %lld MMA, %lld LDGSTS/UTMALDG, %lld LDSM, %lld BAR, "
        "%lld LDL, %lld STL; max %d registers, %lld spill bytes\n",
        key.c_str(), tc.size(), stages, own, async_stages, static_cast<long long>(mix.total),
        static_cast<long long>(mix.mma), static_cast<long long>(mix.async_copy),
        static_cast<long long>(mix.ldsm), static_cast<long long>(mix.bar),
        static_cast<long long>(mix.local_load), static_cast<long long>(mix.local_store), regs,
        static_cast<long long>(spills));
  }
  std::printf("%s: %.1f s\n", model.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

std::vector<std::string> models() {
  const char* all = std::getenv("SOUFFLE_SASS_ALL_MODELS");
  if (all && std::string(all) == "1")
    return {"bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"};
  return {"bert", "resnext", "mmoe"};
}

INSTANTIATE_TEST_SUITE_P(Models, SassModel, testing::ValuesIn(models()));

}  // namespace
}  // namespace souffle
