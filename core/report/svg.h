/// \file Inline SVG for reports: a DOT graph laid out by Graphviz, the roofline, the strategy
/// comparison and the per-kernel time chart. Each returns one <svg> element, no XML prolog.
#pragma once

#include <string>

#include "core/report/report_model.h"

namespace souffle::report {

/// `dot` laid out and rendered by Graphviz (dot engine; polylines beyond 1,500 nodes so big
/// graphs stay quick). Safe from any thread. InternalError if Graphviz rejects the text.
std::string dot_to_svg(const std::string& dot);

/// Roofline of the report's GPU spec: one point per kernel of every plan (estimated FLOP/s
/// against FLOPs per DRAM byte), the DRAM and peak-compute roofs at the plans' precision.
std::string roofline_svg(const Report& r);

/// One bar per plan for each of: estimated time, kernels launched, DRAM bytes (and measured
/// time where given).
std::string strategy_chart_svg(const Report& r);

/// Horizontal bars of each kernel's estimated (and measured) time, the `max_kernels` slowest.
std::string kernel_time_svg(const ReportPlan& p, size_t max_kernels = 40);

/// `s` with &, <, >, " and ' escaped for XML and HTML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace souffle::report
