// The CUDA backend of souffle-runner: the driver API and CUPTI loaded at run time, kernels
// loaded from the bundle's CUBIN for the device's arch (PTX, JIT-compiled by the driver, as the
// fallback), every cooperative kernel checked for co-residency on the actual device before
// anything is launched.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/gpu/cupti_api.h"
#include "core/gpu/cupti_counters.h"
#include "core/gpu/nvrtc.h"
#include "core/session/gemm_bench.h"
#include "core/session/runner.h"
#include "core/session/runner_cuda.h"

namespace souffle::runner {

using nlohmann::json;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw RunnerError("bad_bundle", "cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// What a block may use of shared memory, static and dynamic together, unless its function opts
/// in to more.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

/// "90" of "sm_90" / "compute_90"; -1 when it is neither.
int arch_number(const std::string& arch) {
  size_t p = arch.find('_');
  if (p == std::string::npos) return -1;
  try {
    return std::stoi(arch.substr(p + 1));
  } catch (...) {
    return -1;
  }
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

struct Device {
  int index = 0;
  std::string name;
  int major = 0, minor = 0, sms = 0;
  int clock_khz = 0, memory_clock_khz = 0, l2_bytes = 0, max_blocks_per_sm = 0;
  int max_threads_per_sm = 0;
  bool cooperative = false;
  size_t memory = 0;
  gpu::DeviceAttributes attributes;  ///< what hello reports and the device's spec is made from
  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
  std::string cc() const { return std::to_string(major) + "." + std::to_string(minor); }
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device) : m_ordinal(device) { m_api = gpu::cuda_api(&m_reason); }
  CudaBackend(const CudaBackendApis& apis, int device)
      : m_api(apis.driver),
        m_ordinal(device),
        m_tracer(apis.tracer),
        m_profiler(apis.profiler),
        m_cupti_library(apis.cupti_library) {}
  ~CudaBackend() override { release(); }

  std::string name() const override { return "cuda"; }
  bool dead() const override { return m_dead; }

  json hello() override {
    json h = {{"backend", "cuda"}, {"devices", json::array()}};
    if (!m_api) {
      h["unavailable"] = m_reason;
      return h;
    }
    int driver = 0;
    m_api->cuDriverGetVersion(&driver);
    h["driver_version"] = driver;
    h["driver_library"] = m_api->library;
    int n = 0;
    m_api->cuDeviceGetCount(&n);
    for (int i = 0; i < n; ++i) {
      Device d = describe(i);
      h["devices"].push_back({{"index", i},
                              {"name", d.name},
                              {"compute_capability", d.cc()},
                              {"arch", d.arch()},
                              {"sm_count", d.sms},
                              {"max_blocks_per_sm", d.max_blocks_per_sm},
                              {"l2_bytes", d.l2_bytes},
                              {"memory_bytes", d.memory},
                              {"clock_mhz", d.clock_khz / 1000},
                              {"memory_clock_mhz", d.memory_clock_khz / 1000},
                              {"cooperative_launch", d.cooperative}});
      h["devices"].back().update(device_attributes_json(d.attributes));
    }
    if (n <= 0) h["unavailable"] = "no CUDA device";
    std::string why;
    gpu::CuptiKernelTracer* t = tracer(&why);
    h["cupti"] = t != nullptr;
    if (t)
      h["cupti_library"] = t->library();
    else
      h["cupti_note"] = why;
    return h;
  }

  json load(const BundleManifest& m) override {
    ensure_context();
    release_bundle();
    json kernels = json::array();
    const std::filesystem::path dir(m.dir);
    const int want = m_dev.major * 10 + m_dev.minor;
    std::vector<Loaded> loaded;
    // Images by file: launches of the same code load one module (ManifestKernel::entry).
    std::map<std::string, CUmodule> modules_by_file;
    for (const ManifestKernel& k : m.kernels) {
      Loaded l;
      l.k = k;
      // The CUBIN of the device's own arch, else the newest PTX the device can JIT.
      const ManifestImage* cubin = nullptr;
      const ManifestImage* ptx = nullptr;
      for (const ManifestImage& img : k.images) {
        int a = arch_number(img.arch);
        if (!img.cubin.empty() && a == want) cubin = &img;
        if (!img.ptx.empty() && a <= want && (!ptx || a > arch_number(ptx->arch))) ptx = &img;
      }
      std::string image, image_file;
      if (cubin) {
        image_file = cubin->cubin;
        if (!modules_by_file.count(image_file)) image = file_bytes((dir / cubin->cubin).string());
        l.image = "cubin " + cubin->arch;
      } else if (ptx) {
        image_file = ptx->ptx;
        if (!modules_by_file.count(image_file)) image = file_bytes((dir / ptx->ptx).string());
        image.push_back('\0');
        l.image = "ptx " + ptx->arch + " (JIT for " + m_dev.arch() + ")";
      } else {
        std::string have;
        for (const ManifestImage& img : k.images) have += (have.empty() ? "" : ", ") + img.arch;
        throw RunnerError("bad_bundle",
                          k.name + " has no image " + m_dev.name + " (" + m_dev.arch() +
                              ") can run (the bundle has " + (have.empty() ? "none" : have) +
                              "): compile it with --arch " + m_dev.arch(),
                          k.name);
      }
      const bool shared_image = modules_by_file.count(image_file) > 0;
      if (shared_image) {
        l.module = modules_by_file[image_file];
      } else {
        char log[8192] = {};
        CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void* vals[] = {log, reinterpret_cast<void*>(sizeof log - 1)};
        gpu::ModuleHandle module(m_api->cuModuleUnload);
        CUresult r = m_api->cuModuleLoadDataEx(module.out(), image.data(), 2, opts, vals);
        if (r != CUDA_SUCCESS)
          throw RunnerError("bad_bundle",
                            k.name + ": the driver cannot load its " + l.image + ": " +
                                m_api->error_text(r) + (log[0] ? std::string("\n") + log : ""),
                            k.name);
        l.module = module.get();
        modules_by_file[image_file] = l.module;
        m_modules.push_back(std::move(module));
      }
      const std::string entry = k.entry.empty() ? k.name : k.entry;
      check(m_api->cuModuleGetFunction(&l.fn, l.module, entry.c_str()),
            "cuModuleGetFunction " + entry, k.name);
      const int static_smem = opt_in_shared(l.fn, static_cast<size_t>(k.shared_bytes), k.name);
      check(m_api->cuFuncGetAttribute(&l.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, l.fn),
            "cuFuncGetAttribute", k.name);
      check(m_api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&l.per_sm, l.fn, k.block,
                                                               static_cast<size_t>(k.shared_bytes)),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor", k.name);
      std::string resources = std::to_string(k.block) + " threads, " + std::to_string(l.registers) +
                              " registers a thread, " +
                              std::to_string(k.shared_bytes + static_smem) +
                              " bytes of shared memory a block";
      std::string refusal =
          launch_refusal(k, l.per_sm, m_dev.sms, m_dev.cooperative, m_dev.name, resources);
      if (!refusal.empty()) throw RunnerError("not_co_resident", refusal, k.name);
      const int64_t fits = static_cast<int64_t>(l.per_sm) * m_dev.sms;
      kernels.push_back({{"name", k.name},
                         {"image", l.image},
                         {"image_file", image_file},
                         {"entry", entry},
                         {"shared_image", shared_image},
                         {"grid", k.grid},
                         {"block", k.block},
                         {"shared_bytes", k.shared_bytes + static_smem},
                         {"registers", l.registers},
                         {"cooperative", k.cooperative},
                         {"blocks_per_sm", l.per_sm},
                         {"co_resident", fits}});
      loaded.push_back(std::move(l));
    }
    // Every tensor, then each kernel's arguments (pointers into m_ptrs, which no longer moves).
    m_ptrs.assign(m.tensors.size(), 0);
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      size_t bytes = static_cast<size_t>(std::max<int64_t>(m.tensors[i].bytes, 16));
      m_memory.emplace_back(m_api->cuMemFree);
      check(m_api->cuMemAlloc(m_memory.back().out(), bytes),
            "cuMemAlloc of " + std::to_string(bytes) + " bytes for " + m.tensors[i].name);
      m_ptrs[i] = m_memory.back().get();
    }
    // A kernel with flags takes its epoch last (a long long; `loaded` no longer moves either, and
    // moving the vector into m_loaded keeps its elements where they are).
    for (Loaded& l : loaded) {
      for (int a : l.k.args) l.args.push_back(&m_ptrs[static_cast<size_t>(a)]);
      if (l.k.flag_epoch) l.args.push_back(&l.epoch);
    }
    m_loaded = std::move(loaded);
    m_manifest = m;
    // Flag counters are zeroed once, here, and count on across runs (restart_flags).
    restart_flags();
    sync("zeroing the flag counters");
    return {{"kernels", kernels}, {"device", m_dev.name}};
  }

  void upload(int index, const std::string& bytes) override {
    const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
    if (static_cast<int64_t>(bytes.size()) != t.bytes)
      throw RunnerError("bad_request", t.name + " takes " + std::to_string(t.bytes) +
                                           " bytes, got " + std::to_string(bytes.size()));
    // On the kernels' stream, so that they see it; `bytes` is pageable and is staged before the
    // call returns, and the stream is synchronized so that the upload is done when this returns.
    if (!bytes.empty()) {
      check(m_api->cuMemcpyHtoDAsync(m_ptrs[static_cast<size_t>(index)], bytes.data(), bytes.size(),
                                     m_stream),
            "uploading " + t.name);
      sync("uploading " + t.name);
    }
  }

  std::string read(int index) override {
    const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
    std::string out(static_cast<size_t>(t.bytes), '\0');
    if (!out.empty())
      read_device(out.data(), m_ptrs[static_cast<size_t>(index)], out.size(), "reading " + t.name);
    return out;
  }

  void run(const EventFn& on_event) override {
    need_bundle();
    zero();
    for (size_t k = 0; k < m_loaded.size(); ++k) {
      on_event({{"event", "launch"},
                {"kernel", m_loaded[k].k.name},
                {"index", k},
                {"of", m_loaded.size()}});
      launch(k);
      CUresult r = m_api->cuStreamSynchronize(m_stream);
      if (r != CUDA_SUCCESS) fault(r, m_loaded[k].k.name);
    }
  }

  ProfileData profile(int runs, int warmup, bool graph, bool counters,
                      const EventFn& on_event) override {
    need_bundle();
    ProfileData p;
    p.runs = runs;
    p.warmup = warmup;
    for (int w = 0; w < warmup; ++w) {
      zero();
      for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
    }
    sync("the warm-up runs");
    on_event({{"event", "profile"}, {"phase", "timed runs"}, {"runs", runs}});
    std::vector<std::string> order;
    for (const Loaded& l : m_loaded) order.push_back(l.k.name);
    time_kernels(runs, order, p);
    time_end_to_end(runs, p);
    // What follows is optional: a failure there is a note and the timings stand. A fault still
    // loses the context: the answer is given, then the runner exits (dead()).
    if (graph) optional_part("the CUDA graph replay", p.graph_note, [&] { replay_graph(runs, p); });
    if (counters) {
      on_event({{"event", "profile"}, {"phase", "hardware counters"}});
      optional_part("the counted run", p.counters_note, [&] { count(order, p); });
    }
    return p;
  }

  gpu::Calibration calibrate(const EventFn& on_event) override;

 private:
  struct Loaded {
    ManifestKernel k;
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    int registers = 0, per_sm = 0;
    std::string image;
    std::vector<void*> args;
    /// Kernels with per-tile flags: the epoch of the last launch (the next passes one more);
    /// args' last entry points here, and a launch copies the value when it is made.
    long long epoch = 0;
  };

  /// Errors after which the context is lost: every later call returns them, nothing more runs.
  static bool sticky(CUresult r) {
    switch (r) {
      case CUDA_ERROR_ILLEGAL_ADDRESS:
      case CUDA_ERROR_LAUNCH_FAILED:
      case CUDA_ERROR_LAUNCH_TIMEOUT:
      case CUDA_ERROR_ILLEGAL_INSTRUCTION:
      case CUDA_ERROR_MISALIGNED_ADDRESS:
      case CUDA_ERROR_HARDWARE_STACK_ERROR:
      case CUDA_ERROR_ASSERT:
      case CUDA_ERROR_INVALID_ADDRESS_SPACE:
      case CUDA_ERROR_INVALID_PC:
      case CUDA_ERROR_ECC_UNCORRECTABLE:
        return true;
      default:
        return false;
    }
  }

  /// Whether the context is still usable after an error no list names: it is not when it cannot
  /// synchronize. (Not asked during a stream capture, which a context synchronization would end.)
  bool context_lost() { return !m_capturing && m_api->cuCtxSynchronize() != CUDA_SUCCESS; }

  void check(CUresult r, const std::string& what, const std::string& kernel = "") {
    if (r == CUDA_SUCCESS) return;
    if (sticky(r) || context_lost()) fault(r, kernel, what);
    throw RunnerError("launch_failed", what + ": " + m_api->error_text(r), kernel);
  }

  /// A kernel broke the context: nothing more can run in this process. `kernel` is the one that
  /// faulted when known; otherwise the error showed at `seen_at`, after the kernel that caused it.
  [[noreturn]] void fault(CUresult r, const std::string& kernel, const std::string& seen_at = "") {
    m_dead = true;
    throw RunnerError("kernel_fault",
                      (kernel.empty() ? std::string("a kernel") : kernel) + " faulted on " +
                          m_dev.name + ": " + m_api->error_text(r) +
                          (kernel.empty() && !seen_at.empty() ? " (seen at " + seen_at + ")" : "") +
                          " (the CUDA context is lost; the runner exits)",
                      kernel);
  }

  /// Waits for the stream; any error there comes from the work in flight and is fatal.
  void sync(const std::string& what, const std::string& kernel = "") {
    CUresult r = m_api->cuStreamSynchronize(m_stream);
    if (r != CUDA_SUCCESS) fault(r, kernel, what);
  }

  /// `bytes` of device memory at `from` into pageable `to`, in the kernels' stream order.
  void read_device(void* to, CUdeviceptr from, size_t bytes, const std::string& what) {
    check(m_api->cuMemcpyDtoHAsync(to, from, bytes, m_stream), what);
    sync(what);
  }

  gpu::EventHandle make_event() {
    gpu::EventHandle e(m_api->cuEventDestroy);
    check(m_api->cuEventCreate(e.out(), CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }

  /// The driver's rule: a block's static and dynamic shared memory together may pass the 48 KiB
  /// default only once the function's dynamic limit is raised to its dynamic size (otherwise the
  /// occupancy is 0 and a launch fails). Returns the function's static shared memory.
  int opt_in_shared(CUfunction f, size_t dynamic, const std::string& kernel) {
    int static_smem = 0;
    check(m_api->cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
          "cuFuncGetAttribute " + kernel, kernel);
    if (static_cast<size_t>(static_smem) + dynamic > kDefaultSharedBytes)
      check(m_api->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      static_cast<int>(dynamic)),
            kernel + ": opting in to " + std::to_string(dynamic) +
                " bytes of dynamic shared memory (besides " + std::to_string(static_smem) +
                " static)",
            kernel);
    return static_smem;
  }

  /// Runs an optional part of a profile; its failure becomes `note` and what was measured
  /// before it stands.
  template <typename Part>
  void optional_part(const std::string& what, std::string& note, Part part) {
    if (m_dead) {
      note = what + " was not made: the CUDA context was lost before it";
      return;
    }
    try {
      part();
    } catch (const RunnerError& e) {
      note = what + " failed: " + e.what();
    }
  }

  double elapsed_us(const gpu::EventHandle& a, const gpu::EventHandle& b) {
    return elapsed_us(a.get(), b.get());
  }
  double elapsed_us(CUevent a, CUevent b) {
    float ms = 0;
    check(m_api->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
    return ms * 1e3;
  }

  Device describe(int i) {
    Device d;
    d.index = i;
    CUdevice dev = 0;
    if (m_api->cuDeviceGet(&dev, i) != CUDA_SUCCESS) return d;
    char name[256] = {};
    m_api->cuDeviceGetName(name, sizeof name - 1, dev);
    d.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      m_api->cuDeviceGetAttribute(&v, a, dev);
      return v;
    };
    d.major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d.minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    d.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    d.max_blocks_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    d.cooperative = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
    m_api->cuDeviceTotalMem(&d.memory, dev);
    gpu::DeviceAttributes& a = d.attributes;
    a.name = d.name;
    a.compute_capability = d.cc();
    a.sm_count = d.sms;
    a.max_threads_per_sm = d.max_threads_per_sm;
    a.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    a.max_blocks_per_sm = d.max_blocks_per_sm;
    a.registers_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    a.max_registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    a.shared_memory_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    a.max_shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    a.reserved_shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    a.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    a.l2_bytes = d.l2_bytes;
    a.memory_bytes = static_cast<int64_t>(d.memory);
    a.clock_mhz = d.clock_khz / 1000;
    a.memory_clock_mhz = d.memory_clock_khz / 1000;
    a.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    return d;
  }

  void ensure_context() {
    if (!m_api)
      throw RunnerError(m_reason == "no CUDA device" ? "no_device" : "no_driver", m_reason);
    if (m_ctx) return;
    int n = 0;
    m_api->cuDeviceGetCount(&n);
    if (m_ordinal < 0 || m_ordinal >= n)
      throw RunnerError("no_device", "no CUDA device " + std::to_string(m_ordinal) + " (" +
                                         std::to_string(n) + " found)");
    m_dev = describe(m_ordinal);
    check(m_api->cuDeviceGet(&m_device, m_ordinal), "cuDeviceGet");
    check(m_api->cuDevicePrimaryCtxRetain(&m_ctx, m_device), "cuDevicePrimaryCtxRetain");
    check(m_api->cuCtxSetCurrent(m_ctx), "cuCtxSetCurrent");
    check(m_api->cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  void need_bundle() const {
    if (m_manifest.kernels.empty() && m_loaded.empty())
      throw RunnerError("bad_request", "no bundle is loaded (send load first)");
  }

  /// Zeroes (in stream order) every tensor of the bundle that `which` picks.
  template <typename Which>
  void clear(Which which) {
    for (size_t i = 0; i < m_manifest.tensors.size(); ++i)
      if (which(m_manifest.tensors[i]) && m_manifest.tensors[i].bytes > 0)
        check(m_api->cuMemsetD8Async(m_ptrs[i], 0, static_cast<size_t>(m_manifest.tensors[i].bytes),
                                     m_stream),
              "clearing " + m_manifest.tensors[i].name);
  }

  /// What the kernels write (outputs, intermediates, scratch), before every run.
  void zero() {
    clear([](const ManifestTensor& t) { return t.zeroed(); });
  }

  /// Zeroes every flag counter (in stream order) and restarts every kernel's epoch, so that the
  /// next launch of each passes 1 — the state the epoch scheme starts from.
  void restart_flags() {
    clear([](const ManifestTensor& t) { return t.zeroed_at_load(); });
    for (Loaded& l : m_loaded) l.epoch = 0;
  }

  /// Launches kernel k; one with flags passes an epoch one larger than its last launch's
  /// (warm-up and timed runs alike), or `fixed_epoch` when that is not 0 (graph capture).
  void launch(size_t k, long long fixed_epoch = 0) {
    Loaded& l = m_loaded[k];
    if (l.k.flag_epoch) l.epoch = fixed_epoch != 0 ? fixed_epoch : l.epoch + 1;
    const unsigned grid = static_cast<unsigned>(l.k.grid), block = static_cast<unsigned>(l.k.block);
    const unsigned smem = static_cast<unsigned>(l.k.shared_bytes);
    CUresult r = l.k.cooperative ? m_api->cuLaunchCooperativeKernel(l.fn, grid, 1, 1, block, 1, 1,
                                                                    smem, m_stream, l.args.data())
                                 : m_api->cuLaunchKernel(l.fn, grid, 1, 1, block, 1, 1, smem,
                                                         m_stream, l.args.data(), nullptr);
    // A launch that was refused released nothing: its epoch is the next launch's again.
    if (r != CUDA_SUCCESS && l.k.flag_epoch && fixed_epoch == 0) --l.epoch;
    check(r, "launching " + l.k.name, l.k.name);
  }

  /// Per-kernel times over `runs` runs: from CUPTI's activity records (no events between the
  /// kernels to perturb them), or from CUDA events around each kernel when CUPTI is missing,
  /// refuses, or its records cannot be matched to the launches (dropped ones among them).
  void time_kernels(int runs, const std::vector<std::string>& order, ProfileData& p) {
    std::string why;
    gpu::CuptiKernelTracer* tracer = this->tracer(&why);
    if (tracer) {
      std::string err;
      if (!tracer->start(&err)) {
        why = "CUPTI did not start (" + err + "): kernel times come from CUDA events";
      } else {
        // Tracing stops whatever happens, so that no later run is traced.
        struct Stop {
          gpu::CuptiKernelTracer* t;
          ~Stop() {
            if (t) t->stop(nullptr);
          }
        } stop{tracer};
        for (int r = 0; r < runs; ++r) {
          zero();
          for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
        }
        sync("the timed runs");
        stop.t = nullptr;
        std::vector<gpu::KernelActivity> records = tracer->stop(&err);
        p.dropped_records = tracer->dropped();
        std::string problem;
        p.kernels = gpu::group_runs(records, order, runs, &problem);
        if (p.dropped_records > 0)
          problem = "CUPTI dropped " + std::to_string(p.dropped_records) +
                    " kernel records (its buffers were full)";
        if (!err.empty()) problem += (problem.empty() ? "" : "; ") + err;
        if (p.dropped_records == 0 && !p.kernels.empty()) {
          p.timer = "cupti";
          p.timer_note = problem;
          return;
        }
        p.kernels.clear();
        why = "CUPTI's records could not be matched to the launches (" + problem +
              "): kernel times come from CUDA events";
      }
    }
    // Events: after the zeroing, then after each kernel.
    const size_t n = m_loaded.size();
    std::vector<gpu::EventHandle> ev;
    for (size_t i = 0; i < static_cast<size_t>(runs) * (n + 1); ++i) ev.push_back(make_event());
    for (int r = 0; r < runs; ++r) {
      gpu::EventHandle* e = &ev[static_cast<size_t>(r) * (n + 1)];
      zero();
      check(m_api->cuEventRecord(e[0].get(), m_stream), "cuEventRecord");
      for (size_t k = 0; k < n; ++k) {
        launch(k);
        check(m_api->cuEventRecord(e[k + 1].get(), m_stream), "cuEventRecord");
      }
    }
    sync("the timed runs");
    p.timer = "cuda-events";
    p.timer_note = why;
    for (size_t k = 0; k < n; ++k) {
      std::vector<double> t;
      for (int r = 0; r < runs; ++r) {
        gpu::EventHandle* e = &ev[static_cast<size_t>(r) * (n + 1)];
        t.push_back(elapsed_us(e[k], e[k + 1]));
      }
      gpu::KernelTimes times;
      times.name = order[k];
      times.duration_us = gpu::stats_of(t);
      p.kernels.push_back(times);
    }
  }

  /// End to end (first launch to the last kernel's end) and the zeroing before it, over `runs`
  /// runs of their own with three events each and CUPTI's tracing off: tracing costs each kernel
  /// time, which would weigh against a plan of many small kernels.
  void time_end_to_end(int runs, ProfileData& p) {
    std::vector<gpu::EventHandle> ev;
    for (int i = 0; i < runs * 3; ++i) ev.push_back(make_event());
    for (int r = 0; r < runs; ++r) {
      gpu::EventHandle* e = &ev[static_cast<size_t>(r) * 3];
      check(m_api->cuEventRecord(e[0].get(), m_stream), "cuEventRecord");
      zero();
      check(m_api->cuEventRecord(e[1].get(), m_stream), "cuEventRecord");
      for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
      check(m_api->cuEventRecord(e[2].get(), m_stream), "cuEventRecord");
    }
    sync("the end-to-end runs");
    std::vector<double> e2e, zeroing;
    for (int r = 0; r < runs; ++r) {
      gpu::EventHandle* e = &ev[static_cast<size_t>(r) * 3];
      zeroing.push_back(elapsed_us(e[0], e[1]));
      e2e.push_back(elapsed_us(e[1], e[2]));
    }
    p.end_to_end_us = gpu::stats_of(e2e);
    p.zeroing_us = gpu::stats_of(zeroing);
  }

  /// What `enqueue` puts on the stream, captured as one CUDA graph and instantiated (the graph
  /// itself is not kept: an executable graph does not need it). Throws RunnerError naming what
  /// failed; nothing is left behind.
  template <typename Enqueue>
  gpu::GraphExecHandle capture_graph(const std::string& what, Enqueue enqueue) {
    check(m_api->cuStreamBeginCapture(m_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
          "capturing " + what);
    std::optional<RunnerError> failed;
    m_capturing = true;
    try {
      enqueue();
    } catch (const RunnerError& e) {
      failed = e;
    }
    m_capturing = false;
    gpu::GraphHandle graph(m_api->cuGraphDestroy);
    CUresult r = m_api->cuStreamEndCapture(m_stream, graph.out());
    if (failed)
      throw RunnerError(failed->code(), what + " could not be captured: " + failed->what(),
                        failed->kernel());
    check(r, "cuStreamEndCapture of " + what);
    gpu::GraphExecHandle exec(m_api->cuGraphExecDestroy);
    check(m_api->cuGraphInstantiate(exec.out(), graph.get(), 0), "cuGraphInstantiate of " + what);
    return exec;
  }

  /// The time of each of `runs` replays of `exec` after `warmup` untimed ones, in microseconds.
  std::vector<double> time_replays(const gpu::GraphExecHandle& exec, int warmup, int runs) {
    gpu::EventHandle a = make_event(), b = make_event();
    for (int i = 0; i < warmup; ++i)
      check(m_api->cuGraphLaunch(exec.get(), m_stream), "cuGraphLaunch");
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
      check(m_api->cuEventRecord(a.get(), m_stream), "cuEventRecord");
      check(m_api->cuGraphLaunch(exec.get(), m_stream), "cuGraphLaunch");
      check(m_api->cuEventRecord(b.get(), m_stream), "cuEventRecord");
      sync("a graph replay");
      t.push_back(elapsed_us(a, b));
    }
    return t;
  }

  /// The whole run (zeroing and every launch) captured once as a CUDA graph and replayed.
  ///
  /// Per-tile flags: a captured launch keeps the epoch it was captured with, so replays cannot
  /// count epochs up. Instead the graph zeroes the flag counters itself (memset nodes before its
  /// first kernel) and every kernel with flags is captured with epoch 1. Each replay then starts
  /// from the state of a first run — counters at zero, epoch 1 — and a wait for 1 x releases is
  /// met only by that replay's own releases, as in a first run. Replays on one stream do not
  /// overlap, so no replay's releases are seen by another. After the replays the counters hold
  /// a replay's counts while the kernels' epochs were overwritten, so restart_flags puts both
  /// back to the start (zero, next launch epoch 1) for whatever runs next, whether the replay
  /// worked or not.
  void replay_graph(int runs, ProfileData& p) {
    struct Restart {
      CudaBackend& b;
      ~Restart() {
        if (b.m_dead) return;
        try {
          b.restart_flags();
        } catch (const RunnerError&) {  // the profile's answer already says what failed
        }
      }
    } restart{*this};
    gpu::GraphExecHandle exec = capture_graph("the plan as a CUDA graph", [&] {
      zero();
      restart_flags();  // captured: memset nodes at the graph's start
      for (size_t k = 0; k < m_loaded.size(); ++k) launch(k, 1);
    });
    p.graph_us = gpu::stats_of(time_replays(exec, 2, runs));
  }

  /// One more run under CUPTI's range profiler: a range per launch, replayed as the metrics
  /// need. Counters that cannot be had leave p.counters empty and say why in counters_note.
  void count(const std::vector<std::string>& order, ProfileData& p) {
    std::string why;
    const gpu::CuptiProfilerApi* api =
        m_profiler ? m_profiler : gpu::cupti_profiler_api(m_cupti_library, &why);
    std::unique_ptr<gpu::CuptiCounterSession> session =
        api ? gpu::CuptiCounterSession::open(*api, *m_api, m_ctx, m_ordinal, &why) : nullptr;
    if (!api) why = "CUPTI's range profiler is not available: " + why;
    if (!session) {
      p.counters_note = why;
      return;
    }
    std::string err;
    if (!session->start(order.size(), &err)) {
      p.counters_note = "the range profiler did not start: " + err;
      return;
    }
    // Kernel replay runs each launch alone anyway: waiting after each names a kernel that fails.
    zero();
    for (size_t k = 0; k < m_loaded.size(); ++k) {
      launch(k);
      sync("the counted run", m_loaded[k].k.name);
    }
    std::vector<gpu::RangeValues> ranges = session->stop(&err);
    if (ranges.empty()) {
      p.counters_note = "the range profiler gave no ranges: " + err;
      return;
    }
    std::string problem;
    p.counters = gpu::counters_from_ranges(ranges, order, &problem);
    if (p.counters.empty())
      p.counters_note = "the counters could not be matched to the launches: " + problem;
    else if (session->passes() > 1)
      p.counters_note = "each kernel replayed " + std::to_string(session->passes()) +
                        " times by CUPTI (" + session->chip() + ")";
  }

  void release_bundle() {
    if (!m_api) return;
    m_loaded.clear();
    m_ptrs.clear();
    m_memory.clear();
    m_modules.clear();
    m_manifest = BundleManifest{};
  }

  void release() {
    if (!m_api) return;
    release_bundle();
    m_calibration.reset();
    if (m_stream) m_api->cuStreamDestroy(m_stream);
    m_stream = nullptr;
    if (m_ctx) m_api->cuDevicePrimaryCtxRelease(m_device);
    m_ctx = nullptr;
  }

  // Calibration helpers (runner_calibrate in this file).
  CUfunction calibration_kernel(const char* name);
  double time_launches(CUfunction f, unsigned grid, unsigned block, void** args, int n, bool coop,
                       unsigned shared = 0);
  /// The TFLOP/s of the project's GEMM kernel `b` on the device; 0 and `note` when it cannot be
  /// compiled, launched, or computes a wrong result.
  double time_gemm(const GemmBench& b, std::string* note);

  /// The kernel tracer: the one given, else the process' libcupti.
  gpu::CuptiKernelTracer* tracer(std::string* why) const {
    return m_tracer ? m_tracer : gpu::CuptiKernelTracer::instance(why);
  }

  const gpu::CudaApi* m_api = nullptr;
  std::string m_reason;
  int m_ordinal = 0;
  gpu::CuptiKernelTracer* m_tracer = nullptr;
  const gpu::CuptiProfilerApi* m_profiler = nullptr;
  std::string m_cupti_library;  ///< the range profiler's libcupti; empty: the usual places
  CUdevice m_device = 0;
  CUcontext m_ctx = nullptr;
  CUstream m_stream = nullptr;
  Device m_dev;
  bool m_dead = false;
  BundleManifest m_manifest;
  std::vector<Loaded> m_loaded;
  bool m_capturing = false;  ///< a stream capture is under way
  std::vector<gpu::ModuleHandle> m_modules;
  std::vector<gpu::DeviceMemory> m_memory;  ///< the bundle's tensors
  std::vector<CUdeviceptr> m_ptrs;          ///< their addresses, which launches point at
  gpu::ModuleHandle m_calibration;
};

// ---- calibration ----

/// Kernels that measure the device, not the model: an empty kernel (launch overhead), one that
/// only synchronizes its grid `rounds` times (grid-barrier cost), one whose blocks release a
/// per-tile flag and wait on the next `tiles` blocks' flags `rounds` times, as the generated
/// kernels' FlagRelease and FlagWait do (flag cost), a grid-stride copy (bandwidth).
const char* kCalibrationSource = R"(
#include <cooperative_groups.h>
extern "C" __global__ void souffle_empty() {}
extern "C" __global__ void souffle_grid_sync(int rounds) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  for (int i = 0; i < rounds; ++i) g.sync();
}
__device__ __forceinline__ int souffle_cal_ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Counters only grow: each block waits until the blocks after it have released as often as it
// has (its own count after the release), so back-to-back launches need no reset.
extern "C" __global__ void souffle_flag_rounds(int* flags, int rounds, int tiles) {
  for (int r = 0; r < rounds; ++r) {
    __syncthreads();
    __shared__ int mine;
    if (threadIdx.x == 0) {
      __threadfence();
      mine = atomicAdd(&flags[blockIdx.x], 1) + 1;
      for (int j = 1; j <= tiles; ++j)
        while (souffle_cal_ld_acquire(&flags[(blockIdx.x + j) % gridDim.x]) < mine) {}
      __threadfence();
    }
    __syncthreads();
  }
}
extern "C" __global__ void souffle_copy(const float4* __restrict__ a, float4* __restrict__ b,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    b[i] = a[i];
}
)";

CUfunction CudaBackend::calibration_kernel(const char* name) {
  if (!m_calibration) {
    gpu::CompileOptions o;
    o.arch = m_dev.arch();
    gpu::CompileResult r = gpu::compile_cuda(kCalibrationSource, "calibration.cu", o);
    if (!r.ok)
      throw RunnerError("unsupported", "the calibration kernels do not compile: " + r.error);
    const std::string& image =
        r.cubin.empty() ? r.ptx : std::string(r.cubin.begin(), r.cubin.end());
    std::string data = image;
    if (r.cubin.empty()) data.push_back('\0');
    gpu::ModuleHandle module(m_api->cuModuleUnload);
    check(m_api->cuModuleLoadDataEx(module.out(), data.data(), 0, nullptr, nullptr),
          "loading the calibration kernels");
    m_calibration = std::move(module);
  }
  CUfunction f = nullptr;
  check(m_api->cuModuleGetFunction(&f, m_calibration.get(), name),
        std::string("cuModuleGetFunction ") + name);
  return f;
}

/// Median over 5 repetitions of the time of `n` back-to-back launches, in microseconds.
double CudaBackend::time_launches(CUfunction f, unsigned grid, unsigned block, void** args, int n,
                                  bool coop, unsigned shared) {
  gpu::EventHandle a = make_event(), b = make_event();
  std::vector<double> t;
  for (int rep = 0; rep < 6; ++rep) {
    check(m_api->cuEventRecord(a.get(), m_stream), "cuEventRecord");
    for (int i = 0; i < n; ++i)
      check(
          coop
              ? m_api->cuLaunchCooperativeKernel(f, grid, 1, 1, block, 1, 1, shared, m_stream, args)
              : m_api->cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared, m_stream, args, nullptr),
          "a calibration launch");
    check(m_api->cuEventRecord(b.get(), m_stream), "cuEventRecord");
    sync("calibration");
    if (rep > 0) t.push_back(elapsed_us(a, b));  // the first repetition warms up
  }
  return gpu::stats_of(t).median;
}

double CudaBackend::time_gemm(const GemmBench& b, std::string* note) {
  const std::string what = std::string(gpu::precision_name(b.precision)) + " GEMM";
  gpu::CompileOptions o;
  o.arch = m_dev.arch();
  gpu::CompileResult r = gpu::compile_cuda(b.cuda, "gemm_bench.cu", o);
  if (!r.ok) {
    *note = "the " + what + " kernel does not compile: " + r.error.substr(0, 400);
    return 0;
  }
  std::string image = r.cubin.empty() ? r.ptx : std::string(r.cubin.begin(), r.cubin.end());
  if (r.cubin.empty()) image.push_back('\0');
  gpu::ModuleHandle module(m_api->cuModuleUnload);
  check(m_api->cuModuleLoadDataEx(module.out(), image.data(), 0, nullptr, nullptr),
        "loading the " + what + " kernel");
  CUfunction f = nullptr;
  check(m_api->cuModuleGetFunction(&f, module.get(), b.name.c_str()),
        "cuModuleGetFunction " + b.name, b.name);
  const loop::LaunchConfig& l = b.kernel.launch;
  const unsigned shared = static_cast<unsigned>(l.dynamic_shared_bytes);
  opt_in_shared(f, shared, b.name);
  // A and B hold one value in every element (the bytes 0x3C: 0.0115 as fp32), so every
  // element of C must come out as K times its square.
  const unsigned char fill = 0x3C;
  float value = 0;
  {
    uint32_t bits = 0x3C3C3C3Cu;
    std::memcpy(&value, &bits, sizeof value);
  }
  std::vector<gpu::DeviceMemory> buffers;
  std::vector<CUdeviceptr> ptrs(b.params.size());
  CUdeviceptr out = 0;
  size_t out_bytes = 0;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const te::Tensor& t = b.params[i].tensor;
    size_t bytes = static_cast<size_t>(shape_numel(t->shape)) * dtype_size(t->dtype);
    buffers.emplace_back(m_api->cuMemFree);
    check(m_api->cuMemAlloc(buffers.back().out(), std::max<size_t>(bytes, 4)),
          "cuMemAlloc " + t->name);
    ptrs[i] = buffers.back().get();
    bool input = b.params[i].role == codegen::KernelParam::Role::Input;
    check(m_api->cuMemsetD8Async(ptrs[i], input ? fill : 0, bytes, m_stream), "cuMemset");
    if (t->name == "C") {
      out = ptrs[i];
      out_bytes = bytes;
    }
  }
  std::vector<void*> args;
  for (CUdeviceptr& p : ptrs) args.push_back(&p);
  const int launches = 3;
  double us = time_launches(f, static_cast<unsigned>(l.grid_x), static_cast<unsigned>(l.block_x),
                            args.data(), launches, l.cooperative, shared) /
              launches;
  // Check the first and last elements of C.
  const size_t n = std::min<size_t>(out_bytes / 4, 4096);
  std::vector<float> head(n), tail(n);
  read_device(head.data(), out, n * 4, "reading the " + what + "'s result");
  read_device(tail.data(), out + (out_bytes - n * 4), n * 4, "reading the " + what + "'s result");
  const double want = gemm_bench_expected(b, value, value);
  const double tolerance = b.precision == gpu::Precision::FP32 ? 1e-3 : 1e-2;
  for (const std::vector<float>* part : {&head, &tail})
    for (float got : *part)
      if (!(std::abs(got - want) <= tolerance * want)) {
        *note = "the " + what + " kernel computed " + std::to_string(got) + " where " +
                std::to_string(want) + " was due: its rate is not kept";
        return 0;
      }
  return us > 0 ? b.flops() / (us * 1e-6) / 1e12 : 0;
}

gpu::Calibration CudaBackend::calibrate(const EventFn& on_event) {
  ensure_context();
  gpu::Calibration c;
  c.device = m_dev.name;
  c.compute_capability = m_dev.cc();
  c.sm_count = m_dev.sms;
  m_api->cuDriverGetVersion(&c.driver_version);
  c.date = utc_now();
  c.clocks = "SM up to " + std::to_string(m_dev.clock_khz / 1000) + " MHz, memory up to " +
             std::to_string(m_dev.memory_clock_khz / 1000) +
             " MHz (device attributes; the clocks during the runs were not read)";

  on_event({{"event", "calibrate"}, {"phase", "launch overhead"}});
  CUfunction empty = calibration_kernel("souffle_empty");
  const int launches = 2000;
  c.launch_overhead_us = time_launches(empty, 1, 32, nullptr, launches, false) / launches;

  // The same launches as one CUDA graph (none when the graph cannot be made: a note-less gap,
  // as the cost model then takes the spec's figure).
  try {
    const int nodes = 200;
    gpu::GraphExecHandle exec = capture_graph("200 empty launches", [&] {
      for (int i = 0; i < nodes; ++i)
        check(m_api->cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, m_stream, nullptr, nullptr),
              "an empty launch");
    });
    c.graph_launch_us = gpu::stats_of(time_replays(exec, 1, 5)).median / nodes;
  } catch (const RunnerError&) {
    if (m_dead) throw;
  }

  // One grid barrier against the grid: (time of R2 barriers - time of R1) / (R2 - R1), so the
  // launch is subtracted, at 1..max co-resident blocks per SM of 256 threads.
  on_event({{"event", "calibrate"}, {"phase", "grid barriers"}});
  CUfunction gs = calibration_kernel("souffle_grid_sync");
  int per_sm = 0;
  check(m_api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gs, 256, 0), "occupancy");
  if (m_dev.cooperative)
    for (int b = 1; b <= per_sm; b = b < 4 ? b + 1 : b * 2) {
      const unsigned grid = static_cast<unsigned>(b * m_dev.sms);
      int r1 = 10, r2 = 410;
      void* a1[] = {&r1};
      void* a2[] = {&r2};
      double t1 = time_launches(gs, grid, 256, a1, 5, true) / 5;
      double t2 = time_launches(gs, grid, 256, a2, 5, true) / 5;
      c.grid_barrier.push_back(
          {static_cast<int>(grid), b, 256, std::max(0.0, (t2 - t1) / (r2 - r1))});
    }
  c.grid_barrier_fit = gpu::fit_barrier_cost(c.grid_barrier);

  // Per-tile flags at one block per SM (co-resident: a cooperative launch): a round of release
  // and one awaited tile, and what three more awaited tiles add, per round as above.
  on_event({{"event", "calibrate"}, {"phase", "per-tile flags"}});
  gpu::DeviceMemory flags(m_api->cuMemFree);
  if (m_dev.cooperative && m_dev.sms > 4 &&
      m_api->cuMemAlloc(flags.out(), sizeof(int) * size_t(m_dev.sms)) == CUDA_SUCCESS) {
    CUdeviceptr counters = flags.get();
    check(m_api->cuMemsetD8Async(counters, 0, sizeof(int) * size_t(m_dev.sms), m_stream),
          "clearing the flag counters");
    CUfunction fr = calibration_kernel("souffle_flag_rounds");
    auto per_round = [&](int tiles) {
      int r1 = 10, r2 = 410;
      void* a1[] = {&counters, &r1, &tiles};
      void* a2[] = {&counters, &r2, &tiles};
      const unsigned grid = static_cast<unsigned>(m_dev.sms);
      double t1 = time_launches(fr, grid, 256, a1, 5, true) / 5;
      double t2 = time_launches(fr, grid, 256, a2, 5, true) / 5;
      return std::max(0.0, (t2 - t1) / (r2 - r1));
    };
    c.flag_round_us = per_round(1);
    c.flag_tile_us = std::max(0.0, (per_round(4) - c.flag_round_us) / 3);
  }
  flags.reset();

  // Copy bandwidth: 1 GiB read and 1 GiB written.
  on_event({{"event", "calibrate"}, {"phase", "copy bandwidth"}});
  const size_t bytes = size_t{1} << 30;
  gpu::DeviceMemory from(m_api->cuMemFree), to(m_api->cuMemFree);
  if (m_api->cuMemAlloc(from.out(), bytes) == CUDA_SUCCESS &&
      m_api->cuMemAlloc(to.out(), bytes) == CUDA_SUCCESS) {
    CUdeviceptr src = from.get(), dst = to.get();
    check(m_api->cuMemsetD8Async(src, 1, bytes, m_stream), "filling the copy's source");
    CUfunction copy = calibration_kernel("souffle_copy");
    unsigned long long n = bytes / 16;
    void* args[] = {&src, &dst, &n};
    double us =
        time_launches(copy, static_cast<unsigned>(m_dev.sms * 8), 256, args, 10, false) / 10;
    c.dram_bandwidth_gbps = us > 0 ? 2.0 * bytes / (us * 1e-6) / 1e9 : 0;
  }
  from.reset();
  to.reset();

  // GEMM rates: the project's own SIMT and tensor-core templates on a large problem, with the
  // tiles the tuner picks for this device's spec.
  on_event({{"event", "calibrate"}, {"phase", "GEMM rates"}});
  std::optional<gpu::GpuSpec> spec = gpu::device_gpu_spec(m_dev.attributes);
  std::vector<std::string> notes;
  if (!spec) {
    notes.push_back("no built-in GPU spec matches " + m_dev.name +
                    ", so no tile is tuned for it: GEMM rates not measured");
  } else {
    schedule::GemmProblem p;
    p.m = p.n = p.k = kCalibrationGemmSize;
    for (gpu::Precision precision : {gpu::Precision::FP32, gpu::Precision::FP16}) {
      const bool fp32 = precision == gpu::Precision::FP32;
      if (!fp32 && m_dev.major < 7) {
        notes.push_back("no tensor cores below compute capability 7.0");
        continue;
      }
      const std::string what = std::string("the ") + gpu::precision_name(precision) + " GEMM";
      if (m_dead) {
        notes.push_back(what + " was not measured: the CUDA context was lost");
        continue;
      }
      // A GEMM that fails, faults included, loses its own rate only: what was measured before
      // it is answered (after a fault, the runner then exits).
      std::string note;
      try {
        GemmBench b = make_gemm_bench(p, *spec, precision, nullptr,
                                      fp32 ? "souffle_gemm_fp32" : "souffle_gemm_fp16");
        double tflops = time_gemm(b, &note);
        (fp32 ? c.gemm_fp32_tflops : c.gemm_fp16_tflops) = tflops;
        if (tflops > 0) (fp32 ? c.gemm_fp32_tile : c.gemm_fp16_tile) = b.tile.describe();
        // The rate belongs to the mainloop this kernel was built with, and the cost model takes
        // it only for stages built the same way.
        if (tflops > 0 && !fp32) c.gemm_fp16_template = b.mainloop_template;
      } catch (const UserError& e) {
        note = e.what();
      } catch (const RunnerError& e) {
        note = what + " failed: " + e.what();
      }
      if (!note.empty()) notes.push_back(note);
    }
  }
  for (const std::string& n : notes) c.gemm_note += (c.gemm_note.empty() ? "" : "; ") + n;
  return c;
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device) {
  return std::make_unique<CudaBackend>(device);
}

std::unique_ptr<Backend> make_cuda_backend(const gpu::CudaApi& api, int device,
                                           const std::string& cupti_library) {
  CudaBackendApis apis;
  apis.driver = &api;
  apis.cupti_library = cupti_library;
  return std::make_unique<CudaBackend>(apis, device);
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendApis& apis, int device) {
  return std::make_unique<CudaBackend>(apis, device);
}

}  // namespace souffle::runner
