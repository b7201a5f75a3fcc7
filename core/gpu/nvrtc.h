/// \file Run-time compilation of CUDA C with NVRTC: PTX, CUBIN, per-kernel resources, a cache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace souffle {
class ThreadPool;
}

namespace souffle::gpu {

class DiskCompileCache;

struct CompileOptions {
  /// "sm_80", "sm_90", any "sm_XX" (PTX + CUBIN) or "compute_XX" (PTX only).
  std::string arch = "sm_80";
  bool fast_math = false;
  bool line_info = false;
  int max_registers = 0;                  ///< 0: no limit
  std::vector<std::string> include_dirs;  ///< searched before the CUDA toolkit's
  std::vector<std::string> defines;       ///< "NAME" or "NAME=VALUE"
  std::vector<std::string> extra_flags;   ///< passed to NVRTC as they are
  /// Look results up in, and store them into, the process-wide cache (CompileCache::global()):
  /// in memory, and on disk in the cache folder (compile_cache.h). False: NVRTC compiles, and
  /// nothing is read from or written to either.
  bool use_cache = true;
};

/// What ptxas reports for one `__global__` function.
struct KernelResources {
  std::string name;
  int registers = 0;         ///< per thread
  int barriers = 0;          ///< named barriers used
  int64_t shared_bytes = 0;  ///< static shared memory per block
  /// Stack frame per thread: the entry's own plus the largest of its stage functions'.
  int64_t stack_bytes = 0;
  /// Spilled bytes of the entry and of its stage functions (`NAME_stageN`) together.
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t callee_stack_bytes = 0;  ///< the largest frame of its stage functions
  int64_t const_bytes = 0;         ///< cmem[0], the kernel's parameters and constants
};

struct CompileResult {
  bool ok = false;
  std::string name;  ///< the program's file name as NVRTC saw it (errors refer to it)
  std::string arch;
  std::string ptx;
  /// Empty for a compute_XX arch or a failed compile; compiled with `-dlto` (lto.h), the
  /// program's LTO-IR.
  std::vector<uint8_t> cubin;
  std::string log;  ///< NVRTC's log, ptxas' verbose lines included
  /// Set when !ok: the log followed by the source with line numbers, for the user.
  std::string error;
  std::vector<KernelResources> kernels;
  double compile_ms = 0;
  bool from_cache = false;
  std::string key;  ///< hex hash of source + options (the cache key)

  /// The resources of kernel `kernel_name`; nullptr when there is none of that name.
  const KernelResources* find_kernel(const std::string& kernel_name) const;
};

/// Compiles `source` (named `name`, e.g. "kernel_3.cu", in messages). A compile error returns
/// ok == false with the log and the numbered source; it never throws for bad CUDA C. Without NVRTC
/// in the build, returns ok == false saying so.
CompileResult compile_cuda(const std::string& source, const std::string& name,
                           const CompileOptions& options);

struct CompileJob {
  std::string source;
  std::string name;
  CompileOptions options;
};
/// Compiles every job on `pool` (the global pool when null); results in the jobs' order.
std::vector<CompileResult> compile_cuda_many(const std::vector<CompileJob>& jobs,
                                             ThreadPool* pool = nullptr);

/// Results by key, in memory and in a folder on disk (DiskCompileCache: one file per key), so
/// that an unchanged kernel is never compiled twice, in this process or the next one. The key is
/// a hash of the source, the NVRTC options (arch included), NVRTC's version and library, and the
/// entry format. The folder is default_compile_cache_dir() with the cap
/// default_compile_cache_bytes() until set otherwise.
class CompileCache {
 public:
  static CompileCache& global();
  /// "" turns the disk cache off. The folder is created when needed; `max_bytes` < 0 keeps the
  /// default cap.
  void set_disk_dir(const std::string& dir, int64_t max_bytes = -1);
  std::string disk_dir() const;
  /// The disk cache, or null when it is off.
  std::shared_ptr<DiskCompileCache> disk() const;
  /// Where the disk cache's problems go (each kind said once per folder); default: a
  /// "warning: ..." line on stderr. Null says nothing.
  void set_warning_handler(std::function<void(const std::string&)> handler);
  void clear_memory();
  /// Lookups answered (from memory or disk) and not, in this process.
  int64_t hits() const;
  int64_t misses() const;

  /// Implementation hooks for compile_cuda.
  bool lookup(const std::string& key, const std::string& full_key, CompileResult& out);
  void store(const std::string& full_key, const CompileResult& result);

 private:
  CompileCache() = default;
  struct Impl;
  Impl& impl() const;
};

/// The folder that holds cuda_runtime.h / cooperative_groups.h for NVRTC: the one set with
/// set_cuda_include_dir, else $SOUFFLE_CUDA_INCLUDE, else the toolkit's found at build time.
std::string cuda_include_dir();
void set_cuda_include_dir(const std::string& dir);

/// Whether this build has NVRTC, and its version ("13.0"), or "" without it.
bool nvrtc_available();
std::string nvrtc_version();

/// "  1 | first line\n  2 | ..." — how a failing kernel is shown.
std::string numbered_source(const std::string& source);

/// Whether `arch` names an NVRTC target: "sm_" or "compute_", two or three digits, and an
/// optional "a" or "f" ("sm_80", "sm_90a", "compute_100f").
bool is_nvrtc_arch(const std::string& arch);

/// Parses ptxas' `-v` lines ("Compiling entry function", "Used N registers, ...") into one record
/// per entry function, in the order they appear.
std::vector<KernelResources> parse_ptxas_info(const std::string& log);
/// The device functions of the same lines ("Function properties for NAME" not of an entry):
/// each one's name, stack frame and spill bytes.
std::vector<KernelResources> parse_ptxas_functions(const std::string& log);

}  // namespace souffle::gpu
