/// \file The exact semantics of the Hopper warpgroup statements (loop::WgmmaMma, WgmmaFence,
/// WgmmaCommit, WgmmaWait) that the emulator runs: the PTX ISA's accumulator layout of
/// wgmma.mma_async m64nNk16, the no-swizzle K-major shared-memory layout a matrix descriptor
/// names, one warpgroup's MMA, and the queue of accumulator writes that land only at a wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace souffle::emulate::wgmma {

/// Threads of one warpgroup (four warps).
inline constexpr int kWarpgroup = 128;

/// (row, column) in the 64 x n accumulator of element `i` (0 .. n/2-1) of the registers thread
/// `thread` (0..127 in its warpgroup) holds: see loop::WgmmaMma.
std::pair<int, int> accumulator_position(int thread, int i);

/// The byte offset from the descriptor's start of element (row `row` of M or N, `k`) of a
/// K-major operand without swizzle: 8 x 8 core matrices of 16-bit elements, 128 contiguous
/// bytes each, `lbo` bytes apart along K and `sbo` bytes apart along M or N.
int64_t operand_byte_offset(int64_t row, int64_t k, int64_t lbo, int64_t sbo);

/// D = A x B (+ C) for one warpgroup of m64nNk16: a is 64 x 16 row-major, b 16 x n row-major
/// (values already in f16/bf16), c and d hold thread t's element i at [t * n/2 + i]. Products
/// are exact in double and each output's sum is rounded to f32 once.
void warpgroup_mma(int64_t n, const std::vector<double>& a, const std::vector<double>& b,
                   const std::vector<double>& c, std::vector<double>& d);

/// The in-flight accumulator writes of each thread's wgmmas, in issue order, grouped by commit.
class Queue {
 public:
  struct Write {
    const void* buffer;  ///< the emulator's register buffer
    int64_t reg;         ///< flat register index in it
    double value;
  };
  void reset(size_t threads);
  bool active() const { return !m_open.empty(); }
  /// The value register `reg` of `buffer` holds once `thread`'s issued wgmmas complete (the
  /// latest in-flight write), or nullptr when none is in flight: wgmmas chain on it.
  const double* latest(int32_t thread, const void* buffer, int64_t reg) const;
  void issue(int32_t thread, Write w);
  void commit(int32_t thread);
  /// Completes `thread`'s oldest committed groups until at most `keep` remain; their writes in
  /// order.
  std::vector<Write> wait(int32_t thread, int64_t keep);
  /// Whether any write of `buffer` is still in flight (issued, committed or not).
  bool in_flight(const void* buffer) const;
  bool fenced(int32_t thread) const { return m_fenced[static_cast<size_t>(thread)] != 0; }
  void set_fenced(int32_t thread, bool on) { m_fenced[static_cast<size_t>(thread)] = on; }

 private:
  std::vector<std::vector<Write>> m_open;
  std::vector<std::vector<std::vector<Write>>> m_groups;
  std::vector<uint8_t> m_fenced;
};

}  // namespace souffle::emulate::wgmma
