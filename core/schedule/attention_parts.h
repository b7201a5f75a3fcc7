/// \file Pieces both fused attention stages (attention.cpp in f32, attention_mma.cpp on tensor
/// cores) are built from: the threads' walk over a tile's elements and the online softmax's
/// statistics of one row.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/loop/stmt.h"

namespace souffle::schedule::detail {

/// Thread `tx` of `threads` takes the elements e = l * threads + tx of `count` (l from 0, a
/// guard where count is not a multiple of threads): `body(l, e)`. Its loop variables are named
/// after `tag`.
loop::Stmt per_thread_elements(
    const std::string& tag, int64_t count, int64_t threads, const te::Expr& tx,
    const std::function<loop::Stmt(const te::Expr& l, const te::Expr& e)>& body);

/// `body` with `row` and `col` bound to the digits of `e` over `cols` columns.
loop::Stmt bind_row_col(const te::Expr& e, const te::Expr& row, const te::Expr& col, int64_t cols,
                        loop::Stmt body);

/// The shared and per-thread buffers of the online softmax.
struct OnlineSoftmax {
  te::Tensor scores;  ///< [rows, >= keys] f32: the tile's softmax inputs
  /// [rows, >= keys]: where the tile's probabilities go, converted to its type; undefined: into
  /// `scores`, in place.
  te::Tensor probs;
  te::Tensor max, sum, alpha;   ///< [rows] f32: running max and sum, the tile's rescale
  te::Tensor row_max, row_sum;  ///< [1] f32, the thread's own
};

/// Row `e`'s statistics after a tile of `keys` scores: the new max over the tile, the rescale
/// exp(old max - new max) of what came before (into alpha), the tile's probabilities against the
/// new max and the running sum. A row whose max is still -inf (all masked so far) takes 0 as its
/// reference, so no inf - inf.
loop::Stmt online_softmax_row(const te::Expr& e, int64_t keys, const OnlineSoftmax& s);

}  // namespace souffle::schedule::detail
