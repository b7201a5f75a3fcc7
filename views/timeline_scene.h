/// \file What the Timeline panel draws (docs/timeline.md): the decoded timelines of a plan's
/// kernels tied to the plan on screen (each stage's graph nodes, TEs and partition), the rows of
/// a kernel (per SM or per block) and the level-of-detail raster of a time window: spans
/// narrower than a pixel are summed into per-pixel bins, so a frame costs the spans in the
/// window plus the pixels, whatever the zoom. Pure (no widgets), for the panel and its bench.
#pragma once

#include <QColor>
#include <QHash>
#include <QImage>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "core/session/timeline.h"
#include "views/plan_runner.h"

namespace souffle::views {

/// One kernel's timeline with what the explorer knows of its stages.
struct TimelineKernel {
  KernelTimeline timeline;
  TimelineAnalysis analysis;
  /// Index into the plan's partitions (-1: not a kernel of the plan on screen), and the index
  /// of its first stage in the partition's code (launches kernelN.0, kernelN.1 number on).
  int partition = -1;
  int stageBase = 0;
  std::vector<QStringList> stageNodes, stageTes;  ///< per stage: ONNX nodes and TEs
  /// Per stage: the wait before it (summed over blocks) and the time its last waiter left
  /// (negative: no wait before it).
  std::vector<double> waitTotalUs, waitMaxUs, barrierUs;
  quint32 colorKey = 0;  ///< the partition's colour (kernel_identity), a hash of the name else
  /// Recorded for an earlier plan whose kernel of this name differs from the plan on screen's
  /// (carryTimelineData): shown, but tied to no partition.
  bool stale = false;
  int stageCount() const { return static_cast<int>(timeline.stage_names.size()); }
  QString stageName(int stage) const;
};

struct TimelineData {
  PlanDataPtr plan;  ///< the plan the stages were matched against (may be null)
  std::vector<TimelineKernel> kernels;
  bool emulated = true;
  /// "emulator estimate, not GPU time" or "measured on a GPU (global timer, SM clock 1410 MHz)".
  QString source;
  QStringList files;  ///< the record files read (empty for a run of the emulator here)
  QString note;       ///< what could not be matched (a kernel not in the plan on screen)
  /// Per ONNX node: its stages' median block time, and the longest waits before its stages,
  /// summed (the graph heat map's "Stage time" and "Barrier wait").
  QHash<QString, double> nodeStageUs, nodeWaitUs;
};
using TimelineDataPtr = std::shared_ptr<const TimelineData>;

/// Ties `timelines` to `plan` (stage names, estimates, nodes, partitions; the plan's kernel cache
/// builds a kernel not built yet) and analyses them. Never throws: what could not be matched is
/// said in `note`.
TimelineDataPtr makeTimelineData(PlanDataPtr plan, std::vector<KernelTimeline> timelines,
                                 bool emulated, const QString& source,
                                 const QStringList& files = {});

/// The timeline `old` (tied to an earlier plan) carried over to `plan`: a kernel whose
/// partition has the same id and the same content key in both plans (KernelCache::key: its
/// TEs, stages, tiles, readers, strategy, GPU, precision and build options, so the same kernel
/// code) keeps its records, tied to `plan` again; any other is kept as stale (TimelineKernel::
/// stale), tied to nothing, and said in `note`. Null when `old` has no kernel. `stale` (may be
/// null) gets how many kernels went stale.
TimelineDataPtr carryTimelineData(const TimelineDataPtr& old, PlanDataPtr plan, int* stale);

/// Reads record files (`souffle-cli profile --timeline` keeps STRATEGY.KERNEL.timeline) and ties
/// them to `plan`. Throws UserError naming the file that is truncated, padded, not a timeline
/// file or holds a record kind nobody decodes.
TimelineDataPtr readTimelineFiles(PlanDataPtr plan, const QStringList& files);

/// The kernel a record file is named after ("souffle.kernel3.1.timeline" → "kernel3.1").
QString kernelOfTimelineFile(const QString& file);

/// A kernel's rows: one per SM, or one per recorded block.
struct TimelineRows {
  bool perBlock = false;
  std::vector<int64_t> keys;  ///< SM or block of each row, ascending
  /// Per row: indices into the kernel's spans sorted by begin, and the running maximum of
  /// their ends (to find the first span that reaches into a window).
  std::vector<std::vector<int>> spans;
  std::vector<std::vector<double>> maxEnd;
  double endUs = 0;  ///< the last record
};
TimelineRows makeTimelineRows(const KernelTimeline& t, bool perBlock);

/// The colour of stage `stage` of a kernel coloured `key`: the kernel's hue, shifted per stage.
QColor timelineStageColor(quint32 key, int stage, bool dark);

struct TimelineRaster {
  double t0 = 0, t1 = 1;  ///< the window, µs from the kernel's first record
  QSize size;             ///< pixels of the chart area
  bool dark = false;
  QColor background, highlight;
  std::vector<char> selected;  ///< per stage: drawn in the highlight colour
};

/// The chart area of `k` for `r`: per pixel line its rows, per pixel column the stage with the
/// most work there (coloured, its share of the pixel as opacity), a hatched pixel where waits
/// outweigh work. Several rows to one pixel line are summed. `spansVisited` counts the spans
/// read (for the bench).
QImage rasterTimeline(const TimelineKernel& k, const TimelineRows& rows, const TimelineRaster& r,
                      int64_t* spansVisited = nullptr);

/// The row under pixel line `y` of a chart `height` pixels high.
int timelineRowAt(const TimelineRows& rows, int height, int y);
/// The span of row `row` at time `us`, else the nearest within `slackUs`; -1 for none.
int timelineSpanAt(const TimelineKernel& k, const TimelineRows& rows, int row, double us,
                   double slackUs);

/// "1.23 µs", "4.5 ms".
QString formatTimelineUs(double us);

}  // namespace souffle::views
