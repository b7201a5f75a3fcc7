#include "core/gpu/calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/support/error.h"

namespace souffle::gpu {
namespace {

using nlohmann::json;

double number(const json& j, const std::string& key, const std::string& file,
              const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (!it->is_number()) throw UserError(file, where, "field '" + key + "' must be a number");
  double v = it->get<double>();
  if (!std::isfinite(v) || v < 0)
    throw UserError(file, where, "field '" + key + "' must be a finite number >= 0");
  return v;
}

/// A count field: a number as above that fits an int.
int count(const json& j, const std::string& key, const std::string& file,
          const std::string& where = "") {
  const double v = number(j, key, file, where);
  if (v > 2147483647.0) throw UserError(file, where, "field '" + key + "' is too large");
  return static_cast<int>(v);
}

std::string text(const json& j, const std::string& key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (!it->is_string()) throw UserError(file, "", "field '" + key + "' must be a string");
  return it->get<std::string>();
}

}  // namespace

std::string StageCorrection::describe() const {
  return fmt::format("{}: {:.3g} (median of {} stage{}, {:.3g} to {:.3g}) measured on {}{}{}",
                     template_name, ratio, stages, stages == 1 ? "" : "s", min_ratio, max_ratio,
                     device.empty() ? std::string("an unnamed device") : device,
                     driver_version > 0 ? ", driver " + std::to_string(driver_version) : "",
                     date.empty() ? "" : ", " + date);
}

std::string schedule_template(const std::string& schedule) {
  size_t b = schedule.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  size_t e = schedule.find_first_of(" ,;(", b);
  std::string first = schedule.substr(b, e == std::string::npos ? std::string::npos : e - b);
  // Fused attention on tensor cores is another template than the f32 one: its own correction.
  if (first == "fused") {
    return schedule.find(" on tensor cores", e) != std::string::npos ? "attention_mma"
                                                                     : "attention";
  }
  return first;
}

const StageCorrection* Calibration::stage_correction(const std::string& template_name) const {
  for (const StageCorrection& s : stage_corrections)
    if (s.template_name == template_name) return &s;
  return nullptr;
}

LinearFit fit_barrier_cost(const std::vector<BarrierSample>& samples) {
  LinearFit f;
  if (samples.empty()) return f;
  double n = static_cast<double>(samples.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const BarrierSample& s : samples) {
    sx += s.blocks;
    sy += s.us;
    sxx += static_cast<double>(s.blocks) * s.blocks;
    sxy += s.blocks * s.us;
  }
  double den = n * sxx - sx * sx;
  if (samples.size() < 2 || std::abs(den) < 1e-12) {
    f.base = sy / n;
    return f;
  }
  f.slope = (n * sxy - sx * sy) / den;
  f.base = (sy - f.slope * sx) / n;
  return f;
}

double grid_barrier_us(const Calibration& c, int blocks) {
  const std::vector<BarrierSample>& s = c.grid_barrier;
  if (s.empty()) return 0;
  double floor_us = s.front().us;
  for (const BarrierSample& x : s) floor_us = std::min(floor_us, x.us);
  if (blocks <= s.front().blocks) return s.front().us;
  for (size_t i = 1; i < s.size(); ++i) {
    if (blocks > s[i].blocks) continue;
    double t = static_cast<double>(blocks - s[i - 1].blocks) / (s[i].blocks - s[i - 1].blocks);
    return s[i - 1].us + t * (s[i].us - s[i - 1].us);
  }
  // Beyond the largest grid measured: the fit, and never less than the last sample.
  return std::max({c.grid_barrier_fit.at(blocks), s.back().us, floor_us});
}

Calibration parse_calibration(const std::string& json_text, const std::string& file) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw UserError(file, "", std::string("not a calibration file (JSON): ") + e.what());
  }
  if (!j.is_object()) throw UserError(file, "", "a calibration file holds one JSON object");
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer())
    throw UserError(file, "", "field 'version' is missing or not an integer");
  if (v->get<int>() > Calibration::kVersion || v->get<int>() < 1)
    throw UserError(file, "",
                    "calibration version " + std::to_string(v->get<int>()) +
                        " is not one this build reads (it reads 1 to " +
                        std::to_string(Calibration::kVersion) + ")");
  Calibration c;
  c.file = file;
  c.device = text(j, "device", file);
  if (c.device.empty()) throw UserError(file, "", "field 'device' is missing");
  c.compute_capability = text(j, "compute_capability", file);
  c.date = text(j, "date", file);
  c.clocks = text(j, "clocks", file);
  c.sm_count = count(j, "sm_count", file);
  c.driver_version = count(j, "driver_version", file);
  c.launch_overhead_us = number(j, "launch_overhead_us", file, "");
  c.graph_launch_us = number(j, "graph_launch_us", file, "");
  c.dram_bandwidth_gbps = number(j, "dram_bandwidth_gbps", file, "");
  c.gemm_fp32_tflops = number(j, "gemm_fp32_tflops", file, "");
  c.gemm_fp16_tflops = number(j, "gemm_fp16_tflops", file, "");
  c.gemm_fp32_tile = text(j, "gemm_fp32_tile", file);
  c.gemm_fp16_tile = text(j, "gemm_fp16_tile", file);
  c.gemm_fp16_template = text(j, "gemm_fp16_template", file);
  c.gemm_note = text(j, "gemm_note", file);
  c.flag_round_us = number(j, "flag_round_us", file, "");
  c.flag_tile_us = number(j, "flag_tile_us", file, "");
  if (auto g = j.find("grid_barrier"); g != j.end()) {
    if (!g->is_array()) throw UserError(file, "", "field 'grid_barrier' must be an array");
    for (size_t i = 0; i < g->size(); ++i) {
      const json& e = (*g)[i];
      std::string where = "grid_barrier[" + std::to_string(i) + "]";
      if (!e.is_object()) throw UserError(file, where, "must be an object");
      BarrierSample s;
      s.blocks = count(e, "blocks", file, where);
      s.blocks_per_sm = count(e, "blocks_per_sm", file, where);
      s.threads = count(e, "threads", file, where);
      s.us = number(e, "us", file, where);
      if (s.blocks < 1) throw UserError(file, where, "field 'blocks' must be at least 1");
      if (!c.grid_barrier.empty() && s.blocks <= c.grid_barrier.back().blocks)
        throw UserError(file, where, "samples must be in ascending order of blocks");
      c.grid_barrier.push_back(s);
    }
  }
  c.grid_barrier_fit = fit_barrier_cost(c.grid_barrier);
  if (auto g = j.find("stage_corrections"); g != j.end()) {
    if (!g->is_array()) throw UserError(file, "", "field 'stage_corrections' must be an array");
    for (size_t i = 0; i < g->size(); ++i) {
      const json& e = (*g)[i];
      std::string where = "stage_corrections[" + std::to_string(i) + "]";
      if (!e.is_object()) throw UserError(file, where, "must be an object");
      StageCorrection s;
      s.template_name = text(e, "template", file);
      if (s.template_name.empty()) throw UserError(file, where, "field 'template' is missing");
      if (c.stage_correction(s.template_name))
        throw UserError(file, where, "a second correction for template '" + s.template_name + "'");
      s.ratio = number(e, "ratio", file, where);
      if (!(s.ratio > 0)) throw UserError(file, where, "field 'ratio' must be above 0");
      s.stages = count(e, "stages", file, where);
      s.min_ratio = number(e, "min_ratio", file, where);
      s.max_ratio = number(e, "max_ratio", file, where);
      s.source = text(e, "from", file);
      if (auto m = e.find("measured_on"); m != e.end()) {
        if (!m->is_object()) throw UserError(file, where, "field 'measured_on' must be an object");
        s.device = text(*m, "device", file);
        s.driver_version = count(*m, "driver_version", file, where);
        s.date = text(*m, "date", file);
      }
      if (s.device.empty())
        throw UserError(file, where, "a stage correction names the device it was measured on");
      c.stage_corrections.push_back(s);
    }
  }
  return c;
}

Calibration load_calibration(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(path, "", "cannot read the calibration file");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_calibration(ss.str(), path);
}

std::string calibration_json(const Calibration& c) {
  json j = {{"version", Calibration::kVersion},
            {"device", c.device},
            {"compute_capability", c.compute_capability},
            {"sm_count", c.sm_count},
            {"driver_version", c.driver_version},
            {"date", c.date},
            {"clocks", c.clocks},
            {"launch_overhead_us", c.launch_overhead_us},
            {"graph_launch_us", c.graph_launch_us},
            {"dram_bandwidth_gbps", c.dram_bandwidth_gbps},
            {"gemm_fp32_tflops", c.gemm_fp32_tflops},
            {"gemm_fp16_tflops", c.gemm_fp16_tflops}};
  if (!c.gemm_fp32_tile.empty()) j["gemm_fp32_tile"] = c.gemm_fp32_tile;
  if (!c.gemm_fp16_tile.empty()) j["gemm_fp16_tile"] = c.gemm_fp16_tile;
  if (!c.gemm_fp16_template.empty()) j["gemm_fp16_template"] = c.gemm_fp16_template;
  if (!c.gemm_note.empty()) j["gemm_note"] = c.gemm_note;
  if (c.has_flags()) {
    j["flag_round_us"] = c.flag_round_us;
    j["flag_tile_us"] = c.flag_tile_us;
  }
  json g = json::array();
  for (const BarrierSample& s : c.grid_barrier)
    g.push_back({{"blocks", s.blocks},
                 {"blocks_per_sm", s.blocks_per_sm},
                 {"threads", s.threads},
                 {"us", s.us}});
  j["grid_barrier"] = g;
  if (!c.stage_corrections.empty()) {
    json sc = json::array();
    for (const StageCorrection& s : c.stage_corrections)
      sc.push_back(
          {{"template", s.template_name},
           {"ratio", s.ratio},
           {"stages", s.stages},
           {"min_ratio", s.min_ratio},
           {"max_ratio", s.max_ratio},
           {"measured_on",
            {{"device", s.device}, {"driver_version", s.driver_version}, {"date", s.date}}},
           {"from", s.source}});
    j["stage_corrections"] = sc;
  }
  j["grid_barrier_fit"] = {{"base_us", c.grid_barrier_fit.base},
                           {"per_block_us", c.grid_barrier_fit.slope}};
  return j.dump(2) + "\n";
}

}  // namespace souffle::gpu
