/// \file A kernel's measured timeline in the HTML report (docs/timeline.md): an inline SVG Gantt
/// chart (a row per SM, or per block on the emulator; stages as coloured spans, waits hatched,
/// grid barriers and flag waits as vertical lines) and the per-stage and per-wait tables.
#pragma once

#include <string>

#include "core/report/report_model.h"

namespace souffle::report {

/// Rows (SMs or blocks) the chart draws at most; a note says how many there are.
constexpr size_t kTimelineMaxRows = 64;
/// Spans the chart draws at most (rows are dropped to stay under it, with a note).
constexpr size_t kTimelineMaxSpans = 20000;

/// One <svg> element: the Gantt chart of `t`, spans coloured per stage, hatched waits.
/// Each stage span is a <rect class="tl-stage">, each wait a <rect class="tl-wait">.
std::string timeline_svg(const ReportTimeline& t, int kernel_id);

/// The chart, the analysis in a sentence or two, the per-stage table (median, min, max block
/// time, slowest block, the cost model's estimate) and the wait table (total, longest,
/// straggler), as one HTML fragment.
std::string timeline_html(const ReportTimeline& t, int kernel_id);

}  // namespace souffle::report
