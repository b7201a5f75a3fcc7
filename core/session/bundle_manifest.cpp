#include "core/session/bundle_manifest.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/support/error.h"

namespace souffle {
namespace {

using nlohmann::json;

std::optional<DType> dtype_of_name(const std::string& n) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8,
                  DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16,
                  DType::UInt32, DType::UInt64, DType::Bool})
    if (n == dtype_name(t)) return t;
  return std::nullopt;
}

json spec_object(const gpu::GpuSpec& s) {
  return {{"name", s.name},
          {"aliases", s.aliases},
          {"compute_capability", s.compute_capability},
          {"sm_count", s.sm_count},
          {"max_threads_per_sm", s.max_threads_per_sm},
          {"max_threads_per_block", s.max_threads_per_block},
          {"max_blocks_per_sm", s.max_blocks_per_sm},
          {"registers_per_sm", s.registers_per_sm},
          {"max_registers_per_block", s.max_registers_per_block},
          {"max_registers_per_thread", s.max_registers_per_thread},
          {"shared_memory_per_sm", s.shared_memory_per_sm},
          {"max_shared_memory_per_block", s.max_shared_memory_per_block},
          {"reserved_shared_memory_per_block", s.reserved_shared_memory_per_block},
          {"warp_size", s.warp_size},
          {"l2_bytes", s.l2_bytes},
          {"dram_bytes", s.dram_bytes},
          {"dram_bandwidth_gbps", s.dram_bandwidth_gbps},
          {"peak_fp32_tflops", s.peak_fp32_tflops},
          {"peak_tf32_tflops", s.peak_tf32_tflops},
          {"peak_fp16_tflops", s.peak_fp16_tflops},
          {"launch_overhead_us", s.launch_overhead_us},
          {"grid_sync_overhead_us", s.grid_sync_overhead_us},
          {"source", s.source}};
}

/// Field readers whose errors name the file and where in it.
struct Reader {
  std::string file;
  const json& need(const json& j, const char* key, const std::string& where) const {
    auto it = j.find(key);
    if (it == j.end()) throw UserError(file, where, std::string("field '") + key + "' is missing");
    return *it;
  }
  std::string str(const json& j, const char* key, const std::string& where,
                  bool required = true) const {
    if (!required && !j.contains(key)) return "";
    const json& v = need(j, key, where);
    if (!v.is_string())
      throw UserError(file, where, std::string("field '") + key + "' must be a string");
    return v.get<std::string>();
  }
  int64_t integer(const json& j, const char* key, const std::string& where, int64_t min,
                  bool required = true, int64_t fallback = 0) const {
    if (!required && !j.contains(key)) return fallback;
    const json& v = need(j, key, where);
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      throw UserError(
          file, where,
          std::string("field '") + key + "' must be an integer >= " + std::to_string(min));
    return v.get<int64_t>();
  }
  /// A file name inside the bundle: no folder outside it, no absolute path.
  std::string inside(const json& j, const char* key, const std::string& where) const {
    std::string f = str(j, key, where, false);
    if (f.empty()) return f;
    std::filesystem::path p(f);
    if (p.is_absolute() || f.find("..") != std::string::npos)
      throw UserError(file, where,
                      std::string("field '") + key + "' names a file outside the bundle: " + f);
    return f;
  }
};

}  // namespace

std::string gpu_spec_json(const gpu::GpuSpec& s) {
  return json{{"version", 1}, {"gpus", json::array({spec_object(s)})}}.dump(2);
}

std::string manifest_json(const BundleManifest& m) {
  json src = {{"model", m.source.model},
              {"dims", m.source.dims},
              {"strategy", m.source.strategy},
              {"precision", m.source.precision},
              {"gpu", spec_object(m.source.gpu)}};
  if (!m.source.decisions_json.empty()) src["decisions"] = json::parse(m.source.decisions_json);
  if (!m.source.bind.empty()) src["bind"] = m.source.bind;
  if (!m.source.shapes.empty()) src["shape"] = m.source.shapes;
  // Fields of version 2 only where the bundle needs them: a bundle of grid-barrier kernels is
  // written exactly as version 1 wrote it.
  // Version 3 only where a kernel takes its tensors packed: a runner before it would launch
  // such a kernel with one parameter per tensor.
  const bool v3 = m.has_packed_args();
  const bool v2 = v3 || m.has_flags() || m.source.sync != "grid" || !m.source.waves ||
                  !m.source.weight_panels || m.source.timeline;
  if (m.source.timeline) src["timeline"] = {{"max_bytes", m.source.timeline_max_bytes}};
  if (v2) src["sync"] = m.source.sync;
  if (!m.source.waves) src["waves"] = false;
  if (!m.source.weight_panels) src["weight_panels"] = false;
  json tensors = json::array();
  for (const ManifestTensor& t : m.tensors) {
    json j = {{"name", t.name},
              {"dtype", dtype_name(t.dtype)},
              {"shape", t.shape},
              {"bytes", t.bytes},
              {"kind", t.kind}};
    if (t.weight_offset >= 0) j["weight_offset"] = t.weight_offset;
    if (!t.file.empty()) j["file"] = t.file;
    if (!t.expected.empty()) j["expected"] = t.expected;
    if (t.output_index >= 0) j["output_index"] = t.output_index;
    tensors.push_back(j);
  }
  json kernels = json::array();
  for (const ManifestKernel& k : m.kernels) {
    json images = json::array();
    for (const ManifestImage& i : k.images) {
      json ji = {{"arch", i.arch}, {"registers", i.registers}};
      if (!i.ptx.empty()) ji["ptx"] = i.ptx;
      if (!i.cubin.empty()) ji["cubin"] = i.cubin;
      images.push_back(ji);
    }
    json jk = {{"name", k.name},
               {"partition", k.partition},
               {"source", k.source},
               {"grid", k.grid},
               {"block", k.block},
               {"shared_bytes", k.shared_bytes},
               {"cooperative", k.cooperative},
               {"register_cap", k.register_cap},
               {"args", k.args},
               {"images", images},
               {"stages", k.stages},
               {"grid_barriers", k.grid_barriers},
               {"est_us", k.est_us}};
    if (!k.entry.empty() && k.entry != k.name) jk["entry"] = k.entry;
    if (k.timeline_tensor >= 0)
      jk["timeline"] = {{"tensor", k.timeline_tensor},
                        {"rows", k.timeline_rows},
                        {"slots", k.timeline_slots},
                        {"stride", k.timeline_stride}};
    if (k.packed_args) jk["packed_args"] = true;
    if (k.flag_epoch) {
      jk["flag_epoch"] = true;
      jk["flag_waits"] = k.flag_waits;
      jk["flag_releases"] = k.flag_releases;
    }
    kernels.push_back(std::move(jk));
  }
  json j = {{"format", "souffle-bundle"},
            {"version", v3   ? 3
                        : v2 ? 2
                             : 1},
            {"source", src},
            {"archs", m.archs},
            {"weights", m.weights},
            {"has_expected", m.has_expected},
            {"tensors", tensors},
            {"kernels", kernels}};
  return j.dump(1) + "\n";
}

BundleManifest parse_manifest(const std::string& text, const std::string& file) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw UserError(file, "", std::string("not a bundle manifest (JSON): ") + e.what());
  }
  Reader r{file};
  if (!j.is_object() || j.value("format", "") != "souffle-bundle")
    throw UserError(file, "", "not a kernel bundle manifest (format is not souffle-bundle)");
  int64_t v = r.integer(j, "version", "", 1);
  if (v > BundleManifest::kVersion)
    throw UserError(file, "",
                    "bundle version " + std::to_string(v) + " is newer than this build reads (" +
                        std::to_string(BundleManifest::kVersion) + ")");
  BundleManifest m;
  const json& src = r.need(j, "source", "");
  m.source.model = r.str(src, "model", "source");
  m.source.strategy = r.str(src, "strategy", "source");
  m.source.precision = r.str(src, "precision", "source");
  if (auto d = src.find("dims"); d != src.end() && d->is_object())
    for (auto it = d->begin(); it != d->end(); ++it)
      if (it->is_number_integer()) m.source.dims[it.key()] = it->get<int64_t>();
  for (const auto& [key, into] : {std::pair{"bind", &m.source.bind}, {"shape", &m.source.shapes}})
    if (auto b = src.find(key); b != src.end() && b->is_array())
      for (const json& v : *b)
        if (v.is_string()) into->push_back(v.get<std::string>());
  m.source.gpu =
      gpu::parse_gpu_specs(
          json{{"version", 1}, {"gpus", json::array({r.need(src, "gpu", "source")})}}.dump(), file)
          .front();
  if (auto d = src.find("decisions"); d != src.end()) m.source.decisions_json = d->dump();
  if (auto t = src.find("timeline"); t != src.end()) {
    m.source.timeline = true;
    m.source.timeline_max_bytes = r.integer(*t, "max_bytes", "source.timeline", 1);
  }
  if (v >= 2 && src.contains("sync")) {
    m.source.sync = r.str(src, "sync", "source");
    if (m.source.sync != "grid" && m.source.sync != "flags" && m.source.sync != "auto")
      throw UserError(file, "source", "field 'sync' must be grid, flags or auto");
  }
  for (auto [key, flag] : {std::pair<const char*, bool*>{"waves", &m.source.waves},
                           {"weight_panels", &m.source.weight_panels}})
    if (v >= 2 && src.contains(key)) {
      if (!src[key].is_boolean())
        throw UserError(file, "source", std::string("field '") + key + "' must be true or false");
      *flag = src[key].get<bool>();
    }
  if (auto a = j.find("archs"); a != j.end() && a->is_array())
    for (const json& x : *a)
      if (x.is_string()) m.archs.push_back(x.get<std::string>());
  m.weights = r.inside(j, "weights", "");
  if (m.weights.empty()) m.weights = "weights.bin";
  m.has_expected = j.value("has_expected", false);
  const json& tensors = r.need(j, "tensors", "");
  if (!tensors.is_array()) throw UserError(file, "tensors", "must be an array");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const json& t = tensors[i];
    std::string where = "tensors[" + std::to_string(i) + "]";
    if (!t.is_object()) throw UserError(file, where, "must be an object");
    ManifestTensor mt;
    mt.name = r.str(t, "name", where);
    std::optional<DType> dt = dtype_of_name(r.str(t, "dtype", where));
    if (!dt) throw UserError(file, where, "unknown dtype " + t["dtype"].dump());
    mt.dtype = *dt;
    const json& shape = r.need(t, "shape", where);
    if (!shape.is_array()) throw UserError(file, where, "field 'shape' must be an array");
    int64_t numel = 1;
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw UserError(file, where, "field 'shape' must hold integers >= 0");
      mt.shape.push_back(d.get<int64_t>());
      if (numel > (int64_t{1} << 40) / std::max<int64_t>(1, d.get<int64_t>()))
        throw UserError(file, where, "the tensor is too large");
      numel *= d.get<int64_t>();
    }
    mt.bytes = r.integer(t, "bytes", where, 0);
    if (mt.bytes != numel * dtype_size(mt.dtype))
      throw UserError(file, where, "field 'bytes' does not match its shape and dtype");
    mt.kind = r.str(t, "kind", where);
    if (mt.kind != "input" && mt.kind != "weight" && mt.kind != "intermediate" &&
        mt.kind != "output" && mt.kind != "scratch" && mt.kind != "flags")
      throw UserError(file, where, "unknown kind '" + mt.kind + "'");
    if (mt.kind == "flags" && (v < 2 || mt.dtype != DType::Int32))
      throw UserError(
          file, where,
          v < 2 ? "kind 'flags' needs bundle version 2" : "flag counters must be int32");
    mt.weight_offset = r.integer(t, "weight_offset", where, 0, mt.kind == "weight", -1);
    mt.file = r.inside(t, "file", where);
    mt.expected = r.inside(t, "expected", where);
    mt.output_index = static_cast<int>(r.integer(t, "output_index", where, 0, false, -1));
    m.tensors.push_back(std::move(mt));
  }
  const json& kernels = r.need(j, "kernels", "");
  if (!kernels.is_array()) throw UserError(file, "kernels", "must be an array");
  for (size_t i = 0; i < kernels.size(); ++i) {
    const json& k = kernels[i];
    std::string where = "kernels[" + std::to_string(i) + "]";
    if (!k.is_object()) throw UserError(file, where, "must be an object");
    ManifestKernel mk;
    mk.name = r.str(k, "name", where);
    where += " (" + mk.name + ")";
    mk.entry = k.contains("entry") ? r.str(k, "entry", where) : mk.name;
    mk.partition = static_cast<int>(r.integer(k, "partition", where, 0));
    mk.source = r.inside(k, "source", where);
    mk.grid = r.integer(k, "grid", where, 1);
    mk.block = static_cast<int>(r.integer(k, "block", where, 1));
    if (mk.grid > (int64_t{1} << 31) - 1 || mk.block > 1024)
      throw UserError(file, where, "grid or block out of range");
    mk.shared_bytes = r.integer(k, "shared_bytes", where, 0);
    mk.cooperative = k.value("cooperative", false);
    mk.register_cap = static_cast<int>(r.integer(k, "register_cap", where, 0, false, 0));
    const json& args = r.need(k, "args", where);
    if (!args.is_array()) throw UserError(file, where, "field 'args' must be an array");
    for (const json& a : args) {
      if (!a.is_number_integer() || a.get<int64_t>() < 0 ||
          a.get<int64_t>() >= static_cast<int64_t>(m.tensors.size()))
        throw UserError(file, where, "field 'args' names a tensor that is not in the bundle");
      mk.args.push_back(a.get<int>());
    }
    if (auto im = k.find("images"); im != k.end() && im->is_array())
      for (const json& x : *im) {
        ManifestImage img;
        img.arch = r.str(x, "arch", where);
        img.ptx = r.inside(x, "ptx", where);
        img.cubin = r.inside(x, "cubin", where);
        img.registers = static_cast<int>(r.integer(x, "registers", where, 0, false, 0));
        mk.images.push_back(img);
      }
    mk.stages = static_cast<int>(r.integer(k, "stages", where, 0, false, 0));
    mk.grid_barriers = static_cast<int>(r.integer(k, "grid_barriers", where, 0, false, 0));
    if (auto e = k.find("est_us"); e != k.end() && e->is_number()) mk.est_us = e->get<double>();
    if (auto t = k.find("timeline"); t != k.end()) {
      const std::string tw = where + ".timeline";
      mk.timeline_tensor = static_cast<int>(r.integer(*t, "tensor", tw, 0));
      if (mk.timeline_tensor >= static_cast<int>(m.tensors.size()))
        throw UserError(file, tw, "field 'tensor' names no tensor");
      mk.timeline_rows = r.integer(*t, "rows", tw, 1, true, 0);
      mk.timeline_slots = r.integer(*t, "slots", tw, 1, true, 0);
      mk.timeline_stride = r.integer(*t, "stride", tw, 1, true, 0);
      const ManifestTensor& tt = m.tensors[static_cast<size_t>(mk.timeline_tensor)];
      if (tt.bytes != mk.timeline_rows * mk.timeline_slots * 24 ||
          mk.timeline_rows * mk.timeline_stride < mk.grid)
        throw UserError(file, tw,
                        "the layout does not match tensor " + tt.name + " (" +
                            std::to_string(tt.bytes) + " bytes) or the grid");
    }
    if (v >= 2) {
      if (auto f = k.find("flag_epoch"); f != k.end()) {
        if (!f->is_boolean()) throw UserError(file, where, "field 'flag_epoch' must be a boolean");
        mk.flag_epoch = f->get<bool>();
      }
      mk.flag_waits = static_cast<int>(r.integer(k, "flag_waits", where, 0, false, 0));
      mk.flag_releases = static_cast<int>(r.integer(k, "flag_releases", where, 0, false, 0));
    }
    if (auto f = k.find("packed_args"); f != k.end()) {
      if (v < 3) throw UserError(file, where, "field 'packed_args' needs bundle version 3");
      if (!f->is_boolean()) throw UserError(file, where, "field 'packed_args' must be a boolean");
      mk.packed_args = f->get<bool>();
    }
    // Counters and the epoch go together, and a block that waits on another block only ends
    // when every block of the grid is resident: only a cooperative launch promises that.
    bool has_counters = false;
    for (int a : mk.args) has_counters |= m.tensors[static_cast<size_t>(a)].kind == "flags";
    if (has_counters != mk.flag_epoch)
      throw UserError(file, where,
                      mk.flag_epoch ? "field 'flag_epoch' is set but no argument is a flags tensor"
                                    : "a flags tensor is an argument but 'flag_epoch' is not set");
    if (mk.flag_epoch && !mk.cooperative)
      throw UserError(file, where,
                      "a kernel with per-tile flags must launch cooperatively (its blocks wait "
                      "on each other, so all must be co-resident)");
    m.kernels.push_back(std::move(mk));
  }
  return m;
}

bool BundleManifest::has_packed_args() const {
  for (const ManifestKernel& k : kernels)
    if (k.packed_args) return true;
  return false;
}

bool BundleManifest::has_flags() const {
  for (const ManifestKernel& k : kernels)
    if (k.flag_epoch) return true;
  return false;
}

BundleManifest load_manifest(const std::string& dir) {
  std::string path = (std::filesystem::path(dir) / "bundle.json").string();
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(path, "", "cannot read the bundle manifest (is this a kernel bundle?)");
  std::stringstream ss;
  ss << f.rdbuf();
  BundleManifest m = parse_manifest(ss.str(), path);
  m.dir = dir;
  return m;
}

}  // namespace souffle
