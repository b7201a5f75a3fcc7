/// \file Symbolic dependence proofs between the stages of a merged kernel: which producer blocks
/// each consumer block reads, derived from the (quasi-)affine index maps of the stages' stores
/// and loads and their block mappings as integer intervals over the tensor, at any size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule/ownership.h"

namespace souffle::schedule {

/// What orders a reading stage after the stages that wrote a tensor, proven symbolically.
struct DependenceProof {
  /// Thread or Block: as in OwnershipProof (nothing, or a block barrier, suffices). None with
  /// `mapped`: some block reads what other blocks wrote, and `producers` says exactly which, so
  /// per-dependency flags suffice. None without `mapped`: no order weaker than a grid barrier
  /// can be proven (`reason` says why).
  Ownership level = Ownership::None;
  bool mapped = false;
  /// With `mapped` and level None, the first cross-block dependency ("block 0 reads T element
  /// 16, which block 1 writes"); without `mapped`, why nothing could be proven.
  std::string reason;
  /// Consumer block b reads what producers[offsets[b] .. offsets[b + 1]) wrote (sorted, each
  /// once; blocks the reading stage does not run read nothing). offsets has grid + 1 entries.
  std::vector<int64_t> offsets;
  std::vector<ProducerBlock> producers;
  /// Per block: the lowest and highest row-major flat index of the tensor the block may touch
  /// (writes and reads, an over-approximation); lo > hi for a block that touches none.
  std::vector<int64_t> lo, hi;
  bool writers_read = false;  ///< a writer statement also reads the tensor
  int64_t steps = 0;          ///< index regions evaluated (blocks x enumerated loop points)

  /// The blocks consumer block b waits for.
  std::vector<ProducerBlock> producers_of(int64_t b) const;
  /// The most producer blocks any consumer block waits for.
  int64_t max_producers() const;
  /// As an OwnershipProof (level, reason, lo/hi, writers_read) for callers of the enumerating
  /// prover's result.
  OwnershipProof as_ownership() const;
};

/// Proves the order `q.reader` needs after `q.writers` without enumerating accesses: each
/// stage's statements are walked once, symbolically; every integer index becomes a sum of
/// atoms (variables, floor-div and mod of sums by constants, products, min/max, data) whose
/// digits are recombined (x / c * c + x % c is x); then, block by block, the loops that deal
/// work over blocks (tile rounds `round * grid + bx`, grid-stride loops `(it * grid + bx) *
/// block + tx`) are enumerated and every other loop, the thread index and data-dependent
/// indices are kept as intervals, giving per block a set of index regions (a box per dimension
/// intersected with a row-major flat interval) that over-approximates what the block writes
/// or reads. Consumer block b depends on producer block a exactly when a region a writes and a
/// region b reads share an element. Thread level additionally needs the reader's index maps to
/// equal the only writer's, which is injective over the thread and its loops. Sound: a
/// dependency it cannot rule out is kept. `q.max_steps` bounds the regions evaluated; past it
/// the proof is refused (None, not mapped).
DependenceProof prove_dependence(const OwnershipQuery& q);

/// The enumerating prover's exact answer in the same form (tests on small shapes): every block
/// and thread of q walked as prove_ownership does, recording per consumer block the producer
/// blocks whose writes it reads. Not mapped when the walk fails or runs past q.max_steps.
DependenceProof enumerate_dependence(const OwnershipQuery& q);

}  // namespace souffle::schedule
