/// \file Separate compilation of a kernel's stage functions: each outlined stage (codegen's
/// `static __device__ __noinline__ NAME_stageN`, found where the emitter says it wrote it) and
/// the kernel itself become NVRTC programs of their own (`-rdc=true`), compiled side by side to
/// SASS objects or to LTO-IR, and linked into one CUBIN with nvJitLink, loaded from the CUDA
/// toolkit at run time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu/nvrtc.h"

namespace souffle::gpu {

/// Where a function of a translation unit lies, by line (1-based, inclusive), as the emitter that
/// wrote the unit recorded it (codegen's EmittedLine records; nothing reads the text to find it).
struct FunctionLines {
  std::string name;   ///< the function's name as emitted (names its program)
  int first = 0;      ///< its first line (the comments before its head)
  int head = 0;       ///< the line its head starts on: `static __device__ __noinline__ void ...`
  int head_last = 0;  ///< the line that ends its head and opens its body (`... {`)
  int last = 0;       ///< its closing `}`
};

/// The stage functions and the kernel of a translation unit of one kernel, by line. Every line
/// before the kernel outside the stage functions is the preamble; the lines from the kernel's
/// first to the end, the kernel.
struct UnitLayout {
  std::vector<FunctionLines> stages;  ///< in the unit's order
  FunctionLines kernel;               ///< first 0: the unit has no kernel
};

/// A translation unit cut into what every program needs (includes, helpers, declarations), its
/// stage functions and its `__global__` kernel.
struct StageSplit {
  std::string preamble;  ///< every line before the kernel that is in no stage function
  struct Function {
    std::string name;
    std::string definition;  ///< its lines, with the head's `static ` dropped (external linkage)
    std::string prototype;   ///< `__device__ __noinline__ void NAME(...);`: its head, declared
  };
  std::vector<Function> stages;
  std::string kernel;  ///< the `extern "C" __global__` definition and what follows it
  /// The stage function's own program and the kernel's program (preamble, prototypes, kernel).
  std::string stage_program(size_t i) const;
  std::string kernel_program() const;
};

/// Cuts `source` at the lines `layout` gives (a text the layout's emitter wrote, or one that keeps
/// its lines, such as the canonical text of kernel_dedup). False (with `why`) when the layout has
/// no stage function or no kernel, or its lines are not the source's (out of range, out of
/// order, a stage head without `static ` or one that opens no body).
bool split_stage_functions(const std::string& source, const UnitLayout& layout, StageSplit& out,
                           std::string* why = nullptr);

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

/// Compiles `source` as compile_cuda does, but each stage function and the kernel (where
/// `layout` says they are) as NVRTC programs of their own, compiled side by side (on the global
/// pool; called from inside a pool's job, one after the other) and linked with nvJitLink as `sep`
/// says. The result carries the linked CUBIN and no PTX (the programs' PTX are not one module);
/// `kernels` holds the entry's resources: registers and stack from the linked CUBIN (cubin.h) or
/// the link's ptxas lines (LtoIr), spills of every program together. Each program's result is
/// cached as any NVRTC result (its `cubin` holds its object or LTO-IR), and so is the linked
/// result. A source without stage functions, a compute_XX arch or a build without nvJitLink
/// compiles whole (compile_cuda).
CompileResult compile_cuda_separate(const std::string& source, const UnitLayout& layout,
                                    const std::string& name, const CompileOptions& options,
                                    const SeparateOptions& sep = {}, SeparateInfo* info = nullptr);

}  // namespace souffle::gpu
