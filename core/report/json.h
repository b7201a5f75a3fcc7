/// \file The report as JSON: everything the HTML shows, as data, with `schema_version`
/// (docs/report.schema.json describes it).
#pragma once

#include <nlohmann/json.hpp>

#include "core/report/report_model.h"

namespace souffle::report {

/// The report as one JSON object (docs/report.schema.json).
nlohmann::json report_json(const Report& r);

}  // namespace souffle::report
