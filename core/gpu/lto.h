/// \file Separate compilation of a kernel's stage functions: each outlined stage (codegen's
/// `static __device__ __noinline__ NAME_stageN`) and the kernel itself become NVRTC programs of
/// their own, compiled to LTO-IR (`-dlto -rdc=true`) in parallel, and linked into one CUBIN with
/// nvJitLink, loaded from the CUDA toolkit at run time.
#pragma once

#include <string>
#include <vector>

#include "core/gpu/nvrtc.h"

namespace souffle::gpu {

/// A translation unit cut into what every program needs (includes, helpers, declarations), its
/// stage functions and its `__global__` kernel.
struct StageSplit {
  std::string preamble;  ///< every top-level item that is neither a stage function nor the kernel
  struct Function {
    std::string name;
    std::string definition;  ///< its text with `static` dropped (external linkage)
    std::string prototype;   ///< `__device__ __noinline__ void NAME(...);`
  };
  std::vector<Function> stages;
  std::string kernel;  ///< the `extern "C" __global__` definition
  /// The stage function's own program and the kernel's program (preamble, prototypes, kernel).
  std::string stage_program(size_t i) const;
  std::string kernel_program() const;
};

/// Cuts `source` at its top-level items. False (with `why`) when it has no stage function, more
/// than one kernel, or braces that do not balance.
bool split_stage_functions(const std::string& source, StageSplit& out, std::string* why = nullptr);

/// Whether nvJitLink loads (libnvJitLink.so.13 beside NVRTC or on the library path), and its
/// version ("13.0"), or "".
bool nvjitlink_available();
std::string nvjitlink_version();

/// What a separate compile did, for reports.
struct LtoInfo {
  bool linked = false;      ///< false: compiled whole (no stage function, or nvJitLink missing)
  std::string why_whole;    ///< why it was compiled whole
  int programs = 0;         ///< NVRTC programs (stages + the kernel)
  int programs_cached = 0;  ///< of them, LTO-IR taken from the compile cache
  double nvrtc_ms = 0;      ///< wall time of the NVRTC programs (in parallel)
  double link_ms = 0;       ///< nvJitLink's time
};

/// Compiles `source` as compile_cuda does, but with its stage functions separately: the
/// result carries the linked CUBIN, the linked PTX is not produced (nvJitLink's LTO writes one
/// or the other; `ptx` stays empty), and `kernels` from ptxas' verbose lines of the link. The
/// LTO-IR of each program is cached as any NVRTC result (its `cubin` holds the LTO-IR), and so
/// is the linked result. A source without stage functions, a compute_XX arch or a build without
/// nvJitLink compiles whole (compile_cuda). Stage programs run on `pool` (the global pool when
/// null); called from inside a pool's job they run one after the other.
CompileResult compile_cuda_lto(const std::string& source, const std::string& name,
                               const CompileOptions& options, LtoInfo* info = nullptr);

}  // namespace souffle::gpu
