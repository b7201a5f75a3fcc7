/// \file Block-ownership proofs between the stages of a merged kernel: whether every element of a
/// tensor that a stage reads was written by the same block (or the same thread) earlier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/loop/stmt.h"

namespace souffle::schedule {

/// What orders a later stage's reads of a tensor after an earlier stage's writes of it.
/// Thread: each element a thread reads, that thread wrote (program order suffices). Block: each
/// element a block reads, that block and no other wrote (a block barrier suffices). None: not
/// provable (a grid barrier is needed).
enum class Ownership : uint8_t { None, Block, Thread };
const char* ownership_name(Ownership o);  ///< "none", "block", "thread"

/// A producer a consumer block depends on: a writer statement (index into
/// OwnershipQuery::writers) and the block of it that writes what the consumer reads.
struct ProducerBlock {
  int32_t writer = 0;
  int32_t block = 0;
  bool operator==(const ProducerBlock& o) const { return writer == o.writer && block == o.block; }
  bool operator<(const ProducerBlock& o) const {
    return writer != o.writer ? writer < o.writer : block < o.block;
  }
};

struct OwnershipQuery {
  te::Tensor tensor;                ///< a global tensor
  std::vector<loop::Stmt> writers;  ///< statements (earlier stages) that write it
  loop::Stmt reader;                ///< the later stage; it must not write the tensor
  te::Expr bx, tx;                  ///< the block and thread vars of both
  int64_t grid = 1, block = 1;      ///< the launch both run under
  /// Statements and accesses the proof may visit before it gives up (unproven = None).
  int64_t max_steps = int64_t{1} << 24;
  /// Keep walking past a cross-block read and record, per reading block, the producer blocks
  /// whose writes it reads (OwnershipProof::producers): the exact answer symbolic proofs are
  /// checked against in tests.
  bool collect_producers = false;
};

struct OwnershipProof {
  Ownership level = Ownership::None;
  std::string reason;  ///< why not, when None
  /// Per block: the lowest and highest row-major flat index of the tensor the block touches
  /// (writes and reads); lo > hi for a block that touches none. Filled when level != None.
  std::vector<int64_t> lo, hi;
  bool writers_read = false;  ///< a writer statement also reads the tensor
  int64_t steps = 0;          ///< statements and accesses visited (0 when refused up front)
  /// With OwnershipQuery::collect_producers and a walk that finished: per block of the grid,
  /// the writers' blocks whose writes it reads (unsorted, repeats allowed).
  std::vector<std::vector<ProducerBlock>> producers;
};

/// An upper bound of the steps prove_ownership would take on `q`: every block and thread that a
/// statement's guard lets in (merge_stages' `bx < G && tx < T`; the others are not walked)
/// times its loop trips (a loop whose extent is not a constant counts once: such a walk is
/// bounded by max_steps alone). prove_ownership refuses a query whose bound reaches max_steps
/// without walking it.
int64_t ownership_step_bound(const OwnershipQuery& q);

/// Decides ownership by evaluating, for every block and thread, the index expressions of every
/// access of the tensor (loops, lets and conditions over integers run concretely; a write under
/// a condition that cannot be evaluated counts as possible but not certain, an index that
/// cannot be evaluated makes the proof fail). Sound: anything it cannot show is None.
OwnershipProof prove_ownership(const OwnershipQuery& q);

}  // namespace souffle::schedule
