// The shipped GPU specs, user spec files and their errors, and the co-residency calculation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

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

/// What the driver of an H100 PCIe reports (114 SMs, 5120-bit HBM2e at 1593 MHz; the resources
/// per SM of every GH100).
DeviceAttributes h100_pcie() {
  DeviceAttributes d;
  d.name = "NVIDIA H100 PCIe";
  d.compute_capability = "9.0";
  d.sm_count = 114;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 32;
  d.registers_per_sm = 65536;
  d.max_registers_per_block = 65536;
  d.shared_memory_per_sm = 233472;
  d.max_shared_memory_per_block = 232448;
  d.reserved_shared_memory_per_block = 1024;
  d.warp_size = 32;
  d.l2_bytes = 52428800;
  d.memory_bytes = 85020000000;
  d.clock_mhz = 1755;
  d.memory_clock_mhz = 1593;
  d.memory_bus_bits = 5120;
  return d;
}

TEST(DeviceGpuSpec, NameOnlyMatchesTheSxmPart) {
  // The name alone cannot tell the PCIe part from the SXM one: the reason for the attributes.
  ASSERT_TRUE(device_gpu_spec(std::string("NVIDIA H100 PCIe")));
  EXPECT_EQ(device_gpu_spec(std::string("NVIDIA H100 PCIe"))->sm_count, 132);
}

TEST(DeviceGpuSpec, AttributesCorrectTheNamedBase) {
  std::optional<GpuSpec> s = device_gpu_spec(h100_pcie());
  ASSERT_TRUE(s);
  const GpuSpec& sxm = find_gpu(builtin_gpu_specs(), "H100-SXM5-80GB");
  EXPECT_EQ(s->name, "H100 PCIe");
  EXPECT_EQ(s->sm_count, 114);
  EXPECT_EQ(s->compute_capability, "9.0");
  EXPECT_EQ(s->shared_memory_per_sm, 233472);
  EXPECT_NEAR(s->peak_fp32_tflops, sxm.peak_fp32_tflops * 114 / 132, 1e-9);
  EXPECT_NEAR(s->peak_fp16_tflops, sxm.peak_fp16_tflops * 114 / 132, 1e-9);
  EXPECT_EQ(s->dram_bandwidth_gbps, 2039);   // 2 x 1593 MHz x 640 bytes
  EXPECT_EQ(s->dram_bytes, sxm.dram_bytes);  // within 5% of the datasheet's: not corrected
  EXPECT_NE(s->source.find("SMs 114 (spec 132)"), std::string::npos) << s->source;
  EXPECT_NE(s->source.find("H100-SXM5-80GB"), std::string::npos) << s->source;
  // A cooperative kernel is planned for the SMs the device has: a grid the SXM spec would
  // allow is too large here.
  EXPECT_EQ(max_active_blocks(*s, 256, 32, 0), 8 * 114);
  EXPECT_EQ(max_active_blocks(sxm, 256, 32, 0), 8 * 132);
}

TEST(DeviceGpuSpec, MatchingAttributesKeepTheDatasheet) {
  DeviceAttributes d = h100_pcie();
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.memory_clock_mhz = 3201;
  std::optional<GpuSpec> s = device_gpu_spec(d);
  ASSERT_TRUE(s);
  const GpuSpec& h200 = find_gpu(builtin_gpu_specs(), "h200");
  EXPECT_EQ(s->name, h200.name);
  EXPECT_EQ(s->dram_bandwidth_gbps, h200.dram_bandwidth_gbps);
  EXPECT_EQ(s->peak_fp16_tflops, h200.peak_fp16_tflops);
  EXPECT_EQ(s->source, h200.source);
}

TEST(DeviceGpuSpec, ResourcesComeFromTheDevice) {
  DeviceAttributes d;
  d.name = "NVIDIA A100-SXM4-40GB";
  d.compute_capability = "8.0";
  d.shared_memory_per_sm = 102400;  // a partitioned (MIG-like) view reports less
  d.max_shared_memory_per_block = 101376;
  std::optional<GpuSpec> s = device_gpu_spec(d);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->shared_memory_per_sm, 102400);
  EXPECT_EQ(s->max_shared_memory_per_block, 101376);
  EXPECT_EQ(s->sm_count, 108);                              // not reported: the datasheet's
  EXPECT_EQ(s->peak_fp32_tflops, a100().peak_fp32_tflops);  // same SMs: rates kept
  EXPECT_EQ(s->name, "A100-SXM4-40GB");
  EXPECT_NE(s->source.find("shared memory per SM 102400 (spec 167936)"), std::string::npos);
}

TEST(DeviceGpuSpec, NoBaseNoSpec) {
  DeviceAttributes d = h100_pcie();
  d.name = "NVIDIA GH200 480GB";
  EXPECT_FALSE(device_gpu_spec(d));
  // A name of another architecture is no base.
  d.name = "NVIDIA A100-SXM4-40GB";
  EXPECT_FALSE(device_gpu_spec(d));
  d.compute_capability = "8.0";
  EXPECT_TRUE(device_gpu_spec(d));
}

}  // namespace
}  // namespace souffle::gpu
