// Per-kernel counters from CUPTI's range profiler: attribution of ranges to launches (ranges made
// here, as stop() hands them over), refusals without a GPU, and the host side, which builds a
// configuration image for a chip without one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/gpu/cupti_counters.h"

namespace souffle::gpu {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CuptiCounters, MetricsInOrder) {
  const std::vector<std::string>& m = counter_metrics();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], "dram__bytes_read.sum");
  EXPECT_EQ(m[1], "dram__bytes_write.sum");
  EXPECT_EQ(m[2], "sm__warps_active.avg.pct_of_peak_sustained_active");
}

TEST(CuptiCounters, RangesNamedByLaunchIndex) {
  std::string problem;
  std::vector<KernelCounters> c =
      counters_from_ranges({{"0", {4096, 1024, 75}}, {"1", {0, 512, 12.5}}, {"2", {8, 8, 100}}},
                           {"a", "b", "a"}, &problem);
  ASSERT_EQ(c.size(), 3u) << problem;
  EXPECT_EQ(c[0].name, "a");
  EXPECT_EQ(c[1].name, "b");
  EXPECT_EQ(c[2].name, "a");
  EXPECT_DOUBLE_EQ(c[0].dram_read_bytes, 4096);
  EXPECT_DOUBLE_EQ(c[0].dram_write_bytes, 1024);
  EXPECT_DOUBLE_EQ(c[0].achieved_occupancy, 0.75);  // percent to fraction
  EXPECT_DOUBLE_EQ(c[1].dram_read_bytes, 0);        // zero is a measurement
  EXPECT_DOUBLE_EQ(c[1].achieved_occupancy, 0.125);
  EXPECT_DOUBLE_EQ(c[2].achieved_occupancy, 1.0);
}

TEST(CuptiCounters, RangesNamedAfterKernels) {
  std::string problem;
  std::vector<KernelCounters> c = counters_from_ranges(
      {{"gemm", {1, 2, 50}}, {"softmax", {3, 4, 25}}}, {"gemm", "softmax"}, &problem);
  ASSERT_EQ(c.size(), 2u) << problem;
  EXPECT_EQ(c[1].name, "softmax");
  EXPECT_DOUBLE_EQ(c[1].dram_read_bytes, 3);
  EXPECT_DOUBLE_EQ(c[1].achieved_occupancy, 0.25);
}

TEST(CuptiCounters, AMissingRangeIsNotAttributed) {
  std::string problem;
  EXPECT_TRUE(counters_from_ranges({{"0", {1, 2, 3}}}, {"a", "b"}, &problem).empty());
  EXPECT_NE(problem.find("CUPTI recorded 1 ranges, 2 kernels were launched"), std::string::npos)
      << problem;
}

TEST(CuptiCounters, AnExtraRangeIsNotAttributed) {
  std::string problem;
  EXPECT_TRUE(counters_from_ranges({{"0", {1, 2, 3}}, {"1", {1, 2, 3}}}, {"a"}, &problem).empty());
  EXPECT_NE(problem.find("CUPTI recorded 2 ranges, 1 kernels were launched"), std::string::npos)
      << problem;
}

TEST(CuptiCounters, AMisnamedRangeIsNotAttributed) {
  std::string problem;
  // A skipped index: the second launch's range is missing and another kernel's took its place.
  EXPECT_TRUE(
      counters_from_ranges({{"0", {1, 2, 3}}, {"2", {1, 2, 3}}}, {"a", "b"}, &problem).empty());
  EXPECT_NE(problem.find("CUPTI named range 1 '2', expected launch 1 (b)"), std::string::npos)
      << problem;
  problem.clear();
  EXPECT_TRUE(
      counters_from_ranges({{"a", {1, 2, 3}}, {"c", {1, 2, 3}}}, {"a", "b"}, &problem).empty());
  EXPECT_NE(problem.find("'c', expected launch 1 (b)"), std::string::npos) << problem;
}

TEST(CuptiCounters, WrongNumberOfValuesIsNotAttributed) {
  std::string problem;
  EXPECT_TRUE(counters_from_ranges({{"0", {1, 2}}}, {"a"}, &problem).empty());
  EXPECT_NE(problem.find("launch 0 (a): CUPTI gave 2 values for 3 metrics"), std::string::npos)
      << problem;
}

TEST(CuptiCounters, NothingLaunched) {
  std::string problem;
  EXPECT_TRUE(counters_from_ranges({}, {}, &problem).empty());
  EXPECT_EQ(problem, "nothing was launched");
}

TEST(CuptiCounters, ValuesThatAreNotMeasurementsAreNotMeasured) {
  std::string problem;
  std::vector<KernelCounters> c = counters_from_ranges(
      {{"0", {kNaN, -5, 50}}, {"1", {kInf, 7, kNaN}}, {"2", {1, 2, 150}}, {"3", {1, 2, -1}}},
      {"a", "b", "c", "d"}, &problem);
  ASSERT_EQ(c.size(), 4u) << problem;
  EXPECT_EQ(c[0].dram_read_bytes, -1);
  EXPECT_EQ(c[0].dram_write_bytes, -1);
  EXPECT_DOUBLE_EQ(c[0].achieved_occupancy, 0.5);  // the launch's other values stand
  EXPECT_EQ(c[1].dram_read_bytes, -1);
  EXPECT_DOUBLE_EQ(c[1].dram_write_bytes, 7);
  EXPECT_EQ(c[1].achieved_occupancy, -1);
  EXPECT_EQ(c[2].achieved_occupancy, -1);  // above 100%
  EXPECT_EQ(c[3].achieved_occupancy, -1);
}

TEST(CuptiCounters, OpenWithoutAContextRefuses) {
  std::string reason;
  EXPECT_EQ(CuptiCounterSession::open(nullptr, 0, &reason), nullptr);
  EXPECT_EQ(reason.rfind("CUPTI's range profiler is not available: ", 0), 0u) << reason;
  EXPECT_TRUE(reason.find("no CUDA context") != std::string::npos ||
              reason.find("libcupti not found") != std::string::npos)
      << reason;
}

TEST(CuptiCounters, OpenNamesALibraryThatDoesNotLoad) {
  std::string reason;
  EXPECT_EQ(CuptiCounterSession::open(nullptr, 0, &reason, "/nonexistent/libcupti.so.99"), nullptr);
  EXPECT_NE(reason.find("/nonexistent/libcupti.so.99 could not be loaded"), std::string::npos)
      << reason;
}

TEST(CuptiCounters, OpenNamesMissingEntryPoints) {
  std::string reason;
  EXPECT_EQ(CuptiCounterSession::open(nullptr, 0, &reason, "libc.so.6"), nullptr);
  EXPECT_NE(reason.find("libc.so.6 lacks the range profiler (cuptiGetResultString"),
            std::string::npos)
      << reason;
}

/// The host side needs libcupti but no GPU; skips where the library is absent.
bool config_for(const std::string& chip, const std::vector<std::string>& metrics,
                std::vector<uint8_t>* image, size_t* passes, std::string* error) {
  return counter_config_image(chip, {}, metrics, image, passes, error);
}

bool cupti_missing(const std::string& error) {
  return error.rfind("libcupti not found", 0) == 0 ||
         error.find("lacks the range profiler") != std::string::npos;
}

TEST(CuptiCounters, ConfigImageForHopperAndAmpere) {
  for (const char* chip : {"GH100", "GA100"}) {
    std::vector<uint8_t> image;
    size_t passes = 0;
    std::string error;
    bool ok = config_for(chip, counter_metrics(), &image, &passes, &error);
    if (cupti_missing(error)) GTEST_SKIP() << "[SKIP] " << error;
    ASSERT_TRUE(ok) << chip << ": " << error;
    EXPECT_FALSE(image.empty()) << chip;
    EXPECT_GE(passes, 1u) << chip;
  }
}

TEST(CuptiCounters, ConfigImageNamesAnUnknownMetric) {
  std::vector<uint8_t> image;
  size_t passes = 0;
  std::string error;
  bool ok =
      config_for("GH100", {"dram__bytes_read.sum", "bogus__metric.sum"}, &image, &passes, &error);
  if (cupti_missing(error)) GTEST_SKIP() << "[SKIP] " << error;
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("metric bogus__metric.sum is unknown"), std::string::npos) << error;
  EXPECT_TRUE(image.empty());
}

TEST(CuptiCounters, ConfigImageNamesAnUnknownChip) {
  std::vector<uint8_t> image;
  size_t passes = 0;
  std::string error;
  bool ok = config_for("XX999", counter_metrics(), &image, &passes, &error);
  if (cupti_missing(error)) GTEST_SKIP() << "[SKIP] " << error;
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("cuptiProfilerHostInitialize"), std::string::npos) << error;
  EXPECT_NE(error.find("chip XX999"), std::string::npos) << error;
}

}  // namespace
}  // namespace souffle::gpu
