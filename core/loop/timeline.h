/// \file Timeline instrumentation of a built kernel (docs/timeline.md): TimelineRecord statements
/// around every stage and every wait between stages, and the layout of the records they write.
///
/// Each record is three int64 words: the global timer (ns on a GPU, `%globaltimer`), the SM's
/// cycle counter (`clock64()`), and (SM << 32) | tag, where tag = (stage << 8) | (wait << 4) |
/// (event + 1). A record that was never written is all zeros (tag 0): the block did not run that
/// stage. The buffer is [rows, slots, 3]: row r holds block r * stride, slot s the s-th record
/// statement of the kernel body in program order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/loop/stmt.h"

namespace souffle::loop {

constexpr int64_t kTimelineWords = 3;  ///< int64 words per record
constexpr int kTimelineMaxStage = (1 << 24) - 1;

/// The tag of a record (the low 32 bits of its third word).
constexpr int64_t timeline_tag(TimelineEvent e, TimelineWait w, int stage) {
  return (static_cast<int64_t>(stage) << 8) | (static_cast<int64_t>(w) << 4) |
         (static_cast<int64_t>(e) + 1);
}

struct TimelineOptions {
  bool enabled = false;
  /// The most bytes a kernel's timeline buffer may take; a kernel whose records for every
  /// block would take more records every stride-th block only (a sample, said in the layout).
  int64_t max_bytes = int64_t{64} << 20;
};

/// Where a kernel's records are: what the runner reads back and the decoder needs.
struct TimelineLayout {
  std::string buffer;      ///< the timeline buffer's tensor name (a global scratch of the kernel)
  int64_t grid = 0;        ///< the kernel's blocks
  int64_t rows = 0;        ///< blocks recorded: 0, stride, 2 * stride, ...
  int64_t stride = 1;      ///< 1: every block
  int64_t slot_count = 0;  ///< record statements in the body
  int64_t bytes() const { return rows * slot_count * kTimelineWords * 8; }
  bool sampled() const { return stride > 1; }
};

/// Wraps each Stage node of `k` in StageBegin/StageEnd records and each block barrier, grid
/// barrier and flag wait outside the stages in WaitBegin/WaitEnd records (a wait names the
/// stage after it), all writing a new global Int64 buffer "<kernel>_timeline" allocated around
/// the body. Barriers inside a stage (a GEMM's k-loop, the phases of a reduction split over
/// blocks) stay part of the stage's time. Records sit outside Stage nodes, so stage outlining
/// and the stages' own analyses see the same stages as before. Returns the layout.
TimelineLayout instrument_timeline(Kernel& k, const TimelineOptions& options = {});

/// Whether `k` carries timeline records (what instrument_timeline left).
bool has_timeline(const Kernel& k);
/// The layout of `k`'s records, read back from its records and buffer; none without records.
std::optional<TimelineLayout> timeline_layout(const Kernel& k);

}  // namespace souffle::loop
