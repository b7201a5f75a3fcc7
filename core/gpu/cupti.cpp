#include "core/gpu/cupti.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/gpu/cupti_api.h"

namespace souffle::gpu {

bool parse_kernel_record(const void* record, KernelActivity& out) {
  const auto* base = static_cast<const CUpti_Activity*>(record);
  if (base->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
      base->kind != CUPTI_ACTIVITY_KIND_KERNEL)
    return false;
  const auto* k = static_cast<const CUpti_ActivityKernel10*>(record);
  out.name = k->name ? k->name : "";
  out.start_ns = k->start;
  out.end_ns = k->end;
  out.correlation_id = k->correlationId;
  out.stream_id = k->streamId;
  out.grid_x = k->gridX;
  out.block_x = k->blockX;
  out.registers = k->registersPerThread;
  out.static_shared = k->staticSharedMemory;
  out.dynamic_shared = k->dynamicSharedMemory;
  return true;
}

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.count = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

std::vector<KernelTimes> group_runs(const std::vector<KernelActivity>& records,
                                    const std::vector<std::string>& order, int runs,
                                    std::string* problem) {
  auto fail = [&](const std::string& why) {
    if (problem) *problem = why;
    return std::vector<KernelTimes>{};
  };
  if (order.empty() || runs <= 0) return fail("nothing was launched");
  const size_t want = order.size() * static_cast<size_t>(runs);
  if (records.size() != want)
    return fail("CUPTI recorded " + std::to_string(records.size()) + " kernels, " +
                std::to_string(want) + " were launched (" + std::to_string(runs) + " runs of " +
                std::to_string(order.size()) + ")");
  std::vector<KernelActivity> sorted = records;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const KernelActivity& a, const KernelActivity& b) { return a.start_ns < b.start_ns; });
  std::vector<std::vector<double>> dur(order.size()), gap(order.size());
  for (int r = 0; r < runs; ++r)
    for (size_t k = 0; k < order.size(); ++k) {
      const KernelActivity& a = sorted[static_cast<size_t>(r) * order.size() + k];
      if (a.name != order[k])
        return fail("run " + std::to_string(r + 1) + ": CUPTI saw " + a.name + " where " +
                    order[k] + " was launched");
      if (a.end_ns < a.start_ns) return fail(a.name + ": a record ends before it starts");
      dur[k].push_back(a.duration_us());
      if (k > 0) {
        const KernelActivity& prev = sorted[static_cast<size_t>(r) * order.size() + k - 1];
        gap[k].push_back(a.start_ns >= prev.end_ns ? (a.start_ns - prev.end_ns) / 1e3 : 0.0);
      } else {
        gap[k].push_back(0.0);
      }
    }
  std::vector<KernelTimes> out(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    out[k].name = order[k];
    out[k].duration_us = stats_of(dur[k]);
    out[k].gap_before_us = stats_of(gap[k]);
  }
  return out;
}

namespace {

/// What the buffer callbacks collect for the tracer that is started (CUPTI calls them from its
/// own thread, and they take no user pointer).
struct Collected {
  std::mutex mu;
  const CuptiActivityApi* api = nullptr;
  std::vector<KernelActivity> records;
  size_t dropped = 0;
};
Collected g_collected;

constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  const CuptiActivityApi* api = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_collected.mu);
    api = g_collected.api;
  }
  std::vector<KernelActivity> got;
  size_t dropped = 0;
  if (api) {
    CUpti_Activity* record = nullptr;
    while (api->cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      KernelActivity a;
      if (parse_kernel_record(record, a)) got.push_back(std::move(a));
    }
    // Records that found no room in a buffer are lost; CUPTI counts them per context and stream.
    if (api->cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_collected.mu);
  g_collected.records.insert(g_collected.records.end(), got.begin(), got.end());
  g_collected.dropped += dropped;
}

#define SOUFFLE_STR2(x) #x
#define SOUFFLE_STR(x) SOUFFLE_STR2(x)

struct LoadedActivityApi {
  CuptiActivityApi api;
  std::string reason;
};

LoadedActivityApi load_activity_api(const std::string& library) {
  LoadedActivityApi l;
  void* h = open_cupti(library, &l.api.library, nullptr);
  if (!h) {
    l.reason =
        "CUPTI not found (libcupti.so in the CUDA toolkit's extras/CUPTI/lib64, lib64 or lib, or "
        "SOUFFLE_CUPTI=FILE)";
    return l;
  }
  std::string missing;
#define SOUFFLE_CUPTI_ACTIVITY_LOOKUP(f)                                \
  l.api.f = reinterpret_cast<decltype(&::f)>(dlsym(h, SOUFFLE_STR(f))); \
  if (!l.api.f) missing += std::string(missing.empty() ? "" : ", ") + SOUFFLE_STR(f);
  SOUFFLE_CUPTI_ACTIVITY_FUNCTIONS(SOUFFLE_CUPTI_ACTIVITY_LOOKUP)
#undef SOUFFLE_CUPTI_ACTIVITY_LOOKUP
  if (!missing.empty()) l.reason = l.api.library + " lacks the activity API (" + missing + ")";
  return l;
}

}  // namespace

std::string CuptiActivityApi::result_text(CUptiResult r) const {
  const char* s = nullptr;
  if (cuptiGetResultString && cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

const CuptiActivityApi* cupti_activity_api(const std::string& library, std::string* reason) {
  static std::mutex mu;
  static auto* loaded = new std::map<std::string, LoadedActivityApi>();  // never unloaded
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(library);
  if (it == loaded->end()) it = loaded->emplace(library, load_activity_api(library)).first;
  if (!it->second.reason.empty()) {
    if (reason) *reason = it->second.reason;
    return nullptr;
  }
  return &it->second.api;
}

std::string cupti_version_refusal(uint32_t library, uint32_t headers) {
  constexpr uint32_t kMajor = 10000;  // major * 10000 + minor * 100 + update, from CUDA 13
  const bool ok = headers >= kMajor ? library / kMajor == headers / kMajor
                                    : library >= headers && library < kMajor;
  if (ok) return "";
  return "it has CUPTI API version " + std::to_string(library) + ", this build reads version " +
         std::to_string(headers) +
         (headers >= kMajor ? "'s major (" + std::to_string(headers / kMajor) + ")"
                            : std::string(" or newer"));
}

std::vector<std::string> cupti_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("SOUFFLE_CUPTI")) out.push_back(env);
  std::vector<std::string> roots;
  if (const char* h = std::getenv("CUDA_HOME")) roots.push_back(h);
  if (const char* p = std::getenv("CUDA_PATH")) roots.push_back(p);
  roots.push_back("/usr/local/cuda");
  for (const std::string& r : roots)
    for (const char* sub :
         {"/extras/CUPTI/lib64/", "/lib64/", "/lib/", "/targets/x86_64-linux/lib/"})
      for (const char* f : {"libcupti.so", "libcupti.so.13"}) out.push_back(r + sub + f);
  out.push_back("libcupti.so.13");
  out.push_back("libcupti.so");
  return out;
}

void* open_cupti(const std::string& library, std::string* loaded, std::string* error) {
  const std::vector<std::string> candidates =
      library.empty() ? cupti_candidates() : std::vector<std::string>{library};
  for (const std::string& c : candidates)
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (loaded) *loaded = c;
      return h;
    }
  if (error) {
    const char* e = library.empty() ? nullptr : dlerror();
    *error = e ? e : "";
  }
  return nullptr;
}

CuptiKernelTracer* CuptiKernelTracer::instance(std::string* reason, const std::string& library) {
  static std::mutex mu;
  static CuptiKernelTracer* tracer = nullptr;  // kept for the process, as libcupti is
  static std::string failure;
  std::lock_guard<std::mutex> lock(mu);
  if (tracer) return tracer;
  if (failure.empty()) {
    std::string why;
    const CuptiActivityApi* api = cupti_activity_api(library, &why);
    std::unique_ptr<CuptiKernelTracer> t = api ? open(*api, &why) : nullptr;
    if (t)
      tracer = t.release();
    else
      failure = why + ": kernel times come from CUDA events";
  }
  if (!tracer && reason) *reason = failure;
  return tracer;
}

std::unique_ptr<CuptiKernelTracer> CuptiKernelTracer::open(const CuptiActivityApi& api,
                                                           std::string* reason) {
  uint32_t version = 0;
  CUptiResult r = api.cuptiGetVersion(&version);
  if (r != CUPTI_SUCCESS) {
    if (reason) *reason = api.library + ": cuptiGetVersion: " + api.result_text(r);
    return nullptr;
  }
  // Records are laid out as the library's own API version has them; this build reads the
  // layout of the headers it was compiled with.
  if (std::string no = cupti_version_refusal(version, CUPTI_API_VERSION); !no.empty()) {
    if (reason) *reason = api.library + " cannot be read: " + no;
    return nullptr;
  }
  r = api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    if (reason) *reason = "CUPTI refused its buffers (" + api.result_text(r) + ")";
    return nullptr;
  }
  std::unique_ptr<CuptiKernelTracer> t(new CuptiKernelTracer(api));
  t->m_version = version;
  return t;
}

std::string CuptiKernelTracer::library() const {
  return m_api.library;
}

bool CuptiKernelTracer::start(std::string* error) {
  {
    std::lock_guard<std::mutex> lock(g_collected.mu);
    g_collected.api = &m_api;
    g_collected.records.clear();
    g_collected.dropped = 0;
  }
  m_dropped = 0;
  CUptiResult r = m_api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    if (error) *error = "cuptiActivityEnable: " + m_api.result_text(r);
    return false;
  }
  return true;
}

std::vector<KernelActivity> CuptiKernelTracer::stop(std::string* error) {
  CUptiResult r = m_api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS && error) *error = "cuptiActivityFlushAll: " + m_api.result_text(r);
  m_api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::lock_guard<std::mutex> lock(g_collected.mu);
  m_dropped = g_collected.dropped;
  std::vector<KernelActivity> out;
  out.swap(g_collected.records);
  return out;
}

}  // namespace souffle::gpu
