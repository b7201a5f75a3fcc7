/// \file Chrome trace JSON (opens in Perfetto and chrome://tracing) of profile runs: one track
/// per strategy, each kernel at its median gap and duration.
#pragma once

#include <string>
#include <vector>

#include "core/session/profile.h"

namespace souffle {

/// The trace of `reports` (one process per strategy). Kernels are laid out as one
/// representative run built from the medians (gap before, then duration), since medians of
/// different runs have no common clock; the trace's metadata says so, names the timer and
/// device, and labels emulator times as CPU wall times.
std::string chrome_trace_json(const std::vector<ProfileReport>& reports);

}  // namespace souffle
