/// \file What identifies this build's code: a hash over the library's sources and the compiler
/// and flags they were built with (cmake/build_id.cmake). Results a later process reads back
/// from disk without recomputing them (partition prices) are keyed by it, so that a build with
/// any change to the code never takes another build's results.
#pragma once

#include <string_view>

namespace souffle {

/// 64 hex digits; equal for two builds of the same sources with the same compiler and flags.
std::string_view build_id();

}  // namespace souffle
