/// \file Wavefront packing of a cooperative kernel's stages: stages that do not depend on each
/// other run side by side on disjoint ranges of blocks between the same barriers (an LSTM's
/// layer l at step t beside layer l + 1 at step t - 1), instead of one after the other with a
/// barrier between each dependent pair in program order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/loop/stmt.h"

namespace souffle::schedule {

/// Where each stage of a kernel runs: its place in the order, its first block and its wave.
struct WaveLayout {
  /// Stage indices (into the stages given) in the order they are merged; a topological order
  /// of their dependences.
  std::vector<size_t> order;
  /// Per stage (indexed like the stages given): the first block it runs on (blocks offset ..
  /// offset + its grid - 1), and its wave: stages of one wave depend on no stage of the same
  /// wave and run on disjoint blocks.
  std::vector<int64_t> offset;
  std::vector<int> wave;
  /// Dependence levels (the longest chain of dependent stages): the fewest barrier intervals
  /// any order of these stages can have when every dependence needs one.
  int levels = 0;
  /// The barrier intervals of program order under the same rule (a stage that depends on one
  /// since the last interval starts the next).
  int program_intervals = 0;
  /// The grid the packed kernel needs: the largest offset + grid of any stage.
  int64_t grid = 0;
  /// Whether the layout differs from program order with every stage at block 0.
  bool changes() const;
  /// "109 waves instead of 1000 barrier intervals in program order; up to 10 stages side by side"
  std::string summary() const;
};

/// Packs `stages` (single-stage kernels of one partition, in program order) into waves.
/// Stage j depends on stage i < j when it reads what i writes, or writes what i reads or
/// writes. Each stage's level is one more than its highest-levelled dependence; the stages of
/// a level, in program order, fill waves side by side while their grids together stay within
/// `grid_cap` blocks (0: within the largest stage grid), a stage that is itself several phases
/// (grid barriers inside) alone in its wave. The order lists the waves by level. When packing
/// gains nothing (no fewer levels than program order's intervals) the layout is program order
/// at block 0.
///
/// `lanes` (optional, one per stage, "" for none) keep a block's work the same from wave to
/// wave: a stage of a lane (a recurrent layer's gate GEMMs, whose weights stay in shared
/// memory) takes the first block its lane's first stage got wherever that range is free in its
/// wave, so a layer keeps its blocks when the layers beside it finish. `follow` (optional, a
/// stage index or -1 per stage) puts a stage on the blocks of an earlier one where they are
/// free (an LSTM's cell update on its gates' tiles). Otherwise a stage takes the lowest free
/// range of its wave.
WaveLayout pack_waves(const std::vector<loop::Kernel>& stages, int64_t grid_cap,
                      const std::vector<std::string>& lanes = {},
                      const std::vector<int>& follow = {});

}  // namespace souffle::schedule
