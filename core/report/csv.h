/// \file The report as CSV: one row per kernel per plan, for a spreadsheet.
#pragma once

#include <string>

#include "core/report/report_model.h"

namespace souffle::report {

/// A header line, then one row per kernel of every plan (RFC 4180 quoting). Times are the cost
/// model's estimates (column est_time_us); measured_us is empty unless a measurement was given.
std::string report_csv(const Report& r);

}  // namespace souffle::report
