/// \file The JSON object of a fusion plan that `plan --json` prints and the explorer exports.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/plan/plan.h"

namespace souffle {

/// Totals, partitions (with stages), transformation sites, applied and refused decisions and
/// pass times of `p`; `model` is the path shown in the "model" field.
nlohmann::json plan_json(const std::string& model, const plan::FusionPlan& p);

}  // namespace souffle
