#include "core/gpu/nvrtc.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "core/gpu/compile_cache.h"
#include "core/support/error.h"
#include "core/support/thread_pool.h"

#ifdef SOUFFLE_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace souffle::gpu {

namespace {

// Two FNV-1a passes with different offsets give a 128-bit name for a cache file; the memory cache
// compares the full key text, and a disk entry stores it too, so a collision can never return the
// wrong binary.
std::string hash_hex(const std::string& s) {
  uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : s) {
    h1 = (h1 ^ c) * 1099511628211ull;
    h2 = (h2 ^ c) * 0x100000001b3ull;
    h2 ^= h2 >> 29;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

std::vector<std::string> nvrtc_flags(const CompileOptions& o) {
  std::vector<std::string> f;
  f.push_back("--gpu-architecture=" + o.arch);
  f.push_back("-std=c++17");
  f.push_back("-default-device");
  // ptxas' verbose lines carry the per-kernel registers, stack, spills and shared memory.
  // An LTO-IR compile (-dlto, lto.h) runs no ptxas: its figures come from the link.
  const bool lto =
      std::find(o.extra_flags.begin(), o.extra_flags.end(), "-dlto") != o.extra_flags.end();
  if (o.arch.rfind("sm_", 0) == 0 && !lto) f.push_back("--ptxas-options=-v");
  if (o.fast_math) f.push_back("--use_fast_math");
  if (o.line_info) f.push_back("-lineinfo");
  if (o.max_registers > 0) f.push_back("--maxrregcount=" + std::to_string(o.max_registers));
  for (const auto& d : o.defines) f.push_back("-D" + d);
  for (const auto& d : o.include_dirs) f.push_back("-I" + d);
  const std::string cuda_inc = cuda_include_dir();
  if (!cuda_inc.empty()) {
    f.push_back("-I" + cuda_inc);
    // cooperative_groups pulls in <cuda/std/...>, which CUDA 13 keeps under include/cccl.
    std::error_code ec;
    if (std::filesystem::is_directory(cuda_inc + "/cccl", ec))
      f.push_back("-I" + cuda_inc + "/cccl");
  }
  for (const auto& x : o.extra_flags) f.push_back(x);
  return f;
}

/// The number written just before `phrase` in `line` ("384 bytes smem" for " bytes smem").
std::optional<long long> number_before(const std::string& line, const std::string& phrase) {
  for (size_t at = line.find(phrase); at != std::string::npos; at = line.find(phrase, at + 1)) {
    size_t from = at;
    while (from > 0 && std::isdigit(static_cast<unsigned char>(line[from - 1]))) --from;
    if (from < at && at - from < 19) return std::stoll(line.substr(from, at - from));
  }
  return std::nullopt;
}

/// The number between `before` and `after` in `line` ("Used 32 registers").
std::optional<long long> number_between(const std::string& line, const std::string& before,
                                        const std::string& after) {
  for (size_t at = line.find(before); at != std::string::npos; at = line.find(before, at + 1)) {
    const size_t from = at + before.size();
    size_t to = from;
    while (to < line.size() && std::isdigit(static_cast<unsigned char>(line[to]))) ++to;
    if (to > from && to - from < 19 && line.compare(to, after.size(), after) == 0)
      return std::stoll(line.substr(from, to - from));
  }
  return std::nullopt;
}

/// The non-empty text after `before` in `line` up to the first of `ends` (with `closed`, one
/// of them must come; else the line's end will do); nullopt when there is none.
std::optional<std::string> text_after(const std::string& line, const std::string& before,
                                      const char* ends, bool closed) {
  const size_t at = line.find(before);
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + before.size(), to = line.find_first_of(ends, from);
  if ((closed && to == std::string::npos) || to == from || from >= line.size()) return std::nullopt;
  return line.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

std::string format_error(const std::string& name, const std::string& log,
                         const std::string& source) {
  std::ostringstream os;
  os << "CUDA compile of " << name << " failed:\n" << log;
  if (!log.empty() && log.back() != '\n') os << '\n';
  os << "--- " << name << " ---\n" << numbered_source(source);
  return os.str();
}

std::mutex g_include_mutex;
std::string g_include_override;

}  // namespace

const KernelResources* CompileResult::find_kernel(const std::string& kernel_name) const {
  for (const auto& k : kernels)
    if (k.name == kernel_name) return &k;
  return nullptr;
}

std::string numbered_source(const std::string& source) {
  std::ostringstream os;
  std::istringstream is(source);
  std::string line;
  int n = 0;
  while (std::getline(is, line)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%4d | ", ++n);
    os << buf << line << '\n';
  }
  return os.str();
}

bool is_nvrtc_arch(const std::string& arch) {
  // (sm|compute)_ then 2 or 3 digits, then an optional a or f.
  const size_t prefix = arch.compare(0, 3, "sm_") == 0        ? 3
                        : arch.compare(0, 8, "compute_") == 0 ? 8
                                                              : 0;
  size_t end = prefix;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end]))) ++end;
  const size_t digits = end - prefix;
  const bool suffix =
      end == arch.size() || (end + 1 == arch.size() && (arch[end] == 'a' || arch[end] == 'f'));
  return prefix > 0 && digits >= 2 && digits <= 3 && suffix;
}

namespace {
/// ptxas' `-v` lines: the entries and, apart, the device functions' frames.
void parse_ptxas_lines(const std::string& log, std::vector<KernelResources>& out,
                       std::vector<KernelResources>& functions) {
  std::istringstream is(log);
  std::string line, props_for;
  KernelResources* cur = nullptr;
  while (std::getline(is, line)) {
    const auto entry = text_after(line, "Compiling entry function '", "'", true);
    const auto props = text_after(line, "Function properties for ", " \t\r\f\v", false);
    const auto stack = number_before(line, " bytes stack frame, ");
    const auto stores = number_before(line, " bytes spill stores, ");
    const auto loads = number_before(line, " bytes spill loads");
    const auto used = number_between(line, "Used ", " registers");
    if (entry) {
      out.push_back({});
      out.back().name = *entry;
      cur = &out.back();
    } else if (props) {
      props_for = *props;
    } else if (stack && stores && loads) {
      // Frame lines also follow the properties of non-inlined device functions: an entry's own
      // set its figures, those of its stage functions (named ENTRY_stageN, inside a mangled
      // name) add their spills and their frame on top of the entry's.
      if (cur && props_for == cur->name) {
        cur->stack_bytes += *stack;
        cur->spill_store_bytes += *stores;
        cur->spill_load_bytes += *loads;
      } else {
        KernelResources f;
        f.name = props_for;
        f.stack_bytes = *stack;
        f.spill_store_bytes = *stores;
        f.spill_load_bytes = *loads;
        functions.push_back(std::move(f));
      }
    } else if (cur && used) {
      cur->registers = static_cast<int>(*used);
      if (const auto b = number_between(line, "used ", " barriers"))
        cur->barriers = static_cast<int>(*b);
      if (const auto b = number_before(line, " bytes smem")) cur->shared_bytes = *b;
      if (const auto b = number_before(line, " bytes cmem[0]")) cur->const_bytes = *b;
    }
  }
}
}  // namespace

std::vector<KernelResources> parse_ptxas_functions(const std::string& log) {
  std::vector<KernelResources> entries, functions;
  parse_ptxas_lines(log, entries, functions);
  return functions;
}

std::vector<KernelResources> parse_ptxas_info(const std::string& log) {
  std::vector<KernelResources> out, functions;
  parse_ptxas_lines(log, out, functions);
  // ptxas may list a device function before or after its caller's entry.
  // With one entry, every device function of the program is its (stage functions under
  // neutral names too, kernel_dedup.h); with several, those named after it.
  for (const KernelResources& f : functions)
    for (KernelResources& k : out)
      if (out.size() == 1 || f.name.find(k.name + "_stage") != std::string::npos) {
        k.callee_stack_bytes = std::max(k.callee_stack_bytes, f.stack_bytes);
        k.spill_store_bytes += f.spill_store_bytes;
        k.spill_load_bytes += f.spill_load_bytes;
      }
  for (KernelResources& k : out) k.stack_bytes += k.callee_stack_bytes;
  return out;
}

// ---- include folder ----

std::string cuda_include_dir() {
  {
    std::lock_guard<std::mutex> lock(g_include_mutex);
    if (!g_include_override.empty()) return g_include_override;
  }
  if (const char* env = std::getenv("SOUFFLE_CUDA_INCLUDE"); env && *env) return env;
#ifdef SOUFFLE_CUDA_INCLUDE_DIR
  return SOUFFLE_CUDA_INCLUDE_DIR;
#else
  return "/usr/local/cuda/include";
#endif
}

void set_cuda_include_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_include_mutex);
  g_include_override = dir;
}

// ---- cache ----

struct CompileCache::Impl {
  Impl() {
    std::string problem;
    const int64_t cap = default_compile_cache_bytes(&problem);
    const std::string dir = default_compile_cache_dir();
    if (!dir.empty()) disk = make_disk(dir, cap);
    if (!problem.empty()) say(problem);
  }
  std::shared_ptr<DiskCompileCache> make_disk(const std::string& dir, int64_t cap) {
    return std::make_shared<DiskCompileCache>(dir, cap, [this](const std::string& w) { say(w); });
  }
  void say(const std::string& text) {
    std::function<void(const std::string&)> h;
    {
      std::lock_guard<std::mutex> lock(mutex);
      h = warn;
    }
    if (h) h(text);
  }

  mutable std::mutex mutex;
  std::unordered_map<std::string, CompileResult> memory;  // by full key text
  std::shared_ptr<DiskCompileCache> disk;
  std::function<void(const std::string&)> warn = [](const std::string& text) {
    std::cerr << "warning: " << text << "\n";
  };
  int64_t hits = 0, misses = 0;
};

CompileCache& CompileCache::global() {
  static CompileCache cache;
  return cache;
}

CompileCache::Impl& CompileCache::impl() const {
  static Impl the_impl;  // one cache per process: the class is a singleton
  return the_impl;
}

void CompileCache::set_disk_dir(const std::string& dir, int64_t max_bytes) {
  std::shared_ptr<DiskCompileCache> disk;
  if (!dir.empty())
    disk = impl().make_disk(dir, max_bytes >= 0 ? max_bytes : default_compile_cache_bytes());
  std::lock_guard<std::mutex> lock(impl().mutex);
  impl().disk = std::move(disk);
}
std::string CompileCache::disk_dir() const {
  std::lock_guard<std::mutex> lock(impl().mutex);
  return impl().disk ? impl().disk->dir() : "";
}
std::shared_ptr<DiskCompileCache> CompileCache::disk() const {
  std::lock_guard<std::mutex> lock(impl().mutex);
  return impl().disk;
}
void CompileCache::set_warning_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(impl().mutex);
  impl().warn = std::move(handler);
}
void CompileCache::clear_memory() {
  std::lock_guard<std::mutex> lock(impl().mutex);
  impl().memory.clear();
}
int64_t CompileCache::hits() const {
  std::lock_guard<std::mutex> lock(impl().mutex);
  return impl().hits;
}
int64_t CompileCache::misses() const {
  std::lock_guard<std::mutex> lock(impl().mutex);
  return impl().misses;
}

bool CompileCache::lookup(const std::string& key, const std::string& full_key, CompileResult& out) {
  std::shared_ptr<DiskCompileCache> disk;
  {
    std::lock_guard<std::mutex> lock(impl().mutex);
    auto it = impl().memory.find(full_key);
    if (it != impl().memory.end()) {
      out = it->second;
      ++impl().hits;
      return true;
    }
    disk = impl().disk;
  }
  CompileResult r;
  if (disk && disk->load(key, full_key, r)) {
    std::lock_guard<std::mutex> lock(impl().mutex);
    impl().memory[full_key] = r;
    ++impl().hits;
    out = std::move(r);
    return true;
  }
  std::lock_guard<std::mutex> lock(impl().mutex);
  ++impl().misses;
  return false;
}

void CompileCache::store(const std::string& full_key, const CompileResult& result) {
  std::shared_ptr<DiskCompileCache> disk;
  {
    std::lock_guard<std::mutex> lock(impl().mutex);
    impl().memory[full_key] = result;
    disk = impl().disk;
  }
  if (disk) disk->store(result.key, full_key, result);
}

// ---- compilation ----

bool nvrtc_available() {
#ifdef SOUFFLE_HAVE_NVRTC
  return true;
#else
  return false;
#endif
}

std::string nvrtc_version() {
#ifdef SOUFFLE_HAVE_NVRTC
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
#else
  return "";
#endif
}

namespace {

/// NVRTC's version and the size of the library that answers it: a patch release (the same
/// major.minor) is another compiler, so another cache key.
std::string nvrtc_identity() {
  static const std::string id = [] {
    std::string out = nvrtc_version();
#ifdef SOUFFLE_HAVE_NVRTC
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname &&
        ::stat(info.dli_fname, &st) == 0)
      out += " " + std::to_string(static_cast<long long>(st.st_size));
#endif
    return out;
  }();
  return id;
}

#ifdef SOUFFLE_HAVE_NVRTC
void compile_uncached(const std::string& source, const std::vector<std::string>& flags,
                      CompileResult& r) {
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), r.name.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    r.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(rc);
    return;
  }
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  std::vector<const char*> argv;
  for (const auto& f : flags) argv.push_back(f.c_str());
  rc = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    r.log.resize(log_size);
    nvrtcGetProgramLog(prog, r.log.data());
    // NVRTC's log ends in a NUL, and ptxas' appended lines may bring their own.
    r.log.erase(std::remove(r.log.begin(), r.log.end(), '\0'), r.log.end());
  }
  if (rc != NVRTC_SUCCESS) {
    if (r.log.empty()) r.log = nvrtcGetErrorString(rc);
    return;
  }
  size_t ptx_size = 0;
  if (nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
    r.ptx.resize(ptx_size);
    nvrtcGetPTX(prog, r.ptx.data());
    r.ptx.resize(ptx_size - 1);
  }
  if (r.arch.rfind("sm_", 0) == 0) {
    size_t cubin_size = 0;
    if (nvrtcGetCUBINSize(prog, &cubin_size) == NVRTC_SUCCESS && cubin_size > 0) {
      r.cubin.resize(cubin_size);
      nvrtcGetCUBIN(prog, reinterpret_cast<char*>(r.cubin.data()));
    }
  }
  // Compiled with -dlto (lto.h), the program's LTO-IR stands in the CUBIN's place.
  size_t ltoir_size = 0;
  if (r.cubin.empty() && nvrtcGetLTOIRSize(prog, &ltoir_size) == NVRTC_SUCCESS && ltoir_size > 0) {
    r.cubin.resize(ltoir_size);
    nvrtcGetLTOIR(prog, reinterpret_cast<char*>(r.cubin.data()));
  }
  r.kernels = parse_ptxas_info(r.log);
  r.ok = true;
}
#endif

}  // namespace

CompileResult compile_cuda(const std::string& source, const std::string& name,
                           const CompileOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult r;
  r.name = name.empty() ? "kernel.cu" : name;
  r.arch = options.arch;
  if (!is_nvrtc_arch(options.arch)) {
    r.log = "unknown GPU architecture '" + options.arch + "' (expected sm_XX or compute_XX)";
    r.error = format_error(r.name, r.log, source);
    return r;
  }
  const std::vector<std::string> flags = nvrtc_flags(options);
  std::string full_key = source;
  full_key += '\0';
  for (const auto& f : flags) full_key += f + '\0';
  full_key += nvrtc_identity();
  full_key += '\0';
  full_key += "entry format " + std::to_string(kCompileCacheFormat);
  r.key = hash_hex(full_key);

  if (options.use_cache) {
    CompileResult cached;
    if (CompileCache::global().lookup(r.key, full_key, cached)) {
      cached.name = r.name;
      cached.from_cache = true;
      cached.compile_ms = 0;
      if (!cached.ok) cached.error = format_error(cached.name, cached.log, source);
      return cached;
    }
  }
#ifdef SOUFFLE_HAVE_NVRTC
  compile_uncached(source, flags, r);
#else
  r.log = "this build has no NVRTC (the CUDA toolkit was not found at configure time)";
#endif
  if (!r.ok) r.error = format_error(r.name, r.log, source);
  r.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (options.use_cache && nvrtc_available()) CompileCache::global().store(full_key, r);
  return r;
}

std::vector<CompileResult> compile_cuda_many(const std::vector<CompileJob>& jobs,
                                             ThreadPool* pool) {
  std::vector<CompileResult> out(jobs.size());
  ThreadPool& p = pool ? *pool : ThreadPool::global();
  p.parallel_for(static_cast<int64_t>(jobs.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const auto& j = jobs[static_cast<size_t>(i)];
      out[static_cast<size_t>(i)] = compile_cuda(j.source, j.name, j.options);
    }
  });
  return out;
}

}  // namespace souffle::gpu
