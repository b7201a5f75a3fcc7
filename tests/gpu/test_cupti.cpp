// CUPTI kernel records as this build's headers lay them out, and the grouping of timed runs
// into per-kernel statistics (records made here, as the activity API hands them over).
#include <gtest/gtest.h>

#include <cstring>

#include <cupti_activity.h>

#include "core/gpu/cupti.h"

namespace souffle::gpu {
namespace {

CUpti_ActivityKernel10 record(const char* name, uint64_t start, uint64_t end, uint32_t corr = 1) {
  CUpti_ActivityKernel10 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.name = name;
  r.start = start;
  r.end = end;
  r.correlationId = corr;
  r.gridX = 132;
  r.blockX = 256;
  r.registersPerThread = 96;
  r.dynamicSharedMemory = 49152;
  r.staticSharedMemory = 16;
  r.streamId = 7;
  return r;
}

TEST(Cupti, ParsesAKernelRecord) {
  CUpti_ActivityKernel10 r = record("kernel3", 1000, 3500, 42);
  KernelActivity a;
  ASSERT_TRUE(parse_kernel_record(&r, a));
  EXPECT_EQ(a.name, "kernel3");
  EXPECT_EQ(a.correlation_id, 42u);
  EXPECT_EQ(a.grid_x, 132);
  EXPECT_EQ(a.block_x, 256);
  EXPECT_EQ(a.registers, 96);
  EXPECT_EQ(a.dynamic_shared, 49152);
  EXPECT_EQ(a.stream_id, 7u);
  EXPECT_DOUBLE_EQ(a.duration_us(), 2.5);
}

TEST(Cupti, IgnoresOtherRecordKinds) {
  CUpti_ActivityKernel10 r = record("memset", 0, 10);
  r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  KernelActivity a;
  EXPECT_FALSE(parse_kernel_record(&r, a));
}

TEST(Cupti, StatsOfASample) {
  Stats s = stats_of({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_EQ(stats_of({}).count, 0);
  EXPECT_DOUBLE_EQ(stats_of({5}).median, 5);
}

std::vector<KernelActivity> runs_of(const std::vector<std::pair<const char*, uint64_t>>& kernels,
                                    int runs, uint64_t gap_ns) {
  std::vector<KernelActivity> out;
  uint64_t t = 0;
  for (int r = 0; r < runs; ++r)
    for (const auto& [name, dur] : kernels) {
      KernelActivity a;
      CUpti_ActivityKernel10 rec = record(name, t, t + dur + static_cast<uint64_t>(r) * 100);
      parse_kernel_record(&rec, a);
      out.push_back(a);
      t = a.end_ns + gap_ns;
    }
  // CUPTI hands buffers over in any order: the grouping sorts by start time.
  std::reverse(out.begin(), out.end());
  return out;
}

TEST(Cupti, GroupsRunsByPosition) {
  auto recs = runs_of({{"a", 1000}, {"b", 5000}, {"a", 2000}}, 3, 500);
  std::string problem;
  std::vector<KernelTimes> t = group_runs(recs, {"a", "b", "a"}, 3, &problem);
  ASSERT_EQ(t.size(), 3u) << problem;
  EXPECT_EQ(t[0].name, "a");
  EXPECT_EQ(t[1].name, "b");
  // Durations 1.0, 1.1, 1.2 us for the first kernel over three runs.
  EXPECT_DOUBLE_EQ(t[0].duration_us.median, 1.1);
  EXPECT_DOUBLE_EQ(t[0].duration_us.min, 1.0);
  EXPECT_DOUBLE_EQ(t[0].duration_us.max, 1.2);
  EXPECT_DOUBLE_EQ(t[1].duration_us.median, 5.1);
  EXPECT_DOUBLE_EQ(t[2].duration_us.median, 2.1);
  EXPECT_DOUBLE_EQ(t[1].gap_before_us.median, 0.5);
  EXPECT_DOUBLE_EQ(t[0].gap_before_us.median, 0.0);  // first of a run
}

TEST(Cupti, DroppedRecordsAreNotAttributed) {
  auto recs = runs_of({{"a", 1000}, {"b", 5000}}, 2, 500);
  recs.pop_back();
  std::string problem;
  EXPECT_TRUE(group_runs(recs, {"a", "b"}, 2, &problem).empty());
  EXPECT_NE(problem.find("CUPTI recorded 3 kernels, 4 were launched"), std::string::npos)
      << problem;
}

TEST(Cupti, AnInterleavedKernelIsNotAttributed) {
  auto recs = runs_of({{"a", 1000}, {"c", 5000}}, 1, 500);
  std::string problem;
  EXPECT_TRUE(group_runs(recs, {"a", "b"}, 1, &problem).empty());
  EXPECT_NE(problem.find("saw c where b was launched"), std::string::npos) << problem;
}

TEST(Cupti, CandidatesIncludeTheToolkit) {
  std::vector<std::string> c = cupti_candidates();
  EXPECT_NE(std::find(c.begin(), c.end(), "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"),
            c.end());
  EXPECT_NE(std::find(c.begin(), c.end(), "libcupti.so"), c.end());
}

}  // namespace
}  // namespace souffle::gpu
