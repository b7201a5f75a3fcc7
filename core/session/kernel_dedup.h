/// \file One compile per distinct code: a kernel's CUDA C with every name that comes from the
/// model (the kernel's and its stage functions', its tensors', loop variables') replaced by names
/// given in order of first use, and its comments dropped. Two launches whose canonical texts are
/// equal run the same code on other tensors, so one compiled image serves both.
#pragma once

#include <set>
#include <string>

#include "core/loop/stmt.h"

namespace souffle {

struct CanonicalKernel {
  /// The translation unit to compile: the kernel's source with the model's names replaced and
  /// comments blanked, line for line (an NVRTC log's line numbers point into the original).
  std::string source;
  /// The `extern "C" __global__` function's name in `source`: "souffle_k" and a hash of the
  /// code, so that equal code has one name in every plan, model and process.
  std::string entry;
};

/// The names `cuda` may declare for kernel `k` emitted as `name`: the identifiers of its
/// tensors (parameters, tensors read, allocated and shared buffers) and loop or let variables.
/// The emitter takes each of them as it is or with a "_N" suffix.
std::set<std::string> declared_name_bases(const loop::Kernel& k);

/// The canonical text of `cuda` (kernel `name`, whose declared names come from `bases`): every
/// identifier that is `name`, starts with `name` + "_stage", or is a base with or without a
/// "_N" suffix is renamed `_cN` in order of first appearance (the kernel itself then named
/// `entry`); `//` and `/* */` comments become blanks with their line breaks kept. String and
/// character literals and every other identifier are kept.
CanonicalKernel canonical_kernel(const std::string& cuda, const std::string& name,
                                 const std::set<std::string>& bases);
/// canonical_kernel(cuda, name, declared_name_bases(k)).
CanonicalKernel canonical_kernel(const loop::Kernel& k, const std::string& name,
                                 const std::string& cuda);

/// 64-bit FNV-1a of `s` as 16 hex digits.
std::string fnv_hex(const std::string& s);

}  // namespace souffle
