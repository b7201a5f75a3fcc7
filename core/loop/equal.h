/// \file Structural equality of loop-IR statements (bound vars and allocated buffers matched by
/// position, so two schedules of one TE built separately compare equal).
#pragma once

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Same statement tree, kinds, loop kinds, scopes, immediates and expressions. Vars bound by a
/// For or LetStmt and buffers declared by an Allocate are matched to their counterparts in b
/// (same shape and dtype); free vars and other buffers (params) must be the same object.
bool equal(const Stmt& a, const Stmt& b);

}  // namespace souffle::loop
