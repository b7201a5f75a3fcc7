#include "core/gpu/lto.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "core/gpu/compile_cache.h"
#include "core/gpu/cubin.h"
#include "core/support/line_diff.h"
#include "core/support/thread_pool.h"

#ifdef SOUFFLE_HAVE_NVRTC
#include <nvJitLink.h>
#endif

namespace souffle::gpu {

namespace {

constexpr const char* kStatic = "static ";

}  // namespace

bool split_stage_functions(const std::string& source, const UnitLayout& layout, StageSplit& out,
                           std::string* why) {
  out = StageSplit{};
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (layout.stages.empty()) return fail("no stage function");
  if (layout.kernel.first <= 0) return fail("no kernel");
  const std::vector<std::string_view> lines = split_lines(source);
  const int n = static_cast<int>(lines.size());
  if (layout.kernel.first > n) return fail("the layout's kernel starts past the text's end");
  auto text = [&](int from, int to) {  // lines from..to (1-based, inclusive), each with its \n
    std::string t;
    for (int i = from; i <= to; ++i) {
      t += lines[static_cast<size_t>(i - 1)];
      t += '\n';
    }
    return t;
  };
  int at = 1;  // the first line not yet taken
  for (const FunctionLines& f : layout.stages) {
    if (f.first < at || f.head < f.first || f.head_last < f.head || f.last < f.head_last ||
        f.last >= layout.kernel.first)
      return fail("stage function " + f.name + ": its lines are out of order");
    const std::string_view head = lines[static_cast<size_t>(f.head - 1)];
    if (head.compare(0, std::char_traits<char>::length(kStatic), kStatic) != 0)
      return fail("stage function " + f.name + ": its head is not `static`");
    std::string_view opens = lines[static_cast<size_t>(f.head_last - 1)];
    while (!opens.empty() && opens.back() == ' ') opens.remove_suffix(1);
    if (opens.empty() || opens.back() != '{')
      return fail("stage function " + f.name + ": its head opens no body");
    out.preamble += text(at, f.first - 1);
    StageSplit::Function fn;
    fn.name = f.name;
    fn.definition = text(f.first, f.head - 1);
    fn.definition += head.substr(std::char_traits<char>::length(kStatic));
    fn.definition += '\n';
    fn.definition += text(f.head + 1, f.last);
    // The head, declared: its lines without `static ` and without the `{` that opens the body.
    std::string proto = text(f.head, f.head_last).substr(std::char_traits<char>::length(kStatic));
    proto.erase(proto.rfind('{'));
    while (!proto.empty() && (proto.back() == ' ' || proto.back() == '\n')) proto.pop_back();
    fn.prototype = proto + ";\n";
    out.stages.push_back(std::move(fn));
    at = f.last + 1;
  }
  out.preamble += text(at, layout.kernel.first - 1);
  out.kernel = text(layout.kernel.first, n);
  return true;
}

std::string StageSplit::stage_program(size_t i) const {
  // A stage function that does not use cooperative groups (grid barriers stay in the kernel)
  // is compiled without their header, the largest part of NVRTC's front-end time.
  std::string pre = preamble;
  const std::string& def = stages[i].definition;
  const char* cg_include = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n";
  if (def.find("cg::") == std::string::npos)
    if (size_t at = pre.find(cg_include); at != std::string::npos)
      pre.erase(at, std::char_traits<char>::length(cg_include));
  return pre + def + "\n";
}

std::string StageSplit::kernel_program() const {
  std::string p = preamble;
  p += "\n";
  for (const Function& f : stages) p += f.prototype;
  return p + kernel;
}

// ---- nvJitLink, loaded at run time ----

namespace {

#ifdef SOUFFLE_HAVE_NVRTC
struct JitLink {
  decltype(&::nvJitLinkCreate) create = nullptr;
  decltype(&::nvJitLinkDestroy) destroy = nullptr;
  decltype(&::nvJitLinkAddData) add_data = nullptr;
  decltype(&::nvJitLinkComplete) complete = nullptr;
  decltype(&::nvJitLinkGetLinkedCubinSize) cubin_size = nullptr;
  decltype(&::nvJitLinkGetLinkedCubin) cubin = nullptr;
  decltype(&::nvJitLinkGetErrorLogSize) error_size = nullptr;
  decltype(&::nvJitLinkGetErrorLog) error_log = nullptr;
  decltype(&::nvJitLinkGetInfoLogSize) info_size = nullptr;
  decltype(&::nvJitLinkGetInfoLog) info_log = nullptr;
  decltype(&::nvJitLinkVersion) version = nullptr;
  bool ok = false;
};

const JitLink& jitlink() {
  static const JitLink lib = [] {
    JitLink l;
    void* h = nullptr;
    for (const char* so :
         {"libnvJitLink.so.13", "libnvJitLink.so", "/usr/local/cuda/lib64/libnvJitLink.so"})
      if ((h = dlopen(so, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (!h) return l;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      return fn != nullptr;
    };
    l.ok =
        sym(l.create, "nvJitLinkCreate") && sym(l.destroy, "nvJitLinkDestroy") &&
        sym(l.add_data, "nvJitLinkAddData") && sym(l.complete, "nvJitLinkComplete") &&
        sym(l.cubin_size, "nvJitLinkGetLinkedCubinSize") &&
        sym(l.cubin, "nvJitLinkGetLinkedCubin") && sym(l.error_size, "nvJitLinkGetErrorLogSize") &&
        sym(l.error_log, "nvJitLinkGetErrorLog") && sym(l.info_size, "nvJitLinkGetInfoLogSize") &&
        sym(l.info_log, "nvJitLinkGetInfoLog") && sym(l.version, "nvJitLinkVersion");
    return l;
  }();
  return lib;
}
#endif

std::string fnv_hex(const std::string& s) {
  uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : s) {
    h1 = (h1 ^ c) * 1099511628211ull;
    h2 = (h2 ^ c) * 0x100000001b3ull;
    h2 ^= h2 >> 29;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return std::string("lto") + buf;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool nvjitlink_available() {
#ifdef SOUFFLE_HAVE_NVRTC
  return jitlink().ok;
#else
  return false;
#endif
}

std::string nvjitlink_version() {
#ifdef SOUFFLE_HAVE_NVRTC
  if (!jitlink().ok) return "";
  unsigned major = 0, minor = 0;
  if (jitlink().version(&major, &minor) != NVJITLINK_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
#else
  return "";
#endif
}

namespace {
/// The entry's resources of a kernel linked from SASS objects: what ptxas said of the entry in
/// its own program, with the registers and the call tree's stack the linker wrote into the CUBIN,
/// and the spills of every program.
std::optional<KernelResources> linked_resources(const std::vector<uint8_t>& cubin,
                                                const std::vector<CompileResult>& parts) {
  if (parts.empty()) return std::nullopt;
  const std::vector<KernelResources> entries = parse_ptxas_info(parts.front().log);
  if (entries.empty()) return std::nullopt;
  std::optional<KernelResources> entry = entries.front();
  const std::optional<CubinFunction> linked = find_cubin_function(cubin, entry->name);
  if (!linked || linked->registers <= 0) return std::nullopt;
  entry->registers = linked->registers;
  for (size_t i = 1; i < parts.size(); ++i) {
    for (const KernelResources& f : parse_ptxas_functions(parts[i].log)) {
      entry->callee_stack_bytes = std::max(entry->callee_stack_bytes, f.stack_bytes);
      entry->spill_store_bytes += f.spill_store_bytes;
      entry->spill_load_bytes += f.spill_load_bytes;
    }
  }
  // The linker's figure for the whole call tree where it wrote one; else the entry's frame and
  // its largest callee's, as ptxas counts a whole program.
  entry->stack_bytes = linked->min_stack_bytes > 0 ? linked->min_stack_bytes
                                                   : entry->stack_bytes + entry->callee_stack_bytes;
  return entry;
}
}  // namespace

CompileResult compile_cuda_separate(const std::string& source, const UnitLayout& layout,
                                    const std::string& name, const CompileOptions& options,
                                    const SeparateOptions& sep, SeparateInfo* info) {
  SeparateInfo local;
  SeparateInfo& li = info ? *info : local;
  li = SeparateInfo{};
  li.link = sep.link;
  const bool objects = sep.link == SeparateLink::Objects;
  StageSplit split;
  if (options.arch.rfind("sm_", 0) != 0)
    li.why_whole = "a compute_XX arch has no CUBIN to link";
  else if (!nvjitlink_available())
    li.why_whole = "nvJitLink is not available";
  else if (!split_stage_functions(source, layout, split, &li.why_whole)) {
  }
  if (!li.why_whole.empty()) return compile_cuda(source, name, options);
#ifndef SOUFFLE_HAVE_NVRTC
  return compile_cuda(source, name, options);
#else
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult r;
  r.name = name.empty() ? "kernel.cu" : name;
  r.arch = options.arch;
  // The linked result is cached under the whole source, the options and both tools' versions.
  std::string full_key = source;
  full_key += '\0';
  full_key += options.arch + '\0' + std::to_string(options.max_registers) + '\0' +
              (options.fast_math ? "fast" : "") + '\0' + (options.line_info ? "lineinfo" : "");
  for (const std::string& f : options.extra_flags) full_key += '\0' + f;
  full_key += std::string("\0nvrtc ", 7) + nvrtc_version() + " nvJitLink " + nvjitlink_version();
  full_key += objects ? " objects format 1, functions capped at " +
                            std::to_string(sep.function_max_registers)
                      : " lto format 1";
  r.key = fnv_hex(full_key);
  if (options.use_cache) {
    CompileResult cached;
    if (CompileCache::global().lookup(r.key, full_key, cached) && cached.ok) {
      cached.name = r.name;
      cached.from_cache = true;
      cached.compile_ms = 0;
      li.linked = true;
      li.programs = static_cast<int>(split.stages.size()) + 1;
      li.programs_cached = li.programs;
      return cached;
    }
  }
  // Each program to an object or to LTO-IR, side by side.
  std::vector<CompileJob> jobs;
  CompileOptions lo = options;
  if (!objects) lo.extra_flags.push_back("-dlto");
  lo.extra_flags.push_back("-rdc=true");
  CompileOptions fo = lo;
  if (objects && sep.function_max_registers > 0) {
    fo.max_registers = fo.max_registers > 0 ? std::min(fo.max_registers, sep.function_max_registers)
                                            : sep.function_max_registers;
  }
  const std::string stem = r.name.substr(0, r.name.rfind(".cu"));
  jobs.push_back({split.kernel_program(), stem + "_entry.cu", lo});
  for (size_t i = 0; i < split.stages.size(); ++i)
    jobs.push_back({split.stage_program(i), stem + "_" + split.stages[i].name + ".cu", fo});
  const auto tc = std::chrono::steady_clock::now();
  std::vector<CompileResult> parts = compile_cuda_many(jobs);
  li.nvrtc_ms = ms_since(tc);
  li.programs = static_cast<int>(parts.size());
  for (const CompileResult& p : parts) {
    li.programs_cached += p.from_cache ? 1 : 0;
    if (!p.ok || p.cubin.empty()) {
      // The error as the whole kernel shows it (its line numbers point into its own source).
      li.why_whole = "stage program " + p.name + " failed";
      return compile_cuda(source, name, options);
    }
  }
  // Linked per kernel. With LTO-IR the link optimizes and generates the whole kernel's code:
  // split over every core.
  const JitLink& jl = jitlink();
  std::vector<std::string> opts = {"-arch=" + options.arch};
  if (!objects) {
    for (const char* o : {"-lto", "-Xptxas=-v", "-split-compile=0"}) opts.emplace_back(o);
    if (options.max_registers > 0)
      opts.push_back("-maxrregcount=" + std::to_string(options.max_registers));
    if (options.fast_math) opts.push_back("-ftz=1");
  }
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  const auto tl = std::chrono::steady_clock::now();
  nvJitLinkHandle h = nullptr;
  nvJitLinkResult rc = jl.create(&h, static_cast<uint32_t>(argv.size()), argv.data());
  if (rc == NVJITLINK_SUCCESS)
    for (size_t i = 0; i < parts.size() && rc == NVJITLINK_SUCCESS; ++i)
      rc = jl.add_data(h, objects ? NVJITLINK_INPUT_CUBIN : NVJITLINK_INPUT_LTOIR,
                       parts[i].cubin.data(), parts[i].cubin.size(), parts[i].name.c_str());
  if (rc == NVJITLINK_SUCCESS) rc = jl.complete(h);
  auto read_log = [&](auto size_fn, auto log_fn) {
    size_t n = 0;
    std::string s;
    if (h && size_fn(h, &n) == NVJITLINK_SUCCESS && n > 1) {
      s.resize(n);
      log_fn(h, s.data());
      s.erase(std::remove(s.begin(), s.end(), '\0'), s.end());
    }
    return s;
  };
  r.log = read_log(jl.info_size, jl.info_log);
  if (rc == NVJITLINK_SUCCESS) {
    size_t n = 0;
    if (jl.cubin_size(h, &n) == NVJITLINK_SUCCESS && n > 0) {
      r.cubin.resize(n);
      jl.cubin(h, r.cubin.data());
    }
    if (!objects) {
      r.kernels = parse_ptxas_info(r.log);
    } else if (std::optional<KernelResources> k = linked_resources(r.cubin, parts)) {
      r.kernels.push_back(std::move(*k));
      // The programs' ptxas lines, each under its file name, for whoever reads the log.
      for (const CompileResult& p : parts) r.log += "\n[" + p.name + "]\n" + p.log;
    }
    r.ok = !r.cubin.empty() && (!objects || !r.kernels.empty());
    if (!r.ok) r.log += "\nthe linked CUBIN does not give the entry's registers";
  } else {
    r.log += read_log(jl.error_size, jl.error_log);
    r.log += "\nnvJitLink failed (" + std::to_string(static_cast<int>(rc)) + ")";
  }
  if (h) jl.destroy(&h);
  li.link_ms = ms_since(tl);
  if (!r.ok) {
    // Its first line that says something (the whole log goes with the dropped result).
    std::string_view first;
    for (std::string_view line : split_lines(r.log)) {
      if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
        first = line;
        break;
      }
    }
    li.why_whole = "the link failed: " + std::string(first);
    return compile_cuda(source, name, options);
  }
  li.linked = true;
  r.compile_ms = ms_since(t0);
  if (std::getenv("SOUFFLE_LTO_TRACE")) {
    size_t slow = 0;
    for (size_t i = 1; i < parts.size(); ++i)
      if (parts[i].compile_ms > parts[slow].compile_ms) slow = i;
    std::fprintf(stderr,
                 "separate (%s) %s %s: %d programs (%d cached), NVRTC %.0f ms (slowest %s %.0f "
                 "ms), nvJitLink %.0f ms\n",
                 objects ? "objects" : "LTO-IR", r.name.c_str(), r.arch.c_str(), li.programs,
                 li.programs_cached, li.nvrtc_ms, parts[slow].name.c_str(), parts[slow].compile_ms,
                 li.link_ms);
  }
  if (options.use_cache) CompileCache::global().store(full_key, r);
  return r;
#endif
}

}  // namespace souffle::gpu
