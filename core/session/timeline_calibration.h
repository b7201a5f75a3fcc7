/// \file Measured stage times fed back into the calibration file (docs/timeline.md, Calibrating
/// from a timeline): the timeline document `profile --timeline` writes per strategy, and the
/// per-template corrections read from a GPU's one (never from the emulator's).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/calibration.h"
#include "core/session/profile.h"
#include "core/session/timeline.h"

namespace souffle {

/// The timeline document of one profiled strategy (`STRATEGY.timeline.json`): what was planned
/// (model, strategy, spec, precision), where it ran (backend, device, compute capability, driver,
/// date) and the analysis of each kernel (timeline_analysis_json), each stage with its estimate
/// and schedule template.
nlohmann::json timeline_document(const ProfileReport& r,
                                 const std::vector<TimelineAnalysis>& analyses);

/// The per-template corrections the document `doc` (read from `file`) measures: per stage with
/// a template, a measured time (its slowest block) and an estimate, measured / estimated; per
/// template the median over its stages. Throws UserError naming `file` for a document of the
/// emulator (its times are its own cost model, not a GPU's), one that names no device, one that
/// is not a timeline document, and one with no stage both measured and estimated.
std::vector<gpu::StageCorrection> corrections_from_timeline(const nlohmann::json& doc,
                                                            const std::string& file);

/// `base` (a calibration of the same device; none: a calibration holding only the corrections,
/// named after the timeline's device) with the corrections of each timeline file in `files`
/// taking the place of any it had for the same template. Throws UserError naming the file for a
/// file that cannot be read or is refused above, or a device other than base's.
gpu::Calibration calibration_from_timelines(const std::vector<std::string>& files,
                                            const std::optional<gpu::Calibration>& base);

}  // namespace souffle
