// One compile per distinct code (kernel_dedup.h): launches whose CUDA C differs only in names
// share one compiled image under a neutral entry name; one planted difference (a constant, a
// stride) gives a kernel its own image; progress is told once per distinct program.
#include <gtest/gtest.h>

#include <cuda.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "core/gpu/cuda_api.h"
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

const LoadedModel& bert() {
  static const LoadedModel m =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert/model.onnx");
  return m;
}

/// The rules plan of the sample BERT (two identical layers), built and emitted.
std::vector<CompiledKernel> bert_rules_kernels() {
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = gpu::gpu_spec("a100");
  plan::FusionPlan p = plan::plan(bert().program, po);
  std::vector<CompiledKernel> ks = build_compiled_kernels(p);
  emit_compiled_kernels(ks);
  return ks;
}

/// Indices of kernels grouped by canonical source, in order of first appearance.
std::vector<std::vector<size_t>> groups(const std::vector<CompiledKernel>& ks) {
  std::map<std::string, size_t> at;
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < ks.size(); ++i) {
    auto [it, fresh] =
        at.emplace(canonical_kernel(ks[i].kernel, ks[i].name, ks[i].cuda).source, out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(i);
  }
  return out;
}

/// Replaces the first occurrence of `from` after the kernel's signature with `to`.
void plant(std::string& cuda, const std::string& from, const std::string& to) {
  size_t body = cuda.find("extern \"C\"");
  ASSERT_NE(body, std::string::npos);
  size_t at = cuda.find(from, body);
  ASSERT_NE(at, std::string::npos) << from << " not in\n" << cuda;
  cuda.replace(at, from.size(), to);
}

TEST(KernelDedup, TheTwoLayersOfBertHaveTheSameCodeUpToNames) {
  std::vector<CompiledKernel> ks = bert_rules_kernels();
  ASSERT_GE(ks.size(), 4u);
  std::vector<std::vector<size_t>> g = groups(ks);
  // Every kernel of layer 1 has a twin in layer 0: at most half as many programs as kernels.
  EXPECT_LE(g.size() * 2, ks.size()) << g.size() << " programs for " << ks.size() << " kernels";
  for (const std::vector<size_t>& same : g) {
    CanonicalKernel a = canonical_kernel(ks[same[0]].kernel, ks[same[0]].name, ks[same[0]].cuda);
    EXPECT_EQ(a.entry.rfind("souffle_k", 0), 0u);
    EXPECT_NE(a.source.find("__global__"), std::string::npos);
    EXPECT_NE(a.source.find(a.entry), std::string::npos);
    EXPECT_EQ(a.source.find("//"), std::string::npos) << "comments are dropped";
    // Line for line: an NVRTC log's line numbers point into the kernel's own source.
    EXPECT_EQ(std::count(a.source.begin(), a.source.end(), '\n'),
              std::count(ks[same[0]].cuda.begin(), ks[same[0]].cuda.end(), '\n'));
    for (size_t i : same) {
      EXPECT_EQ(canonical_kernel(ks[i].kernel, ks[i].name, ks[i].cuda).entry, a.entry);
      EXPECT_EQ(ks[i].kernel.launch.grid_x, ks[same[0]].kernel.launch.grid_x);
    }
  }
}

TEST(KernelDedup, NamesAreRenamedButMembersAndBuiltinsAreNot) {
  const std::string a =
      "extern \"C\" __global__ void kernel3(const float* __restrict__ x_1, float* y) {\n"
      "  // stage 0 `x_1`\n"
      "  int i = threadIdx.x; y[i] = expf(x_1[i]) * 2.5e-3f; /* x */\n"
      "  kernel3_stage0(y);\n"
      "}\n";
  std::string b = a;
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"kernel3", "kernel7"}, {"x_1", "q_2"}, {"y", "z"}})
    for (size_t p; (p = b.find(from)) != std::string::npos;) b.replace(p, from.size(), to);
  CanonicalKernel ca = canonical_kernel(a, "kernel3", {"x", "y", "i"});
  CanonicalKernel cb = canonical_kernel(b, "kernel7", {"q", "z", "i"});
  EXPECT_EQ(ca.source, cb.source);
  EXPECT_EQ(ca.entry, cb.entry);
  EXPECT_NE(ca.source.find("threadIdx.x"), std::string::npos) << ca.source;
  EXPECT_NE(ca.source.find("expf("), std::string::npos);
  EXPECT_NE(ca.source.find("2.5e-3f"), std::string::npos);
  EXPECT_NE(ca.source.find("void " + ca.entry + "("), std::string::npos) << ca.source;
  EXPECT_EQ(ca.source.find("kernel3"), std::string::npos) << ca.source;
  // A builtin in place of a name is other code.
  std::string c = a;
  plant(c, "expf", "logf");
  EXPECT_NE(canonical_kernel(c, "kernel3", {"x", "y", "i"}).source, ca.source);
}

TEST(KernelDedup, APackedKernelsStructIsNamedAfterItAndRenamedWithIt) {
  // Kernels that take their tensors packed (codegen::kPackedArgs) declare `NAME_args`; two of
  // the same code share an image, and one pointer index planted elsewhere splits them.
  const std::string a =
      "struct kernel3_args {\n  void* p[2];\n};\n"
      "extern \"C\" __global__ void kernel3(const __grid_constant__ kernel3_args souffle_args) {\n"
      "  kernel3_stage0(((const float*)souffle_args.p[0]), ((float*)souffle_args.p[1]));\n"
      "}\n";
  std::string b = a;
  for (size_t p; (p = b.find("kernel3")) != std::string::npos;) b.replace(p, 7, "kernel7");
  CanonicalKernel ca = canonical_kernel(a, "kernel3", {});
  CanonicalKernel cb = canonical_kernel(b, "kernel7", {});
  EXPECT_EQ(ca.source, cb.source);
  EXPECT_EQ(ca.entry, cb.entry);
  EXPECT_EQ(ca.source.find("kernel3"), std::string::npos) << ca.source;
  EXPECT_NE(ca.source.find("souffle_args.p[1]"), std::string::npos) << ca.source;
  std::string c = a;
  plant(c, "p[1]", "p[0]");
  EXPECT_NE(canonical_kernel(c, "kernel3", {}).source, ca.source);
}

TEST(KernelDedup, APlantedConstantOrStrideSplitsTheImage) {
  std::vector<CompiledKernel> ks = bert_rules_kernels();
  std::vector<std::vector<size_t>> g = groups(ks);
  // The smallest kernel with a twin, three times: itself, its twin, and the twin again with one
  // planted difference each time.
  size_t pick = g.size();
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].size() >= 2 &&
        (pick == g.size() || ks[g[i][0]].cuda.size() < ks[g[pick][0]].cuda.size()))
      pick = i;
  ASSERT_LT(pick, g.size());
  const CompiledKernel& a = ks[g[pick][0]];
  const CompiledKernel& twin = ks[g[pick][1]];
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (const std::string what : {"constant", "stride"}) {
    std::vector<CompiledKernel> three = {a, twin, twin};
    // A constant: the block size's bound in the first comparison; a stride: the first
    // multiplication of an index.
    if (what == "constant")
      plant(three[2].cuda, " < ", " < 1 + ");
    else
      plant(three[2].cuda, " * ", " * 2 * ");
    CompileOptions o;
    o.archs = {"sm_80"};
    o.use_cache = false;  // each program really compiled
    std::mutex mu;
    std::vector<CompileProgress> told;
    o.progress = [&](const CompileProgress& p) {
      std::lock_guard<std::mutex> lock(mu);
      told.push_back(p);
    };
    compile_kernels(three, gpu::gpu_spec("a100"), o);
    for (const CompiledKernel& k : three) ASSERT_TRUE(k.ok()) << what << ": " << k.error;
    EXPECT_EQ(three[0].image, 0) << what;
    EXPECT_EQ(three[1].image, 0) << what << ": the twin shares the first one's image";
    EXPECT_EQ(three[2].image, 2) << what << ": the planted " << what << " has its own";
    EXPECT_EQ(three[0].entry, three[1].entry);
    EXPECT_NE(three[0].entry, three[2].entry);
    EXPECT_NE(three[0].entry, three[0].name);
    int programs = 0, cached = 0;
    count_programs(three, programs, cached);
    EXPECT_EQ(programs, 2) << what;
    EXPECT_EQ(cached, 0) << what;
    ASSERT_EQ(told.size(), 2u) << what << ": progress once per distinct program";
    EXPECT_EQ(told.back().done, 2);
    EXPECT_EQ(told.back().total, 2);
    EXPECT_FALSE(told.back().slowest.empty());
    for (const CompiledKernel& k : three) {
      const gpu::CompileResult& r = k.per_arch.at(0);
      EXPECT_NE(r.ptx.find(".entry " + k.entry), std::string::npos) << what;
      ASSERT_NE(r.find_kernel(k.name), nullptr) << "resources under the kernel's own name";
      EXPECT_EQ(r.find_kernel(k.name)->registers, r.find_kernel(k.entry)->registers);
    }
    EXPECT_EQ(three[0].per_arch[0].cubin, three[1].per_arch[0].cubin);
  }
}

TEST(KernelDedup, WithoutDedupEveryKernelIsItsOwnProgram) {
  std::vector<CompiledKernel> ks = bert_rules_kernels();
  std::vector<std::vector<size_t>> g = groups(ks);
  size_t pick = 0;
  while (pick < g.size() && g[pick].size() < 2) ++pick;
  ASSERT_LT(pick, g.size());
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  std::vector<CompiledKernel> two = {ks[g[pick][0]], ks[g[pick][1]]};
  CompileOptions o;
  o.archs = {"sm_80"};
  o.dedup = false;
  compile_kernels(two, gpu::gpu_spec("a100"), o);
  for (size_t i = 0; i < two.size(); ++i) {
    ASSERT_TRUE(two[i].ok()) << two[i].error;
    EXPECT_EQ(two[i].entry, two[i].name);
    EXPECT_EQ(two[i].image, static_cast<int>(i));
    EXPECT_NE(two[i].per_arch[0].ptx.find(".entry " + two[i].name), std::string::npos);
  }
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

namespace fs = std::filesystem;

// The CUDA backend on the fake driver loads a bundle of the sample BERT's rules plan: one module
// per distinct program, each launch's function looked up by its image's entry, which the PTX file
// it loads defines.
TEST(KernelDedup, TheCudaBackendLoadsEachSharedImageOnce) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = gpu::gpu_spec("h200");
  plan::FusionPlan p = plan::plan(bert().program, po);
  CompileOptions co;
  co.archs = {"sm_90"};
  co.use_cache = false;
  CompileReport rep = compile_plan(p, co);
  ASSERT_TRUE(rep.ok());
  ASSERT_LT(rep.programs, static_cast<int>(rep.kernels.size()));
  const std::string dir = (fs::temp_directory_path() / "kernel_dedup_bundle").string();
  fs::remove_all(dir);
  write_model_bundle(dir, std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert/model.onnx", "", p,
                     rep, co);
  BundleManifest m = load_manifest(dir);
  ASSERT_EQ(m.kernels.size(), rep.kernels.size());
  std::set<std::string> files;
  for (const ManifestKernel& k : m.kernels) {
    ASSERT_EQ(k.images.size(), 1u);
    files.insert(k.images[0].cubin);
    std::ifstream in(fs::path(dir) / k.images[0].ptx);
    std::stringstream ptx;
    ptx << in.rdbuf();
    EXPECT_NE(ptx.str().find(".entry " + k.entry), std::string::npos) << k.name;
  }
  EXPECT_EQ(files.size(), static_cast<size_t>(rep.programs));
  fake::FakeDriver fake;
  fake::g_fake = &fake;
  gpu::CudaApi api = fake::fake_api();
  {
    runner::CudaBackendApis apis;
    apis.driver = &api;
    std::unique_ptr<runner::Backend> backend = runner::make_cuda_backend(apis);
    nlohmann::json r = backend->load(m);
    ASSERT_EQ(r["kernels"].size(), m.kernels.size()) << r.dump();
    EXPECT_EQ(fake.live_modules(), static_cast<size_t>(rep.programs));
    int shared = 0;
    for (const nlohmann::json& k : r["kernels"]) shared += k["shared_image"].get<bool>() ? 1 : 0;
    EXPECT_EQ(shared, static_cast<int>(rep.kernels.size()) - rep.programs);
    std::set<std::string> looked_up;
    for (const auto& [f, name] : fake.functions) looked_up.insert(name);
    for (const ManifestKernel& k : m.kernels) EXPECT_TRUE(looked_up.count(k.entry)) << k.entry;
  }
  fake::g_fake = nullptr;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace souffle
