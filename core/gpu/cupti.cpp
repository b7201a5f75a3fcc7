#include "core/gpu/cupti.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>

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

struct CuptiApi {
  decltype(&::cuptiActivityEnable) enable = nullptr;
  decltype(&::cuptiActivityDisable) disable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&::cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&::cuptiGetResultString) result_string = nullptr;
  decltype(&::cuptiGetVersion) get_version = nullptr;
};

CuptiApi g_api;
std::mutex g_records_mu;
std::vector<KernelActivity> g_records;
size_t g_dropped = 0;

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (g_api.result_string && g_api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<KernelActivity> got;
  while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    KernelActivity a;
    if (parse_kernel_record(record, a)) got.push_back(std::move(a));
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_records_mu);
  g_records.insert(g_records.end(), got.begin(), got.end());
}

}  // namespace

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
  static CuptiKernelTracer* tracer = nullptr;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mu);
  if (tracer) return tracer;
  if (!failure.empty()) {
    if (reason) *reason = failure;
    return nullptr;
  }
  std::string loaded;
  void* h = open_cupti(library, &loaded, nullptr);
  if (!h) {
    failure =
        "CUPTI not found (libcupti.so in the CUDA toolkit's extras/CUPTI/lib64, lib64 or "
        "lib, or SOUFFLE_CUPTI=FILE): kernel times come from CUDA events";
    if (reason) *reason = failure;
    return nullptr;
  }
  g_api.enable = reinterpret_cast<decltype(g_api.enable)>(dlsym(h, "cuptiActivityEnable"));
  g_api.disable = reinterpret_cast<decltype(g_api.disable)>(dlsym(h, "cuptiActivityDisable"));
  g_api.register_callbacks = reinterpret_cast<decltype(g_api.register_callbacks)>(
      dlsym(h, "cuptiActivityRegisterCallbacks"));
  g_api.flush_all = reinterpret_cast<decltype(g_api.flush_all)>(dlsym(h, "cuptiActivityFlushAll"));
  g_api.next_record =
      reinterpret_cast<decltype(g_api.next_record)>(dlsym(h, "cuptiActivityGetNextRecord"));
  g_api.result_string =
      reinterpret_cast<decltype(g_api.result_string)>(dlsym(h, "cuptiGetResultString"));
  g_api.get_version = reinterpret_cast<decltype(g_api.get_version)>(dlsym(h, "cuptiGetVersion"));
  if (!g_api.enable || !g_api.disable || !g_api.register_callbacks || !g_api.flush_all ||
      !g_api.next_record || !g_api.get_version) {
    failure = loaded + " lacks the activity API: kernel times come from CUDA events";
    if (reason) *reason = failure;
    return nullptr;
  }
  uint32_t version = 0;
  g_api.get_version(&version);
  // Records are laid out as the library's own API version has them; this build reads the
  // layout of the headers it was compiled with.
  // A newer library of the same major version appends to the records this build reads.
  if (version < CUPTI_API_VERSION || version / 10000 != CUPTI_API_VERSION / 10000) {
    failure = loaded + " has CUPTI API version " + std::to_string(version) + ", this build reads " +
              std::to_string(CUPTI_API_VERSION) + ": kernel times come from CUDA events";
    if (reason) *reason = failure;
    return nullptr;
  }
  CUptiResult r = g_api.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    failure =
        "CUPTI refused its buffers (" + result_text(r) + "): kernel times come from CUDA events";
    if (reason) *reason = failure;
    return nullptr;
  }
  tracer = new CuptiKernelTracer();
  tracer->m_library = loaded;
  tracer->m_version = version;
  return tracer;
}

bool CuptiKernelTracer::start(std::string* error) {
  {
    std::lock_guard<std::mutex> lock(g_records_mu);
    g_records.clear();
  }
  CUptiResult r = g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    if (error) *error = "cuptiActivityEnable: " + result_text(r);
    return false;
  }
  return true;
}

std::vector<KernelActivity> CuptiKernelTracer::stop(std::string* error) {
  CUptiResult r = g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS && error) *error = "cuptiActivityFlushAll: " + result_text(r);
  g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::lock_guard<std::mutex> lock(g_records_mu);
  m_dropped = g_dropped;
  std::vector<KernelActivity> out;
  out.swap(g_records);
  return out;
}

}  // namespace souffle::gpu
