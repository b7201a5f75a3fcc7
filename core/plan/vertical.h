/// \file Vertical transformation: chains of one-relies-on-one TEs composed through their index
/// maps.
#pragma once

#include <unordered_map>

#include "core/plan/horizontal.h"

namespace souffle::plan {

/// A producer recomputed in its consumers costs at most this many FLOPs per element ...
inline constexpr int64_t kCheapRecomputeFlops = 4;
/// ... and is evaluated at most this many times per element it would have stored.
inline constexpr double kMaxRecomputeFactor = 4.0;
/// A consumer body is not grown past this many distinct expression nodes by inlining.
inline constexpr size_t kMaxInlinedBodyNodes = 4096;

/// Inlines producers into their consumers: every read P[e...] in a consumer C becomes P's body
/// with P's axis vars replaced by e..., then index arithmetic is simplified (constant folding,
/// floordiv/floormod of affine expressions by constants when the var ranges prove it, guards
/// decided by ranges). One site per producer->consumer edge of the input program, key
/// "v:" + producer + ">" + consumer. An edge P->C is applied when P is not a reduction, not a
/// program output, and one of:
///  - P does no arithmetic (0 FLOPs: reshape, transpose, squeeze, slice, expand, broadcast, pad,
///    concat, gather, cast): it vanishes into any consumer, GEMMs and convs included;
///  - C is P's only consumer and evaluates each element of P at most once (element-wise chains);
///  - P is cheap to recompute: at most kCheapRecomputeFlops FLOPs per element and C evaluates
///    it at most kMaxRecomputeFactor times per element of P.
/// Evaluations of P by C are C's iterations (axes x reduce axes) times the distinct reads of P
/// in C. Forcing an edge ignores the cost rule (a reduction producer is still refused); a
/// producer that keeps a consumer (or is an output) stays in the program. Inlining never grows
/// a body past kMaxInlinedBodyNodes.
TransformResult vertical_transform(const te::TeProgram& program, const analysis::Analysis& analysis,
                                   const TransformOptions& options = {});

/// The substitution step of vertical_transform, on its own: every read of a tensor in `from`
/// (an output tensor -> the op producing it) in `consumer`'s body becomes that producer's body
/// with its axis vars replaced by the read's indices (reads with structurally equal indices share
/// one copy, so the body stays a DAG), then simplify_index_math. The producers' own reads are
/// not inlined further: pass them already rewritten. Returns `consumer` when it reads none.
te::Op inline_reads(const te::Op& consumer,
                    const std::unordered_map<const te::TensorNode*, const te::ComputeOp*>& from);

/// The index simplification that vertical_transform applies, on its own: rewrites int64 index
/// arithmetic, comparisons and selects of `op` whose value the ranges of its vars decide;
/// floating-point arithmetic is never touched. Returns `op` itself when nothing changes.
te::Op simplify_index_math(const te::Op& op);

}  // namespace souffle::plan
