#include "core/gpu/device.h"

#include <dlfcn.h>

#include <mutex>

namespace souffle::gpu {

namespace {

// The handful of driver entry points detection needs; CUresult is an int-sized enum and
// CUdevice an int in every driver ABI, so no CUDA header is needed here.
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuGetErrorName = int (*)(int, const char**);

constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNoDevice = 100;

std::string error_name(CuGetErrorName get, int code) {
  const char* name = nullptr;
  if (get && get(code, &name) == kCudaSuccess && name) return name;
  return "error " + std::to_string(code);
}

}  // namespace

DeviceInfo detect_cuda_device(const std::string& library) {
  DeviceInfo info;
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    info.reason = "no CUDA driver found (" + library + " not loadable)";
    return info;
  }
  auto sym = [lib](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<CuInit>(sym("cuInit"));
  auto version = reinterpret_cast<CuDriverGetVersion>(sym("cuDriverGetVersion"));
  auto count = reinterpret_cast<CuDeviceGetCount>(sym("cuDeviceGetCount"));
  auto get = reinterpret_cast<CuDeviceGet>(sym("cuDeviceGet"));
  auto get_name = reinterpret_cast<CuDeviceGetName>(sym("cuDeviceGetName"));
  auto err_name = reinterpret_cast<CuGetErrorName>(sym("cuGetErrorName"));
  if (!init || !count) {
    info.reason = "no CUDA driver found (" + library + " lacks cuInit/cuDeviceGetCount)";
    return info;  // the handle stays open: unloading a half-initialized driver is not worth it
  }
  info.driver_loaded = true;
  if (version) version(&info.driver_version);
  const int rc = init(0);
  if (rc == kCudaErrorNoDevice) {
    info.reason = "no CUDA device";
    return info;
  }
  if (rc != kCudaSuccess) {
    info.reason = "the CUDA driver did not initialize (cuInit: " + error_name(err_name, rc) + ")";
    return info;
  }
  const int crc = count(&info.device_count);
  if (crc != kCudaSuccess || info.device_count <= 0) {
    info.device_count = 0;
    info.reason = "no CUDA device";
    return info;
  }
  int dev = 0;
  char name[256] = {};
  if (get && get_name && get(&dev, 0) == kCudaSuccess &&
      get_name(name, static_cast<int>(sizeof name) - 1, dev) == kCudaSuccess)
    info.device_name = name;
  return info;
}

const DeviceInfo& cuda_device() {
  static const DeviceInfo info = detect_cuda_device();
  return info;
}

}  // namespace souffle::gpu
