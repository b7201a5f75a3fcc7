/// \file Structural equality of loop-IR statements (bound vars and allocated buffers matched by
/// position, so two schedules of one TE built separately compare equal).
#pragma once

#include <cstdint>
#include <vector>

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

/// What statements equal_up_to_params (or equal) share, found in one walk.
struct StmtShape {
  /// A hash of statement and expression kinds, dtypes and immediates in tree order, and of which
  /// tensor each access names (stores, reads, fragment loads and stores), numbered by first
  /// access; no names, buffers, vars, Stage indices or Comment texts. For bucketing candidates
  /// before comparing them (the dependence proofs' memos), never as a proof of equality.
  uint64_t hash = 0;
  /// The tensors those accesses name that the statement does not allocate, in first-access
  /// order: what two statements are compared up to.
  std::vector<Tensor> touched;
};
StmtShape shape_of(const Stmt& s);

}  // namespace souffle::loop
