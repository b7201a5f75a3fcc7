// Separate compilation (gpu/lto.h): a sample model's kernel with outlined stages, each stage and
// the kernel compiled to LTO-IR by NVRTC and linked with nvJitLink, gives a CUBIN that names its
// entry, loads on the fake driver, and reports registers and spills; the split programs hold
// the kernel's text unchanged.
#include <gtest/gtest.h>

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/gpu/cubin.h"
#include "core/gpu/cuda_api.h"
#include "core/gpu/lto.h"
#include "core/gpu/nvrtc.h"
#include "core/session/bundle.h"
#include "core/session/bundle_manifest.h"
#include "core/session/compile.h"
#include "core/session/kernel_dedup.h"
#include "core/session/load.h"
#include "core/session/runner.h"
#include "core/session/runner_cuda.h"
#include "tests/session/fake_cuda.h"

namespace souffle {
namespace {

/// A sample model's file.
std::string sample(const std::string& model) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + model + "/model.onnx";
}

/// The souffle plan of the model in `path` for `gpu`; the model stays loaded for the test run.
plan::FusionPlan souffle_plan(const std::string& path, const std::string& gpu) {
  static std::map<std::string, LoadedModel> loaded;
  auto it = loaded.find(path);
  if (it == loaded.end()) it = loaded.emplace(path, load_model(path)).first;
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Souffle;
  po.gpu = gpu::gpu_spec(gpu);
  return plan::plan(it->second.program, po);
}

/// The souffle plan of a sample model, built and emitted with every stage outlined.
std::vector<CompiledKernel> outlined_kernels(const std::string& model) {
  const plan::FusionPlan p = souffle_plan(sample(model), "a100");
  std::vector<CompiledKernel> ks = build_compiled_kernels(p);
  emit_compiled_kernels(ks, codegen::StageOutlining::Always);
  return ks;
}

/// `cubin` loads on the fake driver (as strict as the real one) and `entry` is found in it.
void expect_loads(const std::vector<uint8_t>& cubin, const std::string& entry) {
  fake::FakeDriver fake;
  fake::g_fake = &fake;
  gpu::CudaApi api = fake::fake_api();
  CUmodule mod = nullptr;
  EXPECT_EQ(api.cuModuleLoadDataEx(&mod, cubin.data(), 0, nullptr, nullptr), CUDA_SUCCESS);
  CUfunction fn = nullptr;
  if (mod) {
    EXPECT_EQ(api.cuModuleGetFunction(&fn, mod, entry.c_str()), CUDA_SUCCESS);
    EXPECT_EQ(api.cuModuleUnload(mod), CUDA_SUCCESS);
  }
  EXPECT_TRUE(fake.violations.empty());
  fake::g_fake = nullptr;
}

bool contains(const std::vector<uint8_t>& bytes, const std::string& s) {
  return std::search(bytes.begin(), bytes.end(), s.begin(), s.end()) != bytes.end();
}

TEST(Lto, SplitKeepsEveryLineOfTheTranslationUnit) {
  for (const char* model : {"mmoe", "lstm"})
    for (const CompiledKernel& ck : outlined_kernels(model)) {
      ASSERT_TRUE(ck.ok()) << ck.error;
      gpu::StageSplit sp;
      std::string why;
      const bool has_stages = ck.cuda.find("__noinline__") != std::string::npos;
      ASSERT_EQ(gpu::split_stage_functions(ck.cuda, ck.cuda_map.functions, sp, &why), has_stages)
          << why;
      if (!has_stages) continue;
      // The emitter's records place every function: the stage functions are the text's
      // `__noinline__` ones, in order, and the kernel is its `__global__` one.
      size_t at = 0;
      for (const auto& f : sp.stages) {
        at = ck.cuda.find("static __device__ __noinline__ void " + f.name + "(", at);
        EXPECT_NE(at, std::string::npos) << f.name;
        EXPECT_NE(sp.kernel.find(f.name + "("), std::string::npos) << "the kernel calls " << f.name;
        EXPECT_EQ(f.definition.find("static "), std::string::npos) << f.name;
        EXPECT_EQ(f.prototype.rfind("__device__ __noinline__ void " + f.name + "(", 0), 0u)
            << f.prototype;
        EXPECT_EQ(f.prototype.substr(f.prototype.size() - 3), ");\n") << f.prototype;
      }
      // Preamble, stage definitions (less `static `) and kernel are the source's text.
      size_t total = sp.preamble.size() + sp.kernel.size();
      for (const auto& f : sp.stages) total += f.definition.size() + 7;
      EXPECT_EQ(total, ck.cuda.size()) << model << " " << ck.name;
      EXPECT_NE(sp.kernel.find("extern \"C\" __global__"), std::string::npos);
      EXPECT_EQ(sp.kernel.find("__noinline__ void"), std::string::npos);
      EXPECT_EQ(sp.preamble.find("__noinline__ void"), std::string::npos);
      EXPECT_EQ(sp.preamble.find("__global__"), std::string::npos);
      // The canonical text (kernel_dedup.h) keeps the lines: the same layout cuts it.
      const CanonicalKernel c = canonical_kernel(ck.kernel, ck.name, ck.cuda);
      gpu::StageSplit csp;
      ASSERT_TRUE(gpu::split_stage_functions(c.source, ck.cuda_map.functions, csp, &why)) << why;
      ASSERT_EQ(csp.stages.size(), sp.stages.size());
      EXPECT_NE(csp.kernel.find(c.entry), std::string::npos);
      // A layout that is not the text's is refused, not cut anywhere.
      gpu::UnitLayout shifted = ck.cuda_map.functions;
      ++shifted.stages[0].head;
      EXPECT_FALSE(gpu::split_stage_functions(ck.cuda, shifted, sp, &why));
      EXPECT_FALSE(why.empty());
      gpu::UnitLayout past = ck.cuda_map.functions;  // lines the text does not have
      past.kernel.first = 1 << 20;
      past.stages.back().last = past.kernel.first - 1;
      EXPECT_FALSE(gpu::split_stage_functions(ck.cuda, past, sp, &why));
      EXPECT_FALSE(gpu::split_stage_functions(ck.cuda, gpu::UnitLayout{}, sp, &why));
      EXPECT_EQ(why, "no stage function");
    }
}

TEST(Lto, LinkedKernelLoadsAndReportsItsRegisters) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  if (!gpu::nvjitlink_available()) GTEST_SKIP() << "[SKIP] nvJitLink is not available";
  const char* model_env = std::getenv("SOUFFLE_LTO_MODEL");
  const std::string model = model_env ? model_env : "mmoe";
  std::vector<CompiledKernel> ks = outlined_kernels(model);
  // The kernel of the fewest stage functions (each is an NVRTC program).
  auto functions = [](const std::string& cuda) {
    size_t n = 0;
    for (size_t at = cuda.find("__noinline__"); at != std::string::npos;
         at = cuda.find("__noinline__", at + 1))
      ++n;
    return n;
  };
  const CompiledKernel* pick = nullptr;
  for (const CompiledKernel& ck : ks)
    if (ck.ok() && functions(ck.cuda) > 0 && (!pick || functions(ck.cuda) < functions(pick->cuda)))
      pick = &ck;
  ASSERT_NE(pick, nullptr) << "no kernel of " << model << " has outlined stages";
  gpu::CompileOptions o;
  o.arch = "sm_90";
  o.use_cache = false;
  gpu::SeparateOptions so;
  so.link = gpu::SeparateLink::LtoIr;
  gpu::SeparateInfo info;
  gpu::CompileResult lto = gpu::compile_cuda_separate(pick->cuda, pick->cuda_map.functions,
                                                      pick->name + ".cu", o, so, &info);
  ASSERT_TRUE(lto.ok) << lto.error << lto.log;
  ASSERT_TRUE(info.linked) << info.why_whole;
  EXPECT_GE(info.programs, 2);
  gpu::CompileResult whole = gpu::compile_cuda(pick->cuda, pick->name + ".cu", o);
  ASSERT_TRUE(whole.ok) << whole.error;
  std::printf("%s %s: %d programs, NVRTC %.0f ms + link %.0f ms = %.0f ms; whole %.0f ms\n",
              model.c_str(), pick->name.c_str(), info.programs, info.nvrtc_ms, info.link_ms,
              lto.compile_ms, whole.compile_ms);
  const gpu::KernelResources* lr = lto.find_kernel(pick->name);
  const gpu::KernelResources* wr = whole.find_kernel(pick->name);
  ASSERT_NE(lr, nullptr) << "the link's ptxas lines name the kernel:\n" << lto.log;
  ASSERT_NE(wr, nullptr);
  EXPECT_GT(lr->registers, 0);
  if (std::getenv("SOUFFLE_LTO_LOG")) std::printf("%s\n", lto.log.c_str());
  std::printf("  registers %d (whole %d), spills %lld+%lld (whole %lld+%lld)\n", lr->registers,
              wr->registers, static_cast<long long>(lr->spill_store_bytes),
              static_cast<long long>(lr->spill_load_bytes),
              static_cast<long long>(wr->spill_store_bytes),
              static_cast<long long>(wr->spill_load_bytes));
  // An ELF CUBIN whose symbols name the entry.
  ASSERT_GT(lto.cubin.size(), 4u);
  EXPECT_EQ(std::memcmp(lto.cubin.data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
  EXPECT_TRUE(contains(lto.cubin, pick->name));
  // It loads on the fake driver and its entry is found.
  expect_loads(lto.cubin, pick->name);
}

// SASS objects: each program compiled by its own ptxas, nvJitLink only links. The linked entry
// takes the most registers of any function it calls (read from the CUBIN, which the link alone
// writes), every function stays under the cap it was given, and the CUBIN loads.
TEST(Lto, ObjectsLinkTakesTheirRegistersFromTheCubin) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  if (!gpu::nvjitlink_available()) GTEST_SKIP() << "[SKIP] nvJitLink is not available";
  std::vector<CompiledKernel> ks = outlined_kernels("mmoe");
  const CompiledKernel* pick = nullptr;
  for (const CompiledKernel& ck : ks)
    if (ck.ok() && ck.cuda_map.calls_stage_functions &&
        (!pick || ck.kernel.stages.size() > pick->kernel.stages.size()))
      pick = &ck;
  ASSERT_NE(pick, nullptr);
  gpu::CompileOptions o;
  o.arch = "sm_80";
  o.use_cache = false;
  for (const int cap : {0, 40}) {
    gpu::SeparateOptions so;
    so.function_max_registers = cap;
    gpu::SeparateInfo info;
    gpu::CompileResult r = gpu::compile_cuda_separate(pick->cuda, pick->cuda_map.functions,
                                                      pick->name + ".cu", o, so, &info);
    ASSERT_TRUE(r.ok) << r.error << r.log;
    ASSERT_TRUE(info.linked) << info.why_whole;
    EXPECT_GE(info.programs, 2);
    EXPECT_TRUE(r.ptx.empty());
    const gpu::KernelResources* k = r.find_kernel(pick->name);
    ASSERT_NE(k, nullptr) << r.log;
    int most = 0;
    for (const gpu::CubinFunction& f : gpu::read_cubin_functions(r.cubin)) {
      if (f.name == pick->name) continue;
      most = std::max(most, f.registers);
      if (cap > 0) {
        EXPECT_LE(f.registers, cap) << f.name;
      }
    }
    EXPECT_GT(most, 0) << "the stage functions are in the CUBIN with their registers";
    EXPECT_GE(k->registers, most);
    EXPECT_GE(k->stack_bytes, k->callee_stack_bytes);
    expect_loads(r.cubin, pick->name);
  }
}

// The register cap is why each function's program is capped: a kernel capped at 32 registers
// whose stage function, compiled alone without the cap, takes more does not link; the compile
// falls back to the whole program and says why. Given the cap, it links under it.
TEST(Lto, AFunctionAboveTheKernelsCapDoesNotLinkAndTheCompileSaysWhy) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  if (!gpu::nvjitlink_available()) GTEST_SKIP() << "[SKIP] nvJitLink is not available";
  std::string acc, sum;
  for (int i = 0; i < 48; ++i) {
    acc += "  float a" + std::to_string(i) + " = x[i * 48 + " + std::to_string(i) + "];\n";
    sum += " + a" + std::to_string(i) + " * a" + std::to_string((i + 7) % 48);
  }
  const std::string source =
      "static __device__ __noinline__ void hungry_stage0(const float* x, float* y) {\n"
      "  const int i = threadIdx.x;\n" +
      acc + "  for (int r = 0; r < 8; ++r) y[i * 8 + r] = r" + sum +
      ";\n}\n"
      "extern \"C\" __global__ void __maxnreg__(32) hungry(const float* x, float* y) {\n"
      "  hungry_stage0(x, y);\n}\n";
  // Where its functions are, as an emitter would record them: the stage function's 52 lines (its
  // head, 49 declarations, its loop and its closing brace), then the kernel.
  gpu::UnitLayout layout;
  layout.stages.push_back({"hungry_stage0", 1, 1, 1, 52});
  layout.kernel = {"hungry", 53, 53, 53, 55};
  ASSERT_EQ(std::count(source.begin(), source.end(), '\n'), 55);
  gpu::CompileOptions o;
  o.arch = "sm_80";
  o.use_cache = false;
  gpu::SeparateInfo info;
  gpu::CompileResult r = gpu::compile_cuda_separate(source, layout, "hungry.cu", o, {}, &info);
  ASSERT_TRUE(r.ok) << r.log;  // compiled whole instead
  EXPECT_FALSE(info.linked);
  EXPECT_NE(info.why_whole.find("the link failed: "), std::string::npos) << info.why_whole;
  EXPECT_NE(info.why_whole.find("regcount"), std::string::npos) << info.why_whole;
  EXPECT_EQ(info.why_whole.find('\n'), std::string::npos) << "one line";
  gpu::SeparateOptions capped;
  capped.function_max_registers = 32;
  r = gpu::compile_cuda_separate(source, layout, "hungry.cu", o, capped, &info);
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(info.linked) << info.why_whole;
  const gpu::KernelResources* k = r.find_kernel("hungry");
  ASSERT_NE(k, nullptr);
  EXPECT_LE(k->registers, 32);
}

// The default: compile_plan links the sample LSTM's outlined kernel (99 stages, Auto outlining)
// from SASS objects; a kernel without stage functions compiles whole.
TEST(Lto, ThePlanLinksItsOutlinedKernelsFromObjectsByDefault) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  if (!gpu::nvjitlink_available()) GTEST_SKIP() << "[SKIP] nvJitLink is not available";
  const plan::FusionPlan p = souffle_plan(sample("lstm"), "a100");
  CompileOptions co;
  co.archs = {"sm_80"};
  ASSERT_EQ(co.separate, SeparateCompile::Objects);
  CompileReport rep = compile_plan(p, co);
  ASSERT_TRUE(rep.ok());
  int outlined = 0;
  for (const CompiledKernel& k : rep.kernels) {
    EXPECT_EQ(k.separately_linked, k.cuda_map.calls_stage_functions) << k.name;
    EXPECT_EQ(k.compiled_whole_because, "") << k.name;
    outlined += k.cuda_map.calls_stage_functions ? 1 : 0;
    if (k.separately_linked) {
      EXPECT_GT(k.max_registers(), 0) << k.name;
      EXPECT_FALSE(k.per_arch[0].cubin.empty());
    }
  }
  EXPECT_GT(outlined, 0) << "the sample LSTM has an outlined kernel";
}

// compile_plan with lto: the sample MMoE's kernel is emitted outlined, linked, says so, and its
// bundle (a CUBIN, no PTX) loads in the CUDA backend of the runner on the fake driver.
TEST(Lto, ALinkedPlanBundleLoadsInTheCudaBackend) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  if (!gpu::nvjitlink_available()) GTEST_SKIP() << "[SKIP] nvJitLink is not available";
  namespace fs = std::filesystem;
  const std::string model = sample("mmoe");
  const plan::FusionPlan p = souffle_plan(model, "h200");
  CompileOptions co;
  co.archs = {"sm_90"};
  co.separate = SeparateCompile::Lto;  // the compile cache stays on: a second run takes the linked
                                       // CUBIN from it
  CompileReport rep = compile_plan(p, co);
  ASSERT_TRUE(rep.ok());
  int linked = 0;
  for (const CompiledKernel& k : rep.kernels) {
    linked += k.separately_linked ? 1 : 0;
    if (k.kernel.stages.size() >= static_cast<size_t>(kLtoMinStages)) {
      EXPECT_TRUE(k.separately_linked) << k.name;
      EXPECT_NE(k.cuda.find("__noinline__"), std::string::npos) << "emitted outlined";
      EXPECT_GT(k.max_registers(), 0);
    }
  }
  ASSERT_GT(linked, 0);
  const std::string dir = (fs::temp_directory_path() / "lto_bundle").string();
  fs::remove_all(dir);
  write_model_bundle(dir, model, "", p, rep, co);
  BundleManifest bm = load_manifest(dir);
  ASSERT_EQ(bm.kernels.size(), rep.kernels.size());
  for (const ManifestKernel& k : bm.kernels) {
    ASSERT_EQ(k.images.size(), 1u);
    EXPECT_FALSE(k.images[0].cubin.empty());
    EXPECT_TRUE(fs::exists(fs::path(dir) / k.images[0].cubin));
  }
  fake::FakeDriver fake;
  fake::g_fake = &fake;
  gpu::CudaApi api = fake::fake_api();
  {
    runner::CudaBackendApis apis;
    apis.driver = &api;
    std::unique_ptr<runner::Backend> backend = runner::make_cuda_backend(apis);
    nlohmann::json r = backend->load(bm);
    ASSERT_EQ(r["kernels"].size(), bm.kernels.size()) << r.dump();
    for (const nlohmann::json& k : r["kernels"])
      EXPECT_EQ(k["image"].get<std::string>().rfind("cubin", 0), 0u) << k.dump();
  }
  EXPECT_TRUE(fake.violations.empty());
  fake::g_fake = nullptr;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace souffle
