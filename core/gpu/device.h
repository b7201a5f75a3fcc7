/// \file Run-time detection of a CUDA driver and device (dlopen of libcuda; never linked).
#pragma once

#include <string>

namespace souffle::gpu {

/// What the machine offers for running kernels: whether the driver library loads, whether it
/// initializes, and how many devices it sees. Detection never throws and never aborts.
struct DeviceInfo {
  bool driver_loaded = false;  ///< libcuda.so.1 could be loaded and has the entry points
  int driver_version = 0;      ///< cuDriverGetVersion, 13000 for 13.0 (0 when unknown)
  int device_count = 0;
  std::string device_name;  ///< the first device's name, when there is one
  /// Empty when a device is usable; otherwise why not, in words for the user:
  /// "no CUDA driver found (libcuda.so.1 not loadable)", "no CUDA device", ...
  std::string reason;
  bool available() const { return reason.empty() && device_count > 0; }
};

/// Loads the driver with dlopen (`library`, libcuda.so.1 by default), calls cuInit and
/// cuDeviceGetCount. The library stays loaded for the process once it has been found.
DeviceInfo detect_cuda_device(const std::string& library = "libcuda.so.1");

/// detect_cuda_device() done once per process (a driver does not appear while running).
const DeviceInfo& cuda_device();

}  // namespace souffle::gpu
