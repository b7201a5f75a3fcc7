// Calibration files: the barrier-cost fit and interpolation, reading back what was written, and
// the errors a bad file gives.
#include <gtest/gtest.h>

#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/support/error.h"

namespace souffle::gpu {
namespace {

Calibration sample() {
  Calibration c;
  c.device = "NVIDIA H200";
  c.compute_capability = "9.0";
  c.sm_count = 132;
  c.driver_version = 13000;
  c.date = "2026-12-03T12:00:00Z";
  c.launch_overhead_us = 2.5;
  c.dram_bandwidth_gbps = 4300;
  // 1, 2 and 4 blocks per SM: 1 + 0.01 us per block exactly.
  for (int per_sm : {1, 2, 4})
    c.grid_barrier.push_back({132 * per_sm, per_sm, 256, 1 + 0.01 * 132 * per_sm});
  c.grid_barrier_fit = fit_barrier_cost(c.grid_barrier);
  return c;
}

TEST(Calibration, FitIsExactOnALine) {
  Calibration c = sample();
  EXPECT_NEAR(c.grid_barrier_fit.base, 1.0, 1e-9);
  EXPECT_NEAR(c.grid_barrier_fit.slope, 0.01, 1e-12);
}

TEST(Calibration, FitOfOneOrNoSample) {
  EXPECT_EQ(fit_barrier_cost({}).at(100), 0);
  LinearFit one = fit_barrier_cost({{64, 1, 256, 3.0}});
  EXPECT_EQ(one.slope, 0);
  EXPECT_EQ(one.at(1000), 3.0);
}

TEST(Calibration, BarrierCostInterpolatesAndExtrapolates) {
  Calibration c = sample();
  EXPECT_DOUBLE_EQ(grid_barrier_us(c, 1), c.grid_barrier[0].us);  // below: smallest sample
  EXPECT_NEAR(grid_barrier_us(c, 132), 2.32, 1e-9);
  EXPECT_NEAR(grid_barrier_us(c, 198), 1 + 0.01 * 198, 1e-9);    // between samples 1 and 2
  EXPECT_NEAR(grid_barrier_us(c, 1056), 1 + 0.01 * 1056, 1e-9);  // the fit beyond them
  Calibration none;
  EXPECT_EQ(grid_barrier_us(none, 100), 0);
}

TEST(Calibration, NeverBelowTheLastSampleBeyondIt) {
  Calibration c;
  c.device = "x";
  c.grid_barrier = {{100, 1, 256, 5.0}, {200, 2, 256, 4.0}};  // noisy: falling
  c.grid_barrier_fit = fit_barrier_cost(c.grid_barrier);
  EXPECT_GE(grid_barrier_us(c, 10000), 4.0);
}

TEST(Calibration, RoundTrip) {
  Calibration c = sample();
  Calibration r = parse_calibration(calibration_json(c), "cal.json");
  EXPECT_EQ(r.device, c.device);
  EXPECT_EQ(r.sm_count, 132);
  EXPECT_EQ(r.driver_version, 13000);
  EXPECT_EQ(r.date, c.date);
  EXPECT_DOUBLE_EQ(r.launch_overhead_us, 2.5);
  EXPECT_DOUBLE_EQ(r.dram_bandwidth_gbps, 4300);
  ASSERT_EQ(r.grid_barrier.size(), 3u);
  EXPECT_EQ(r.grid_barrier[2].blocks, 528);
  EXPECT_NEAR(r.grid_barrier_fit.slope, 0.01, 1e-12);
  EXPECT_EQ(r.file, "cal.json");
}

// Measured per-tile flags price the flags: a round is a release and one awaited tile, each
// further tile one poll; without them the flag costs stay shares of the grid barrier's, and a
// file without them writes none (older files read as before).
TEST(Calibration, MeasuredFlagsPriceTheFlags) {
  Calibration c = sample();
  const GpuSpec h100 = gpu_spec("h100");
  const CostConstants shares = cost_constants(h100, Precision::FP32, &c);
  EXPECT_GT(shares.flag_release_us, 0);
  EXPECT_EQ(calibration_json(c).find("flag_round_us"), std::string::npos);
  c.flag_round_us = 0.9;
  c.flag_tile_us = 0.2;
  const Calibration r = parse_calibration(calibration_json(c), "cal.json");
  EXPECT_DOUBLE_EQ(r.flag_round_us, 0.9);
  EXPECT_DOUBLE_EQ(r.flag_tile_us, 0.2);
  const CostConstants k = cost_constants(h100, Precision::FP32, &r);
  EXPECT_DOUBLE_EQ(k.flag_poll_us, 0.2);
  EXPECT_DOUBLE_EQ(k.flag_release_us, 0.7);
  EXPECT_DOUBLE_EQ(flag_wait_cost_us(k, 4, 2), 2 * (0.7 + 4 * 0.2));
  EXPECT_NE(k.source.find("per-tile flag release and wait"), std::string::npos) << k.source;
}

void expect_error(const std::string& text, const std::string& part) {
  try {
    parse_calibration(text, "bad.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Calibration, BadFilesNameTheReason) {
  expect_error("{", "JSON");
  expect_error("[]", "one JSON object");
  expect_error(R"({"device":"x"})", "version");
  expect_error(R"({"version":9,"device":"x"})", "version 9");
  expect_error(R"({"version":1})", "device");
  expect_error(R"({"version":1,"device":"x","launch_overhead_us":-1})", "launch_overhead_us");
  expect_error(R"({"version":1,"device":"x","launch_overhead_us":"fast"})", "must be a number");
  expect_error(
      R"({"version":1,"device":"x","grid_barrier":[{"blocks":8,"us":1},{"blocks":4,"us":1}]})",
      "ascending");
  expect_error(R"({"version":1,"device":"x","grid_barrier":[{"blocks":0,"us":1}]})", "blocks");
}

}  // namespace
}  // namespace souffle::gpu
