/// \file Structural equality of loop-IR statements (bound vars and allocated buffers matched by
/// position, so two schedules of one TE built separately compare equal).
#pragma once

#include <cstdint>

#include "core/loop/stmt.h"

namespace souffle::loop {

/// Same statement tree, kinds, loop kinds, scopes, immediates and expressions. Vars bound by a
/// For or LetStmt and buffers declared by an Allocate are matched to their counterparts in b
/// (same shape and dtype); free vars and other buffers (params) must be the same object.
bool equal(const Stmt& a, const Stmt& b);

/// equal, with each buffer of `a_params` matched to the buffer of `b_params` at the same
/// position (same shape and dtype, each used once), Stage indices and Comment texts ignored:
/// whether two stages run the same code on other tensors (one BERT layer's stage and the next
/// layer's), so that one function can serve both.
bool equal_up_to_params(const Stmt& a, const Stmt& b, const std::vector<Tensor>& a_params,
                        const std::vector<Tensor>& b_params);

/// A hash that statements equal_up_to_params (or equal) share: statement and expression kinds,
/// dtypes and immediates in tree order; no names, buffers, vars, Stage indices or Comment texts.
/// For bucketing candidates before comparing them (the dependence proofs' memos), never as a
/// proof of equality.
uint64_t shape_fingerprint(const Stmt& s);

}  // namespace souffle::loop
