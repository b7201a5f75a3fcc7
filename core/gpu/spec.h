/// \file GPU descriptions (resources/gpus.json or a user file of the same form) and co-residency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace souffle::gpu {

/// One GPU model's resources and peak rates, as its vendor's datasheet states them.
struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;  ///< other names `find_gpu` accepts (case-insensitive)
  std::string compute_capability;    ///< "8.0"
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;
  int max_registers_per_block = 0;
  int max_registers_per_thread = 0;
  int64_t shared_memory_per_sm = 0;              ///< bytes
  int64_t max_shared_memory_per_block = 0;       ///< bytes (the opt-in maximum)
  int64_t reserved_shared_memory_per_block = 0;  ///< bytes the driver keeps per resident block
  int warp_size = 32;
  int64_t l2_bytes = 0;
  int64_t dram_bytes = 0;
  double dram_bandwidth_gbps = 0;  ///< GB/s, 1e9 bytes per second
  double peak_fp32_tflops = 0;
  double peak_tf32_tflops = 0;  ///< dense tensor-core rate; 0 where the GPU has none
  double peak_fp16_tflops = 0;  ///< dense tensor-core rate
  double launch_overhead_us = 0;
  double grid_sync_overhead_us = 0;
  std::string source;  ///< where the numbers come from
};

/// Parses a spec file ({"version": 1, "gpus": [{...}, ...]}). Throws UserError naming the file
/// and the offending entry/field.
std::vector<GpuSpec> load_gpu_specs(const std::string& path);
/// Same, from JSON text; `file` only names the source in errors.
std::vector<GpuSpec> parse_gpu_specs(const std::string& json_text, const std::string& file);

/// The path of a file shipped in resources/ (gpus.json, ...): searched in ../share/souffle beside
/// the executable (where it is installed), the source tree's resources folder, then ./resources
/// beside the executable and the executable's folder. Throws UserError when not found.
std::string find_resource(const std::string& name);

/// The specs shipped in resources/gpus.json (loaded once, then cached).
const std::vector<GpuSpec>& builtin_gpu_specs();

/// The spec named `name` (or one of its aliases), case-insensitive. Throws UserError listing the
/// known names.
const GpuSpec& find_gpu(const std::vector<GpuSpec>& specs, const std::string& name);
/// A built-in GPU by name, or — when `name_or_path` names an existing file — the single spec in
/// that file (or, with "FILE:NAME", the named spec in it).
GpuSpec gpu_spec(const std::string& name_or_path);
/// The built-in spec of a device the driver names `device_name` ("NVIDIA H200", "Tesla V100-SXM2-
/// 16GB"): the name without the vendor, else its first word; nullopt when none matches.
std::optional<GpuSpec> device_gpu_spec(const std::string& device_name);

/// What the driver reports of one device (cuDeviceGetAttribute, cuDeviceTotalMem); 0 or empty
/// where it reports nothing.
struct DeviceAttributes {
  std::string name;                ///< cuDeviceGetName: "NVIDIA H100 PCIe"
  std::string compute_capability;  ///< "9.0"
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;
  int max_registers_per_block = 0;
  int64_t shared_memory_per_sm = 0;              ///< bytes
  int64_t max_shared_memory_per_block = 0;       ///< bytes, the opt-in maximum
  int64_t reserved_shared_memory_per_block = 0;  ///< bytes
  int warp_size = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int clock_mhz = 0;         ///< the SM clock the driver reports
  int memory_clock_mhz = 0;  ///< the memory clock (data moves twice per cycle)
  int memory_bus_bits = 0;   ///< the memory interface's width
};

/// The spec of a device as its driver describes it: the built-in spec its name matches as the
/// base, every resource the driver reports taken from the device. Where the device is another part
/// than the base (a different SM count: an H100 PCIe under the H100 SXM5 name), the peak rates are
/// scaled by the SM counts and the DRAM bandwidth is computed from the memory clock and bus width;
/// the spec is then named after the device and `source` says what was corrected. nullopt when no
/// built-in spec matches the name, or the one that does has another compute capability.
std::optional<GpuSpec> device_gpu_spec(const DeviceAttributes& device);

/// How many blocks of one kernel can be resident at once, and what limits it.
struct Occupancy {
  int blocks_per_sm = 0;     ///< 0 when one block does not fit at all
  int64_t total_blocks = 0;  ///< blocks_per_sm x sm_count
  std::string limited_by;    ///< "threads", "registers", "shared memory", "blocks per SM", or why 0
};

/// Co-residency of a block of `threads_per_block` threads using `regs_per_thread` registers and
/// `smem_per_block` bytes of shared memory, with CUDA's allocation granularities (registers per
/// warp in units of 256, whole warps).
Occupancy occupancy(const GpuSpec& spec, int threads_per_block, int regs_per_thread,
                    int64_t smem_per_block);
/// occupancy(...).total_blocks: the block count a grid-synchronized kernel may not exceed.
int64_t max_active_blocks(const GpuSpec& spec, int threads_per_block, int regs_per_thread,
                          int64_t smem_per_block);

/// One line per field, for `--dump-after` style output and the GUI's spec panel.
std::string print(const GpuSpec& spec);

}  // namespace souffle::gpu
