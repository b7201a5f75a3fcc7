/// \file Compiling a plan: each partition scheduled, emitted as CUDA C and compiled with NVRTC.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/codegen/codegen_cuda.h"
#include "core/codegen/source_map.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/loop/timeline.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_kernels.h"
#include "core/schedule/plan_pricer.h"

namespace souffle {

/// Where a compile stands, told after each distinct program has compiled for every arch.
struct CompileProgress {
  int done = 0;           ///< distinct programs compiled (or taken from the cache) so far
  int total = 0;          ///< distinct programs to compile
  int from_cache = 0;     ///< of `done`, those whose every arch came from the compile cache
  double elapsed_ms = 0;  ///< since the first NVRTC call
  std::string program;    ///< the one just done: its first kernel's name (+N more sharing it)
  double program_ms = 0;  ///< its NVRTC time, all archs
  std::string slowest;    ///< the slowest program so far, named like `program`
  double slowest_ms = 0;
};

/// How a kernel that calls stage functions (codegen/outline.h) is compiled.
enum class SeparateCompile : uint8_t {
  /// Each stage function and the kernel an NVRTC program of its own, compiled to SASS side by
  /// side (one ptxas run per program, on every core), linked by nvJitLink without optimizing
  /// across them; each function capped at the registers the kernel may have. The default
  /// (docs/compile_dedup.md measures it against the others).
  Objects,
  /// Kernels of kLtoMinStages stages or more emitted with every stage outlined; each program
  /// compiled to LTO-IR, and nvJitLink's link optimizes and generates the whole kernel's code.
  Lto,
  /// One NVRTC program per kernel, its stage functions in it.
  Whole,
};
/// "objects", "lto", "whole"; and back (nullopt for another word).
const char* separate_compile_name(SeparateCompile s);
std::optional<SeparateCompile> parse_separate_compile(const std::string& s);

struct CompileOptions {
  /// NVRTC targets, each "sm_XX" (PTX + CUBIN) or "compute_XX" (PTX only).
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  /// The pricer that priced the plan (plan::PlanOptions::pricer): the kernels it built are
  /// taken instead of being built again. Null: built here (schedule::plan_build's options).
  std::shared_ptr<const schedule::PlanPricer> pricer;
  /// NVRTC compilations at once; 0 uses the process-wide pool.
  int threads = 0;
  /// Co-residency is judged on this GPU; when its name is empty, on the built-in spec named by
  /// the plan (plan.gpu).
  gpu::GpuSpec gpu;
  /// The process-wide NVRTC cache, in memory and on disk (gpu::CompileCache): an unchanged
  /// kernel compiles once, in this process or any later one. False: every kernel is compiled.
  bool use_cache = true;
  /// Grid barriers or per-tile flags between dependent stages (KernelBuildOptions::sync); other
  /// than Grid, the kernels are built again instead of taken from the pricer.
  schedule::SyncMode sync = schedule::SyncMode::Grid;
  /// Kernels per NVRTC translation unit. 1: each kernel alone (its PTX is its own, as a bundle
  /// needs). More: one unit of up to `batch` kernels sharing one preamble, so the CUDA headers
  /// are parsed once per batch (a check of many kernels runs several times faster); per-kernel
  /// resources still come from ptxas, PTX and CUBIN are not kept, and a batch that fails is
  /// compiled again kernel by kernel so the error names its kernel.
  int batch = 1;
  /// Whether the stages of merged kernels become functions of their own (see
  /// codegen::StageOutlining; Auto outlines only kernels of many stages).
  codegen::StageOutlining outlining = codegen::StageOutlining::Auto;
  /// Timeline records in every kernel (loop/timeline.h, docs/timeline.md); off by default.
  loop::TimelineOptions timeline;
  /// Launches whose code is the same up to names (kernel_dedup.h) share one compiled image: one
  /// NVRTC program per distinct code, under a neutral entry name (CompiledKernel::entry). False:
  /// each kernel is compiled alone under its own name.
  bool dedup = true;
  /// How a kernel that calls stage functions is compiled (gpu/lto.h, docs/compile_dedup.md).
  SeparateCompile separate = SeparateCompile::Objects;
  /// Told after each distinct program is compiled (from the compiling threads, one call at a
  /// time); null says nothing.
  std::function<void(const CompileProgress&)> progress;
  /// Optional: checked before each partition's kernels are built, each kernel is instrumented
  /// and emitted, and each NVRTC program is compiled; once set, compile_plan stops there and
  /// throws Cancelled (core/support/cancel.h).
  const std::atomic<bool>* cancel = nullptr;
  /// Optional: told each partition's kernel name as its build starts.
  std::function<void(const std::string&)> building;
};

/// SeparateCompile::Lto links kernels of this many stages or more (fewer: whole-program NVRTC).
constexpr int kLtoMinStages = 4;

struct CompiledKernel {
  int partition = 0;    ///< plan::Partition::id
  std::string name;     ///< CUDA function name (`extern "C"`)
  loop::Kernel kernel;  ///< the merged loop-IR kernel the source was emitted from
  std::string cuda;     ///< the translation unit (codegen::emit_cuda)
  /// Which lines of `cuda` belong to which stage and boundary, as the emitter recorded them.
  codegen::SourceMap cuda_map;
  /// Emits `kernel` into `cuda` and `cuda_map` with `options`.
  void emit_source(const codegen::CudaEmitOptions& options);
  std::vector<gpu::CompileResult> per_arch;  ///< in CompileOptions::archs order
  loop::LaunchConfig launch;                 ///< grid, block, dynamic shared memory, cooperative
  /// Blocks resident at once on the GPU with the compiled registers and shared memory (the
  /// largest register count over the archs when none matches the GPU's compute capability).
  int64_t co_resident = 0;
  /// Registers per thread the kernel was compiled under so that its cooperative grid is
  /// co-resident; 0 when uncapped. The cap is in `cuda` (`__maxnreg__`), so the PTX and a
  /// bundle built from the source keep it.
  int register_cap = 0;
  std::string co_resident_limit;  ///< what limits co_resident ("registers", "threads", ...)
  /// The `extern "C"` function in per_arch's PTX and CUBIN: a neutral name shared by every
  /// launch of the same code ("souffle_k" + hash, kernel_dedup.h), or `name` when compiled
  /// alone. per_arch's resources list the kernel under `name` too.
  std::string entry;
  /// Index in the report of the first kernel whose compiled image this one shares (its own
  /// index when it is the first or shares none); -1 before compiling.
  int image = -1;
  /// Compiled separately and linked with nvJitLink (CompileOptions::separate) for every arch.
  bool separately_linked = false;
  /// Where separate compilation was asked for and an arch compiled whole instead: that arch and
  /// why ("sm_90: nvJitLink is not available"); empty otherwise.
  std::string compiled_whole_because;
  /// The function to look up in the image: `entry`, else `name`.
  const std::string& image_entry() const { return entry.empty() ? name : entry; }
  /// Why this kernel cannot be built, compiled or launched (names the kernel, and the stage and
  /// TEs where known); empty when it is fine.
  std::string error;
  bool ok() const { return error.empty(); }
  /// The largest register count / spilled bytes over the archs compiled.
  int max_registers() const;
  int64_t spill_bytes() const;
};

struct CompileReport {
  std::vector<CompiledKernel> kernels;  ///< in plan order
  double build_ms = 0;                  ///< scheduling, merging and emitting
  double compile_ms = 0;                ///< NVRTC wall time over all kernels and archs
  int errors = 0;                       ///< kernels with an error
  /// Distinct compiled programs (kernels sharing an image count once) and, of them, those whose
  /// every arch came from the compile cache.
  int programs = 0, programs_from_cache = 0;
  bool ok() const { return errors == 0; }
};

/// Schedules, emits and NVRTC-compiles every kernel of `plan`: run_pipeline from build kernels
/// to compile (core/session/pipeline.h). Never throws for a kernel that
/// fails: its error lands in its entry, so a GUI can show the rest. A cooperative kernel whose
/// grid exceeds the co-residency on the GPU is an error naming the kernel. Throws UserError for
/// an unknown arch or GPU.
CompileReport compile_plan(const plan::FusionPlan& plan, const CompileOptions& options);

/// The build half of compile_plan: the plan's kernels as schedule::plan_build makes their
/// options (what its pricing built: taken from `pricer` when it priced them), one entry per
/// launch in plan order; a partition that cannot be built gets an entry with its error, the
/// others are built alone.
/// With `cancel` (CompileOptions::cancel) it throws Cancelled between partitions once the flag
/// is set; `building` is told each partition's kernel name as its build starts. With `only`
/// (partition ids), the kernels of those partitions alone (PipelineOptions::partitions).
std::vector<CompiledKernel> build_compiled_kernels(
    const plan::FusionPlan& plan, const schedule::PlanPricer* pricer = nullptr,
    schedule::SyncMode sync = schedule::SyncMode::Grid, const std::atomic<bool>* cancel = nullptr,
    const std::function<void(const std::string&)>& building = {},
    const std::vector<int>& only = {});
/// The emit half: each built kernel's CUDA C (`cuda`, `name`, `launch`); an error names a kernel
/// that cannot be emitted. Throws Cancelled between kernels once `cancel` is set.
void emit_compiled_kernels(std::vector<CompiledKernel>& kernels,
                           codegen::StageOutlining outlining = codegen::StageOutlining::Auto,
                           const std::atomic<bool>* cancel = nullptr);

/// The compile half of compile_plan: compiles each kernel's `cuda` for every arch and fills
/// per_arch, co_resident and error (kernels that already carry an error are left alone).
/// Kernels of the same code (CompileOptions::dedup) are compiled once and share the image
/// (`entry`, `image`). Returns the NVRTC wall time in milliseconds.
double compile_kernels(std::vector<CompiledKernel>& kernels, const gpu::GpuSpec& gpu,
                       const CompileOptions& options);
/// Distinct programs among compiled `kernels` (by `image`) and those of them entirely from the
/// compile cache.
void count_programs(const std::vector<CompiledKernel>& kernels, int& programs, int& from_cache);

/// Checks an arch name ("sm_80", "compute_90"); throws UserError naming it otherwise.
void check_arch(const std::string& arch);

/// The NVRTC log of a failed compile followed by the numbered source lines around each line
/// the log points at (`context` lines either side), for a person to read.
std::string compile_error_excerpt(const std::string& source, const std::string& log,
                                  int context = 3);
/// The same for a kernel's CUDA C, each excerpt naming the stage its line belongs to (from
/// CompiledKernel::cuda_map).
std::string compile_error_excerpt(const CompiledKernel& ck, const std::string& log,
                                  int context = 3);

}  // namespace souffle
