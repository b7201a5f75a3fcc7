#include "core/session/timeline.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/schedule/price.h"
#include "core/session/runner.h"
#include "core/support/cancel.h"
#include "core/support/error.h"
#include "core/support/fault.h"
#include "core/support/median.h"

namespace souffle {

namespace fs = std::filesystem;
using nlohmann::json;

void instrument_compiled_kernels(std::vector<CompiledKernel>& kernels,
                                 const loop::TimelineOptions& options,
                                 const std::atomic<bool>* cancel) {
  if (!options.enabled) return;
  for (CompiledKernel& k : kernels) {
    check_cancel(cancel, "instrumenting the kernels");
    if (k.ok() && k.kernel.body.defined() && !loop::has_timeline(k.kernel))
      loop::instrument_timeline(k.kernel, options);
  }
}

// ---- record files ----

namespace {

constexpr char kMagic[8] = {'S', 'F', 'T', 'L', 'I', 'N', 'E', '1'};
constexpr int64_t kHeaderWords = 7;  ///< version, grid, rows, stride, slots, timer, clock (kHz)
constexpr int64_t kHeaderBytes = 8 + kHeaderWords * 8;

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(path, "", "cannot read the timeline file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int64_t word_at(const std::string& bytes, int64_t offset) {
  int64_t v = 0;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

}  // namespace

std::string timeline_file_bytes(const loop::TimelineLayout& layout, const std::string& timer,
                                double clock_mhz, const std::string& words) {
  std::string out(kMagic, sizeof kMagic);
  const int64_t head[kHeaderWords] = {1,
                                      layout.grid,
                                      layout.rows,
                                      layout.stride,
                                      layout.slot_count,
                                      timer == "emulator" ? 1 : 0,
                                      static_cast<int64_t>(clock_mhz * 1000)};
  out.append(reinterpret_cast<const char*>(head), sizeof head);
  out += words;
  return out;
}

void write_timeline_file(const std::string& path, const loop::TimelineLayout& layout,
                         const std::string& timer, double clock_mhz, const std::string& words) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << timeline_file_bytes(layout, timer, clock_mhz, words);
  if (!f) throw UserError(path, "", "cannot write the timeline file");
}

json write_runner_timelines(const BundleManifest& m, runner::Backend& backend) {
  const std::string manifest_file = (fs::path(m.dir) / "bundle.json").string();
  if (!m.source.timeline)
    throw runner::RunnerError("bad_request",
                              manifest_file +
                                  " was built without a timeline: compile it again with "
                                  "--timeline (or profile --timeline) to record one");
  const bool emulated = backend.name() == "emulator";
  double clock_mhz = 1000;  // the emulator's nominal rate: one emulated cycle per ns
  if (!emulated) {
    json hello = backend.hello();
    const json devs = hello.value("devices", json::array());
    clock_mhz = devs.empty() ? 0 : devs[0].value("clock_mhz", 0.0);
  }
  const fs::path dir = fs::path(m.dir) / "timeline";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw runner::RunnerError("bad_request", "cannot create " + dir.string() + ": " + ec.message());
  json out = json::array();
  for (const ManifestKernel& k : m.kernels) {
    if (k.timeline_tensor < 0) continue;
    loop::TimelineLayout layout;
    layout.grid = k.grid;
    layout.rows = k.timeline_rows;
    layout.stride = k.timeline_stride;
    layout.slot_count = k.timeline_slots;
    std::string words = backend.read(k.timeline_tensor);
    if (static_cast<int64_t>(words.size()) != layout.bytes())
      throw runner::RunnerError("bad_bundle",
                                k.name + "'s timeline buffer holds " +
                                    std::to_string(words.size()) + " bytes, its layout in " +
                                    manifest_file + " " + std::to_string(layout.bytes()),
                                k.name);
    const std::string path = (dir / (k.name + ".timeline")).string();
    const std::string timer = emulated ? "emulator" : "globaltimer";
    try {
      write_timeline_file(path, layout, timer, clock_mhz, words);
    } catch (const UserError& e) {
      throw runner::RunnerError("bad_request", e.what(), k.name);
    }
    out.push_back({{"kernel", k.name},
                   {"file", fs::absolute(path).string()},
                   {"timer", timer},
                   {"clock_mhz", clock_mhz},
                   {"records", layout.rows * layout.slot_count},
                   {"sampled", layout.sampled()}});
  }
  return out;
}

std::vector<TimelineFileRef> timeline_refs_from_json(const json& answer) {
  std::vector<TimelineFileRef> out;
  if (!answer.is_array()) return out;
  for (const json& j : answer)
    out.push_back({j.value("kernel", ""), j.value("file", ""), j.value("timer", ""),
                   j.value("clock_mhz", 0.0)});
  return out;
}

// ---- decoding ----

std::string KernelTimeline::sample_note() const {
  if (stride <= 1) return "every block";
  // 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, ...
  const int64_t tens = stride % 100, ones = stride % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return fmt::format("every {}{} block ({} of {}: the buffer of all would pass the limit)", stride,
                     suffix, rows, grid);
}

KernelTimeline read_timeline_file(const std::string& path) {
  return decode_timeline(file_bytes(path), path);
}

KernelTimeline decode_timeline(const std::string& bytes, const std::string& path) {
  if (bytes.size() < static_cast<size_t>(kHeaderBytes) ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw UserError(path, "", "not a timeline file (no SFTLINE1 header)");
  KernelTimeline t;
  t.file = path;
  const int64_t version = word_at(bytes, 8);
  if (version != 1)
    throw UserError(path, "",
                    "timeline file version " + std::to_string(version) + " (this build reads 1)");
  t.grid = word_at(bytes, 16);
  t.rows = word_at(bytes, 24);
  t.stride = word_at(bytes, 32);
  t.slot_count = word_at(bytes, 40);
  t.emulated = word_at(bytes, 48) == 1;
  t.clock_mhz = static_cast<double>(word_at(bytes, 56)) / 1000;
  t.timer = t.emulated ? "emulator" : "globaltimer";
  if (t.grid < 1 || t.rows < 1 || t.stride < 1 || t.slot_count < 1 || t.rows > t.grid ||
      t.slot_count > (int64_t{1} << 28))
    throw UserError(path, "", "a bad layout in the header");
  const int64_t want = kHeaderBytes + t.rows * t.slot_count * loop::kTimelineWords * 8;
  if (static_cast<int64_t>(bytes.size()) != want)
    throw UserError(path, "",
                    fmt::format("truncated or padded: {} bytes, its header promises {} ({} blocks "
                                "x {} records)",
                                bytes.size(), want, t.rows, t.slot_count));
  t.kernel = fs::path(path).stem().string();
  struct Raw {
    int64_t global, cycles;
  };
  // Whether the global timer resolves the records: on parts where it ticks in microseconds,
  // most records of a block read the same value; then clock64 (per SM) is used instead.
  int64_t records = 0, distinct = 0;
  for (int64_t r = 0; r < t.rows; ++r) {
    int64_t last = -1;
    for (int64_t s = 0; s < t.slot_count; ++s) {
      const int64_t at = kHeaderBytes + (r * t.slot_count + s) * loop::kTimelineWords * 8;
      if ((word_at(bytes, at + 16) & 0xffffffff) == 0) continue;
      ++records;
      const int64_t g = word_at(bytes, at);
      distinct += g != last;
      last = g;
    }
  }
  const bool use_clock = !t.emulated && records > 0 && distinct * 2 < records && t.clock_mhz > 0;
  t.time_base = t.emulated  ? "emulated cycles at a nominal 1 GHz (the emulator's cost model, "
                              "not a GPU time)"
                : use_clock ? "SM clock64 at the device's clock, aligned at each block's first "
                              "record by the global timer (skew between SMs up to its tick)"
                            : "GPU global timer (ns)";
  std::vector<TimelineSpan> spans;
  double t0 = -1;
  for (int64_t r = 0; r < t.rows; ++r) {
    const int64_t block = r * t.stride;
    std::map<std::pair<int, int>, std::pair<double, int64_t>> open;  // (wait, stage) -> begin
    bool first = true;
    Raw base{0, 0};
    for (int64_t s = 0; s < t.slot_count; ++s) {
      const int64_t at = kHeaderBytes + (r * t.slot_count + s) * loop::kTimelineWords * 8;
      const int64_t w2 = word_at(bytes, at + 16);
      const int64_t tag = w2 & 0xffffffff;
      if (tag == 0) continue;  // a stage this block does not run
      const int64_t ev = (tag & 15) - 1, wait = (tag >> 4) & 15, stage = tag >> 8;
      if (ev < 0 || ev > 3 || wait > 3 || (wait == 0) != (ev < 2))
        throw UserError(path, "",
                        fmt::format("record kind {:#x} at block {} slot {} is none this build "
                                    "decodes (stage/wait begin/end)",
                                    tag & 0xff, block, s));
      const Raw raw{word_at(bytes, at), word_at(bytes, at + 8)};
      if (first) base = raw;
      first = false;
      double ns = t.emulated ? static_cast<double>(raw.cycles) * 1000 / t.clock_mhz
                  : use_clock
                      ? static_cast<double>(base.global) +
                            static_cast<double>(raw.cycles - base.cycles) * 1000 / t.clock_mhz
                      : static_cast<double>(raw.global);
      const std::pair<int, int> key{static_cast<int>(wait), static_cast<int>(stage)};
      if (ev == 0 || ev == 2) {
        open[key] = {ns, w2 >> 32};
        continue;
      }
      auto it = open.find(key);
      if (it == open.end())
        throw UserError(path, "",
                        fmt::format("block {} slot {}: an end record of stage {} without its "
                                    "begin",
                                    block, s, stage));
      TimelineSpan sp;
      sp.block = block;
      sp.sm = it->second.second;
      sp.stage = static_cast<int>(stage);
      sp.wait = static_cast<loop::TimelineWait>(wait);
      sp.begin_us = it->second.first;
      sp.end_us = ns;
      open.erase(it);
      spans.push_back(sp);
      t0 = t0 < 0 ? sp.begin_us : std::min(t0, sp.begin_us);
    }
  }
  for (TimelineSpan& sp : spans) {
    sp.begin_us = (sp.begin_us - t0) / 1000;
    sp.end_us = (sp.end_us - t0) / 1000;
  }
  t.spans = std::move(spans);
  return t;
}

void attach_stage_info(KernelTimeline& t, const CompiledKernel& kernel,
                       const plan::FusionPlan& plan) {
  t.stage_names.clear();
  t.stage_waves.clear();
  t.stage_templates.clear();
  for (const loop::StageInfo& s : kernel.kernel.stages) {
    t.stage_names.push_back(s.name);
    t.stage_waves.push_back(s.wave);
    t.stage_templates.push_back(gpu::schedule_template(s.schedule));
  }
  t.stage_est_us.assign(t.stage_names.size(), -1);
  const gpu::GpuSpec spec = plan.gpu_spec.sm_count > 0 ? plan.gpu_spec : gpu::gpu_spec(plan.gpu);
  if (spec.sm_count <= 0) return;
  std::map<std::string, int64_t> flops;
  for (const analysis::TeInfo& te : plan.analysis.tes) flops[te.name] = te.flops;
  auto flops_of = [&](const std::string& name) -> int64_t {
    auto it = flops.find(name);
    return it == flops.end() ? 0 : it->second;
  };
  try {
    fault::point("timeline.stage_price");
    const schedule::KernelPrice p = schedule::price_kernel(
        kernel.kernel, spec, gpu::cost_constants(spec, plan.precision, nullptr), flops_of,
        kernel.register_cap);
    for (size_t i = 0; i < p.stages.size() && i < t.stage_est_us.size(); ++i)
      t.stage_est_us[i] = p.stages[i].cost.total_us;
  } catch (const std::logic_error&) {
    throw;  // a bug in the price model is not a missing estimate
  } catch (const std::exception&) {
    // No estimate is no reason to lose the measurement.
  }
}

// ---- analysis ----

namespace {

std::string wait_words(loop::TimelineWait w) {
  switch (w) {
    case loop::TimelineWait::BlockBarrier:
      return "block barrier";
    case loop::TimelineWait::FlagWait:
      return "flag wait";
    case loop::TimelineWait::GridBarrier:
      return "grid barrier";
    case loop::TimelineWait::None:
      break;
  }
  return "work";
}

std::string stage_label(const KernelTimeline& t, int stage) {
  if (stage >= 0 && static_cast<size_t>(stage) < t.stage_names.size())
    return "stage " + std::to_string(stage) + " " + t.stage_names[static_cast<size_t>(stage)];
  return "stage " + std::to_string(stage);
}

}  // namespace

TimelineAnalysis analyse_timeline(const KernelTimeline& t) {
  TimelineAnalysis a;
  a.kernel = t.kernel;
  a.time_base = t.time_base;
  a.sample = t.sample_note();
  a.emulated = t.emulated;
  std::map<int, std::vector<const TimelineSpan*>> by_stage;
  // Waits in program order: the n-th wait of a block before stage s is the same wait in every
  // block (each block passes the kernel's barriers in one order).
  std::map<std::tuple<int, int, int>, std::vector<const TimelineSpan*>> by_wait;
  std::vector<std::tuple<int, int, int>> wait_order;
  std::map<std::pair<int64_t, std::pair<int, int>>, int> seen;
  double first = -1, last = 0;
  for (const TimelineSpan& sp : t.spans) {
    first = first < 0 ? sp.begin_us : std::min(first, sp.begin_us);
    last = std::max(last, sp.end_us);
    if (sp.wait == loop::TimelineWait::None) {
      by_stage[sp.stage].push_back(&sp);
      a.work_us += sp.us();
      continue;
    }
    a.wait_us += sp.us();
    const int n = seen[{sp.block, {sp.stage, static_cast<int>(sp.wait)}}]++;
    const std::tuple<int, int, int> key{sp.stage, static_cast<int>(sp.wait), n};
    if (!by_wait.count(key)) wait_order.push_back(key);
    by_wait[key].push_back(&sp);
  }
  a.span_us = first < 0 ? 0 : last - first;
  for (const auto& [stage, spans] : by_stage) {
    StageTiming s;
    s.stage = stage;
    s.name = static_cast<size_t>(stage) < t.stage_names.size()
                 ? t.stage_names[static_cast<size_t>(stage)]
                 : "";
    s.blocks = static_cast<int>(spans.size());
    std::vector<double> us;
    s.min_us = spans.front()->us();
    s.first_begin_us = spans.front()->begin_us;
    for (const TimelineSpan* sp : spans) {
      us.push_back(sp->us());
      if (sp->us() >= s.max_us) {
        s.max_us = sp->us();
        s.slowest_block = sp->block;
      }
      s.min_us = std::min(s.min_us, sp->us());
      s.first_begin_us = std::min(s.first_begin_us, sp->begin_us);
      s.last_end_us = std::max(s.last_end_us, sp->end_us);
    }
    s.median_us = median_of(us);
    if (static_cast<size_t>(stage) < t.stage_est_us.size())
      s.est_us = t.stage_est_us[static_cast<size_t>(stage)];
    if (static_cast<size_t>(stage) < t.stage_templates.size())
      s.template_name = t.stage_templates[static_cast<size_t>(stage)];
    if (a.slowest_stage < 0 || s.max_us > a.stages[static_cast<size_t>(a.slowest_stage)].max_us)
      a.slowest_stage = static_cast<int>(a.stages.size());
    a.stages.push_back(s);
  }
  // The stage each block ran last before a point in time (for stragglers).
  auto last_stage_before = [&](int64_t block, double at) {
    int best = -1;
    double end = -1;
    for (const auto& [stage, spans] : by_stage)
      for (const TimelineSpan* sp : spans)
        if (sp->block == block && sp->end_us <= at + 1e-9 && sp->end_us > end) {
          end = sp->end_us;
          best = stage;
        }
    return best;
  };
  for (const auto& key : wait_order) {
    const auto& spans = by_wait[key];
    WaitTiming w;
    w.before_stage = std::get<0>(key);
    w.kind = static_cast<loop::TimelineWait>(std::get<1>(key));
    w.blocks = static_cast<int>(spans.size());
    double latest = -1;
    for (const TimelineSpan* sp : spans) {
      w.total_us += sp->us();
      w.max_us = std::max(w.max_us, sp->us());
      if (sp->begin_us > latest) {
        latest = sp->begin_us;
        w.straggler = sp->block;
      }
    }
    w.straggler_stage = last_stage_before(w.straggler, latest);
    if (w.kind != loop::TimelineWait::BlockBarrier && w.straggler_stage >= 0 &&
        (a.critical_path.empty() || a.critical_path.back() != w.straggler_stage))
      a.critical_path.push_back(w.straggler_stage);
    if (a.longest_wait < 0 || w.total_us > a.waits[static_cast<size_t>(a.longest_wait)].total_us)
      a.longest_wait = static_cast<int>(a.waits.size());
    a.waits.push_back(w);
  }
  // Waves: stages packed side by side between the same barriers.
  std::map<int, std::vector<const StageTiming*>> by_wave;
  for (const StageTiming& s : a.stages)
    if (static_cast<size_t>(s.stage) < t.stage_waves.size() &&
        t.stage_waves[static_cast<size_t>(s.stage)] >= 0)
      by_wave[t.stage_waves[static_cast<size_t>(s.stage)]].push_back(&s);
  for (const auto& [wave, stages] : by_wave) {
    if (stages.size() < 2) continue;
    WaveTiming w;
    w.wave = wave;
    w.stages = static_cast<int>(stages.size());
    double begin = stages.front()->first_begin_us, end = 0, sum = 0;
    for (const StageTiming* s : stages) {
      begin = std::min(begin, s->first_begin_us);
      end = std::max(end, s->last_end_us);
      sum += s->max_us;
      if (s->max_us >= w.slowest_us) {
        w.slowest_us = s->max_us;
        w.slowest_stage = s->stage;
      }
    }
    w.span_us = end - begin;
    w.mean_us = sum / static_cast<double>(stages.size());
    w.overlap = w.span_us > 0 ? sum / w.span_us : 0;
    a.waves.push_back(w);
  }
  int final_stage = -1;
  double final_end = -1;
  for (const StageTiming& s : a.stages)
    if (s.last_end_us > final_end) {
      final_end = s.last_end_us;
      final_stage = s.stage;
    }
  if (final_stage >= 0 && (a.critical_path.empty() || a.critical_path.back() != final_stage))
    a.critical_path.push_back(final_stage);
  return a;
}

std::string timeline_summary(const TimelineAnalysis& a) {
  const std::string unit = a.emulated ? " emulated us" : " us";
  std::string s = fmt::format(
      "{}: {:.2f}{} from first record to last ({}; {}); work {:.2f}, "
      "waits {:.2f} ({:.0f}% of block time)\n",
      a.kernel, a.span_us, unit, a.time_base, a.sample, a.work_us, a.wait_us, 100 * a.wait_share());
  if (a.slowest_stage >= 0) {
    const StageTiming& st = a.stages[static_cast<size_t>(a.slowest_stage)];
    s += fmt::format(
        "  slowest stage: {} `{}`, {:.2f}{} in block {} (median {:.2f}, min {:.2f} "
        "over {} blocks){}\n",
        st.stage, st.name, st.max_us, unit, st.slowest_block, st.median_us, st.min_us, st.blocks,
        st.est_us >= 0 ? fmt::format("; estimated {:.2f} us", st.est_us) : "");
  }
  if (!a.waves.empty()) {
    const WaveTiming* worst = &a.waves.front();
    for (const WaveTiming& w : a.waves)
      if (w.balance() < worst->balance()) worst = &w;
    s += fmt::format(
        "  waves: {} of several stages; least balanced wave {} ({} stages, balance "
        "{:.2f}: stage {} takes {:.2f}{}, the mean {:.2f}; overlap {:.1f}x)\n",
        a.waves.size(), worst->wave, worst->stages, worst->balance(), worst->slowest_stage,
        worst->slowest_us, unit, worst->mean_us, worst->overlap);
  }
  if (a.longest_wait >= 0) {
    const WaitTiming& w = a.waits[static_cast<size_t>(a.longest_wait)];
    s += fmt::format(
        "  longest wait: the {} before stage {}, {:.2f}{} over {} blocks (longest "
        "{:.2f}); block {} arrived last{}\n",
        wait_words(w.kind), w.before_stage, w.total_us, unit, w.blocks, w.max_us, w.straggler,
        w.straggler_stage >= 0 ? " from stage " + std::to_string(w.straggler_stage) : "");
  }
  return s;
}

json timeline_analysis_json(const std::vector<TimelineAnalysis>& analyses) {
  json out = json::array();
  for (const TimelineAnalysis& a : analyses) {
    json stages = json::array(), waits = json::array();
    for (const StageTiming& s : a.stages)
      stages.push_back({{"stage", s.stage},
                        {"name", s.name},
                        {"blocks", s.blocks},
                        {"median_us", s.median_us},
                        {"min_us", s.min_us},
                        {"max_us", s.max_us},
                        {"slowest_block", s.slowest_block},
                        {"estimated_us", s.est_us},
                        {"template", s.template_name}});
    for (const WaitTiming& w : a.waits)
      waits.push_back({{"before_stage", w.before_stage},
                       {"kind", loop::timeline_wait_name(w.kind)},
                       {"blocks", w.blocks},
                       {"total_us", w.total_us},
                       {"max_us", w.max_us},
                       {"straggler", w.straggler},
                       {"straggler_stage", w.straggler_stage}});
    json waves = json::array();
    for (const WaveTiming& w : a.waves)
      waves.push_back({{"wave", w.wave},
                       {"stages", w.stages},
                       {"span_us", w.span_us},
                       {"slowest_us", w.slowest_us},
                       {"mean_us", w.mean_us},
                       {"slowest_stage", w.slowest_stage},
                       {"balance", w.balance()},
                       {"overlap", w.overlap}});
    json k = {{"kernel", a.kernel},
              {"time_base", a.time_base},
              {"emulated", a.emulated},
              {"sample", a.sample},
              {"span_us", a.span_us},
              {"work_us", a.work_us},
              {"wait_us", a.wait_us},
              {"wait_share", a.wait_share()},
              {"critical_path", a.critical_path},
              {"stages", stages},
              {"waits", waits},
              {"waves", waves}};
    if (a.slowest_stage >= 0) k["slowest_stage"] = stages[static_cast<size_t>(a.slowest_stage)];
    if (a.longest_wait >= 0) k["longest_wait"] = waits[static_cast<size_t>(a.longest_wait)];
    out.push_back(k);
  }
  return {{"kernels", out}};
}

// ---- exports ----

std::string timeline_trace_json(const std::vector<KernelTimeline>& timelines) {
  json events = json::array();
  int pid = 0;
  bool emulated = false;
  for (const KernelTimeline& t : timelines) {
    ++pid;
    emulated |= t.emulated;
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"name", "process_name"},
                      {"args",
                       {{"name", t.kernel + (t.emulated ? " (emulated cycles, not GPU time)"
                                                        : " (" + t.time_base + ")")}}}});
    std::set<int64_t> sms;
    for (const TimelineSpan& sp : t.spans) sms.insert(sp.sm);
    for (int64_t sm : sms)
      events.push_back(
          {{"ph", "M"},
           {"pid", pid},
           {"tid", sm},
           {"name", "thread_name"},
           {"args", {{"name", (t.emulated ? "block " : "SM ") + std::to_string(sm)}}}});
    // Each grid barrier or flag wait as a line across the kernel's tracks where its last
    // waiter left (the n-th wait of a block before stage s is the same wait in every block).
    std::map<std::tuple<int, int, int>, double> released;
    std::map<std::pair<int64_t, std::pair<int, int>>, int> nth;
    for (const TimelineSpan& sp : t.spans) {
      if (sp.wait == loop::TimelineWait::None || sp.wait == loop::TimelineWait::BlockBarrier)
        continue;
      const int n = nth[{sp.block, {sp.stage, static_cast<int>(sp.wait)}}]++;
      double& at = released[{sp.stage, static_cast<int>(sp.wait), n}];
      at = std::max(at, sp.end_us);
    }
    for (const auto& [key, at] : released)
      events.push_back(
          {{"ph", "i"},
           {"s", "p"},
           {"pid", pid},
           {"tid", 0},
           {"ts", at},
           {"name", wait_words(static_cast<loop::TimelineWait>(std::get<1>(key))) +
                        " before stage " + std::to_string(std::get<0>(key)) + " released"}});
    for (const TimelineSpan& sp : t.spans) {
      const bool work = sp.wait == loop::TimelineWait::None;
      events.push_back(
          {{"ph", "X"},
           {"pid", pid},
           {"tid", sp.sm},
           {"ts", sp.begin_us},
           {"dur", sp.us()},
           {"cat", work ? "stage" : "wait"},
           {"name", work ? stage_label(t, sp.stage)
                         : wait_words(sp.wait) + " before stage " + std::to_string(sp.stage)},
           {"args", {{"block", sp.block}, {"stage", sp.stage}, {"sm", sp.sm}}}});
    }
  }
  json j = {{"traceEvents", events},
            {"displayTimeUnit", "ns"},
            {"otherData",
             {{"generator", "souffle-cli profile --timeline"},
              {"clock", emulated ? "emulated: the emulator's cost model, never a GPU time"
                                 : "GPU: %globaltimer (clock64 where it is too coarse)"}}}};
  return j.dump(1);
}

std::string timeline_csv(const std::vector<TimelineAnalysis>& analyses) {
  std::string s =
      "kernel,stage,name,blocks,median_us,min_us,max_us,slowest_block,estimated_us,clock\n";
  for (const TimelineAnalysis& a : analyses)
    for (const StageTiming& st : a.stages) {
      std::string name = st.name;
      std::replace(name.begin(), name.end(), '"', '\'');
      s += fmt::format("{},{},\"{}\",{},{:.4f},{:.4f},{:.4f},{},{},{}\n", a.kernel, st.stage, name,
                       st.blocks, st.median_us, st.min_us, st.max_us, st.slowest_block,
                       st.est_us >= 0 ? fmt::format("{:.4f}", st.est_us) : "",
                       a.emulated ? "emulated" : "gpu");
    }
  return s;
}

}  // namespace souffle
