/// \file The emulator's clock for timeline records (docs/timeline.md). It is a cost model, not
/// a time: every warp advances one cycle per loop-IR statement it executes (a statement reached
/// by any lane of the warp), a block barrier brings a block's warps to its latest, a grid
/// barrier every warp to the grid's latest, and a flag wait a block to the latest release it
/// awaits. (Header-only: the emulator includes it once.) A record takes the clock of the warp
/// holding the block's thread 0; the emulated "SM" of a block is the block itself (the emulator has
/// no SMs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/loop/stmt.h"
#include "core/loop/timeline.h"
#include "core/support/tensor_data.h"

namespace souffle::emulate {

class TimelineClock {
 public:
  TimelineClock(int64_t grid, int64_t block);

  /// Whether a statement of this kind costs a cycle: barriers, waits, releases and records do
  /// not (their time is the waiting), nor the Seq and Comment that only hold or explain others.
  static bool is_work(loop::StmtKind k) {
    using K = loop::StmtKind;
    return k != K::TimelineRecord && k != K::BlockBarrier && k != K::GridBarrier &&
           k != K::FlagWait && k != K::FlagRelease && k != K::Seq && k != K::Comment;
  }
  /// One statement run by `lanes` (flat lane ids block * block_x + thread, ascending).
  void tick(const std::vector<int32_t>& lanes);
  /// A block barrier reached by the blocks of `lanes`.
  void block_barrier(const std::vector<int32_t>& lanes);
  /// A grid barrier every block reaches at once (lockstep emulation).
  void grid_barrier();
  /// Blocks run as tasks: block b arrives at the grid barrier of generation `gen`, and leaves
  /// it once every block arrived.
  void grid_arrive(int32_t b, int64_t gen);
  void grid_leave(int32_t b, int64_t gen);
  /// Block b releases a counter (after a block barrier), leaving it at `value`.
  void flag_release(const void* flags, int64_t index, int64_t value, int32_t b);
  /// Block b's wait for counters [first, first + count) to reach `target` was met.
  void flag_wait(const void* flags, int64_t first, int64_t count, int64_t target, int32_t b);
  /// A record statement reached by `lanes`.
  void record(const loop::TimelineRecord& r, const std::vector<int32_t>& lanes);

  /// Cycles blocks spent between a WaitBegin and a WaitEnd record, as the barriers and waits
  /// themselves measured them (thread 0's warp), over the recorded blocks.
  int64_t barrier_wait_cycles() const { return m_wait_cycles; }
  /// The records by buffer name (Int64 [rows, slots, 3]), for run_kernel to return.
  struct Buffer {
    Shape shape;
    std::vector<int64_t> words;
  };
  const std::map<std::string, Buffer>& buffers() const { return m_buffers; }

 private:
  int64_t warp0(int32_t b) const { return static_cast<int64_t>(b) * m_warps; }
  int64_t block_max(int32_t b) const;
  /// Brings every warp of block b to `t` (never back), counting thread 0's wait when open.
  void meet(int32_t b, int64_t t);

  int64_t m_grid, m_block, m_warps;
  std::vector<int64_t> m_cycles;  ///< per warp of the grid
  std::vector<char> m_open;       ///< per block: between a WaitBegin and a WaitEnd record
  std::vector<char> m_recorded;   ///< per block: it writes records
  int64_t m_wait_cycles = 0;
  std::map<int64_t, int64_t> m_gen_max;
  std::map<std::pair<const void*, int64_t>, std::vector<std::pair<int64_t, int64_t>>> m_releases;
  std::map<std::string, Buffer> m_buffers;
};

inline TimelineClock::TimelineClock(int64_t grid, int64_t block)
    : m_grid(grid),
      m_block(block),
      m_warps((block + loop::kWarpSize - 1) / loop::kWarpSize),
      m_cycles(static_cast<size_t>(grid * m_warps), 0),
      m_open(static_cast<size_t>(grid), 0),
      m_recorded(static_cast<size_t>(grid), 0) {}

inline void TimelineClock::tick(const std::vector<int32_t>& lanes) {
  const size_t n = lanes.size();
  if (m_block % loop::kWarpSize == 0) {
    // Blocks of whole warps: lane l is in the grid's warp l / 32; a whole warp present (32
    // consecutive lanes from a multiple of 32) is skipped at once.
    for (size_t i = 0; i < n;) {
      const int32_t l = lanes[i];
      const int64_t w = l / loop::kWarpSize;
      ++m_cycles[static_cast<size_t>(w)];
      if (l % loop::kWarpSize == 0 && i + 31 < n && lanes[i + 31] == l + 31) {
        i += 32;
        continue;
      }
      const int64_t next = (w + 1) * loop::kWarpSize;
      while (i < n && lanes[i] < next) ++i;
    }
    return;
  }
  int64_t last = -1;
  for (int32_t l : lanes) {
    const int64_t b = l / m_block;
    const int64_t w = b * m_warps + (l - b * m_block) / loop::kWarpSize;
    if (w != last) ++m_cycles[static_cast<size_t>(w)];
    last = w;
  }
}

inline int64_t TimelineClock::block_max(int32_t b) const {
  int64_t t = 0;
  for (int64_t w = 0; w < m_warps; ++w)
    t = std::max(t, m_cycles[static_cast<size_t>(warp0(b) + w)]);
  return t;
}

inline void TimelineClock::meet(int32_t b, int64_t t) {
  const size_t w0 = static_cast<size_t>(warp0(b));
  if (m_open[static_cast<size_t>(b)] && t > m_cycles[w0]) m_wait_cycles += t - m_cycles[w0];
  for (int64_t w = 0; w < m_warps; ++w) {
    int64_t& c = m_cycles[w0 + static_cast<size_t>(w)];
    c = std::max(c, t);
  }
}

inline void TimelineClock::block_barrier(const std::vector<int32_t>& lanes) {
  int64_t last = -1;
  for (int32_t l : lanes) {
    const int64_t b = l / m_block;
    if (b == last) continue;
    last = b;
    meet(static_cast<int32_t>(b), block_max(static_cast<int32_t>(b)));
  }
}

inline void TimelineClock::grid_barrier() {
  const int64_t t = *std::max_element(m_cycles.begin(), m_cycles.end());
  for (int64_t b = 0; b < m_grid; ++b) meet(static_cast<int32_t>(b), t);
}

inline void TimelineClock::grid_arrive(int32_t b, int64_t gen) {
  int64_t& m = m_gen_max[gen];
  m = std::max(m, block_max(b));
}

inline void TimelineClock::grid_leave(int32_t b, int64_t gen) {
  meet(b, m_gen_max[gen]);
}

inline void TimelineClock::flag_release(const void* flags, int64_t index, int64_t value,
                                        int32_t b) {
  meet(b, block_max(b));  // the block barrier before the release
  m_releases[{flags, index}].push_back({value, m_cycles[static_cast<size_t>(warp0(b))]});
}

inline void TimelineClock::flag_wait(const void* flags, int64_t first, int64_t count,
                                     int64_t target, int32_t b) {
  int64_t t = block_max(b);  // the block barrier after the wait
  for (int64_t i = first; i < first + count; ++i) {
    auto it = m_releases.find({flags, i});
    if (it == m_releases.end()) continue;
    for (const auto& [value, at] : it->second)
      if (value <= target) t = std::max(t, at);
  }
  meet(b, t);
}

inline void TimelineClock::record(const loop::TimelineRecord& r,
                                  const std::vector<int32_t>& lanes) {
  Buffer& buf = m_buffers[r.buffer->name];
  if (buf.words.empty()) {
    buf.shape = r.buffer->shape;
    buf.words.assign(static_cast<size_t>(shape_numel(buf.shape)), 0);
  }
  const int64_t tag = loop::timeline_tag(r.event, r.wait, r.stage);
  for (int32_t l : lanes) {
    if (l % m_block != 0) continue;  // thread 0 of its block writes
    const int32_t b = static_cast<int32_t>(l / m_block);
    if (b % r.stride != 0) continue;
    m_recorded[static_cast<size_t>(b)] = 1;
    if (r.event == loop::TimelineEvent::WaitBegin) m_open[static_cast<size_t>(b)] = 1;
    if (r.event == loop::TimelineEvent::WaitEnd) m_open[static_cast<size_t>(b)] = 0;
    const int64_t t = m_cycles[static_cast<size_t>(warp0(b))];
    const size_t at =
        static_cast<size_t>(((b / r.stride) * buf.shape[1] + r.slot) * loop::kTimelineWords);
    buf.words[at] = t;
    buf.words[at + 1] = t;
    buf.words[at + 2] = (static_cast<int64_t>(b) << 32) | tag;
  }
}

}  // namespace souffle::emulate
