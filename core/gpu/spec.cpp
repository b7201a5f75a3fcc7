// GPU spec files and the co-residency calculation the souffle partitioner compares against.
#include "core/gpu/spec.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/support/error.h"

namespace souffle::gpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Reads the fields of one "gpus" entry; every error names the entry and the field.
class EntryReader {
 public:
  EntryReader(const json& j, std::string file, std::string where)
      : m_j(j), m_file(std::move(file)), m_where(std::move(where)) {}

  UserError error(const std::string& field, const std::string& why) const {
    return UserError(m_file, m_where, "field '" + field + "' " + why);
  }
  const json& field(const std::string& key) const {
    auto it = m_j.find(key);
    if (it == m_j.end()) throw error(key, "is missing");
    return *it;
  }
  std::string str(const std::string& key, bool required = true) const {
    if (!required && !m_j.contains(key)) return "";
    const json& v = field(key);
    if (!v.is_string()) throw error(key, "must be a string");
    return v.get<std::string>();
  }
  int64_t integer(const std::string& key, int64_t min_value, bool required = true,
                  int64_t fallback = 0) const {
    if (!required && !m_j.contains(key)) return fallback;
    const json& v = field(key);
    if (!v.is_number_integer()) throw error(key, "must be an integer");
    int64_t x = v.get<int64_t>();
    if (x < min_value) throw error(key, "must be at least " + std::to_string(min_value));
    return x;
  }
  int int32(const std::string& key, int64_t min_value, bool required = true,
            int64_t fallback = 0) const {
    int64_t x = integer(key, min_value, required, fallback);
    if (x > std::numeric_limits<int>::max()) throw error(key, "is too large");
    return static_cast<int>(x);
  }
  double number(const std::string& key, double min_value, bool required = true) const {
    if (!required && !m_j.contains(key)) return 0;
    const json& v = field(key);
    if (!v.is_number()) throw error(key, "must be a number");
    double x = v.get<double>();
    if (!(x >= min_value)) throw error(key, "must be at least " + std::to_string(min_value));
    return x;
  }
  std::vector<std::string> strings(const std::string& key) const {
    std::vector<std::string> out;
    if (!m_j.contains(key)) return out;
    const json& v = field(key);
    if (!v.is_array()) throw error(key, "must be an array of strings");
    for (const json& s : v) {
      if (!s.is_string()) throw error(key, "must be an array of strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  }

 private:
  const json& m_j;
  std::string m_file, m_where;
};

GpuSpec parse_entry(const json& j, const std::string& file, size_t index) {
  std::string where = "gpus[" + std::to_string(index) + "]";
  if (!j.is_object()) throw UserError(file, where, "must be an object");
  if (j.contains("name") && j["name"].is_string())
    where += " (" + j["name"].get<std::string>() + ")";
  EntryReader r(j, file, where);
  GpuSpec s;
  s.name = r.str("name");
  if (s.name.empty()) throw r.error("name", "must not be empty");
  s.aliases = r.strings("aliases");
  s.compute_capability = r.str("compute_capability", false);
  s.sm_count = r.int32("sm_count", 1);
  s.max_threads_per_sm = r.int32("max_threads_per_sm", 1);
  s.max_threads_per_block = r.int32("max_threads_per_block", 1);
  s.max_blocks_per_sm = r.int32("max_blocks_per_sm", 1);
  s.registers_per_sm = r.int32("registers_per_sm", 1);
  s.max_registers_per_block = r.int32("max_registers_per_block", 1);
  s.max_registers_per_thread = r.int32("max_registers_per_thread", 1);
  s.shared_memory_per_sm = r.integer("shared_memory_per_sm", 0);
  s.max_shared_memory_per_block = r.integer("max_shared_memory_per_block", 0);
  s.reserved_shared_memory_per_block = r.integer("reserved_shared_memory_per_block", 0, false);
  s.warp_size = r.int32("warp_size", 1, false, 32);
  s.l2_bytes = r.integer("l2_bytes", 0);
  s.dram_bytes = r.integer("dram_bytes", 0, false);
  s.dram_bandwidth_gbps = r.number("dram_bandwidth_gbps", 1e-9);
  s.peak_fp32_tflops = r.number("peak_fp32_tflops", 1e-9);
  s.peak_tf32_tflops = r.number("peak_tf32_tflops", 0, false);
  s.peak_fp16_tflops = r.number("peak_fp16_tflops", 0, false);
  s.launch_overhead_us = r.number("launch_overhead_us", 0);
  s.grid_sync_overhead_us = r.number("grid_sync_overhead_us", 0);
  s.source = r.str("source");
  if (s.max_threads_per_block > s.max_threads_per_sm)
    throw r.error("max_threads_per_block", "exceeds max_threads_per_sm");
  if (s.max_shared_memory_per_block > s.shared_memory_per_sm)
    throw r.error("max_shared_memory_per_block", "exceeds shared_memory_per_sm");
  if (s.max_registers_per_block > s.registers_per_sm)
    throw r.error("max_registers_per_block", "exceeds registers_per_sm");
  return s;
}

std::string executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

int64_t round_up(int64_t x, int64_t unit) {
  return (x + unit - 1) / unit * unit;
}

}  // namespace

std::vector<GpuSpec> parse_gpu_specs(const std::string& json_text, const std::string& file) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    throw UserError(file, "", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) throw UserError(file, "", "the top level must be an object");
  if (root.contains("version")) {
    const json& v = root["version"];
    if (!v.is_number_integer() || v.get<int64_t>() != 1)
      throw UserError(file, "version", "unsupported spec file version (expected 1)");
  }
  auto it = root.find("gpus");
  if (it == root.end() || !it->is_array())
    throw UserError(file, "gpus", "missing array of GPU entries");
  if (it->empty()) throw UserError(file, "gpus", "no GPU entries");
  std::vector<GpuSpec> out;
  for (size_t i = 0; i < it->size(); ++i) {
    out.push_back(parse_entry((*it)[i], file, i));
    for (size_t k = 0; k + 1 < out.size(); ++k)
      if (lower(out[k].name) == lower(out.back().name))
        throw UserError(file, "gpus[" + std::to_string(i) + "]",
                        "duplicate GPU name '" + out.back().name + "'");
  }
  return out;
}

std::vector<GpuSpec> load_gpu_specs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot open GPU spec file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_gpu_specs(ss.str(), path);
}

std::string find_resource(const std::string& name) {
  std::vector<fs::path> dirs;
  // An installed program reads what was installed with it, even where the source tree it was
  // built from is still there.
  std::string exe = executable_dir();
  if (!exe.empty()) dirs.push_back(fs::path(exe) / ".." / "share" / "souffle");
#ifdef SOUFFLE_RESOURCE_DIR
  dirs.emplace_back(SOUFFLE_RESOURCE_DIR);
#endif
  if (!exe.empty()) {
    dirs.push_back(fs::path(exe) / "resources");
    dirs.push_back(fs::path(exe));
  }
  std::error_code ec;
  for (const fs::path& d : dirs) {
    fs::path p = d / name;
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  }
  throw UserError(name, "",
                  "resource file not found (looked in the source tree's resources, "
                  "../share/souffle and the executable's folder)");
}

const std::vector<GpuSpec>& builtin_gpu_specs() {
  static std::once_flag once;
  static std::vector<GpuSpec> specs;
  // A failed load is not cached: call_once retries when the initializer throws.
  std::call_once(once, [] { specs = load_gpu_specs(find_resource("gpus.json")); });
  return specs;
}

const GpuSpec& find_gpu(const std::vector<GpuSpec>& specs, const std::string& name) {
  std::string want = lower(name);
  for (const GpuSpec& s : specs) {
    if (lower(s.name) == want) return s;
    for (const std::string& a : s.aliases)
      if (lower(a) == want) return s;
  }
  std::string known;
  for (const GpuSpec& s : specs) {
    if (!known.empty()) known += ", ";
    known += s.name;
  }
  throw UserError("unknown GPU '" + name + "' (known: " + known + ")");
}

std::optional<GpuSpec> device_gpu_spec(const std::string& device_name) {
  std::string name = device_name;
  for (const char* prefix : {"NVIDIA ", "Tesla "})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  for (const std::string& n : {name, name.substr(0, name.find(' '))}) {
    try {
      return find_gpu(builtin_gpu_specs(), n);
    } catch (const UserError&) {
    }
  }
  return std::nullopt;
}

std::optional<GpuSpec> device_gpu_spec(const DeviceAttributes& d) {
  std::optional<GpuSpec> base = device_gpu_spec(d.name);
  // A name that matches a part of another architecture is no base for this device.
  if (!base || (!d.compute_capability.empty() && base->compute_capability != d.compute_capability))
    return std::nullopt;
  GpuSpec s = *base;
  std::vector<std::string> fixes;
  auto take = [&fixes](auto& field, auto measured, const char* what) {
    if (measured <= 0 || field == measured) return;
    fixes.push_back(std::string(what) + " " + std::to_string(measured) + " (spec " +
                    std::to_string(field) + ")");
    field = measured;
  };
  const int spec_sms = s.sm_count;
  take(s.sm_count, d.sm_count, "SMs");
  take(s.max_threads_per_sm, d.max_threads_per_sm, "threads per SM");
  take(s.max_threads_per_block, d.max_threads_per_block, "threads per block");
  take(s.max_blocks_per_sm, d.max_blocks_per_sm, "blocks per SM");
  take(s.registers_per_sm, d.registers_per_sm, "registers per SM");
  take(s.max_registers_per_block, d.max_registers_per_block, "registers per block");
  take(s.shared_memory_per_sm, d.shared_memory_per_sm, "shared memory per SM");
  take(s.max_shared_memory_per_block, d.max_shared_memory_per_block, "shared memory per block");
  // The driver reports 0 reserved bytes on parts that reserve none: only a positive figure is
  // a measurement.
  take(s.reserved_shared_memory_per_block, d.reserved_shared_memory_per_block,
       "reserved shared memory per block");
  take(s.warp_size, d.warp_size, "warp size");
  take(s.l2_bytes, d.l2_bytes, "L2 bytes");
  // The driver's memory size is a little under the datasheet's: a different size, not a few
  // reserved megabytes, is another part.
  if (d.memory_bytes > 0 && std::abs(static_cast<double>(d.memory_bytes - s.dram_bytes)) >
                                0.05 * static_cast<double>(s.dram_bytes))
    take(s.dram_bytes, d.memory_bytes, "memory bytes");
  if (d.sm_count > 0 && d.sm_count != spec_sms && spec_sms > 0) {
    const double f = static_cast<double>(d.sm_count) / spec_sms;
    s.peak_fp32_tflops *= f;
    s.peak_tf32_tflops *= f;
    s.peak_fp16_tflops *= f;
    fixes.push_back("peak rates scaled by " + std::to_string(d.sm_count) + "/" +
                    std::to_string(spec_sms) + " SMs");
    if (d.memory_clock_mhz > 0 && d.memory_bus_bits > 0) {
      // Two transfers per memory clock over the whole bus.
      s.dram_bandwidth_gbps =
          std::round(2.0 * d.memory_clock_mhz * 1e6 * d.memory_bus_bits / 8 / 1e9);
      fixes.push_back("DRAM bandwidth " +
                      std::to_string(static_cast<int64_t>(s.dram_bandwidth_gbps)) +
                      " GB/s from its " + std::to_string(d.memory_bus_bits) + "-bit bus at " +
                      std::to_string(d.memory_clock_mhz) + " MHz");
    }
  }
  if (fixes.empty()) return s;
  std::string name = d.name;
  for (const char* prefix : {"NVIDIA ", "Tesla "})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  std::string what;
  for (const std::string& f : fixes) what += (what.empty() ? "" : ", ") + f;
  s.source = "the device " + d.name + " as its driver describes it, on the built-in " + s.name +
             " (matched by its name): " + what + "; " + s.source;
  s.name = name.empty() ? s.name : name;
  s.aliases.clear();
  return s;
}

GpuSpec gpu_spec(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) {
    std::vector<GpuSpec> specs = load_gpu_specs(name_or_path);
    if (specs.size() != 1)
      throw UserError(name_or_path, "", "the file has several GPUs; name one as FILE:NAME");
    return specs.front();
  }
  size_t colon = name_or_path.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    std::string file = name_or_path.substr(0, colon);
    if (fs::is_regular_file(file, ec)) {
      try {
        return find_gpu(load_gpu_specs(file), name_or_path.substr(colon + 1));
      } catch (const UserError& e) {
        throw e.with_file(file);
      }
    }
  }
  return find_gpu(builtin_gpu_specs(), name_or_path);
}

Occupancy occupancy(const GpuSpec& spec, int threads_per_block, int regs_per_thread,
                    int64_t smem_per_block) {
  Occupancy o;
  if (threads_per_block <= 0) {
    o.limited_by = "no threads";
    return o;
  }
  if (threads_per_block > spec.max_threads_per_block) {
    o.limited_by = "threads per block exceed " + std::to_string(spec.max_threads_per_block);
    return o;
  }
  regs_per_thread = std::max(regs_per_thread, 1);
  if (regs_per_thread > spec.max_registers_per_thread) {
    o.limited_by = "registers per thread exceed " + std::to_string(spec.max_registers_per_thread);
    return o;
  }
  if (smem_per_block > spec.max_shared_memory_per_block) {
    o.limited_by =
        "shared memory per block exceeds " + std::to_string(spec.max_shared_memory_per_block);
    return o;
  }
  int64_t warp = std::max(spec.warp_size, 1);
  int64_t warps = (threads_per_block + warp - 1) / warp;
  // Registers are allocated per warp in units of 256.
  int64_t regs_per_warp = round_up(int64_t{regs_per_thread} * warp, 256);
  int64_t regs_per_block = regs_per_warp * warps;
  if (regs_per_block > spec.max_registers_per_block) {
    o.limited_by = "registers per block exceed " + std::to_string(spec.max_registers_per_block);
    return o;
  }
  struct Limit {
    int64_t blocks;
    const char* what;
  };
  int64_t smem_cost = std::max<int64_t>(smem_per_block, 0) + spec.reserved_shared_memory_per_block;
  Limit limits[] = {
      {spec.max_blocks_per_sm, "blocks per SM"},
      {spec.max_threads_per_sm / (warps * warp), "threads"},
      {(spec.registers_per_sm / regs_per_warp) / warps, "registers"},
      {smem_cost > 0 ? spec.shared_memory_per_sm / smem_cost : spec.max_blocks_per_sm,
       "shared memory"},
  };
  const Limit* best = &limits[0];
  for (const Limit& l : limits)
    if (l.blocks < best->blocks) best = &l;
  o.blocks_per_sm = static_cast<int>(std::max<int64_t>(best->blocks, 0));
  o.total_blocks = int64_t{o.blocks_per_sm} * spec.sm_count;
  o.limited_by = best->what;
  return o;
}

int64_t max_active_blocks(const GpuSpec& spec, int threads_per_block, int regs_per_thread,
                          int64_t smem_per_block) {
  return occupancy(spec, threads_per_block, regs_per_thread, smem_per_block).total_blocks;
}

std::string print(const GpuSpec& s) {
  std::ostringstream os;
  os << "gpu " << s.name << " (sm_" << s.compute_capability << ")\n"
     << "  SMs " << s.sm_count << ", warp " << s.warp_size << "\n"
     << "  per SM: threads " << s.max_threads_per_sm << ", blocks " << s.max_blocks_per_sm
     << ", registers " << s.registers_per_sm << ", shared memory " << s.shared_memory_per_sm
     << " B\n"
     << "  per block: threads " << s.max_threads_per_block << ", registers "
     << s.max_registers_per_block << ", shared memory " << s.max_shared_memory_per_block << " B (+"
     << s.reserved_shared_memory_per_block << " B reserved)\n"
     << "  registers per thread " << s.max_registers_per_thread << "\n"
     << "  L2 " << s.l2_bytes << " B, DRAM " << s.dram_bytes << " B at " << s.dram_bandwidth_gbps
     << " GB/s\n"
     << "  peak TFLOP/s: fp32 " << s.peak_fp32_tflops << ", tf32 " << s.peak_tf32_tflops
     << ", fp16 " << s.peak_fp16_tflops << "\n"
     << "  overheads: launch " << s.launch_overhead_us << " us, grid sync "
     << s.grid_sync_overhead_us << " us\n"
     << "  source: " << s.source << "\n";
  return os.str();
}

}  // namespace souffle::gpu
