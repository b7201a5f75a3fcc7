// The CUBIN reader: an NVRTC-compiled kernel's registers and stack read from its ELF file agree
// with ptxas' own lines; a file cut short, overwritten with garbage or not an ELF file gives no
// functions and says why, without reading past its end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/gpu/cubin.h"
#include "core/gpu/nvrtc.h"

namespace souffle::gpu {
namespace {

// A kernel that calls a function the compiler keeps apart, whose local array needs a stack frame.
const char* kSource = R"(
__device__ __noinline__ float pick(const float* x, int i) {
  float t[16];
  for (int k = 0; k < 16; ++k) t[k] = x[(i + k) & 255];
  return t[i & 15];
}
extern "C" __global__ void calls_pick(const float* x, float* y) {
  y[threadIdx.x] = pick(x, threadIdx.x) + 1.0f;
}
)";

CompileResult compiled() {
  CompileOptions o;
  o.arch = "sm_80";
  o.use_cache = false;
  return compile_cuda(kSource, "calls_pick.cu", o);
}

TEST(Cubin, AgreesWithPtxasOnAnEntry) {
  if (!nvrtc_available()) GTEST_FAIL() << "this build has no NVRTC";
  const CompileResult r = compiled();
  ASSERT_TRUE(r.ok) << r.log;
  const KernelResources* k = r.find_kernel("calls_pick");
  ASSERT_NE(k, nullptr) << r.log;
  std::string why;
  const std::vector<CubinFunction> fs = read_cubin_functions(r.cubin, &why);
  ASSERT_FALSE(fs.empty()) << why;
  const std::optional<CubinFunction> f = find_cubin_function(r.cubin, "calls_pick");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->registers, k->registers);
  // The call tree's stack: at least the callee's local array.
  EXPECT_GE(f->min_stack_bytes, 64);
  EXPECT_FALSE(find_cubin_function(r.cubin, "no_such_kernel").has_value());
}

TEST(Cubin, ABrokenFileGivesNothingAndSaysWhy) {
  if (!nvrtc_available()) GTEST_FAIL() << "this build has no NVRTC";
  const CompileResult r = compiled();
  ASSERT_TRUE(r.ok) << r.log;
  std::string why;
  EXPECT_TRUE(read_cubin_functions({}, &why).empty());
  EXPECT_EQ(why, "not an ELF file");
  std::vector<uint8_t> garbage(r.cubin.size(), 0xA5);
  EXPECT_TRUE(read_cubin_functions(garbage, &why).empty());
  EXPECT_EQ(why, "not an ELF file");
  // Cut short anywhere, the file is refused with a reason, or (where only bytes the reader does
  // not need went, such as program headers at the end) read as the whole file is; never read
  // past its end (the sanitizer build would see it).
  const std::vector<CubinFunction> whole = read_cubin_functions(r.cubin);
  for (size_t keep = 0; keep < r.cubin.size(); keep += 1 + keep / 8) {
    std::vector<uint8_t> cut(r.cubin.begin(), r.cubin.begin() + static_cast<long>(keep));
    why.clear();
    const std::vector<CubinFunction> fs = read_cubin_functions(cut, &why);
    if (fs.empty()) {
      EXPECT_FALSE(why.empty()) << keep;
      continue;
    }
    ASSERT_EQ(fs.size(), whole.size()) << keep;
    for (size_t i = 0; i < fs.size(); ++i) EXPECT_EQ(fs[i].registers, whole[i].registers);
  }
  std::vector<uint8_t> half(r.cubin.begin(),
                            r.cubin.begin() + static_cast<long>(r.cubin.size() / 2));
  EXPECT_TRUE(read_cubin_functions(half, &why).empty());
  // Section headers that point past the end.
  std::vector<uint8_t> bad = r.cubin;
  bad[0x28] = 0xFF;
  bad[0x29] = 0xFF;
  bad[0x2A] = 0xFF;
  EXPECT_TRUE(read_cubin_functions(bad, &why).empty());
  EXPECT_EQ(why, "section headers past the end of the file");
}

}  // namespace
}  // namespace souffle::gpu
