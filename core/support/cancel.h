/// \file Cancelling long work: a flag another thread sets (the explorer's Cancel, a caller's
/// deadline), checked between the units of the work (a partition's kernels, an NVRTC program),
/// so that the work stops there instead of finishing in the background.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace souffle {

/// Thrown where work finds its cancel flag set; what it had built so far is dropped.
class Cancelled : public std::runtime_error {
 public:
  explicit Cancelled(const std::string& where) : std::runtime_error("cancelled " + where) {}
};

/// Throws Cancelled("while " + `doing`) when `cancel` is set; a null flag is never set.
inline void check_cancel(const std::atomic<bool>* cancel, const char* doing) {
  if (cancel && cancel->load(std::memory_order_relaxed))
    throw Cancelled(std::string("while ") + doing);
}

}  // namespace souffle
