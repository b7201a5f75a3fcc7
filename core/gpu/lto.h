/// \file Separate compilation of a kernel's stage functions: each outlined stage (codegen's
/// `static __device__ __noinline__ NAME_stageN`) and the kernel itself become NVRTC programs of
/// their own (`-rdc=true`), compiled side by side to SASS objects or to LTO-IR, and linked into
/// one CUBIN with nvJitLink, loaded from the CUDA toolkit at run time.
#pragma once

#include <cstdint>
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

/// How the separately compiled programs of a kernel become its one CUBIN.
enum class SeparateLink : uint8_t {
  /// Each program compiled to SASS (relocatable device code): ptxas runs per program, side by
  /// side, and nvJitLink only links them. A big kernel's ptxas time is no longer one
  /// single-threaded run over all of its code.
  Objects,
  /// Each program compiled to LTO-IR (`-dlto`): nvJitLink optimizes across them and generates the
  /// whole kernel's code in the link (one ptxas run over all of it).
  LtoIr,
};

struct SeparateOptions {
  SeparateLink link = SeparateLink::Objects;
  /// Objects: the register cap of each stage function's program, the most the kernel may use
  /// (its own cap, or what its block size allows). The linker raises the entry's registers to the
  /// most any function it calls takes, and refuses a function above the entry's own cap. 0: none.
  int function_max_registers = 0;
};

/// What a separate compile did, for reports.
struct SeparateInfo {
  bool linked = false;    ///< false: compiled whole (no stage function, or nvJitLink missing)
  std::string why_whole;  ///< why it was compiled whole
  SeparateLink link = SeparateLink::Objects;
  int programs = 0;         ///< NVRTC programs (stages + the kernel)
  int programs_cached = 0;  ///< of them, taken from the compile cache
  double nvrtc_ms = 0;      ///< wall time of the NVRTC programs (side by side)
  double link_ms = 0;       ///< nvJitLink's time
};

/// Compiles `source` as compile_cuda does, but each stage function and the kernel as NVRTC
/// programs of their own, compiled side by side (on the global pool; called from inside a
/// pool's job, one after the other) and linked with nvJitLink as `sep` says. The result carries
/// the linked CUBIN and no PTX (the programs' PTX are not one module); `kernels` holds the
/// entry's resources: registers and stack from the linked CUBIN (cubin.h) or the link's ptxas
/// lines (LtoIr), spills of every program together. Each program's result is cached as any NVRTC
/// result (its `cubin` holds its object or LTO-IR), and so is the linked result. A source
/// without stage functions, a compute_XX arch or a build without nvJitLink compiles whole
/// (compile_cuda).
CompileResult compile_cuda_separate(const std::string& source, const std::string& name,
                                    const CompileOptions& options, const SeparateOptions& sep = {},
                                    SeparateInfo* info = nullptr);

}  // namespace souffle::gpu
