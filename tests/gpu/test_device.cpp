// Device detection: without a driver it says so instead of failing; with one it counts devices.
#include <gtest/gtest.h>

#include "core/gpu/device.h"
#include "core/session/profiler.h"

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
    std::printf("[SKIP] %s\n", info.reason.c_str());
  }
}

TEST(Profiler, WithoutAGpuSaysWhyAndMeasuresNothing) {
  std::unique_ptr<souffle::Profiler> p = souffle::make_profiler();
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->available());  // the only implementation today launches nothing
  EXPECT_FALSE(p->unavailable_reason().empty());
  if (!cuda_device().available()) {
    EXPECT_EQ(p->unavailable_reason(), cuda_device().reason);
  }
  const souffle::ProfileReport r = p->profile(souffle::plan::FusionPlan{}, {});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, p->unavailable_reason());
  EXPECT_TRUE(r.kernels.empty());
}
