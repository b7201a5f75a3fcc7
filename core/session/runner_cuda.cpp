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
#include <optional>
#include <sstream>

#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/gpu/nvrtc.h"
#include "core/session/gemm_bench.h"
#include "core/session/runner.h"

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
  CudaBackend(const gpu::CudaApi* api, int device, std::string cupti_library)
      : m_api(api), m_ordinal(device), m_cupti_library(std::move(cupti_library)) {}
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
    gpu::CuptiKernelTracer* t = gpu::CuptiKernelTracer::instance(&why);
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
      std::string image;
      if (cubin) {
        image = file_bytes((dir / cubin->cubin).string());
        l.image = "cubin " + cubin->arch;
      } else if (ptx) {
        image = file_bytes((dir / ptx->ptx).string());
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
      char log[8192] = {};
      CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void* vals[] = {log, reinterpret_cast<void*>(sizeof log - 1)};
      CUresult r = m_api->cuModuleLoadDataEx(&l.module, image.data(), 2, opts, vals);
      if (r != CUDA_SUCCESS)
        throw RunnerError("bad_bundle",
                          k.name + ": the driver cannot load its " + l.image + ": " +
                              m_api->error_text(r) + (log[0] ? std::string("\n") + log : ""),
                          k.name);
      m_modules.push_back(l.module);
      check(m_api->cuModuleGetFunction(&l.fn, l.module, k.name.c_str()),
            "cuModuleGetFunction " + k.name, k.name);
      if (k.shared_bytes > 48 * 1024)
        check(m_api->cuFuncSetAttribute(l.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(k.shared_bytes)),
              k.name + ": opting in to " + std::to_string(k.shared_bytes) +
                  " bytes of dynamic shared memory",
              k.name);
      check(m_api->cuFuncGetAttribute(&l.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, l.fn),
            "cuFuncGetAttribute", k.name);
      int static_smem = 0;
      m_api->cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l.fn);
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
      check(m_api->cuMemAlloc(&m_ptrs[i], bytes),
            "cuMemAlloc of " + std::to_string(bytes) + " bytes for " + m.tensors[i].name);
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
    if (!bytes.empty())
      check(m_api->cuMemcpyHtoD(m_ptrs[static_cast<size_t>(index)], bytes.data(), bytes.size()),
            "uploading " + t.name);
  }

  std::string read(int index) override {
    const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
    std::string out(static_cast<size_t>(t.bytes), '\0');
    if (!out.empty())
      check(m_api->cuMemcpyDtoH(out.data(), m_ptrs[static_cast<size_t>(index)], out.size()),
            "reading " + t.name);
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
    std::string why;
    gpu::CuptiKernelTracer* tracer = gpu::CuptiKernelTracer::instance(&why);
    std::string err;
    if (tracer && !tracer->start(&err)) {
      why = "CUPTI did not start (" + err + "): kernel times come from CUDA events";
      tracer = nullptr;
    }
    // Events: run start, after zeroing, after each kernel (used as kernel times without CUPTI).
    const size_t n = m_loaded.size();
    std::vector<CUevent> ev(static_cast<size_t>(runs) * (n + 2));
    for (CUevent& e : ev) check(m_api->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    for (int r = 0; r < runs; ++r) {
      CUevent* e = &ev[static_cast<size_t>(r) * (n + 2)];
      check(m_api->cuEventRecord(e[0], m_stream), "cuEventRecord");
      zero();
      check(m_api->cuEventRecord(e[1], m_stream), "cuEventRecord");
      for (size_t k = 0; k < n; ++k) {
        launch(k);
        if (!tracer) check(m_api->cuEventRecord(e[k + 2], m_stream), "cuEventRecord");
      }
      if (tracer) check(m_api->cuEventRecord(e[n + 1], m_stream), "cuEventRecord");
    }
    sync("the timed runs");
    std::vector<gpu::KernelActivity> records;
    if (tracer) records = tracer->stop(&err);
    std::vector<double> e2e, zeroing;
    std::vector<std::vector<double>> per_kernel(n);
    for (int r = 0; r < runs; ++r) {
      CUevent* e = &ev[static_cast<size_t>(r) * (n + 2)];
      zeroing.push_back(elapsed_us(e[0], e[1]));
      e2e.push_back(elapsed_us(e[1], e[n + 1]));
      if (!tracer)
        for (size_t k = 0; k < n; ++k) per_kernel[k].push_back(elapsed_us(e[k + 1], e[k + 2]));
    }
    for (CUevent e : ev) m_api->cuEventDestroy(e);
    p.end_to_end_us = gpu::stats_of(e2e);
    p.zeroing_us = gpu::stats_of(zeroing);
    if (tracer) {
      // The runs were timed by CUPTI alone (no events between kernels to perturb them).
      std::string problem;
      p.kernels = gpu::group_runs(records, order, runs, &problem);
      p.timer = p.kernels.empty() ? "none" : "cupti";
      if (p.kernels.empty())
        p.timer_note = "CUPTI records could not be matched to the launches (" + problem +
                       "): no per-kernel times, only the end-to-end time";
      if (!err.empty()) p.timer_note += (p.timer_note.empty() ? "" : "; ") + err;
    } else {
      p.timer = "cuda-events";
      p.timer_note = why;
      for (size_t k = 0; k < n; ++k) {
        gpu::KernelTimes t;
        t.name = order[k];
        t.duration_us = gpu::stats_of(per_kernel[k]);
        p.kernels.push_back(t);
      }
    }
    if (graph) replay_graph(runs, p);
    if (counters) {
      on_event({{"event", "profile"}, {"phase", "hardware counters"}});
      count(order, p);
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

  void check(CUresult r, const std::string& what, const std::string& kernel = "") {
    if (r == CUDA_SUCCESS) return;
    if (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
        r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
        r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_HARDWARE_STACK_ERROR)
      fault(r, kernel);
    throw RunnerError("launch_failed", what + ": " + m_api->error_text(r), kernel);
  }

  /// A kernel broke the context: nothing more can run in this process.
  [[noreturn]] void fault(CUresult r, const std::string& kernel) {
    m_dead = true;
    throw RunnerError("kernel_fault",
                      (kernel.empty() ? std::string("a kernel") : kernel) + " faulted on " +
                          m_dev.name + ": " + m_api->error_text(r) +
                          " (the CUDA context is lost; the runner exits)",
                      kernel);
  }

  void sync(const std::string& what) {
    CUresult r = m_api->cuStreamSynchronize(m_stream);
    if (r != CUDA_SUCCESS) fault(r, "");
    (void)what;
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
    check(r, "launching " + l.k.name, l.k.name);
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
  /// back to the start (zero, next launch epoch 1) for whatever runs next.
  /// One more run under CUPTI's range profiler: a range per launch, replayed as the metrics
  /// need. Counters that cannot be had leave p.counters empty and say why in counters_note.
  void count(const std::vector<std::string>& order, ProfileData& p) {
    std::string why;
    std::unique_ptr<gpu::CuptiCounterSession> session =
        gpu::CuptiCounterSession::open(m_ctx, m_ordinal, &why, m_cupti_library);
    if (!session) {
      p.counters_note = why;
      return;
    }
    std::string err;
    if (!session->start(order.size(), &err)) {
      p.counters_note = "the range profiler did not start: " + err;
      return;
    }
    zero();
    for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
    sync("the counted run");
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

  void replay_graph(int runs, ProfileData& p) {
    struct Restart {
      CudaBackend& b;
      ~Restart() {
        try {
          b.restart_flags();
        } catch (const RunnerError&) {  // a fault already reported by the replay
        }
      }
    } restart{*this};
    CUgraph g = nullptr;
    CUgraphExec exec = nullptr;
    CUresult r = m_api->cuStreamBeginCapture(m_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) {
      p.graph_note = "stream capture refused: " + m_api->error_text(r);
      return;
    }
    std::string failed;
    try {
      zero();
      restart_flags();  // captured: memset nodes at the graph's start
      for (size_t k = 0; k < m_loaded.size(); ++k) launch(k, 1);
    } catch (const RunnerError& e) {
      failed = e.what();
    }
    r = m_api->cuStreamEndCapture(m_stream, &g);
    if (!failed.empty() || r != CUDA_SUCCESS) {
      p.graph_note = "the plan could not be captured as a CUDA graph: " +
                     (failed.empty() ? m_api->error_text(r) : failed);
      if (g) m_api->cuGraphDestroy(g);
      return;
    }
    r = m_api->cuGraphInstantiate(&exec, g, 0);
    if (r != CUDA_SUCCESS) {
      p.graph_note = "cuGraphInstantiate: " + m_api->error_text(r);
      m_api->cuGraphDestroy(g);
      return;
    }
    std::vector<double> t;
    CUevent a = nullptr, b = nullptr;
    check(m_api->cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
    check(m_api->cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; i < 2; ++i) check(m_api->cuGraphLaunch(exec, m_stream), "cuGraphLaunch");
    for (int i = 0; i < runs; ++i) {
      check(m_api->cuEventRecord(a, m_stream), "cuEventRecord");
      check(m_api->cuGraphLaunch(exec, m_stream), "cuGraphLaunch");
      check(m_api->cuEventRecord(b, m_stream), "cuEventRecord");
      sync("a graph replay");
      t.push_back(elapsed_us(a, b));
    }
    m_api->cuEventDestroy(a);
    m_api->cuEventDestroy(b);
    m_api->cuGraphExecDestroy(exec);
    m_api->cuGraphDestroy(g);
    p.graph_us = gpu::stats_of(t);
  }

  void release_bundle() {
    if (!m_api) return;
    for (CUdeviceptr p : m_ptrs)
      if (p) m_api->cuMemFree(p);
    m_ptrs.clear();
    for (CUmodule m : m_modules) m_api->cuModuleUnload(m);
    m_modules.clear();
    m_loaded.clear();
    m_manifest = BundleManifest{};
  }

  void release() {
    if (!m_api || m_dead) return;
    release_bundle();
    if (m_stream) m_api->cuStreamDestroy(m_stream);
    if (m_ctx) m_api->cuDevicePrimaryCtxRelease(m_device);
  }

  // Calibration helpers (runner_calibrate in this file).
  CUfunction calibration_kernel(const char* name);
  double time_launches(CUfunction f, unsigned grid, unsigned block, void** args, int n, bool coop,
                       unsigned shared = 0);
  /// The TFLOP/s of the project's GEMM kernel `b` on the device; 0 and `note` when it cannot be
  /// compiled, launched, or computes a wrong result.
  double time_gemm(const GemmBench& b, std::string* note);

  const gpu::CudaApi* m_api = nullptr;
  std::string m_reason;
  int m_ordinal = 0;
  std::string m_cupti_library;  ///< the range profiler's libcupti; empty: the usual places
  CUdevice m_device = 0;
  CUcontext m_ctx = nullptr;
  CUstream m_stream = nullptr;
  Device m_dev;
  bool m_dead = false;
  BundleManifest m_manifest;
  std::vector<Loaded> m_loaded;
  std::vector<CUmodule> m_modules;
  std::vector<CUdeviceptr> m_ptrs;
  CUmodule m_calibration = nullptr;
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
    check(m_api->cuModuleLoadDataEx(&m_calibration, data.data(), 0, nullptr, nullptr),
          "loading the calibration kernels");
  }
  CUfunction f = nullptr;
  check(m_api->cuModuleGetFunction(&f, m_calibration, name),
        std::string("cuModuleGetFunction ") + name);
  return f;
}

/// Median over 5 repetitions of the time of `n` back-to-back launches, in microseconds.
double CudaBackend::time_launches(CUfunction f, unsigned grid, unsigned block, void** args, int n,
                                  bool coop, unsigned shared) {
  CUevent a = nullptr, b = nullptr;
  check(m_api->cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  check(m_api->cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> t;
  for (int rep = 0; rep < 6; ++rep) {
    check(m_api->cuEventRecord(a, m_stream), "cuEventRecord");
    for (int i = 0; i < n; ++i)
      check(
          coop
              ? m_api->cuLaunchCooperativeKernel(f, grid, 1, 1, block, 1, 1, shared, m_stream, args)
              : m_api->cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared, m_stream, args, nullptr),
          "a calibration launch");
    check(m_api->cuEventRecord(b, m_stream), "cuEventRecord");
    sync("calibration");
    if (rep > 0) t.push_back(elapsed_us(a, b));  // the first repetition warms up
  }
  m_api->cuEventDestroy(a);
  m_api->cuEventDestroy(b);
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
  CUmodule module = nullptr;
  check(m_api->cuModuleLoadDataEx(&module, image.data(), 0, nullptr, nullptr),
        "loading the " + what + " kernel");
  std::vector<CUdeviceptr> buffers;
  auto release = [&] {
    for (CUdeviceptr p : buffers) m_api->cuMemFree(p);
    m_api->cuModuleUnload(module);
  };
  try {
    CUfunction f = nullptr;
    check(m_api->cuModuleGetFunction(&f, module, b.name.c_str()), "cuModuleGetFunction " + b.name);
    const loop::LaunchConfig& l = b.kernel.launch;
    const unsigned shared = static_cast<unsigned>(l.dynamic_shared_bytes);
    if (shared > 48 * 1024)
      check(m_api->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      static_cast<int>(shared)),
            "the " + what + " kernel's shared memory");
    // A and B hold one value in every element (the bytes 0x3C: 0.0115 as fp32), so every
    // element of C must come out as K times its square.
    const unsigned char fill = 0x3C;
    float value = 0;
    {
      uint32_t bits = 0x3C3C3C3Cu;
      std::memcpy(&value, &bits, sizeof value);
    }
    std::vector<void*> args;
    std::vector<CUdeviceptr> ptrs(b.params.size());
    CUdeviceptr out = 0;
    size_t out_bytes = 0;
    for (size_t i = 0; i < b.params.size(); ++i) {
      const te::Tensor& t = b.params[i].tensor;
      size_t bytes = static_cast<size_t>(shape_numel(t->shape)) * dtype_size(t->dtype);
      check(m_api->cuMemAlloc(&ptrs[i], std::max<size_t>(bytes, 4)), "cuMemAlloc " + t->name);
      buffers.push_back(ptrs[i]);
      bool input = b.params[i].role == codegen::KernelParam::Role::Input;
      check(m_api->cuMemsetD8Async(ptrs[i], input ? fill : 0, bytes, m_stream), "cuMemset");
      if (t->name == "C") {
        out = ptrs[i];
        out_bytes = bytes;
      }
    }
    for (CUdeviceptr& p : ptrs) args.push_back(&p);
    const int launches = 3;
    double us = time_launches(f, static_cast<unsigned>(l.grid_x), static_cast<unsigned>(l.block_x),
                              args.data(), launches, l.cooperative, shared) /
                launches;
    // Check the first and last elements of C.
    const size_t n = std::min<size_t>(out_bytes / 4, 4096);
    std::vector<float> head(n), tail(n);
    check(m_api->cuMemcpyDtoH(head.data(), out, n * 4), "reading the GEMM's result");
    check(m_api->cuMemcpyDtoH(tail.data(), out + (out_bytes - n * 4), n * 4),
          "reading the GEMM's result");
    const double want = gemm_bench_expected(b, value, value);
    const double tolerance = b.precision == gpu::Precision::FP32 ? 1e-3 : 1e-2;
    for (const std::vector<float>* part : {&head, &tail})
      for (float got : *part)
        if (!(std::abs(got - want) <= tolerance * want)) {
          *note = "the " + what + " kernel computed " + std::to_string(got) + " where " +
                  std::to_string(want) + " was due: its rate is not kept";
          release();
          return 0;
        }
    release();
    return us > 0 ? b.flops() / (us * 1e-6) / 1e12 : 0;
  } catch (...) {
    release();
    throw;
  }
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

  // The same launches as one CUDA graph.
  {
    CUgraph g = nullptr;
    CUgraphExec exec = nullptr;
    const int nodes = 200;
    if (m_api->cuStreamBeginCapture(m_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
        CUDA_SUCCESS) {
      for (int i = 0; i < nodes; ++i)
        m_api->cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, m_stream, nullptr, nullptr);
      if (m_api->cuStreamEndCapture(m_stream, &g) == CUDA_SUCCESS &&
          m_api->cuGraphInstantiate(&exec, g, 0) == CUDA_SUCCESS) {
        CUevent a = nullptr, b = nullptr;
        m_api->cuEventCreate(&a, CU_EVENT_DEFAULT);
        m_api->cuEventCreate(&b, CU_EVENT_DEFAULT);
        std::vector<double> t;
        for (int rep = 0; rep < 6; ++rep) {
          m_api->cuEventRecord(a, m_stream);
          m_api->cuGraphLaunch(exec, m_stream);
          m_api->cuEventRecord(b, m_stream);
          sync("calibration");
          if (rep > 0) t.push_back(elapsed_us(a, b) / nodes);
        }
        c.graph_launch_us = gpu::stats_of(t).median;
        m_api->cuEventDestroy(a);
        m_api->cuEventDestroy(b);
        m_api->cuGraphExecDestroy(exec);
      }
      if (g) m_api->cuGraphDestroy(g);
    }
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
  CUdeviceptr counters = 0;
  if (m_dev.cooperative && m_dev.sms > 4 &&
      m_api->cuMemAlloc(&counters, sizeof(int) * size_t(m_dev.sms)) == CUDA_SUCCESS) {
    m_api->cuMemsetD8Async(counters, 0, sizeof(int) * size_t(m_dev.sms), m_stream);
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
  if (counters) m_api->cuMemFree(counters);

  // Copy bandwidth: 1 GiB read and 1 GiB written.
  on_event({{"event", "calibrate"}, {"phase", "copy bandwidth"}});
  const size_t bytes = size_t{1} << 30;
  CUdeviceptr src = 0, dst = 0;
  if (m_api->cuMemAlloc(&src, bytes) == CUDA_SUCCESS &&
      m_api->cuMemAlloc(&dst, bytes) == CUDA_SUCCESS) {
    m_api->cuMemsetD8Async(src, 1, bytes, m_stream);
    CUfunction copy = calibration_kernel("souffle_copy");
    unsigned long long n = bytes / 16;
    void* args[] = {&src, &dst, &n};
    double us =
        time_launches(copy, static_cast<unsigned>(m_dev.sms * 8), 256, args, 10, false) / 10;
    c.dram_bandwidth_gbps = us > 0 ? 2.0 * bytes / (us * 1e-6) / 1e9 : 0;
  }
  if (src) m_api->cuMemFree(src);
  if (dst) m_api->cuMemFree(dst);

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
      std::string note;
      try {
        GemmBench b = make_gemm_bench(p, *spec, precision, nullptr,
                                      fp32 ? "souffle_gemm_fp32" : "souffle_gemm_fp16");
        double tflops = time_gemm(b, &note);
        (fp32 ? c.gemm_fp32_tflops : c.gemm_fp16_tflops) = tflops;
        if (tflops > 0) (fp32 ? c.gemm_fp32_tile : c.gemm_fp16_tile) = b.tile.describe();
      } catch (const UserError& e) {
        note = e.what();
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
  return std::make_unique<CudaBackend>(&api, device, cupti_library);
}

}  // namespace souffle::runner
