/// \file Weight panels: the weight operand of a GEMM kept in shared memory across the stages of
/// one kernel that multiply by the same weights. An LSTM layer's gate GEMM runs once per time
/// step on the same W and R; in a persistent kernel whose block computes the same output tile at
/// every step, the block's slice of the weights (all of K, its BN columns) is loaded once into
/// a kernel-lifetime shared buffer and read from there by every later step, instead of being
/// streamed through L2 each step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"

namespace souffle::schedule {

/// What a GEMM stage's panel would hold: the SIMT template's operand B for the block's column
/// tile, every K (rounded up to whole BK chunks) by BN columns.
struct PanelShape {
  /// Operand B with the GEMM's axes renamed by position, its extents and the tile: stages with
  /// equal keys hold equal panels for equal tiles.
  std::string key;
  int64_t rows = 0, cols = 0;
  DType dtype = DType::Float32;
  int64_t bytes() const;
};

/// The panel the GEMM-like `op` could keep under `c` (its tile and grid cap): the SIMT template
/// (tensor-core GEMMs are not taken), one output tile per block (no rounds of tiles: a block
/// must compute the same tile in every stage of its group), and an operand B that reads no
/// tensor `written` names (a weight: nothing the kernel writes). Nothing otherwise.
std::optional<PanelShape> weight_panel_shape(
    const te::ComputeOp& op, const ScheduleConfig& c,
    const std::function<bool(const te::TensorNode*)>& written);

/// A GEMM stage's use of a panel (schedule_fused's `panel`).
struct WeightPanel {
  /// Shared [rows, cols] of the panel's shape. The stage allocates it around its body (so that
  /// it stands alone); merge_stages allocates it once for the whole kernel instead
  /// (MergeOptions::kernel_shared), which is what keeps it between stages.
  te::Tensor buffer;
  /// This stage fills the panel (after a block barrier) before its K loop. Else an earlier
  /// stage of the kernel filled it on the same blocks with the same weights for the same tiles,
  /// and no stage on those blocks has filled it with others since.
  bool load = true;
};

/// Which stages of one kernel keep their weights in panels.
struct PanelAssignment {
  std::vector<std::optional<WeightPanel>> stage;  ///< per stage; nothing: as before
  std::vector<te::Tensor> buffers;                ///< MergeOptions::kernel_shared
  int64_t bytes = 0;                              ///< the buffers, as the arena pads them
  int groups = 0;                                 ///< distinct weights held in panels
  int loads = 0;                                  ///< stages that fill a panel
  int reuses = 0;  ///< stages that read a panel an earlier stage filled
};

/// Panels for the stages of a kernel in merge order: `shapes[i]` (weight_panel_shape; nothing
/// for stages that cannot keep one) of stage i running on blocks [offsets[i], offsets[i] +
/// grids[i]). Weights read by at least two stages get a panel; stages of one buffer shape share
/// one buffer, shapes taken by the bytes of weight loads they save, largest first, while the
/// buffers fit `budget` bytes per block. A stage loads its panel unless every block it runs on
/// already holds the same weights for the tile it computes (it is the same weights' stage at
/// the same offset, with no other weights loaded into that buffer on those blocks between).
PanelAssignment assign_weight_panels(const std::vector<std::optional<PanelShape>>& shapes,
                                     const std::vector<int64_t>& offsets,
                                     const std::vector<int64_t>& grids, int64_t budget,
                                     const std::string& kernel_name);

}  // namespace souffle::schedule
