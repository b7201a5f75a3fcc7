/// \file Colour by a metric: per box of the drawn graph a value in [0, 1] from the plan's
/// estimated time, DRAM bytes, FLOPs or arithmetic intensity, or measured times (a profile run or
/// an imported profile), with the legend that explains the colours on screen and in exports.
#pragma once

#include <QColor>
#include <QHash>
#include <QRectF>
#include <QString>
#include <vector>

#include "views/plan_runner.h"
#include "views/scene_graph.h"

class QPainter;

namespace souffle::views {

enum class HeatMetric {
  None,
  EstimatedTime,
  MeasuredTime,
  DramBytes,
  Flops,
  Intensity,
  StageTime,    ///< a timeline's median block time of each node's stages (summed)
  BarrierWait,  ///< a timeline's longest wait before each node's stages (summed)
};
/// In menu order, None first.
const std::vector<HeatMetric>& heatMetrics();
/// "Estimated time", "Measured time", ...; "Op type" for None.
QString heatMetricName(HeatMetric metric);
/// The command line's name of a metric: "op", "time", "measured", "dram", "flops",
/// "intensity", "stage-time", "barrier-wait".
QString heatMetricKey(HeatMetric metric);
/// The metric a command-line name names; false for a name no metric has.
bool parseHeatMetric(const QString& key, HeatMetric& metric);

/// Measured times to colour by: per partition (a profile run) and/or per ONNX node (an
/// imported per-node profile). Negative: not measured.
struct MeasuredTimes {
  std::vector<double> partitionUs;
  QHash<QString, double> nodeUs;
  QString source;   ///< "measured on NVIDIA H200 (cupti)", "imported: trace.json (PyTorch)"
  bool gpu = true;  ///< GPU times (false: the emulator's CPU times, said so in the legend)
  /// From a kernel timeline (the Timeline panel), per ONNX node: its stages' median block time
  /// and the longest waits before them, summed; and what the timeline's clock is.
  QHash<QString, double> stageUs, waitUs;
  QString timelineSource;
  bool empty() const { return partitionUs.empty() && nodeUs.isEmpty(); }
};

struct HeatLegend {
  QString title;      ///< "Estimated time per kernel (cost model, µs)"
  QString low, high;  ///< the values at either end, formatted
  bool log = false;   ///< a logarithmic scale
  QString note;       ///< "12 of 40 boxes without a value", the measurement's source
};

struct HeatMap {
  HeatMetric metric = HeatMetric::None;
  std::vector<double> values;  ///< per box of the graph: [0, 1], NaN without a value
  HeatLegend legend;
  bool valid() const { return metric != HeatMetric::None && !values.empty(); }
};

/// The heat of every box of `graph` (`kernels`: per box, the partition indices it shows, as the
/// scene has them) for `metric`: per kernel for the estimated time and DRAM bytes (the kernels'
/// own figures), per node for FLOPs and intensity (its TEs' analysis), per node or kernel for
/// measured times. A log scale when the values span more than a factor of 20. Pure.
HeatMap computeHeat(HeatMetric metric, const SceneGraph& graph,
                    const std::vector<std::vector<int>>& kernels, const PlanData& plan,
                    const MeasuredTimes& measured = {});

/// A perceptually ordered colour for t in [0, 1] (dark blue → green → yellow).
QColor heatColor(double t, bool dark);

/// Draws the legend (title, colour bar, end values, note) into `area`; its height is
/// legendHeight().
void paintHeatLegend(QPainter& painter, const QRectF& area, const HeatLegend& legend, bool dark);
double legendHeight(const HeatLegend& legend);

}  // namespace souffle::views
