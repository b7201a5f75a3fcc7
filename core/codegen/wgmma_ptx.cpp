#include "core/codegen/wgmma_ptx.h"

namespace souffle::codegen {

namespace {

std::string type_suffix(loop::MmaType t) {
  return t == loop::MmaType::BF16 ? "bf16" : "f16";
}

std::string mma_name(loop::MmaType t, int64_t n) {
  return "souffle_wgmma_m64n" + std::to_string(n) + "k16_" + type_suffix(t);
}

/// One inline-PTX function: D (n/2 f32 registers, read and written) += or = A x B by
/// descriptors; scale-d is a predicate set from the template argument.
std::string mma_function(loop::MmaType t, int64_t n) {
  const int64_t regs = n / 2;
  std::string list, outs;
  for (int64_t i = 0; i < regs; ++i) {
    list += (i ? ", %" : "%") + std::to_string(i);
    outs += std::string(i ? ", " : "") + (i % 8 == 0 && i ? "\n        " : "") + "\"+f\"(d[" +
            std::to_string(i) + "])";
  }
  const std::string da = std::to_string(regs), db = std::to_string(regs + 1),
                    acc = std::to_string(regs + 2), ty = type_suffix(t);
  return "template <bool Acc>\n__device__ __forceinline__ void " + mma_name(t, n) +
         "(float* d, unsigned long long da, unsigned long long db) {\n"
         "  asm volatile(\n"
         "      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" +
         acc + ", 0;\\n\"\n      \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
         "k16.f32." + ty + "." + ty + " {" + list + "}, %" + da + ", %" + db +
         ", p, 1, 1, 0, 0;\\n}\\n\"\n      : " + outs +
         "\n      : \"l\"(da), \"l\"(db), \"n\"(int(Acc)));\n}\n";
}

}  // namespace

std::string wgmma_ptx_helpers(const std::set<std::pair<loop::MmaType, int64_t>>& shapes) {
  // Descriptor: start address, leading and stride byte offsets, each >> 4, in bits 0-13,
  // 16-29 and 32-45; base offset 0 and layout type 0 (no swizzle).
  std::string s = R"(__device__ __forceinline__ unsigned long long souffle_wgmma_desc(const void* p,
                                                                    unsigned lbo, unsigned sbo) {
  const unsigned long long a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return ((a & 0x3FFFFull) >> 4) | (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32);
}
// The async-proxy fence first: this thread's shared-memory writes (stores, completed cp.async)
// become visible to the wgmmas' reads, which go through the async proxy.
__device__ __forceinline__ void souffle_wgmma_fence() {
  asm volatile("fence.proxy.async.shared::cta;\nwgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void souffle_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void souffle_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int Count>
__device__ __forceinline__ void souffle_wgmma_fence_regs(float* d) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
)";
  for (const auto& [t, n] : shapes) s += mma_function(t, n);
  return s;
}

std::string ptx_wgmma_mma(const loop::WgmmaMma& m, const std::string& d, const std::string& a,
                          const std::string& b) {
  auto desc = [](const std::string& p, int64_t lbo, int64_t sbo) {
    return "souffle_wgmma_desc(" + p + ", " + std::to_string(lbo) + "u, " + std::to_string(sbo) +
           "u)";
  };
  return mma_name(m.type, m.n) + "<" + (m.accumulate ? "true" : "false") + ">(" + d + ", " +
         desc(a, m.a_lbo, m.a_sbo) + ", " + desc(b, m.b_lbo, m.b_sbo) + ");";
}

std::string ptx_wgmma_fence() {
  return "souffle_wgmma_fence();";
}

std::string ptx_wgmma_commit() {
  return "souffle_wgmma_commit();";
}

std::string ptx_wgmma_wait(int64_t pending) {
  return "souffle_wgmma_wait<" + std::to_string(pending) + ">();";
}

std::string wgmma_target_arch(const std::string& arch, const std::string& source) {
  if ((arch == "sm_90" || arch == "compute_90") &&
      source.find("wgmma.mma_async") != std::string::npos)
    return arch + "a";
  return arch;
}

std::string ptx_wgmma_register_fence(const std::string& d, int64_t count) {
  return "souffle_wgmma_fence_regs<" + std::to_string(count) + ">(" + d + ");";
}

}  // namespace souffle::codegen
