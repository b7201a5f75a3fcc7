/// \file Verifier for loop-IR kernels; runs after each pass in tests and debug builds.
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Checks: every Var is bound by an enclosing For or LetStmt (and bound once on each path);
/// every buffer accessed is a kernel param, a constant or allocated by an enclosing Allocate;
/// block barriers never sit under thread-divergent control flow and grid barriers never under
/// block- or thread-divergent control flow; thread-binding loops match the launch configuration;
/// grid barriers need a cooperative launch; stage indices name Kernel::stages; fragments are
/// touched only by the Fragment* statements, with matching roles, types and MMA shapes, from
/// shared or global tiles whose leading dimension is a multiple of 16 bytes. Throws
/// InternalError naming the kernel and the problem.
void verify(const Kernel& k);

}  // namespace souffle::loop
