/// \file Explorer projects (`.souffle`, versioned JSON): a model path, the plan options and the
/// user's decisions.
#pragma once

#include <string>
#include <vector>

#include "core/plan/decisions.h"

namespace souffle {

inline constexpr int kProjectVersion = 1;

/// What a project remembers. `model` is absolute once read (resolved against the project's
/// folder); it is written relative to the project file when it lies below that folder.
struct Project {
  std::string model;
  std::string strategy = "souffle";
  std::string gpu = "A100";
  std::string precision = "fp32";
  std::string sync = "grid";  ///< grid, auto or flags (plan::PlanOptions::sync); saved unless grid
  bool te_level = false;
  plan::Decisions decisions;
  /// Profile runs kept with the project (profile_report_json objects as text, each with its
  /// plan_key, device, driver, clocks and date), so a reopened project shows them.
  std::vector<std::string> measurements;
  /// A calibration file (souffle-cli calibrate) the plans are priced with; empty: the GPU
  /// spec's constants. Kept as given; a file that cannot be read when the project is opened is
  /// reported and the spec's constants are used.
  std::string calibration;
  /// How the model's inputs are given, each as on the command line (NAME=VALUE): symbolic dims
  /// (--dim), inputs fixed as constants, e.g. one that decides an If (--bind), input shapes
  /// (--shape). The model is loaded with them (onnx_import::import_options).
  std::vector<std::string> dims, bind, shapes;
  /// The Timeline panel's record files (docs/timeline.md), absolute once read; written relative
  /// to the project file when they lie in or below its folder, as the model is. Reopened when
  /// the project's plan has `timeline_plan` as its plan_key (a timeline of another plan is not
  /// this plan's stages). Empty: no timeline.
  std::vector<std::string> timeline;
  std::string timeline_plan;
  bool operator==(const Project&) const = default;
};

/// {"version": 1, "model": ..., "strategy": ..., "gpu": ..., "precision": ..., "te_level": ...,
/// "decisions": <Decisions JSON>, "measurements": [<profile reports>], "timeline": {"plan_key":
/// ..., "records": [<files>]}}; `project_path` is where the text will be saved, so the model path
/// can be made relative to it.
std::string project_to_json(const Project& p, const std::string& project_path);

/// Parses a project; `project_path` names the file in errors and anchors a relative model path.
/// UserError naming the file and the field (bad JSON, unknown version, missing or mistyped
/// field, bad decisions). Does not look at the model file.
Project parse_project(const std::string& text, const std::string& project_path);

/// Reads and parses a project file (UserError if unreadable), without checking the model.
Project read_project(const std::string& path);
/// read_project, then checks the model exists: UserError saying which path it looked for.
Project load_project(const std::string& path);
/// Writes atomically (a temporary file renamed over `path`); UserError if it cannot.
void save_project(const Project& p, const std::string& path);

}  // namespace souffle
