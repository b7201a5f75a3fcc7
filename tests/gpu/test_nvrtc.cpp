#include "core/gpu/nvrtc.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/support/thread_pool.h"

namespace souffle::gpu {
namespace {

// Two dependent stages separated by a grid-wide barrier, as merged kernels are.
const char* kGridSyncKernel = R"(#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void two_stage(const float* __restrict__ x, float* __restrict__ tmp,
                                     float* __restrict__ y, int n) {
  __shared__ float tile[128];
  cg::grid_group grid = cg::this_grid();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    tmp[i] = expf(x[i]);
  grid.sync();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? tmp[(i + 1) % n] : 0.0f;
  __syncthreads();
  if (i < n) y[i] = tile[threadIdx.x] + tile[(threadIdx.x + 1) % 128];
}

extern "C" __global__ void scale(float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= a;
}
)";

#define SKIP_WITHOUT_NVRTC() \
  if (!nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC"

TEST(Nvrtc, CompilesGridSyncKernelForSm80AndSm90) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_80", "sm_90"}) {
    CompileOptions o;
    o.arch = arch;
    o.use_cache = false;
    CompileResult r = compile_cuda(kGridSyncKernel, "two_stage.cu", o);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_FALSE(r.from_cache);
    EXPECT_NE(r.ptx.find(".entry two_stage"), std::string::npos);
    EXPECT_NE(r.ptx.find(std::string(".target ") + arch), std::string::npos);
    ASSERT_GE(r.cubin.size(), 4u);
    EXPECT_EQ(r.cubin[0], 0x7f);  // an ELF image
    EXPECT_EQ(r.cubin[1], 'E');
    ASSERT_EQ(r.kernels.size(), 2u) << r.log;
    const KernelResources* k = r.find_kernel("two_stage");
    ASSERT_NE(k, nullptr) << r.log;
    EXPECT_GT(k->registers, 0);
    EXPECT_EQ(k->shared_bytes, 128 * 4);
    EXPECT_EQ(k->spill_store_bytes, 0);
    const KernelResources* s = r.find_kernel("scale");
    ASSERT_NE(s, nullptr);
    EXPECT_GT(s->registers, 0);
    EXPECT_EQ(s->shared_bytes, 0);
  }
}

TEST(Nvrtc, ComputeArchGivesPtxOnly) {
  SKIP_WITHOUT_NVRTC();
  CompileOptions o;
  o.arch = "compute_80";
  o.use_cache = false;
  CompileResult r = compile_cuda(kGridSyncKernel, "ptx_only.cu", o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.ptx.empty());
  EXPECT_TRUE(r.cubin.empty());
}

TEST(Nvrtc, SyntaxErrorReturnsLogNamingTheLine) {
  SKIP_WITHOUT_NVRTC();
  const std::string bad =
      "extern \"C\" __global__ void broken(float* y) {\n"
      "  int i = threadIdx.x;\n"
      "  y[i] = 1.0f +;\n"
      "}\n";
  CompileOptions o;
  o.use_cache = false;
  CompileResult r = compile_cuda(bad, "broken.cu", o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("broken.cu(3)"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
  EXPECT_NE(r.error.find("   3 |   y[i] = 1.0f +;"), std::string::npos) << r.error;
  EXPECT_TRUE(r.cubin.empty());
}

TEST(Nvrtc, BadArchIsReportedNotThrown) {
  CompileOptions o;
  o.arch = "sm80";
  CompileResult r = compile_cuda("__global__ void k() {}", "k.cu", o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("sm80"), std::string::npos);
}

TEST(Nvrtc, CacheReturnsTheSameBinary) {
  SKIP_WITHOUT_NVRTC();
  // In memory only: a warm disk cache (an earlier run's) would answer the sm_80 miss below.
  const std::string saved_dir = CompileCache::global().disk_dir();
  CompileCache::global().set_disk_dir("");
  CompileCache::global().clear_memory();
  const std::string src = "extern \"C\" __global__ void cached_k(float* y) { y[threadIdx.x] = 2; }";
  CompileOptions o;
  o.arch = "sm_90";
  CompileResult a = compile_cuda(src, "a.cu", o);
  ASSERT_TRUE(a.ok) << a.error;
  const int64_t hits = CompileCache::global().hits();
  CompileResult b = compile_cuda(src, "a.cu", o);
  ASSERT_TRUE(b.ok);
  EXPECT_TRUE(b.from_cache);
  EXPECT_EQ(CompileCache::global().hits(), hits + 1);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.cubin, b.cubin);
  // Another arch is another key.
  o.arch = "sm_80";
  CompileResult c = compile_cuda(src, "a.cu", o);
  EXPECT_FALSE(c.from_cache);
  EXPECT_NE(c.key, a.key);
  CompileCache::global().set_disk_dir(saved_dir);
}

TEST(Nvrtc, DiskCacheSurvivesClearingMemory) {
  SKIP_WITHOUT_NVRTC();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("souffle_nvrtc_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string saved_dir = CompileCache::global().disk_dir();
  CompileCache::global().set_disk_dir(dir.string());
  const std::string src = "extern \"C\" __global__ void disk_k(int* y) { y[threadIdx.x] = 7; }";
  CompileOptions o;
  CompileResult a = compile_cuda(src, "d.cu", o);
  ASSERT_TRUE(a.ok) << a.error;
  CompileCache::global().clear_memory();
  CompileResult b = compile_cuda(src, "d.cu", o);
  CompileCache::global().set_disk_dir(saved_dir);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(b.ok);
  EXPECT_TRUE(b.from_cache);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptx, b.ptx);
  ASSERT_NE(b.find_kernel("disk_k"), nullptr);
  EXPECT_EQ(b.find_kernel("disk_k")->registers, a.find_kernel("disk_k")->registers);
}

TEST(Nvrtc, ParallelCompilationKeepsOrder) {
  SKIP_WITHOUT_NVRTC();
  std::vector<CompileJob> jobs;
  for (int i = 0; i < 6; ++i) {
    CompileJob j;
    j.name = "k" + std::to_string(i) + ".cu";
    j.source = "extern \"C\" __global__ void par_" + std::to_string(i) +
               "(float* y) { y[threadIdx.x] += " + std::to_string(i) + ".0f; }";
    j.options.arch = i % 2 ? "sm_90" : "sm_80";
    j.options.use_cache = false;
    if (i == 3) j.source += " syntax error here";
    jobs.push_back(j);
  }
  ThreadPool pool(2);
  auto results = compile_cuda_many(jobs, &pool);
  ASSERT_EQ(results.size(), jobs.size());
  for (int i = 0; i < 6; ++i) {
    if (i == 3) {
      EXPECT_FALSE(results[i].ok);
      EXPECT_NE(results[i].log.find("k3.cu"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(results[i].ok) << results[i].error;
    EXPECT_NE(results[i].find_kernel("par_" + std::to_string(i)), nullptr);
    EXPECT_EQ(results[i].arch, jobs[i].options.arch);
  }
}

TEST(Nvrtc, ParsesPtxasVerboseLines) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_80'\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Function properties for k1\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 16 bytes cumulative stack size, "
      "2048 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_80'\n"
      "ptxas info    : Function properties for k2\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, 360 bytes cmem[0]\n";
  auto ks = parse_ptxas_info(log);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "k1");
  EXPECT_EQ(ks[0].registers, 40);
  EXPECT_EQ(ks[0].barriers, 1);
  EXPECT_EQ(ks[0].shared_bytes, 2048);
  EXPECT_EQ(ks[0].stack_bytes, 16);
  EXPECT_EQ(ks[0].spill_store_bytes, 4);
  EXPECT_EQ(ks[0].spill_load_bytes, 12);
  EXPECT_EQ(ks[0].const_bytes, 380);
  EXPECT_EQ(ks[1].name, "k2");
  EXPECT_EQ(ks[1].registers, 8);
  EXPECT_EQ(ks[1].shared_bytes, 0);
}

// A program of one entry (a deduplicated kernel: its stage functions under neutral names, not
// ENTRY_stageN): every device function's spills count for the entry, and its largest frame is
// added to the entry's stack. parse_ptxas_functions lists the functions alone.
TEST(Nvrtc, OneEntryOwnsEveryDeviceFunctionOfItsProgram) {
  const std::string log =
      "ptxas info    : Compiling entry function 'souffle_k1' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z3_c0PKfPf\n"
      "ptxas         .     72 bytes stack frame, 72 bytes spill stores, 72 bytes spill loads\n"
      "ptxas info    : Function properties for _Z3_c1PKfPf\n"
      "ptxas         .     8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Function properties for souffle_k1\n"
      "ptxas         .     48 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 128 registers, 380 bytes cmem[0]\n";
  auto ks = parse_ptxas_info(log);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].spill_store_bytes, 80);
  EXPECT_EQ(ks[0].spill_load_bytes, 76);
  EXPECT_EQ(ks[0].callee_stack_bytes, 72);
  EXPECT_EQ(ks[0].stack_bytes, 48 + 72);
  auto fs = parse_ptxas_functions(log);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].name, "_Z3_c0PKfPf");
  EXPECT_EQ(fs[1].spill_load_bytes, 4);
}

TEST(Nvrtc, NumberedSource) {
  EXPECT_EQ(numbered_source("a\nb\n"), "   1 | a\n   2 | b\n");
}

}  // namespace
}  // namespace souffle::gpu
