#include "core/codegen/mma_ptx.h"

namespace souffle::codegen {

std::string mma_ptx_helpers() {
  // Register arrays are passed as pointers: the calls are inlined with constant offsets, so the
  // arrays stay in registers. Shared addresses go to PTX as 32-bit shared-window offsets.
  return R"(__device__ __forceinline__ unsigned souffle_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
template <int Bytes>
__device__ __forceinline__ void souffle_cp_async(void* dst, const void* src, bool full) {
  const int n = full ? Bytes : 0;
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(souffle_smem_addr(dst)),
                 "l"(src), "r"(n));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(souffle_smem_addr(dst)),
                 "l"(src), "n"(Bytes), "r"(n));
}
__device__ __forceinline__ void souffle_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void souffle_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
template <int Count, bool Trans>
__device__ __forceinline__ void souffle_ldmatrix(void* dst, const void* src) {
  unsigned* r = reinterpret_cast<unsigned*>(dst);
  const unsigned a = souffle_smem_addr(src);
  if (Count == 4 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if (Count == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if (Count == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else if (Count == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else if (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0]) : "r"(a));
}
__device__ __forceinline__ void souffle_mma_f16(float* d, const void* a, const void* b,
                                                const float* c) {
  const unsigned* A = reinterpret_cast<const unsigned*>(a);
  const unsigned* B = reinterpret_cast<const unsigned*>(b);
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ void souffle_mma_bf16(float* d, const void* a, const void* b,
                                                 const float* c) {
  const unsigned* A = reinterpret_cast<const unsigned*>(a);
  const unsigned* B = reinterpret_cast<const unsigned*>(b);
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ unsigned souffle_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void souffle_mma_tf32(float* d, const float* a, const float* b,
                                                 const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(souffle_tf32(a[0])), "r"(souffle_tf32(a[1])), "r"(souffle_tf32(a[2])),
        "r"(souffle_tf32(a[3])), "r"(souffle_tf32(b[0])), "r"(souffle_tf32(b[1])), "f"(c[0]),
        "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
)";
}

std::string ptx_async_copy(const std::string& dst, const std::string& src, int64_t bytes,
                           const std::string& pred) {
  return "souffle_cp_async<" + std::to_string(bytes) + ">(" + dst + ", " + src + ", " +
         (pred.empty() ? "true" : "(" + pred + ") != 0") + ");";
}

std::string ptx_async_commit() {
  return "souffle_cp_async_commit();";
}

std::string ptx_async_wait(int64_t pending) {
  return "souffle_cp_async_wait<" + std::to_string(pending) + ">();";
}

std::string ptx_matrix_load(const std::string& dst, int64_t count, bool trans,
                            const std::string& src) {
  return "souffle_ldmatrix<" + std::to_string(count) + ", " + (trans ? "true" : "false") + ">(" +
         dst + ", " + src + ");";
}

std::string ptx_mma_sync(loop::MmaType type, const std::string& d, const std::string& a,
                         const std::string& b, const std::string& c) {
  const char* fn = type == loop::MmaType::TF32   ? "souffle_mma_tf32"
                   : type == loop::MmaType::BF16 ? "souffle_mma_bf16"
                                                 : "souffle_mma_f16";
  return std::string(fn) + "(" + d + ", " + a + ", " + b + ", " + c + ");";
}

}  // namespace souffle::codegen
