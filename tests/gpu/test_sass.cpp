// SASS: nvdisasm's listing parsed (opcodes counted by kind, instructions tied to the kernel's own
// CUDA lines through inlining chains), and real cubins from NVRTC disassembled: a wmma kernel
// has HMMA, LDSM and BAR on the lines of its mma_sync, load and barrier; cp.async is LDGSTS; a
// dynamically indexed local array is local memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "core/gpu/nvrtc.h"
#include "core/gpu/sass.h"

namespace souffle::gpu {
namespace {

const char* kListing = R"(	.target	sm_80

//--------------------- .text.k                   --------------------------
	.section	.text.k,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=22"
k:
.text.k:
	//## File "/tmp/x/k.cu", line 3
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
	//## File "/tmp/x/k.cu", line 7
        /*00f0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
	//## File "/usr/local/cuda/include/crt/mma.hpp", line 91 inlined at "/tmp/x/k.cu", line 12
        /*01c0*/                   LDSM.16.M88.4 R12, [R10] ;
	//## File "/usr/local/cuda/include/crt/mma.hpp", line 626 inlined at "/tmp/x/k.cu", line 14
	//## File "/tmp/x/k.cu", line 14
        /*01d0*/                   HMMA.16816.F32 R16, R12.reuse, R6, RZ ;
        /*01e0*/              @!P0 HMMA.16816.F32 R12, R12, R4, RZ ;
	//## File "/tmp/x/k.cu", line 20
        /*0200*/                   LDGSTS.E.BYPASS.128 [R3], [R4.64] ;
        /*0210*/                   STL [R1], R2 ;
        /*0220*/                   LDL R2, [R1] ;
        /*0230*/                   EXIT ;
.L_x_1:
//--------------------- .text.k_stage0            --------------------------
	.sectioninfo	@"SHI_REGISTERS=8"
k_stage0:
        /*0000*/                   RET.REL.NODEC R20 0x0 ;
)";

TEST(Sass, ParsesOpcodesRegistersAndTheKernelsOwnLines) {
  const SassListing l = parse_nvdisasm(kListing, "k.cu");
  ASSERT_EQ(l.functions.size(), 2u);
  const SassFunction& f = l.functions[0];
  EXPECT_EQ(f.name, "k");
  EXPECT_EQ(f.registers, 22);
  ASSERT_EQ(f.code.size(), 9u);
  EXPECT_EQ(f.mix.total, 9);
  EXPECT_EQ(f.mix.mma, 2);
  EXPECT_EQ(f.mix.ldsm, 1);
  EXPECT_EQ(f.mix.bar, 1);
  EXPECT_EQ(f.mix.async_copy, 1);
  EXPECT_EQ(f.mix.local_load, 1);
  EXPECT_EQ(f.mix.local_store, 1);
  // A header's instruction takes the kernel line it was inlined at.
  EXPECT_EQ(f.code[2].opcode, "LDSM");
  EXPECT_EQ(f.code[2].line, 12);
  EXPECT_EQ(f.code[3].line, 14);
  EXPECT_EQ(f.code[4].opcode, "HMMA");  // under a predicate
  EXPECT_EQ(f.code[4].address, 0x1e0);
  EXPECT_EQ(l.functions[1].registers, 8);
  EXPECT_EQ(l.mix.total, 10);
  std::vector<int> lines;
  const std::string text = sass_text(l, &lines);
  EXPECT_NE(text.find("HMMA.16816.F32 R16, R12.reuse, R6, RZ ;  // line 14"), std::string::npos)
      << text;
  ASSERT_EQ(lines.size(), 12u);  // 2 function headers, 10 instructions
  EXPECT_EQ(lines[0], 0);
  EXPECT_EQ(lines[4], 14);
}

TEST(Sass, OpcodeKinds) {
  SassMix m;
  for (const char* op : {"HGMMA", "UTMALDG", "UBLKCP", "SYNCS", "FFMA", "IMMA"}) m.add(op);
  EXPECT_EQ(m.total, 6);
  EXPECT_EQ(m.mma, 2);
  EXPECT_EQ(m.async_copy, 2);
  EXPECT_EQ(m.bar, 1);
  SassMix n = m;
  n += m;
  EXPECT_EQ(n.mma, 4);
}

TEST(Sass, MissingToolIsSaid) {
  set_nvdisasm_path("/nonexistent/nvdisasm");
  EXPECT_EQ(find_nvdisasm(), "");
  const Disassembly d = disassemble({1, 2, 3}, "k.cu");
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("nvdisasm"), std::string::npos);
  EXPECT_NE(d.error.find("scripts/setup.sh"), std::string::npos);
  set_nvdisasm_path("");
}

const char* kKernels = R"(#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void tc(const half* a, const half* b, float* c) {
  __shared__ __align__(32) half sa[16 * 16];
  sa[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, sa, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
extern "C" __global__ void copy(const float4* g, float* out) {
  __shared__ float4 s[128];
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&s[threadIdx.x]));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(g + threadIdx.x));
  asm volatile("cp.async.commit_group;\n");
  asm volatile("cp.async.wait_group 0;\n");
  __syncthreads();
  out[threadIdx.x] = s[127 - threadIdx.x].x;
}
extern "C" __global__ void local(const int* idx, float* out) {
  float v[256];
  for (int i = 0; i < 256; ++i) v[i] = out[i];
  v[idx[0]] = 1.f;
  out[threadIdx.x] = v[idx[threadIdx.x]];
}
)";

TEST(Sass, DisassemblesNvrtcCubinsByLine) {
  if (!nvrtc_available()) GTEST_FAIL() << "this build has no NVRTC";
  ASSERT_NE(find_nvdisasm(), "") << nvdisasm_missing_message();
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    CompileOptions o;
    o.arch = arch;
    o.line_info = true;
    o.use_cache = false;
    const CompileResult r = compile_cuda(kKernels, "sass_test.cu", o);
    ASSERT_TRUE(r.ok) << r.error;
    const Disassembly d = disassemble(r.cubin, "sass_test.cu");
    ASSERT_TRUE(d.ok) << d.error;
    std::map<std::string, const SassFunction*> by;
    for (const SassFunction& f : d.listing.functions) by[f.name] = &f;
    ASSERT_TRUE(by.count("tc") && by.count("copy") && by.count("local"));
    const SassFunction& tc = *by["tc"];
    EXPECT_GT(tc.mix.mma, 0);
    EXPECT_GT(tc.mix.bar, 0);
    // sm_90 cubins carry no SHI_REGISTERS (ptxas' report has them).
    if (std::string(arch) == "sm_80") {
      EXPECT_GT(tc.registers, 0);
    }
    for (const SassInstruction& i : tc.code) {
      if (i.opcode == "HMMA") {
        EXPECT_EQ(i.line, 14) << i.text;
      }
    }
    EXPECT_GT(by["copy"]->mix.async_copy, 0);
    EXPECT_EQ(tc.mix.async_copy, 0);
    EXPECT_GT(by["local"]->mix.local_load + by["local"]->mix.local_store, 0);
    EXPECT_EQ(tc.mix.local_load + tc.mix.local_store, 0);
  }
}

}  // namespace
}  // namespace souffle::gpu
