/// \file Fusion plans: strategies (unfused, rules, souffle), partitions into kernels with stages,
/// the reasons behind every cut and fusion, cost, printer and verifier.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/analysis/analysis.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/plan/decisions.h"
#include "core/plan/horizontal.h"
#include "core/te/expr.h"

namespace souffle::plan {

enum class Strategy : uint8_t { Unfused, Rules, Souffle };
const char* strategy_name(Strategy s);  ///< "unfused", "rules", "souffle"
/// Parses a strategy name; UserError listing the names otherwise.
Strategy parse_strategy(const std::string& name);
const std::vector<Strategy>& all_strategies();

/// The GEMM tile the kernel tuner chose for one compute-intensive TE of a stage.
struct TileChoice {
  int te = -1;  ///< op index into FusionPlan::program
  int64_t bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  bool double_buffer = false;
  std::string why;  ///< "gemm 64x32x16 tile 4x2, double-buffered, 24 blocks = 0.11 waves ..."
  /// A tile of the tensor-core template (tf32/fp16/bf16): tm x tn are 16x16 fragments per warp.
  bool tensor_core = false;
};

/// One stage of a kernel: TEs that run between two grid syncs on one mapping of blocks.
struct Stage {
  std::vector<int> tes;  ///< op indices into FusionPlan::program, in execution order
  std::string kind;      ///< "compute", "memory", "reduction", "view"
  int64_t blocks = 0;    ///< blocks the stage needs (compute: one tile each; memory: grid-stride)
  int threads = 0;
  std::string schedule;      ///< "128x128 tiles, 54 blocks of 256 threads", "grid-stride"
  bool sync_before = false;  ///< a grid sync separates it from the previous stage
  /// The GEMM tiles the kernel tuner chose (tune_plan); empty until tuned.
  std::vector<TileChoice> tiles;
};

/// One kernel.
struct Partition {
  int id = 0;
  std::vector<int> tes;          ///< op indices, in execution order
  std::vector<std::string> ops;  ///< ONNX nodes its TEs come from, first appearance order
  std::vector<Stage> stages;
  std::string kind;  ///< "compute" (has a compute-intensive TE), "memory", "view"
  int grid_syncs = 0;
  bool cooperative = false;  ///< launched cooperatively (all blocks co-resident), needed for syncs
  int64_t blocks = 0;        ///< launch grid: the most any stage needs (capped at co-residency)
  int threads = 0;           ///< launch block size: the most any stage needs
  int regs_per_thread = 0;
  int64_t smem_bytes = 0;
  int64_t co_resident = 0;           ///< blocks of this launch configuration resident at once
  std::vector<std::string> on_chip;  ///< intermediates kept on chip across syncs
  int64_t flops = 0;
  int64_t dram_bytes = 0;
  double est_time_us = 0;
  std::vector<std::string> reasons;  ///< why it starts here, why each TE joined
};

/// One observable step of the pipeline: its name, time, and a printable snapshot.
struct PassRecord {
  std::string name;  ///< "analyze", "horizontal", "vertical", "partition", "cost", ...
  double ms = 0;
  std::string snapshot;
};
/// Called after each step; `--dump-after STEP` prints the snapshot of STEP.
using PassInstrument = std::function<void(const PassRecord&)>;

struct PlanOptions {
  Strategy strategy = Strategy::Souffle;
  gpu::GpuSpec gpu;  ///< must be filled (gpu::gpu_spec("a100"))
  Decisions decisions;
  gpu::Precision precision = gpu::Precision::FP32;
  PassInstrument instrument;  ///< optional
  /// Build the printable snapshots (costs time on big models; off, records carry only times).
  bool snapshots = false;
};

struct FusionPlan {
  Strategy strategy = Strategy::Souffle;
  std::string gpu;
  /// The spec the plan was made for (`gpu` is its name): a user's spec file, or a built-in one
  /// with other figures, is not found again by name. Empty (sm_count 0) in a plan read from a
  /// file; then `gpu` names a built-in spec.
  gpu::GpuSpec gpu_spec;
  /// The compute type the cost assumed; kernels built from the plan use it (ScheduleConfig).
  gpu::Precision precision = gpu::Precision::FP32;
  te::TeProgram input;          ///< the program given to plan()
  te::TeProgram program;        ///< the (transformed) program the partitions refer to
  analysis::Analysis analysis;  ///< of `program`
  std::vector<Partition> partitions;
  std::vector<TransformSite> transforms;
  std::vector<RefusedEdit> refused;  ///< decisions that could not be applied, with reasons
  std::vector<Edit> applied;         ///< decisions that were applied
  std::vector<PassRecord> passes;
  size_t input_tes = 0;  ///< TEs of the program before transformation
  int64_t flops = 0, dram_bytes = 0;
  int grid_syncs = 0;
  double est_time_us = 0;
  size_t kernels() const { return partitions.size(); }
};

/// The pipeline for the chosen strategy (see plan.cpp for its steps in order).
FusionPlan plan(const te::TeProgram& program, const PlanOptions& options);

/// Re-plans `previous` under `options` (same input program): when the strategy, GPU and the
/// transform edits (force/forbid) are unchanged, the transformed program and its analysis are
/// reused and only partitioning, the structural edits and the cost run again.
FusionPlan replan(const FusionPlan& previous, const PlanOptions& options);

/// The transformed program of a strategy: after horizontal+vertical for souffle, the program
/// itself for unfused and rules (what `verify --strategy S --level te` runs).
te::TeProgram transformed_program(const te::TeProgram& program, Strategy strategy,
                                  const Decisions& decisions = {});

/// Readable text: totals, then each kernel with stages, TEs and reasons.
std::string print(const FusionPlan& p);
/// Checks every TE is in exactly one partition, partitions respect dependencies, stages respect
/// dependencies inside a kernel, totals add up. Throws InternalError naming the problem.
void verify(const FusionPlan& p);

}  // namespace souffle::plan
