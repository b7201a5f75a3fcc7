/// \file Global analysis of a TE program: per-TE characterization, the tensor dependency graph,
/// reuse.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/te/expr.h"

namespace souffle::analysis {

/// Arithmetic intensity (FLOPs per element accessed) at or above which a TE is compute-intensive.
/// Element-wise chains and reductions stay below it even when heavy (GELU with erf ~2.5, a
/// variance ~3, a 5-op tanh-GELU ~4), while the contractions that deserve a tuned schedule stay
/// above it (a GEMM with every dimension >= 16 is >= 10.7, a 3x3 depthwise conv ~9, a grouped
/// 3x3 conv with 4 channels per group ~36). A contraction below it (a batch-1 matrix-vector
/// product, ~2: LSTM gates, MMoE experts) is still compute-intensive: it is what the paper
/// schedules as a GEMM and what memory-intensive neighbours fuse into; its low intensity is kept
/// in TeInfo::arithmetic_intensity for the cost model.
inline constexpr double kComputeIntensityThreshold = 8.0;

/// How each output element of a TE relies on one of its inputs.
enum class AccessKind : uint8_t {
  OneReliesOnOne,   ///< reads exactly one element (one index tuple, not varying with reduce axes)
  OneReliesOnMany,  ///< reads several: varies with reduce axes, or several distinct index tuples
};
enum class Intensity : uint8_t { Compute, Memory };
const char* access_kind_name(AccessKind k);  ///< "one-relies-on-one", "one-relies-on-many"
const char* intensity_name(Intensity k);     ///< "compute-intensive", "memory-intensive"

/// One distinct read of a tensor in a TE body (reads with structurally equal indices are one).
struct ReadInfo {
  std::string indices;            ///< printed index tuple, "[i0, (i1 + 1)]"
  bool uses_reduce_axes = false;  ///< varies with the TE's reduce axes
  bool data_dependent = false;    ///< an index reads a tensor (gather)
  /// Every index is affine in the axis/reduce vars up to floordiv/floormod (and C div/mod) by
  /// positive constants.
  bool quasi_affine = false;
  /// The map from the TE's output axes to the index tuple is proven injective over the whole
  /// iteration box (guards ignored, so a guarded read may be reported non-injective). Never
  /// true for reads that vary with reduce axes.
  bool injective = false;
  /// Output axes (by position) the read does not depend on: broadcast axes.
  std::vector<int> broadcast_axes;
};

/// How a TE reads one of its input tensors.
struct InputAccess {
  int tensor = -1;  ///< index into Analysis::tensors
  std::string name;
  AccessKind kind = AccessKind::OneReliesOnOne;
  bool injective = false;     ///< one-relies-on-one through a proven-injective map
  bool quasi_affine = false;  ///< all of its reads are quasi-affine
  int64_t elements = 0;       ///< elements counted as read once: min(tensor size, iterations)
  std::vector<ReadInfo> reads;
};

struct TeInfo {
  int op = -1;  ///< index into TeProgram::ops (and Analysis::tes)
  std::string name, origin_node, origin_op;
  Shape shape;
  int output_tensor = -1;
  bool is_reduction = false;
  int64_t iterations = 0;           ///< product of the axis and reduce extents
  int64_t flops_per_point = 0;      ///< arithmetic ops per body evaluation (+1 for the fold)
  int64_t flops = 0;                ///< flops_per_point x iterations
  int64_t bytes_read = 0;           ///< each input tensor read once (InputAccess::elements)
  int64_t bytes_written = 0;        ///< the output written once
  int64_t elements_accessed = 0;    ///< input elements + output elements
  double arithmetic_intensity = 0;  ///< flops / elements_accessed
  Intensity kind = Intensity::Memory;
  std::string kind_reason;  ///< "intensity 42.67 >= 8", "contraction (intensity 1.98 < 8)", ...
  /// A single Read with an injective quasi-affine map and no arithmetic or conversion: a
  /// reshape, transpose, squeeze, slice-free permutation.
  bool is_pure_view = false;
  /// A sum of products of at least two inputs that vary with the reduce axes (GEMM, conv).
  bool is_contraction = false;
  std::vector<InputAccess> inputs;  ///< in order of first read
  int level = 0;  ///< BFS depth from the program inputs (0: reads only inputs/constants)
};

struct TensorInfo {
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  te::TensorNode::Source source = te::TensorNode::Source::Compute;
  int64_t elements = 0;
  int64_t bytes = 0;
  int producer = -1;           ///< op index, -1 for inputs and constants
  std::vector<int> consumers;  ///< op indices, ascending, each once
  bool is_output = false;
  /// Live range in op indices: from the producer (or the first consumer for inputs and
  /// constants) to the last consumer (or the producer when never read); outputs live to the end
  /// (last_op = number of ops).
  int first_op = -1, last_op = -1;
};

enum class ReuseKind : uint8_t {
  Spatial,   ///< read by several TEs independent of each other (Q/K/V reading one input)
  Temporal,  ///< read again by a TE that depends on an earlier reader (softmax's exp output)
};
const char* reuse_kind_name(ReuseKind k);  ///< "spatial", "temporal"

struct ReuseSite {
  ReuseKind kind = ReuseKind::Spatial;
  int tensor = -1;
  std::string name;
  int64_t elements = 0;
  int64_t bytes = 0;
  /// The readers that take part: independent pairs (spatial) or pairs where the later reader
  /// depends on the earlier one (temporal); ascending op indices.
  std::vector<int> readers;
};

struct Analysis {
  std::string program;
  std::vector<TeInfo> tes;          ///< one per op, in program order
  std::vector<TensorInfo> tensors;  ///< inputs, then constants and op outputs as first met
  std::vector<int> bfs_order;       ///< op indices, by BFS level from the inputs, then index
  std::vector<ReuseSite> reuse;     ///< by tensor index, spatial before temporal
  int64_t total_flops = 0;
  int64_t total_bytes = 0;  ///< sum of the TEs' bytes_read + bytes_written
  int compute_intensive = 0, memory_intensive = 0, pure_views = 0;

  /// Index of the tensor with this name, -1 when none.
  int tensor_index(const std::string& name) const;
};

/// Characterizes every TE and builds the dependency graph and the reuse sites.
Analysis analyze(const te::TeProgram& program);

/// Analyzes one op on its own (tensor indices in the result are local: in order of first read).
TeInfo analyze_op(const te::ComputeOp& op);

/// Stable, readable text (tests compare it; `--dump-after analyze` prints it).
std::string print(const Analysis& a);

}  // namespace souffle::analysis
