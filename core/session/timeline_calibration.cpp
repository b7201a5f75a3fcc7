#include "core/session/timeline_calibration.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/support/error.h"
#include "core/support/median.h"

namespace souffle {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "souffle-timeline";

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double number_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : -1;
}

}  // namespace

json timeline_document(const ProfileReport& r, const std::vector<TimelineAnalysis>& analyses) {
  bool emulated = r.backend == "emulator";
  for (const TimelineAnalysis& a : analyses) emulated |= a.emulated;
  json doc = {{"format", kFormat},
              {"version", 1},
              {"model", r.model},
              {"strategy", r.strategy},
              {"gpu_spec", r.gpu_spec},
              {"precision", r.precision},
              {"backend", r.backend},
              {"emulated", emulated},
              {"device", r.device},
              {"compute_capability", r.compute_capability},
              {"driver_version", r.driver_version},
              {"date", r.date}};
  doc["kernels"] = timeline_analysis_json(analyses)["kernels"];
  return doc;
}

std::vector<gpu::StageCorrection> corrections_from_timeline(const json& doc,
                                                            const std::string& file) {
  if (!doc.is_object() || text_of(doc, "format") != kFormat || !doc.contains("kernels") ||
      !doc["kernels"].is_array())
    throw UserError(file, "",
                    "not a timeline document (profile --timeline writes one per strategy, "
                    "STRATEGY.timeline.json in its --timeline-dir)");
  bool emulated = doc.value("emulated", false) || text_of(doc, "backend") == "emulator";
  for (const json& k : doc["kernels"]) emulated |= k.is_object() && k.value("emulated", false);
  if (emulated)
    throw UserError(file, "",
                    "the timeline is the emulator's: its times are the emulator's own cost model "
                    "(emulated cycles), not times measured on a GPU, so they cannot correct the "
                    "cost model; calibrate from `profile --backend cuda --timeline` on the device");
  const std::string device = text_of(doc, "device");
  if (device.empty())
    throw UserError(file, "",
                    "the timeline names no device: a correction says where it was measured");
  std::map<std::string, std::vector<double>> ratios;
  for (const json& k : doc["kernels"]) {
    if (!k.is_object() || !k.contains("stages") || !k["stages"].is_array()) continue;
    for (const json& s : k["stages"]) {
      const std::string tmpl = text_of(s, "template");
      const double measured = number_of(s, "max_us"), est = number_of(s, "estimated_us");
      if (tmpl.empty() || !(measured > 0) || !(est > 0)) continue;
      ratios[tmpl].push_back(measured / est);
    }
  }
  if (ratios.empty())
    throw UserError(file, "",
                    "no stage has both a measured time and an estimate with its schedule template");
  std::vector<gpu::StageCorrection> out;
  for (const auto& [tmpl, r] : ratios) {
    gpu::StageCorrection c;
    c.template_name = tmpl;
    c.ratio = median_of(r);
    c.stages = static_cast<int>(r.size());
    c.min_ratio = *std::min_element(r.begin(), r.end());
    c.max_ratio = *std::max_element(r.begin(), r.end());
    c.device = device;
    c.driver_version = std::max(0, static_cast<int>(number_of(doc, "driver_version")));
    c.date = text_of(doc, "date");
    c.source = file;
    out.push_back(c);
  }
  return out;
}

gpu::Calibration calibration_from_timelines(const std::vector<std::string>& files,
                                            const std::optional<gpu::Calibration>& base) {
  if (files.empty()) throw UserError("--from-timeline FILE is needed");
  gpu::Calibration c = base ? *base : gpu::Calibration{};
  std::string device, device_file;
  std::vector<gpu::StageCorrection> fresh;
  for (const std::string& file : files) {
    std::ifstream f(file, std::ios::binary);
    if (!f) throw UserError(file, "", "cannot read the timeline document");
    std::stringstream ss;
    ss << f.rdbuf();
    json doc;
    try {
      doc = json::parse(ss.str());
    } catch (const json::exception& e) {
      throw UserError(file, "", std::string("not a timeline document (JSON): ") + e.what());
    }
    for (gpu::StageCorrection& sc : corrections_from_timeline(doc, file)) {
      if (device.empty()) {
        device = sc.device;
        device_file = file;
      } else if (sc.device != device) {
        throw UserError(file, "",
                        "measured on " + sc.device + ", but " + device_file + " on " + device +
                            ": one calibration is for one device");
      }
      auto it = std::find_if(fresh.begin(), fresh.end(), [&](const gpu::StageCorrection& x) {
        return x.template_name == sc.template_name;
      });
      if (it == fresh.end()) {
        fresh.push_back(sc);
        continue;
      }
      // The same template in two files: the stage-weighted mean of the two medians, the
      // spread of both, the later file named.
      const double n = it->stages + sc.stages;
      it->ratio = (it->ratio * it->stages + sc.ratio * sc.stages) / n;
      it->min_ratio = std::min(it->min_ratio, sc.min_ratio);
      it->max_ratio = std::max(it->max_ratio, sc.max_ratio);
      it->stages += sc.stages;
      it->source += ", " + sc.source;
    }
  }
  if (base && !base->device.empty() && base->device != device)
    throw UserError(device_file, "",
                    "measured on " + device + ", but the calibration " +
                        (base->file.empty() ? std::string("given") : base->file) + " is of " +
                        base->device + ": one calibration is for one device");
  if (c.device.empty()) {
    c.device = device;
    c.driver_version = fresh.front().driver_version;
    c.date = fresh.front().date;
  }
  for (const gpu::StageCorrection& sc : fresh) {
    auto it = std::find_if(
        c.stage_corrections.begin(), c.stage_corrections.end(),
        [&](const gpu::StageCorrection& x) { return x.template_name == sc.template_name; });
    if (it == c.stage_corrections.end())
      c.stage_corrections.push_back(sc);
    else
      *it = sc;
  }
  return c;
}

}  // namespace souffle
