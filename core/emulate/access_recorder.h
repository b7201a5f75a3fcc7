/// \file The emulator's side of access recording (emulate/access_record.h): the machine hands
/// every global and shared element access of the recorded kernel to an AccessRecorder, which
/// keeps a bitmap per (tensor, block or warp, phase) while the kernel runs and compacts them to
/// ranges when it ends. Internal to the emulator.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/emulate/access_record.h"

namespace souffle::emulate {

class AccessRecorder {
 public:
  /// `stage_names` / `stage_schedules` by StageInfo index.
  AccessRecorder(const AccessRecordOptions& options, std::string kernel, int64_t grid,
                 int64_t block_threads, std::vector<std::string> stage_names,
                 std::vector<std::string> stage_schedules);

  /// The slot of a tensor for `access` (the first call per tensor registers it).
  int32_t add_tensor(const std::string& name, const Shape& shape, DType dtype, TensorRole role,
                     int64_t numel, int64_t shared_bytes);
  /// Whether accesses in `stage` are recorded (options.stage -1 or equal).
  bool records(int stage) const { return m_opt.stage < 0 || stage == m_opt.stage; }
  /// With some blocks only (AccessRecordOptions::blocks): their threads, ascending, the lanes a
  /// kernel without flags runs; empty when every block is recorded.
  std::vector<int32_t> sample_lanes() const;
  /// One element access by global thread `lane` (block = lane / block_threads) at phase
  /// (`epoch`, `stage`); `element` indexes the tensor (a shared buffer's block copy).
  void access(int32_t slot, int64_t element, int32_t lane, bool write, int epoch, int stage);
  /// The kernel ended after `grid_barriers` grid barriers: compacts everything into a
  /// KernelAccess.
  KernelAccess finish(int grid_barriers);

 private:
  struct Unit {
    int32_t frame = 0;  ///< provisional frame id (m_frames)
    int32_t warp = -1;
    std::vector<uint64_t> rd, wr;
  };
  struct Slot {
    TensorAccess meta;
    std::vector<int32_t> read_count, first_touch;  ///< per element
    /// Global only, per element: the frame of the last write, and the last frame whose read of
    /// it was counted in an edge.
    std::vector<int32_t> last_write_frame, last_edge_frame;
    std::vector<Unit> units;
    std::vector<int32_t> unit_of_frame;  ///< frame id -> block unit, -1
    std::vector<int32_t> unit_of_warp;   ///< frame id * warps + warp -> warp unit, -1
    bool cut = false;
  };
  bool charge(int64_t bytes, const std::string& what);
  int32_t frame_id(int epoch, int stage, int32_t block);
  std::vector<uint64_t>& bits(Slot& s, Unit& u, bool write);

  AccessRecordOptions m_opt;
  std::string m_kernel;
  int64_t m_grid, m_block;
  int64_t m_warps;  ///< per block
  std::vector<std::string> m_stage_names, m_stage_schedules;
  std::vector<int32_t> m_sample;  ///< the recorded blocks, ascending; empty: all
  std::vector<char> m_in_sample;  ///< per block, when m_sample is not empty
  std::vector<Slot> m_slots;
  std::map<std::string, int32_t> m_slot_of;
  std::vector<AccessPhase> m_phases;   ///< phase ids in order met
  std::vector<AccessFrame> m_frames;   ///< provisional frame ids in order met
  std::vector<int32_t> m_frame_phase;  ///< frame id -> phase id
  std::map<AccessPhase, int32_t> m_phase_of;
  std::vector<int32_t> m_frame_of_block;  ///< for the current phase
  AccessPhase m_cur{-1, -2};
  int32_t m_cur_phase = -1;
  /// (tensor slot, producer frame, consumer frame) -> distinct elements
  std::map<std::tuple<int32_t, int32_t, int32_t>, int64_t> m_edges;
  int64_t m_bytes = 0;
  bool m_truncated = false;
  std::vector<std::string> m_cut;
};

}  // namespace souffle::emulate
