#include "core/gpu/cuda_api.h"

#include <dlfcn.h>

#include <mutex>

namespace souffle::gpu {

namespace {

#define SOUFFLE_STR2(x) #x
#define SOUFFLE_STR(x) SOUFFLE_STR2(x)

struct Loaded {
  CudaApi api;
  std::string reason;
  bool ok = false;
};

Loaded load(const std::string& library) {
  Loaded l;
  std::string lib = library.empty() ? "libcuda.so.1" : library;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    l.reason = "no CUDA driver found (" + lib + " not loadable)";
    return l;
  }
  l.api.library = lib;
  std::string missing;
#define SOUFFLE_CUDA_LOOKUP(f)                                          \
  l.api.f = reinterpret_cast<decltype(&::f)>(dlsym(h, SOUFFLE_STR(f))); \
  if (!l.api.f) missing += std::string(missing.empty() ? "" : ", ") + SOUFFLE_STR(f);
  SOUFFLE_CUDA_FUNCTIONS(SOUFFLE_CUDA_LOOKUP)
#undef SOUFFLE_CUDA_LOOKUP
  if (!missing.empty()) {
    l.reason = "the CUDA driver in " + lib + " is too old: it lacks " + missing;
    return l;
  }
  CUresult r = l.api.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    l.reason = "no CUDA device";
    return l;
  }
  if (r != CUDA_SUCCESS) {
    l.reason = "the CUDA driver did not initialize (cuInit: " + l.api.error_text(r) + ")";
    return l;
  }
  int n = 0;
  if (l.api.cuDeviceGetCount(&n) != CUDA_SUCCESS || n <= 0) {
    l.reason = "no CUDA device";
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

std::string CudaApi::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(static_cast<int>(r));
  if (text) s += std::string(": ") + text;
  return s;
}

const CudaApi* cuda_api(std::string* reason, const std::string& library) {
  static std::mutex mu;
  static Loaded* loaded = nullptr;  // kept for the process: a driver is never unloaded
  std::lock_guard<std::mutex> lock(mu);
  if (!loaded) loaded = new Loaded(load(library));
  if (!loaded->ok) {
    if (reason) *reason = loaded->reason;
    return nullptr;
  }
  return &loaded->api;
}

}  // namespace souffle::gpu
