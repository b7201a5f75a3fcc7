/// \file CPU emulation of loop-IR kernels: every block and thread, shared and local memory, both
/// barriers, atomics and warp shuffles, with out-of-bounds, uninitialized-read and data-race
/// checks.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/loop/stmt.h"
#include "core/support/tensor_data.h"

namespace souffle::emulate {

/// A kernel did something a GPU would not do correctly: an out-of-bounds access, a read of
/// memory nothing wrote, a data race, a barrier in divergent code. Names the kernel and stage.
class EmulationError : public std::runtime_error {
 public:
  EmulationError(std::string kernel, std::string stage, std::string detail);
  const std::string& kernel() const { return m_kernel; }
  const std::string& stage() const { return m_stage; }
  const std::string& detail() const { return m_detail; }

 private:
  std::string m_kernel, m_stage, m_detail;
};

struct EmulateOptions {
  /// Shared memory: two threads of one block touch one address between two barriers, at least
  /// one writing. Global memory: two blocks do so between two grid barriers. Atomics excepted.
  bool check_races = true;
  /// A read of an element no one wrote (kernel outputs and scratch start unwritten).
  bool check_uninitialized = true;
};

/// Global buffers by tensor name.
using Buffers = std::map<std::string, std::shared_ptr<TensorData>>;

/// Runs one kernel. Inputs are looked up by name in `buffers` (constants fall back to their
/// data); outputs missing from `buffers` are created. Elements of buffers passed in count as
/// written. Throws EmulationError.
void run_kernel(const loop::Kernel& kernel, Buffers& buffers, const EmulateOptions& options = {});

/// Runs the kernels in order over shared global buffers and returns every global buffer
/// (model outputs and intermediates) by name. Uninitialized-read checking spans kernels.
Buffers run_kernels(const loop::KernelSet& kernels, const Buffers& inputs,
                    const EmulateOptions& options = {});

}  // namespace souffle::emulate
