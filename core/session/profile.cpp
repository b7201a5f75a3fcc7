#include "core/session/profile.h"

#include <stdlib.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "core/gpu/device.h"
#include "core/session/bundle.h"
#include "core/session/compile.h"
#include "core/session/runner.h"
#include "core/session/runner_client.h"
#include "core/support/cancel.h"
#include "core/support/error.h"
#include "core/support/json_number.h"

namespace souffle {

namespace fs = std::filesystem;
using nlohmann::json;
using runner::stats_from;
using runner::stats_json;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string runner_command(const ProfileOptions& o) {
  std::string base = o.runner;
  if (base.empty()) {
    std::string path = default_runner_path();
    if (path.empty()) return "";
    base = "'" + path + "'";
  }
  return base + " --backend " + o.backend;
}

}  // namespace

std::string plan_key(const plan::FusionPlan& plan) {
  plan::Decisions applied;
  applied.edits = plan.applied;
  // Kernels of another form (program order, weights streamed) are another plan's measurement.
  return std::string(plan::strategy_name(plan.strategy)) + "|" + plan.gpu + "|" +
         gpu::precision_name(plan.precision) + "|" + plan::to_json(applied) +
         (plan.waves ? "" : "|program-order") + (plan.weight_panels ? "" : "|no-weight-panels");
}

json profile_report_json(const ProfileReport& r) {
  json ks = json::array();
  for (const KernelMeasurement& k : r.kernels)
    ks.push_back({{"name", k.name},
                  {"partition", k.partition},
                  {"time_us", stats_json(k.time_us)},
                  {"gap_us", stats_json(k.gap_us)},
                  {"est_us", k.est_us},
                  {"grid", k.grid},
                  {"block", k.block},
                  {"cooperative", k.cooperative},
                  {"registers", k.registers},
                  {"image", k.image},
                  {"image_file", k.image_file},
                  {"dram_read_bytes", k.dram_read_bytes},
                  {"dram_write_bytes", k.dram_write_bytes},
                  {"achieved_occupancy", k.achieved_occupancy},
                  {"est_dram_bytes", k.est_dram_bytes}});
  json outs = json::array();
  for (const OutputMeasurement& o : r.outputs)
    outs.push_back({{"name", o.name},
                    {"ok", o.ok},
                    {"rtol", o.rtol},
                    {"atol", o.atol},
                    {"mismatches", o.mismatches},
                    {"elements", o.elements},
                    {"max_abs", o.max_abs},
                    {"max_rel", o.max_rel},
                    {"rel_l2", o.rel_l2},
                    {"detail", o.detail}});
  json j = {{"model", r.model},
            {"plan_key", r.plan_key},
            {"strategy", r.strategy},
            {"sync", r.sync},
            {"waves", r.waves},
            {"weight_panels", r.weight_panels},
            {"precision", r.precision},
            {"gpu_spec", r.gpu_spec},
            {"backend", r.backend},
            {"gpu_time", r.gpu_time()},
            {"timer", r.timer},
            {"timer_note", r.timer_note},
            {"device", r.device},
            {"compute_capability", r.compute_capability},
            {"arch", r.arch},
            {"driver_version", r.driver_version},
            {"clocks", r.clocks},
            {"date", r.date},
            {"runner", r.runner},
            {"runs", r.runs},
            {"warmup", r.warmup},
            {"kernels", ks},
            {"kernels_us", r.kernels_us},
            {"end_to_end_us", r.end_to_end_us},
            {"zeroing_us", r.zeroing_us},
            {"graph_us", r.graph_us},
            {"graph_note", r.graph_note},
            {"counters_note", r.counters_note},
            {"dropped_records", r.dropped_records},
            {"est_total_us", r.est_total_us},
            {"outputs", outs},
            {"verified", r.verified},
            {"verify_note", r.verify_note},
            {"compile_ms", r.compile_ms},
            {"load_ms", r.load_ms}};
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.error_kernel.empty()) j["error_kernel"] = r.error_kernel;
  return j;
}

namespace {

/// The value of `key` in `o` as a T, `def` when absent or null; a value of another type is a
/// UserError naming the field (`where` + key) and both types.
template <typename T>
T field(const json& o, const char* key, const char* where, T def) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return def;
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    if (std::optional<T> v = json_number_as<T>(*it)) return *v;
    throw UserError(std::string("a profile run's field '") + where + key + "' is " +
                    (it->is_number() ? "a number out of range" : it->type_name()) + ", not a " +
                    (std::is_integral_v<T> ? "whole number" : "number") + " it can hold");
  } else {
    try {
      return it->get<T>();
    } catch (const json::exception&) {
      throw UserError(std::string("a profile run's field '") + where + key + "' is " +
                      it->type_name() + ", not " + json(def).type_name());
    }
  }
}

ProfileReport read_profile_report(const json& j) {
  if (!j.is_object())
    throw UserError("a profile run must be a JSON object, not " + std::string(j.type_name()));
  ProfileReport r;
  auto s = [&](const char* k) { return field(j, k, "", std::string()); };
  r.model = s("model");
  r.plan_key = s("plan_key");
  r.strategy = s("strategy");
  r.sync = field(j, "sync", "", std::string("grid"));
  r.waves = field(j, "waves", "", true);
  r.weight_panels = field(j, "weight_panels", "", true);
  r.precision = s("precision");
  r.gpu_spec = s("gpu_spec");
  r.backend = s("backend");
  r.timer = s("timer");
  r.timer_note = s("timer_note");
  r.device = s("device");
  r.compute_capability = s("compute_capability");
  r.arch = s("arch");
  r.driver_version = field(j, "driver_version", "", 0);
  r.clocks = s("clocks");
  r.date = s("date");
  r.runner = s("runner");
  r.runs = field(j, "runs", "", 0);
  r.warmup = field(j, "warmup", "", 0);
  if (auto k = j.find("kernels"); k != j.end() && k->is_array())
    for (const json& x : *k) {
      KernelMeasurement m;
      m.name = field(x, "name", "kernels[].", std::string());
      m.partition = field(x, "partition", "kernels[].", 0);
      m.time_us = stats_from(field(x, "time_us", "kernels[].", json::object()));
      m.gap_us = stats_from(field(x, "gap_us", "kernels[].", json::object()));
      m.est_us = field(x, "est_us", "kernels[].", 0.0);
      m.grid = field(x, "grid", "kernels[].", int64_t{0});
      m.block = field(x, "block", "kernels[].", 0);
      m.cooperative = field(x, "cooperative", "kernels[].", false);
      m.registers = field(x, "registers", "kernels[].", 0);
      m.image = field(x, "image", "kernels[].", std::string());
      m.image_file = field(x, "image_file", "kernels[].", std::string());
      m.dram_read_bytes = field(x, "dram_read_bytes", "kernels[].", -1.0);
      m.dram_write_bytes = field(x, "dram_write_bytes", "kernels[].", -1.0);
      m.achieved_occupancy = field(x, "achieved_occupancy", "kernels[].", -1.0);
      m.est_dram_bytes = field(x, "est_dram_bytes", "kernels[].", int64_t{0});
      r.kernels.push_back(m);
    }
  r.kernels_us = field(j, "kernels_us", "", 0.0);
  r.end_to_end_us = field(j, "end_to_end_us", "", 0.0);
  r.zeroing_us = field(j, "zeroing_us", "", 0.0);
  r.graph_us = field(j, "graph_us", "", 0.0);
  r.graph_note = s("graph_note");
  r.counters_note = s("counters_note");
  r.dropped_records = field(j, "dropped_records", "", int64_t{0});
  r.est_total_us = field(j, "est_total_us", "", 0.0);
  if (auto o = j.find("outputs"); o != j.end() && o->is_array())
    for (const json& x : *o) {
      // Measurements saved before outputs were judged element-wise hold only name, rel_l2, ok.
      OutputMeasurement m;
      m.name = field(x, "name", "outputs[].", std::string());
      m.rel_l2 = field(x, "rel_l2", "outputs[].", 0.0);
      m.ok = field(x, "ok", "outputs[].", false);
      m.rtol = field(x, "rtol", "outputs[].", 0.0);
      m.atol = field(x, "atol", "outputs[].", 0.0);
      m.mismatches = field(x, "mismatches", "outputs[].", int64_t{0});
      m.elements = field(x, "elements", "outputs[].", int64_t{0});
      m.max_abs = field(x, "max_abs", "outputs[].", 0.0);
      m.max_rel = field(x, "max_rel", "outputs[].", 0.0);
      m.detail = field(x, "detail", "outputs[].", std::string());
      r.outputs.push_back(std::move(m));
    }
  r.verified = field(j, "verified", "", false);
  r.verify_note = s("verify_note");
  r.compile_ms = field(j, "compile_ms", "", 0.0);
  r.load_ms = field(j, "load_ms", "", 0.0);
  r.error = s("error");
  r.error_kernel = s("error_kernel");
  return r;
}

}  // namespace

ProfileReport profile_report_from_json(const json& j) {
  // A kept run comes from a file someone else may have written: a field of the wrong type
  // (a boolean where a time belongs) is a refusal naming it, not an exception from the JSON
  // library escaping to the caller.
  try {
    return read_profile_report(j);
  } catch (const json::exception& e) {
    throw UserError("a profile run has a field of the wrong type: " + std::string(e.what()));
  }
}

std::string profile_unavailable_reason(const ProfileOptions& o) {
  if (o.backend != "cuda" && o.backend != "emulator")
    return "unknown backend '" + o.backend + "' (cuda or emulator)";
  if (o.runner.empty() && default_runner_path().empty())
    return "souffle-runner not found beside this program or on PATH (--runner CMD starts one)";
  if (o.backend == "cuda" && o.runner.empty()) {
    const gpu::DeviceInfo& d = gpu::cuda_device();
    if (!d.available())
      return d.reason + ": nothing to profile on here (" + o.no_gpu_hint +
             "; --runner CMD uses a runner on another machine)";
  }
  return "";
}

namespace {
/// How a request's time limit is raised, said when it runs past it: `per_request` times
/// timeout_s is the limit of a request that takes that many.
std::string limit_hint(const ProfileOptions& o, int per_request) {
  if (o.timeout_option.empty()) return "";
  const std::string t = std::to_string(static_cast<int64_t>(o.timeout_s + 0.5));
  std::string s = "raise it with " + o.timeout_option + " SECONDS (now " + t + " s per request";
  if (per_request > 1)
    s += "; this request's limit is " + t + " s x (1 + " + std::to_string(o.runs) + " runs + " +
         std::to_string(o.warmup) + " warm-up)";
  return s + ")";
}
}  // namespace

ProfileSession::ProfileSession(ProfileOptions options) : m_options(std::move(options)) {
  std::string why = profile_unavailable_reason(m_options);
  if (!why.empty()) throw UserError(why);
  m_command = runner_command(m_options);
  try {
    m_runner = std::make_unique<RunnerProcess>(m_command);
    m_hello = m_runner->call({{"op", "hello"}, {"protocol", 1}}, 60, {}, m_options.cancel);
    m_runner->set_limit_hint(limit_hint(m_options, 1));
  } catch (const RunnerFailure& e) {
    throw UserError(std::string("the runner did not start: ") + e.what());
  }
  if (m_hello.contains("unavailable") && m_hello["unavailable"].is_string())
    throw UserError(m_hello["unavailable"].get<std::string>() + " (runner: " + m_command +
                    "): nothing to profile on (" + m_options.no_gpu_hint + ")");
}

ProfileSession::~ProfileSession() = default;

json ProfileSession::call(const json& request) {
  auto on_event = [this](const json& e) {
    if (!m_options.progress) return;
    if (e.value("event", "") == "launch")
      m_options.progress("running " + e.value("kernel", ""));
    else if (e.contains("phase"))
      m_options.progress(e.value("phase", ""));
  };
  return m_runner->call(request, m_options.timeout_s, on_event, m_options.cancel);
}

std::string ProfileSession::device() const {
  const json& d = m_hello.value("devices", json::array());
  return d.empty() ? "" : d[0].value("name", "");
}

std::string ProfileSession::arch() const {
  const json& d = m_hello.value("devices", json::array());
  return emulator() || d.empty() ? "" : d[0].value("arch", "");
}

std::optional<gpu::GpuSpec> ProfileSession::device_spec() const {
  if (emulator()) return std::nullopt;
  const json& d = m_hello.value("devices", json::array());
  if (d.empty()) return std::nullopt;
  // The name picks the built-in spec; the device's own attributes (SM count, shared memory,
  // clocks) correct it, so that a part sharing a name is planned as the part it is.
  return gpu::device_gpu_spec(runner::device_attributes_from_json(d[0]));
}

ProfileReport ProfileSession::profile(const std::string& model_path, const plan::FusionPlan& plan,
                                      const std::map<std::string, int64_t>& dims,
                                      const std::vector<std::string>& bind,
                                      const std::vector<std::string>& shapes) {
  ProfileReport r;
  r.model = model_path;
  r.strategy = plan::strategy_name(plan.strategy);
  r.precision = gpu::precision_name(plan.precision);
  r.gpu_spec = plan.gpu;
  r.backend = m_options.backend;
  r.runner = m_command;
  r.device = device();
  r.arch = arch();
  r.date = utc_now();
  r.est_total_us = plan.est_time_us;
  r.sync = schedule::sync_mode_name(m_options.sync);
  r.waves = plan.waves;
  r.weight_panels = plan.weight_panels;
  // Per-tile flags make other kernels from the same plan: their measurement is not the plan's.
  r.plan_key =
      plan_key(plan) + (m_options.sync == schedule::SyncMode::Grid ? "" : "|sync=" + r.sync);
  r.driver_version = m_hello.value("driver_version", 0);
  const json& devs = m_hello.value("devices", json::array());
  if (!devs.empty()) {
    r.compute_capability = devs[0].value("compute_capability", "");
    if (!emulator())
      r.clocks = "SM up to " + std::to_string(devs[0].value("clock_mhz", 0)) +
                 " MHz, memory up to " + std::to_string(devs[0].value("memory_clock_mhz", 0)) +
                 " MHz";
  }
  // A dead runner is restarted for the next plan (a fault kills only the runner).
  auto restart_if_dead = [&] {
    if (m_runner->alive()) return;
    try {
      m_runner = std::make_unique<RunnerProcess>(m_command);
      m_runner->call({{"op", "hello"}, {"protocol", 1}}, 60);
      m_runner->set_limit_hint(limit_hint(m_options, 1));
    } catch (const RunnerFailure&) {
    }
  };
  auto say = [&](const std::string& s) {
    if (m_options.progress) m_options.progress(s);
  };

  // Compile for the device (the emulator runs loop IR: CUDA C only, no NVRTC).
  CompileOptions co;
  if (plan.gpu_spec.sm_count > 0) co.gpu = plan.gpu_spec;
  co.sync = m_options.sync;
  co.use_cache = m_options.use_cache;
  co.timeline.enabled = m_options.timeline;
  co.archs.clear();
  if (!emulator()) co.archs = {r.arch};
  // Cancel stops the build between kernels and NVRTC programs, not after it.
  co.cancel = m_options.cancel;
  co.building = [&](const std::string& kernel) { say("building " + kernel); };
  say("compiling " + r.strategy + " kernels" + (r.arch.empty() ? "" : " for " + r.arch));
  auto t0 = std::chrono::steady_clock::now();
  CompileReport rep;
  try {
    rep = compile_plan(plan, co);
  } catch (const Cancelled&) {
    r.error = "cancelled";
    return r;
  }
  r.compile_ms = ms_since(t0);
  for (const CompiledKernel& k : rep.kernels)
    if (!k.ok()) {
      r.error = k.error;
      r.error_kernel = k.name;
      return r;
    }
  if (m_options.cancel && m_options.cancel->load()) {  // cancelled while compiling
    r.error = "cancelled";
    return r;
  }

  // The bundle the runner loads.
  std::string dir;
  bool temporary = m_options.bundle_dir.empty();
  if (temporary) {
    std::string templ = (fs::temp_directory_path() / "souffle-profile-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw UserError("cannot create a temporary folder for the bundle");
    dir = templ;
  } else {
    dir = (fs::path(m_options.bundle_dir) / r.strategy).string();
  }
  struct Cleanup {
    std::string dir;
    bool on;
    ~Cleanup() {
      std::error_code ec;
      if (on) fs::remove_all(dir, ec);
    }
  } cleanup{dir, temporary};
  BundleReport br =
      write_model_bundle(dir, model_path, m_options.data_dir, plan, rep, co, dims, bind, shapes);
  if (!br.harness) {
    r.error = "the bundle could not be completed (see " + dir + "/ERRORS.txt)";
    return r;
  }

  std::map<std::string, const CompiledKernel*> by_name;
  for (const CompiledKernel& k : rep.kernels) by_name[k.name] = &k;
  auto on_event = [&](const json& e) {
    if (e.value("event", "") == "launch")
      say("running " + e.value("kernel", "") + " (" + std::to_string(e.value("index", 0) + 1) +
          " of " + std::to_string(e.value("of", 0)) + ")");
    else if (e.contains("phase"))
      say(e.value("phase", ""));
  };
  try {
    say("loading the bundle on " + r.device);
    t0 = std::chrono::steady_clock::now();
    json loaded = m_runner->call({{"op", "load"}, {"bundle", fs::absolute(dir).string()}},
                                 m_options.timeout_s, on_event, m_options.cancel);
    r.load_ms = ms_since(t0);
    std::map<std::string, json> info;
    for (const json& k : loaded.value("kernels", json::array())) info[k.value("name", "")] = k;
    // On a GPU one run first, waiting after each kernel, so that a fault names its kernel;
    // the emulator names it anyway. The outputs checked are those of the last timed run.
    if (!emulator())
      m_runner->call({{"op", "run"}}, m_options.timeout_s, on_event, m_options.cancel);
    say("timing " + std::to_string(m_options.runs) + " runs");
    json preq = {{"op", "profile"},
                 {"runs", m_options.runs},
                 {"warmup", m_options.warmup},
                 {"graph", m_options.graph},
                 {"counters", m_options.counters}};
    if (m_options.timeline) preq["timeline"] = true;
    const int per_request = 1 + m_options.runs + m_options.warmup;
    m_runner->set_limit_hint(limit_hint(m_options, per_request));
    json p = m_runner->call(preq, m_options.timeout_s * per_request, on_event, m_options.cancel);
    m_runner->set_limit_hint(limit_hint(m_options, 1));
    // The records of the last run, read before a temporary bundle folder goes.
    for (const TimelineFileRef& ref : timeline_refs_from_json(p.value("timeline", json::array()))) {
      KernelTimeline t = read_timeline_file(ref.file);
      t.kernel = ref.kernel;
      if (!m_options.timeline_keep_dir.empty()) {
        const std::string kept =
            (fs::path(m_options.timeline_keep_dir) / (r.strategy + "." + ref.kernel + ".timeline"))
                .string();
        std::error_code ec;
        fs::copy_file(ref.file, kept, fs::copy_options::overwrite_existing, ec);
        if (ec) throw UserError(kept, "", "cannot keep the timeline records: " + ec.message());
        t.file = kept;
      }
      if (by_name.count(ref.kernel)) attach_stage_info(t, *by_name[ref.kernel], plan);
      r.timelines.push_back(std::move(t));
    }
    r.timer = p.value("timer", "");
    r.timer_note = p.value("timer_note", "");
    r.runs = p.value("runs", 0);
    r.warmup = p.value("warmup", 0);
    r.end_to_end_us = stats_from(p.value("end_to_end_us", json::object())).median;
    r.zeroing_us = stats_from(p.value("zeroing_us", json::object())).median;
    r.graph_us = stats_from(p.value("graph_us", json::object())).median;
    r.graph_note = p.value("graph_note", "");
    r.counters_note = p.value("counters_note", "");
    r.dropped_records = p.value("dropped_records", int64_t{0});
    const json counters = p.value("counters", json::array());
    std::map<int, double> est;
    std::map<int, int64_t> est_bytes;
    for (const plan::Partition& part : plan.partitions) {
      est[part.id] = part.est_time_us;
      est_bytes[part.id] = part.dram_bytes;
    }
    for (const json& k : p.value("kernels", json::array())) {
      KernelMeasurement m;
      m.name = k.value("name", "");
      m.time_us = stats_from(k.value("duration_us", json::object()));
      m.gap_us = stats_from(k.value("gap_before_us", json::object()));
      if (const CompiledKernel* ck = by_name.count(m.name) ? by_name[m.name] : nullptr) {
        m.partition = ck->partition;
        m.est_us = est.count(ck->partition) ? est[ck->partition] : 0;
        m.est_dram_bytes = est_bytes.count(ck->partition) ? est_bytes[ck->partition] : 0;
        m.grid = ck->launch.grid_x;
        m.block = ck->launch.block_x;
        m.cooperative = ck->launch.cooperative;
      }
      if (info.count(m.name)) {
        m.registers = info[m.name].value("registers", 0);
        m.image = info[m.name].value("image", "");
        m.image_file = info[m.name].value("image_file", "");
      }
      // The runner gives the counters in launch order, named after their kernels.
      const size_t i = r.kernels.size();
      if (i < counters.size() && counters[i].value("name", "") == m.name) {
        m.dram_read_bytes = counters[i].value("dram_read_bytes", -1.0);
        m.dram_write_bytes = counters[i].value("dram_write_bytes", -1.0);
        m.achieved_occupancy = counters[i].value("achieved_occupancy", -1.0);
      }
      r.kernels_us += m.time_us.median;
      r.kernels.push_back(m);
    }
    bool has_reference = false;
    try {
      json req = {{"op", "verify"}};
      if (m_options.rtol) req["rtol"] = *m_options.rtol;
      if (m_options.atol) req["atol"] = *m_options.atol;
      json v = m_runner->call(req, m_options.timeout_s, on_event, m_options.cancel);
      has_reference = true;
      r.verified = v.value("pass", false);
      auto number = [](const json& o, const char* key) {
        auto it = o.find(key);
        return it != o.end() && it->is_number() ? it->get<double>() : NAN;
      };
      for (const json& o : v.value("outputs", json::array())) {
        OutputMeasurement m;
        m.name = o.value("name", "");
        m.ok = o.value("ok", false);
        m.rel_l2 = number(o, "rel_l2");
        m.rtol = number(o, "rtol");
        m.atol = number(o, "atol");
        m.max_abs = number(o, "max_abs");
        m.max_rel = number(o, "max_rel");
        m.mismatches = o.value("mismatches", int64_t{0});
        m.elements = o.value("elements", int64_t{0});
        m.detail = o.value("detail", "");
        r.outputs.push_back(std::move(m));
      }
    } catch (const RunnerFailure& e) {
      if (e.code() == "no_reference") {
        r.verify_note = e.what();
      } else if (!m_runner->alive()) {
        // The runner answered the profile and then exited (a fault in the graph replay or the
        // counted run, named in graph_note or counters_note, poisons its context): the timings
        // stand, the outputs could not be read back.
        r.verify_note = std::string("the runner exited after the profile: ") + e.what();
        r.error = "the outputs were not verified: the runner exited after the timed runs (" +
                  std::string(e.what()) + ")";
        restart_if_dead();
      } else {
        throw;
      }
    }
    if (has_reference && !r.verified) {
      r.error = "an output differs from the reference";
      for (const OutputMeasurement& o : r.outputs)
        if (!o.ok) {
          r.error += ": " + o.name + ", " + o.detail;
          break;
        }
    }
  } catch (const RunnerFailure& e) {
    r.error = e.what();
    r.error_kernel = e.kernel();
    restart_if_dead();
  }
  return r;
}

std::string verification_summary(const ProfileReport& r) {
  if (r.outputs.empty()) return r.verify_note.empty() ? "" : "not verified: " + r.verify_note;
  double rtol = 0, atol = 0, max_abs = 0, max_l2 = 0;
  for (const OutputMeasurement& o : r.outputs) {
    if (!o.ok) return "outputs differ: " + o.name + ": " + o.detail;
    rtol = std::max(rtol, o.rtol);
    atol = std::max(atol, o.atol);
    max_abs = std::max(max_abs, o.max_abs);
    max_l2 = std::max(max_l2, o.rel_l2);
  }
  return fmt::format(
      "outputs verified: every element within rtol {:g} + atol {:g} (max abs error {:.2g}, max "
      "relative L2 {:.2g})",
      rtol, atol, max_abs, max_l2);
}

}  // namespace souffle
