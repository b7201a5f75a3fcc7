#include "core/session/project.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "core/onnx/importer.h"
#include "core/support/boundary.h"
#include "core/support/error.h"

namespace souffle {

namespace fs = std::filesystem;

namespace {

/// The model path as stored: relative when the model lies in or below the project's folder,
/// so a project and its model can move together.
std::string stored_model_path(const std::string& model, const std::string& project_path) {
  if (model.empty() || project_path.empty()) return model;
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(project_path), ec).parent_path();
  if (ec) return model;
  const fs::path abs = fs::absolute(fs::path(model), ec).lexically_normal();
  if (ec) return model;
  const fs::path rel = abs.lexically_relative(dir.lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return abs.string();
  return rel.generic_string();
}

std::string resolved_model_path(const std::string& stored, const std::string& project_path) {
  fs::path p(stored);
  if (p.is_absolute() || project_path.empty()) return p.lexically_normal().string();
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(project_path), ec).parent_path();
  return (dir / p).lexically_normal().string();
}

std::string string_field(const nlohmann::json& j, const char* name, const std::string& file,
                         bool required, const std::string& fallback) {
  if (!j.contains(name)) {
    if (required) throw UserError(file, name, std::string("missing field '") + name + "'");
    return fallback;
  }
  if (!j[name].is_string())
    throw UserError(file, name, std::string("field '") + name + "' must be a string");
  return j[name].get<std::string>();
}

}  // namespace

std::string project_to_json(const Project& p, const std::string& project_path) {
  nlohmann::json j;
  j["version"] = kProjectVersion;
  j["model"] = stored_model_path(p.model, project_path);
  j["strategy"] = p.strategy;
  j["gpu"] = p.gpu;
  j["precision"] = p.precision;
  if (p.sync != "grid") j["sync"] = p.sync;
  j["te_level"] = p.te_level;
  j["decisions"] = nlohmann::json::parse(plan::to_json(p.decisions));
  if (!p.calibration.empty()) j["calibration"] = p.calibration;
  nlohmann::json inputs = nlohmann::json::object();
  if (!p.dims.empty()) inputs["dim"] = p.dims;
  if (!p.bind.empty()) inputs["bind"] = p.bind;
  if (!p.shapes.empty()) inputs["shape"] = p.shapes;
  if (!inputs.empty()) j["inputs"] = inputs;
  if (!p.measurements.empty()) {
    nlohmann::json m = nlohmann::json::array();
    for (const std::string& t : p.measurements) m.push_back(nlohmann::json::parse(t));
    j["measurements"] = m;
  }
  if (!p.timeline.empty()) {
    nlohmann::json records = nlohmann::json::array();
    for (const std::string& f : p.timeline) records.push_back(stored_model_path(f, project_path));
    j["timeline"] = {{"plan_key", p.timeline_plan}, {"records", records}};
  }
  return j.dump(2) + "\n";
}

Project parse_project(const std::string& text, const std::string& project_path) {
  const std::string& file = project_path;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(file, "", std::string("not a project (invalid JSON: ") + e.what() + ")");
  }
  if (!j.is_object()) throw UserError(file, "", "not a project (expected a JSON object)");
  if (!j.contains("version")) throw UserError(file, "version", "missing field 'version'");
  if (!j["version"].is_number_integer())
    throw UserError(file, "version", "field 'version' must be an integer");
  const int version = j["version"].get<int>();
  if (version != kProjectVersion)
    throw UserError(file, "version",
                    "unknown project version " + std::to_string(version) +
                        " (this explorer reads version " + std::to_string(kProjectVersion) + ")");
  Project p;
  const std::string model = string_field(j, "model", file, true, "");
  if (model.empty()) throw UserError(file, "model", "field 'model' is empty");
  // A relative model path is anchored in the project's folder and may not climb out of it: a
  // project from someone else must not make the explorer read a file beside or above it.
  if (const fs::path rel = fs::path(model).lexically_normal();
      !rel.is_absolute() && !rel.empty() && *rel.begin() == "..")
    throw UserError(file, "model",
                    "model path '" + model +
                        "' leaves the project's folder (a project names its model in or below "
                        "its own folder, or by an absolute path)");
  p.model = resolved_model_path(model, project_path);
  // A model that is missing is reported when it is opened (the decisions are kept meanwhile); one
  // that is a folder or a device makes the whole project unusable.
  if (std::error_code ec;
      fs::exists(fs::path(p.model), ec) && !fs::is_regular_file(fs::path(p.model), ec))
    throw UserError(file, "model",
                    "model " + p.model + " is not a regular file (a folder or a device)");
  p.strategy = string_field(j, "strategy", file, false, p.strategy);
  p.gpu = string_field(j, "gpu", file, false, p.gpu);
  p.precision = string_field(j, "precision", file, false, p.precision);
  p.sync = string_field(j, "sync", file, false, p.sync);
  p.calibration = string_field(j, "calibration", file, false, "");
  if (SyncMode m; !parse_sync_mode(p.sync, m))
    throw UserError(file, "sync", "field 'sync' is '" + p.sync + "': grid, auto or flags");
  if (j.contains("inputs")) {
    const nlohmann::json& in = j["inputs"];
    if (!in.is_object())
      throw UserError(file, "inputs", "field 'inputs' must be an object (dim, bind, shape)");
    auto list = [&](const char* key, std::vector<std::string>& out) {
      if (!in.contains(key)) return;
      if (!in[key].is_array())
        throw UserError(
            file, "inputs",
            std::string("field 'inputs.") + key + "' must be a list of NAME=VALUE strings");
      for (const nlohmann::json& v : in[key]) {
        if (!v.is_string())
          throw UserError(
              file, "inputs",
              std::string("field 'inputs.") + key + "' must be a list of NAME=VALUE strings");
        out.push_back(v.get<std::string>());
      }
    };
    list("dim", p.dims);
    list("bind", p.bind);
    list("shape", p.shapes);
    try {
      onnx_import::import_options(p.dims, p.bind, p.shapes);
    } catch (const UserError& e) {
      throw UserError(file, "inputs", e.reason());
    }
  }
  if (j.contains("te_level")) {
    if (!j["te_level"].is_boolean())
      throw UserError(file, "te_level", "field 'te_level' must be true or false");
    p.te_level = j["te_level"].get<bool>();
  }
  if (j.contains("decisions")) {
    if (!j["decisions"].is_object())
      throw UserError(file, "decisions", "field 'decisions' must be an object");
    p.decisions = plan::parse_decisions(j["decisions"].dump(), file);
  }
  if (j.contains("measurements")) {
    const nlohmann::json& m = j["measurements"];
    if (!m.is_array())
      throw UserError(file, "measurements", "field 'measurements' must be an array");
    for (size_t i = 0; i < m.size(); ++i) {
      if (!m[i].is_object() || !m[i].contains("plan_key") || !m[i]["plan_key"].is_string())
        throw UserError(file, "measurements[" + std::to_string(i) + "]",
                        "a measurement is an object with a string 'plan_key'");
      p.measurements.push_back(m[i].dump());
    }
  }
  if (j.contains("timeline")) {
    const nlohmann::json& t = j["timeline"];
    const char* shape =
        "field 'timeline' is an object with a string 'plan_key' and 'records', a list of record "
        "file paths";
    if (!t.is_object() || !t.contains("records") || !t["records"].is_array() ||
        !t.contains("plan_key") || !t["plan_key"].is_string())
      throw UserError(file, "timeline", shape);
    p.timeline_plan = t["plan_key"].get<std::string>();
    for (const nlohmann::json& r : t["records"]) {
      if (!r.is_string() || r.get<std::string>().empty()) throw UserError(file, "timeline", shape);
      const std::string f = r.get<std::string>();
      // Like the model: relative paths stay in the project's folder.
      if (const fs::path rel = fs::path(f).lexically_normal();
          !rel.is_absolute() && !rel.empty() && *rel.begin() == "..")
        throw UserError(file, "timeline",
                        "timeline record '" + f +
                            "' leaves the project's folder (a project names its record files in "
                            "or below its own folder, or by an absolute path)");
      p.timeline.push_back(resolved_model_path(f, project_path));
    }
  }
  return p;
}

Project read_project(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot read the project file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_project(ss.str(), path);
}

Project load_project(const std::string& path) {
  Project p = read_project(path);
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(p.model), ec))
    throw UserError(path, "model", "model not found: looked for " + p.model);
  return p;
}

void save_project(const Project& p, const std::string& path) {
  const std::string text = project_to_json(p, path);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError(path, "", "cannot write the project file");
    out << text;
    out.flush();
    if (!out) throw UserError(path, "", "cannot write the project file");
  }
  std::error_code ec;
  fs::rename(fs::path(tmp), fs::path(path), ec);
  if (ec) {
    fs::remove(fs::path(tmp), ec);
    throw UserError(path, "", "cannot write the project file");
  }
}

}  // namespace souffle
