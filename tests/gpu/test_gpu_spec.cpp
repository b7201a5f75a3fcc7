// The shipped GPU specs, user spec files and their errors, and the co-residency calculation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/gpu/spec.h"
#include "core/support/error.h"

namespace souffle::gpu {
namespace {

const GpuSpec& a100() {
  return find_gpu(builtin_gpu_specs(), "A100-SXM4-40GB");
}

TEST(GpuSpec, BuiltinSpecsLoad) {
  const auto& specs = builtin_gpu_specs();
  ASSERT_EQ(specs.size(), 7u);
  for (const GpuSpec& s : specs) {
    EXPECT_FALSE(s.source.empty()) << s.name;
    EXPECT_GT(s.sm_count, 0) << s.name;
    EXPECT_GT(s.dram_bandwidth_gbps, 0) << s.name;
    EXPECT_GT(s.launch_overhead_us, 0) << s.name;
  }
  EXPECT_EQ(a100().sm_count, 108);
  EXPECT_EQ(a100().dram_bandwidth_gbps, 1555);
  EXPECT_EQ(find_gpu(specs, "a100-80gb").dram_bandwidth_gbps, 2039);
  EXPECT_EQ(find_gpu(specs, "H100").sm_count, 132);
  EXPECT_EQ(find_gpu(specs, "h200").dram_bandwidth_gbps, 4800);
  EXPECT_EQ(find_gpu(specs, "L4").sm_count, 58);
  EXPECT_EQ(find_gpu(specs, "rtx4090").sm_count, 128);
  EXPECT_EQ(find_gpu(specs, "t4").max_threads_per_sm, 1024);
  EXPECT_EQ(gpu_spec("a100").name, "A100-SXM4-40GB");
  EXPECT_NE(print(a100()).find("SMs 108"), std::string::npos);
}

TEST(GpuSpec, UnknownNameListsKnownOnes) {
  try {
    find_gpu(builtin_gpu_specs(), "V100");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    // The name in the reason (it is no graph node), with the names that are known.
    EXPECT_EQ(e.node(), "");
    EXPECT_NE(e.reason().find("unknown GPU 'V100'"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("A100-SXM4-40GB"), std::string::npos) << e.reason();
  }
}

TEST(GpuSpec, OccupancyLimits) {
  const GpuSpec& s = a100();
  Occupancy o = occupancy(s, 256, 32, 0);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.limited_by, "threads");
  EXPECT_EQ(o.total_blocks, 864);
  // 128 registers x 128 threads: 16 warps' worth of registers -> 4 blocks.
  o = occupancy(s, 128, 128, 0);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.limited_by, "registers");
  // 33 registers round up to 40 per thread (1280 per warp): 51 warps -> 6 blocks of 8 warps.
  EXPECT_EQ(max_active_blocks(s, 256, 33, 0), 6 * 108);
  // 48 KB + 1 KB reserved per block: 3 blocks in 164 KB.
  o = occupancy(s, 256, 32, 48 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 3);
  EXPECT_EQ(o.limited_by, "shared memory");
  EXPECT_EQ(o.total_blocks, 324);
  // Tiny blocks hit the per-SM block limit.
  o = occupancy(s, 32, 16, 0);
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_EQ(o.limited_by, "blocks per SM");
  EXPECT_EQ(max_active_blocks(find_gpu(builtin_gpu_specs(), "T4"), 64, 16, 0), 16 * 40);
  // A block that cannot launch at all.
  EXPECT_EQ(max_active_blocks(s, 1025, 32, 0), 0);
  EXPECT_EQ(max_active_blocks(s, 256, 256, 0), 0);
  EXPECT_EQ(max_active_blocks(s, 1024, 128, 0), 0);  // 128K registers per block
  EXPECT_EQ(max_active_blocks(s, 128, 32, 200 * 1024), 0);
  EXPECT_NE(occupancy(s, 1025, 32, 0).limited_by.find("threads per block"), std::string::npos);
}

class SpecFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path = (std::filesystem::temp_directory_path() /
            ("souffle_gpu_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
               .string();
    std::ofstream(path) << text;
    return path;
  }
  void TearDown() override {
    if (!path.empty()) std::filesystem::remove(path);
  }
  std::string path;
};

const char* kOneGpu = R"({"version": 1, "gpus": [{
  "name": "Toy", "sm_count": 4, "max_threads_per_sm": 1024, "max_threads_per_block": 512,
  "max_blocks_per_sm": 8, "registers_per_sm": 32768, "max_registers_per_block": 32768,
  "max_registers_per_thread": 255, "shared_memory_per_sm": 32768,
  "max_shared_memory_per_block": 16384, "l2_bytes": 1048576, "dram_bandwidth_gbps": 100,
  "peak_fp32_tflops": 1.5, "launch_overhead_us": 5, "grid_sync_overhead_us": 2,
  "source": "made up for a test"}]})";

TEST_F(SpecFile, UserFileWorksLikeTheBuiltinOnes) {
  std::string p = write(kOneGpu);
  GpuSpec s = gpu_spec(p);
  EXPECT_EQ(s.name, "Toy");
  EXPECT_EQ(s.warp_size, 32);  // optional, defaulted
  EXPECT_EQ(s.peak_fp16_tflops, 0);
  EXPECT_EQ(max_active_blocks(s, 256, 32, 0), 4 * 4);  // threads: 1024 / 256
  EXPECT_EQ(gpu_spec(p + ":toy").name, "Toy");
}

TEST_F(SpecFile, MissingFieldNamesFileEntryAndField) {
  std::string text = kOneGpu;
  text.replace(text.find("\"sm_count\": 4, "), std::string("\"sm_count\": 4, ").size(), "");
  std::string p = write(text);
  try {
    load_gpu_specs(p);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), p);
    EXPECT_EQ(e.node(), "gpus[0] (Toy)");
    EXPECT_EQ(e.reason(), "field 'sm_count' is missing");
  }
}

TEST_F(SpecFile, BadValuesAndBadJson) {
  std::string text = kOneGpu;
  text.replace(text.find("\"dram_bandwidth_gbps\": 100"),
               std::string("\"dram_bandwidth_gbps\": 100").size(),
               "\"dram_bandwidth_gbps\": \"x\"");
  std::string p = write(text);
  try {
    load_gpu_specs(p);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.reason(), "field 'dram_bandwidth_gbps' must be a number");
  }
  EXPECT_THROW(parse_gpu_specs("{not json", "f.json"), UserError);
  EXPECT_THROW(parse_gpu_specs(R"({"gpus": []})", "f.json"), UserError);
  EXPECT_THROW(parse_gpu_specs(R"({"version": 2, "gpus": []})", "f.json"), UserError);
  EXPECT_THROW(load_gpu_specs("/nonexistent/gpus.json"), UserError);
  try {
    parse_gpu_specs(R"({"gpus": [{"name": "X", "sm_count": -1}]})", "f.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "f.json");
    EXPECT_EQ(e.reason(), "field 'sm_count' must be at least 1");
  }
}

}  // namespace
}  // namespace souffle::gpu
