// souffle-runner's request loop: one JSON request a line, one JSON answer a line, progress
// events between them. Everything that is not backend-specific lives here: reading the bundle's
// files, uploading weights and inputs, checking outputs against the bundle's reference data.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <type_traits>

#include "core/session/compare.h"
#include "core/session/runner.h"
#include "core/session/timeline.h"
#include "core/support/error.h"
#include "core/support/json_number.h"
#include "core/support/tensor_data.h"

namespace souffle::runner {

using nlohmann::json;

namespace {

std::string read_bytes(const std::string& path, int64_t offset, int64_t bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw RunnerError("bad_bundle", "cannot read " + path);
  f.seekg(offset);
  std::string out(static_cast<size_t>(bytes), '\0');
  if (bytes > 0) f.read(out.data(), bytes);
  if (!f || f.gcount() != bytes)
    throw RunnerError("bad_bundle", path + " is shorter than the bundle says (" +
                                        std::to_string(bytes) + " bytes at offset " +
                                        std::to_string(offset) + ")");
  return out;
}

class Server {
 public:
  Server(std::ostream& out, Backend& backend) : m_out(out), m_backend(backend) {}

  /// Answers one request line; false once the runner should exit.
  bool handle(const std::string& line, int line_no) {
    json req;
    try {
      req = json::parse(line);
    } catch (const json::exception& e) {
      answer(nullptr, error_json("bad_request",
                                 "line " + std::to_string(line_no) + " is not JSON: " + e.what()));
      return true;
    }
    json id = req.is_object() && req.contains("id") ? req["id"] : json(nullptr);
    if (!req.is_object() || !req.contains("op") || !req["op"].is_string()) {
      answer(id, error_json("bad_request", "a request is an object with a string field 'op'"));
      return true;
    }
    const std::string op = req["op"].get<std::string>();
    try {
      json r = dispatch(op, req);
      r["ok"] = true;
      answer(id, r);
      // A fault in an optional part (graph replay, counted run, a calibration GEMM) is answered
      // with what was measured; the runner still exits after it.
      return op != "quit" && !m_backend.dead();
    } catch (const RunnerError& e) {
      json r = error_json(e.code(), e.what());
      if (!e.kernel().empty()) r["kernel"] = e.kernel();
      answer(id, r);
    } catch (const UserError& e) {
      answer(id, error_json("bad_request", e.what()));
    } catch (const std::exception& e) {
      answer(id, error_json("internal", e.what()));
    }
    return !m_backend.dead();
  }

 private:
  static json error_json(const std::string& code, const std::string& message) {
    return {{"ok", false}, {"code", code}, {"error", message}};
  }

  void answer(const json& id, json r) {
    r["id"] = id;
    m_out << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
  }

  void event(const json& e) {
    m_out << e.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
  }

  const BundleManifest& manifest() const {
    if (!m_loaded) throw RunnerError("bad_request", "no bundle is loaded (send load first)");
    return m_manifest;
  }

  int tensor_index(const json& req) const {
    const BundleManifest& m = manifest();
    if (!req.contains("tensor") || !req["tensor"].is_string())
      throw RunnerError("bad_request", "field 'tensor' (a tensor name) is missing");
    std::string name = req["tensor"].get<std::string>();
    for (size_t i = 0; i < m.tensors.size(); ++i)
      if (m.tensors[i].name == name) return static_cast<int>(i);
    throw RunnerError("bad_request", "the bundle has no tensor named " + name);
  }

  static std::string file_field(const json& req) {
    if (!req.contains("file") || !req["file"].is_string())
      throw RunnerError("bad_request", "field 'file' (a path) is missing");
    return req["file"].get<std::string>();
  }

  json dispatch(const std::string& op, const json& req) {
    // SOUFFLE_RUNNER_ABORT_AT=KERNEL kills the runner as it launches KERNEL: a test of what
    // callers do when a runner dies mid-run (a fault the emulator would not produce).
    static const char* abort_at = std::getenv("SOUFFLE_RUNNER_ABORT_AT");
    EventFn ev = [this](const json& e) {
      event(e);
      if (abort_at && e.value("event", "") == "launch" && e.value("kernel", "") == abort_at)
        std::raise(SIGKILL);
    };
    if (op == "hello") {
      if (req.contains("protocol") &&
          (!req["protocol"].is_number_integer() || req["protocol"].get<int>() != kProtocolVersion))
        throw RunnerError("bad_protocol",
                          "this runner speaks protocol " + std::to_string(kProtocolVersion) +
                              ", asked for " +
                              req["protocol"].dump(-1, ' ', false, json::error_handler_t::replace));
      json h = m_backend.hello();
      // Each device's spec as the caller should plan for it: the built-in spec its name
      // matches, corrected by what its driver reports (a spec file's form: a caller writes it
      // and plans with --gpu FILE).
      if (h.contains("devices") && h["devices"].is_array())
        for (json& d : h["devices"]) {
          if (!d.is_object() || !d.contains("name") || d.value("emulator", false)) continue;
          if (std::optional<gpu::GpuSpec> spec =
                  gpu::device_gpu_spec(device_attributes_from_json(d)))
            d["gpu_spec"] = json::parse(gpu_spec_json(*spec));
          else
            d["gpu_spec_note"] = "no built-in GPU spec matches " + d.value("name", "");
        }
      h["protocol"] = kProtocolVersion;
      h["runner"] = "souffle-runner";
      return h;
    }
    if (op == "load") {
      if (!req.contains("bundle") || !req["bundle"].is_string())
        throw RunnerError("bad_request", "field 'bundle' (the bundle's folder) is missing");
      m_loaded = false;
      BundleManifest m = load_manifest(req["bundle"].get<std::string>());
      json r = m_backend.load(m);
      m_manifest = std::move(m);
      m_loaded = true;
      // Weights from weights.bin, inputs from the bundle's files (zeros where it has none).
      int64_t uploaded = 0;
      const std::filesystem::path dir(m_manifest.dir);
      for (size_t i = 0; i < m_manifest.tensors.size(); ++i) {
        const ManifestTensor& t = m_manifest.tensors[i];
        if (t.kind == "weight") {
          m_backend.upload(static_cast<int>(i), read_bytes((dir / m_manifest.weights).string(),
                                                           t.weight_offset, t.bytes));
          uploaded += t.bytes;
        } else if (t.kind == "input") {
          m_backend.upload(static_cast<int>(i),
                           t.file.empty() ? std::string(static_cast<size_t>(t.bytes), '\0')
                                          : read_bytes((dir / t.file).string(), 0, t.bytes));
          uploaded += t.bytes;
        }
      }
      r["uploaded_bytes"] = uploaded;
      r["tensors"] = m_manifest.tensors.size();
      return r;
    }
    if (op == "upload") {
      int i = tensor_index(req);
      const ManifestTensor& t = manifest().tensors[static_cast<size_t>(i)];
      int64_t offset = req.value("offset", int64_t{0});
      m_backend.upload(i, read_bytes(file_field(req), offset, t.bytes));
      return {{"tensor", t.name}, {"bytes", t.bytes}};
    }
    if (op == "read") {
      int i = tensor_index(req);
      std::string bytes = m_backend.read(i);
      std::string path = file_field(req);
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!f) throw RunnerError("bad_request", "cannot write " + path);
      return {{"tensor", manifest().tensors[static_cast<size_t>(i)].name}, {"bytes", bytes.size()}};
    }
    if (op == "run") {
      manifest();
      auto t0 = std::chrono::steady_clock::now();
      m_backend.run(ev);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return {{"kernels", m_manifest.kernels.size()}, {"wall_ms", ms}};
    }
    if (op == "verify") return verify(req);
    if (op == "profile") {
      manifest();
      int runs = req.value("runs", 20), warmup = req.value("warmup", 3);
      if (runs < 1 || runs > 100000 || warmup < 0 || warmup > 1000)
        throw RunnerError("bad_request", "runs must be 1..100000 and warmup 0..1000");
      const bool timeline = req.value("timeline", false);
      if (timeline && !manifest().source.timeline)  // say so before timing anything
        write_runner_timelines(manifest(), m_backend);
      json out = profile_json(m_backend.profile(runs, warmup, req.value("graph", true),
                                                req.value("counters", true), ev));
      // The last run's records, one file per kernel (docs/timeline.md).
      if (timeline) out["timeline"] = write_runner_timelines(manifest(), m_backend);
      return out;
    }
    if (op == "calibrate") {
      gpu::Calibration c = m_backend.calibrate(ev);
      std::string text = gpu::calibration_json(c);
      if (req.contains("out") && req["out"].is_string()) {
        std::ofstream f(req["out"].get<std::string>(), std::ios::binary | std::ios::trunc);
        f << text;
        if (!f) throw RunnerError("bad_request", "cannot write " + req["out"].get<std::string>());
      }
      return {{"calibration", json::parse(text)}};
    }
    if (op == "quit") return json::object();
    throw RunnerError("bad_request", "unknown op '" + op +
                                         "' (hello, load, upload, run, verify, read, profile, "
                                         "calibrate, quit)");
  }

  json verify(const json& req) {
    const BundleManifest& m = manifest();
    // Element-wise (compare.h), each output with the default tolerance of the bundle's precision
    // and its type unless the request gives rtol and atol.
    const gpu::Precision precision = m.source.precision.empty()
                                         ? gpu::Precision::FP32
                                         : gpu::parse_precision(m.source.precision);
    auto number = [&req](const char* key) -> std::optional<double> {
      auto it = req.find(key);
      if (it == req.end()) return std::nullopt;
      if (!it->is_number() || it->get<double>() < 0)
        throw RunnerError("bad_request", std::string(key) + " must be a number >= 0");
      return it->get<double>();
    };
    const std::optional<double> rtol = number("rtol"), atol = number("atol");
    if (!m.has_expected)
      throw RunnerError("no_reference",
                        "the bundle has no expected outputs: there is nothing to verify against");
    json outs = json::array();
    bool all = true;
    int checked = 0;
    auto finite = [](double v) { return std::isfinite(v) ? json(v) : json("nan"); };
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      const ManifestTensor& t = m.tensors[i];
      if (t.output_index < 0) continue;
      if (t.expected.empty())
        throw RunnerError("no_reference",
                          "output " + t.name + " has no expected data in the bundle");
      std::string want =
          read_bytes((std::filesystem::path(m.dir) / t.expected).string(), 0, t.bytes);
      Tolerance tol = default_tolerance(precision, t.dtype);
      if (rtol) tol.rtol = *rtol;
      if (atol) tol.atol = *atol;
      const Comparison c = compare_bytes(want, m_backend.read(static_cast<int>(i)), t.dtype, tol);
      all = all && c.ok();
      ++checked;
      outs.push_back({{"name", t.name},
                      {"index", t.output_index},
                      {"ok", c.ok()},
                      {"rtol", c.rtol},
                      {"atol", c.atol},
                      {"mismatches", c.mismatches},
                      {"elements", c.numel},
                      {"max_abs", finite(c.max_abs_error)},
                      {"max_rel", finite(c.max_rel_error)},
                      {"rel_l2", finite(c.rel_l2_error)},
                      {"detail", c.describe()}});
    }
    if (checked == 0) throw RunnerError("no_reference", "the bundle lists no model outputs");
    return {{"outputs", outs}, {"pass", all}};
  }

  std::ostream& m_out;
  Backend& m_backend;
  BundleManifest m_manifest;
  bool m_loaded = false;
};

}  // namespace

json device_attributes_json(const gpu::DeviceAttributes& d) {
  return {{"name", d.name},
          {"compute_capability", d.compute_capability},
          {"sm_count", d.sm_count},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"registers_per_sm", d.registers_per_sm},
          {"max_registers_per_block", d.max_registers_per_block},
          {"shared_memory_per_sm", d.shared_memory_per_sm},
          {"max_shared_memory_per_block", d.max_shared_memory_per_block},
          {"reserved_shared_memory_per_block", d.reserved_shared_memory_per_block},
          {"warp_size", d.warp_size},
          {"l2_bytes", d.l2_bytes},
          {"memory_bytes", d.memory_bytes},
          {"clock_mhz", d.clock_mhz},
          {"memory_clock_mhz", d.memory_clock_mhz},
          {"memory_bus_bits", d.memory_bus_bits}};
}

gpu::DeviceAttributes device_attributes_from_json(const json& j) {
  gpu::DeviceAttributes d;
  if (!j.is_object()) return d;
  auto text = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto num = [&j](const char* key, auto& field) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (auto v = json_number_as<std::remove_reference_t<decltype(field)>>(*it)) field = *v;
  };
  d.name = text("name");
  d.compute_capability = text("compute_capability");
  num("sm_count", d.sm_count);
  num("max_threads_per_sm", d.max_threads_per_sm);
  num("max_threads_per_block", d.max_threads_per_block);
  num("max_blocks_per_sm", d.max_blocks_per_sm);
  num("registers_per_sm", d.registers_per_sm);
  num("max_registers_per_block", d.max_registers_per_block);
  num("shared_memory_per_sm", d.shared_memory_per_sm);
  num("max_shared_memory_per_block", d.max_shared_memory_per_block);
  num("reserved_shared_memory_per_block", d.reserved_shared_memory_per_block);
  num("warp_size", d.warp_size);
  num("l2_bytes", d.l2_bytes);
  num("memory_bytes", d.memory_bytes);
  num("clock_mhz", d.clock_mhz);
  num("memory_clock_mhz", d.memory_clock_mhz);
  num("memory_bus_bits", d.memory_bus_bits);
  return d;
}

json stats_json(const gpu::Stats& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"count", s.count}};
}

gpu::Stats stats_from(const json& j) {
  gpu::Stats s;
  if (!j.is_object()) return s;
  s.median = j.value("median", 0.0);
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  // A count beyond int (a file someone else wrote) reads as 0 runs, never an undefined
  // conversion; the times above throw the JSON library's type error for a non-number, which the
  // readers turn into a UserError naming their file.
  if (auto c = j.find("count"); c != j.end()) s.count = json_number_as<int>(*c).value_or(0);
  return s;
}

json profile_json(const ProfileData& p) {
  json ks = json::array();
  for (const gpu::KernelTimes& k : p.kernels)
    ks.push_back({{"name", k.name},
                  {"duration_us", stats_json(k.duration_us)},
                  {"gap_before_us", stats_json(k.gap_before_us)}});
  json j = {{"timer", p.timer},
            {"runs", p.runs},
            {"warmup", p.warmup},
            {"kernels", ks},
            {"end_to_end_us", stats_json(p.end_to_end_us)},
            {"zeroing_us", stats_json(p.zeroing_us)},
            {"graph_us", stats_json(p.graph_us)}};
  if (!p.timer_note.empty()) j["timer_note"] = p.timer_note;
  if (p.dropped_records) j["dropped_records"] = p.dropped_records;
  if (!p.graph_note.empty()) j["graph_note"] = p.graph_note;
  if (!p.counters.empty()) {
    json cs = json::array();
    for (const gpu::KernelCounters& c : p.counters)
      cs.push_back({{"name", c.name},
                    {"dram_read_bytes", c.dram_read_bytes},
                    {"dram_write_bytes", c.dram_write_bytes},
                    {"achieved_occupancy", c.achieved_occupancy}});
    j["counters"] = cs;
  }
  if (!p.counters_note.empty()) j["counters_note"] = p.counters_note;
  return j;
}

ProfileData profile_from_json(const json& j) {
  ProfileData p;
  p.timer = j.value("timer", "");
  p.timer_note = j.value("timer_note", "");
  p.dropped_records = j.value("dropped_records", size_t{0});
  p.runs = j.value("runs", 0);
  p.warmup = j.value("warmup", 0);
  if (auto k = j.find("kernels"); k != j.end() && k->is_array())
    for (const json& x : *k) {
      gpu::KernelTimes t;
      t.name = x.value("name", "");
      t.duration_us = stats_from(x.value("duration_us", json::object()));
      t.gap_before_us = stats_from(x.value("gap_before_us", json::object()));
      p.kernels.push_back(t);
    }
  p.end_to_end_us = stats_from(j.value("end_to_end_us", json::object()));
  p.zeroing_us = stats_from(j.value("zeroing_us", json::object()));
  p.graph_us = stats_from(j.value("graph_us", json::object()));
  p.graph_note = j.value("graph_note", "");
  if (auto c = j.find("counters"); c != j.end() && c->is_array())
    for (const json& x : *c) {
      gpu::KernelCounters k;
      k.name = x.value("name", "");
      k.dram_read_bytes = x.value("dram_read_bytes", -1.0);
      k.dram_write_bytes = x.value("dram_write_bytes", -1.0);
      k.achieved_occupancy = x.value("achieved_occupancy", -1.0);
      p.counters.push_back(k);
    }
  p.counters_note = j.value("counters_note", "");
  return p;
}

std::string launch_refusal(const ManifestKernel& k, int per_sm, int sms, bool cooperative_launch,
                           const std::string& device, const std::string& resources) {
  if (per_sm <= 0)
    return k.name + " cannot run on " + device + ": one block (" + resources +
           ") does not fit an SM; it is not launched";
  // A block waiting on another block's flag only ends if that block runs: every block must be
  // resident at once, which only a cooperative launch (checked below) guarantees.
  if (k.flag_epoch && !k.cooperative)
    return k.name +
           " has per-tile flags but is not launched cooperatively: its blocks could "
           "wait on blocks that never become resident; it is not launched";
  if (!k.cooperative) return "";
  const char* why = k.flag_epoch ? "per-tile flags" : "grid barriers";
  if (!cooperative_launch)
    return k.name + " needs a cooperative launch (" + why + "), which " + device + " lacks";
  const int64_t fits = static_cast<int64_t>(per_sm) * sms;
  if (k.grid > fits)
    return k.name + " needs " + std::to_string(k.grid) + " co-resident blocks (" + resources +
           "), but " + device + " holds " + std::to_string(per_sm) + " per SM x " +
           std::to_string(sms) + " SMs = " + std::to_string(fits) + "; it is not launched (its " +
           why + " would never complete)";
  return "";
}

int serve(std::istream& in, std::ostream& out, Backend& backend) {
  Server s(out, backend);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!s.handle(line, n)) return backend.dead() ? 3 : 0;
  }
  return 0;
}

}  // namespace souffle::runner
