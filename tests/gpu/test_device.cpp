// Device detection: without a driver it says so instead of failing; with one it counts devices.
#include <gtest/gtest.h>

#include "core/gpu/device.h"
#include "core/session/profile.h"

using namespace souffle::gpu;

TEST(Device, MissingLibraryIsReportedNotFatal) {
  const DeviceInfo info = detect_cuda_device("libcuda-does-not-exist.so.1");
  EXPECT_FALSE(info.driver_loaded);
  EXPECT_FALSE(info.available());
  EXPECT_EQ(info.device_count, 0);
  EXPECT_EQ(info.reason, "no CUDA driver found (libcuda-does-not-exist.so.1 not loadable)");
}

TEST(Device, LibraryWithoutDriverEntryPointsIsNoDriver) {
  // A real shared library that is not a CUDA driver: loadable, but without cuInit.
  const DeviceInfo info = detect_cuda_device("libm.so.6");
  EXPECT_FALSE(info.driver_loaded);
  EXPECT_FALSE(info.available());
  EXPECT_NE(info.reason.find("lacks cuInit"), std::string::npos) << info.reason;
}

TEST(Device, DefaultDetectionIsConsistent) {
  const DeviceInfo& info = cuda_device();
  EXPECT_EQ(&info, &cuda_device());  // detected once
  if (info.available()) {
    EXPECT_TRUE(info.driver_loaded);
    EXPECT_GT(info.device_count, 0);
    std::printf("CUDA device: %s (%d), driver %d\n", info.device_name.c_str(), info.device_count,
                info.driver_version);
  } else {
    EXPECT_FALSE(info.reason.empty());
    EXPECT_EQ(info.device_count, 0);
    GTEST_SKIP() << "no CUDA device: " << info.reason;
  }
}

TEST(Profile, WithoutAGpuTheCudaBackendSaysWhy) {
  souffle::ProfileOptions o;
  o.backend = "cuda";
  const std::string why = souffle::profile_unavailable_reason(o);
  if (cuda_device().available()) {
    // With a device the CUDA backend has nothing to refuse.
    EXPECT_EQ(why, "");
    return;
  }
  EXPECT_NE(why.find(cuda_device().reason), std::string::npos) << why;
  EXPECT_NE(why.find("--backend emulator"), std::string::npos) << why;
  o.backend = "emulator";  // always possible where the runner was built
  EXPECT_EQ(souffle::profile_unavailable_reason(o), "");
  o.backend = "opencl";
  EXPECT_NE(souffle::profile_unavailable_reason(o).find("unknown backend"), std::string::npos);
}
