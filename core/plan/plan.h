/// \file Fusion plans: strategies (unfused, rules, souffle-paper, souffle), partitions into kernels
/// with stages, the typed decisions behind every cut and fusion with the prices they compared,
/// the kernel pricer interface, printer and verifier.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/analysis/analysis.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/gpu/tile.h"
#include "core/plan/decisions.h"
#include "core/plan/horizontal.h"
#include "core/plan/step.h"
#include "core/support/boundary.h"
#include "core/support/build_choice.h"
#include "core/te/expr.h"
#include "core/te/program_index.h"

namespace souffle::plan {

/// Unfused: one kernel per compute stage. Rules: element-wise chains into producers' epilogues,
/// no grid synchronization. SoufflePaper: the paper's rule, a cut only where co-residency
/// forbids a stage. Souffle: the paper's cut sites, chosen by comparing priced kernels.
enum class Strategy : uint8_t { Unfused, Rules, Souffle, SoufflePaper };
const char* strategy_name(Strategy s);  ///< "unfused", "rules", "souffle", "souffle-paper"
/// Parses a strategy name; UserError listing the names otherwise.
Strategy parse_strategy(const std::string& name);
/// unfused, rules, souffle: the strategies shown side by side.
const std::vector<Strategy>& all_strategies();
/// all_strategies and souffle-paper.
const std::vector<Strategy>& every_strategy();
/// Whether the strategy runs the horizontal and vertical transforms and grid-synchronizes
/// (souffle and souffle-paper).
bool is_souffle(Strategy s);

/// The GEMM tile the kernel tuner chose for one compute-intensive TE of a stage.
struct TileChoice {
  int te = -1;  ///< op index into FusionPlan::program
  gpu::Tile tile;
  std::string why;  ///< "gemm 64x32x16 tile 4x2, double-buffered, 24 blocks = 0.11 waves ..."
};

/// What a stage of a kernel runs.
enum class StageKind : uint8_t {
  Compute,    ///< a compute-intensive TE (GEMM-like) and what rides on its tiles
  Memory,     ///< memory-intensive TEs, grid-stride
  Reduction,  ///< a memory-intensive reduction
  View,       ///< a pure view (an alias of its input: reshape, transpose kept as indexing)
  Attention,  ///< an attention chain fused into one stage (plan/attention.h)
};
/// "compute", "memory", "reduction", "view", "attention": the name the plan's text, JSON and
/// reports show.
const char* stage_kind_name(StageKind k);

/// What a kernel runs, by its stages.
enum class PartitionKind : uint8_t {
  Compute,  ///< has a compute-intensive TE
  Memory,   ///< memory-intensive TEs only
  View,     ///< pure views only
};
/// "compute", "memory", "view": the name the plan's text, JSON and reports show.
const char* partition_kind_name(PartitionKind k);

/// One stage of a kernel: TEs that run between two grid syncs on one mapping of blocks.
struct Stage {
  std::vector<int> tes;  ///< op indices into FusionPlan::program, in execution order
  StageKind kind = StageKind::Memory;
  int64_t blocks = 0;  ///< blocks the stage needs (compute: one tile each; memory: grid-stride)
  int threads = 0;
  std::string schedule;      ///< "128x128 tiles, 54 blocks of 256 threads", "grid-stride"
  bool sync_before = false;  ///< a grid sync separates it from the previous stage
  /// The GEMM tiles the kernel tuner chose (tune_plan); empty until tuned.
  std::vector<TileChoice> tiles;
};

/// What a partitioning decision of the souffle strategy chose.
enum class DecisionKind : uint8_t {
  Start,           ///< the first TE of the program opens a kernel
  Join,            ///< joins the kernel: merged is cheaper than the two apart
  CutCheaper,      ///< starts a kernel: two kernels are cheaper than one merged
  CutCoResidency,  ///< starts a kernel: the merged grid would not be co-resident (hard limit)
  Unfused,         ///< a merged kernel priced above its parts, split back into them
  UserMerge,       ///< a user's merge, applied although the model prices it slower
  RowsInBlock,     ///< short reductions keep each row in one block: cheaper than the barrier
  KeepOnChip,      ///< intermediates proven block-owned stay in shared memory: no dearer
  GlobalScratch,   ///< those intermediates go to global scratch: cheaper than shared memory
  /// the rules strategy's kernels of a co-resident group's TEs, launched one after another
  /// without grid synchronization, priced below the cuts the walk chose (merged: those)
  RulesCut,
  /// an attention chain (plan/attention.h) computed as one stage with an online softmax, its
  /// scores never in global memory: priced at most the chain's stages apart (merged: fused)
  FusedAttention,
  /// an attention chain left as separate stages: the fused stage priced above them
  AttentionUnfused,
};
const char* decision_kind_name(DecisionKind k);  ///< "start", "join", "cut-cheaper", ...

/// Why the rules strategy does not put a TE in the epilogue of a kernel before it (the TE then
/// starts a kernel of its own).
enum class Refusal : uint8_t {
  None,
  ComputeIntensive,  ///< a compute-intensive TE is a kernel's main loop, never an epilogue
  Reduction,         ///< no fusion across reductions
  OneReliesOnMany,   ///< it reads an input one-relies-on-many
  Gather,            ///< it gathers from an input (data-dependent reads)
  ModelInputsOnly,   ///< it reads only model inputs and constants: no kernel to join
  BroadcastRead,     ///< it reads a tensor of the kernel it would join through a broadcast
};
/// "compute-intensive", "reduction", "one-relies-on-many", "gather", "model-inputs-only",
/// "broadcast-read" ("none" for None).
const char* refusal_name(Refusal r);

/// What one of a partition's reasons says.
enum class ReasonKind : uint8_t {
  Start,     ///< the kernel starts at its first TE, or one kernel per TE
  Cut,       ///< the souffle strategy cut before the TE (co-residency, or cheaper apart)
  Refused,   ///< the rules strategy refused the TE as an epilogue (Reason::refusal says why)
  Join,      ///< the TE joins the kernel (a stage, an epilogue of a stage, a fused chain)
  Epilogue,  ///< the rules strategy fused the TE into a kernel's epilogue
  View,      ///< a pure view, folded into its readers' indexing
  Decision,  ///< a user's edit made it so
  Other,     ///< a priced choice inside the kernel (rows, shared memory, rules' cut kept)
};
/// "start", "cut" (Cut and Refused), "join", "epilogue", "view", "decision", "other": the kind
/// reports give a reason.
const char* reason_kind_name(ReasonKind k);

/// One reason of a partition: what it says, for a refusal why, and the sentence for people.
struct Reason {
  ReasonKind kind = ReasonKind::Other;
  Refusal refusal = Refusal::None;
  std::string text;
  bool operator==(const Reason&) const = default;
};

/// One decision with the two prices it compared (µs; 0 where no price was needed).
struct Decision {
  DecisionKind kind = DecisionKind::Start;
  int te = -1;  ///< the TE where it applies (op index), -1 for a whole kernel
  /// The kernel with the TE's stages merged in; for rows-in-block, the rows split over blocks;
  /// for keep-on-chip and global-scratch, the kernel with `tensors` in shared memory; for
  /// rules-cut, the kernels the walk chose for the group (sum).
  double merged_us = 0;
  /// The kernels apart (sum); for rows-in-block, the rows kept in one block; for keep-on-chip
  /// and global-scratch, the kernel with `tensors` in global scratch; for rules-cut, rules'
  /// kernels of the group (sum).
  double split_us = 0;
  std::string reason;  ///< the same in words, for people
  /// The tensors a keep-on-chip or global-scratch decision is about; empty for the others.
  std::vector<std::string> tensors;
};

/// The reason a priced decision gives its partition: its text, of the kind its DecisionKind says
/// (a cut is a Cut, a user's merge a Decision, a fused attention chain a Join, ...).
Reason reason_of(const Decision& d);

/// A stage of the kernels built for a partition, as their boundaries name it.
struct BuiltStage {
  int launch = 0;                  ///< which of the partition's launches (kernels) runs it
  std::string name;                ///< the kernel's stage name
  std::vector<std::string> tes;    ///< TE names, in order
  std::vector<std::string> nodes;  ///< the ONNX nodes of its TEs, first appearance order
  /// Its wave (stages of one wave run side by side on disjoint blocks; -1: alone) and the first
  /// of its blocks (loop::StageInfo).
  int wave = -1;
  int64_t block_offset = 0;
  /// What the stage itself runs on and how its TEs were scheduled (loop::StageInfo: the tuned
  /// GEMM tile, "injective", ...), as built; the plan's Stage holds the planner's estimate.
  int64_t blocks = 0;
  int64_t threads = 0;
  std::string schedule;
  /// The shared buffer its GEMM keeps its weights in for the whole kernel ("" for none), and
  /// whether it loads them there (loop::StageInfo::weight_panel).
  std::string weight_panel;
  bool weight_panel_load = false;
  /// The priced choices the kernel builder made for its launch, on the launch's first stage
  /// (loop::StageInfo::choices); `schedule` tells them in words.
  std::vector<BuildChoice> choices;
  /// The cost model's price of the stage alone (µs, schedule::StagePrice) and what bounds it;
  /// for a tensor-core stage the mainloop structure it was priced from
  /// (gpu::MainloopStructure::describe) and how (gpu::MainloopCost::from); empty otherwise.
  double est_us = 0;
  std::string bound;
  std::string mainloop, priced_from;
  /// est_us includes a calibration's measured correction for its schedule template
  /// (gpu::StageCost::corrected, in words); empty: none. It is still an estimate.
  std::string corrected;
  /// The node that names the stage: its first ONNX node, else its first TE, else its name.
  const std::string& anchor() const;
};

/// What orders one built stage after the ones before it (core/support/boundary.h), placed in
/// the partition: stage indices into Partition::built_stages.
struct Boundary {
  StageBoundary order;    ///< kind and reason; its stage indices are the kernel's own
  int launch = 0;         ///< the launch (kernel) it is in
  int from = -1, to = 0;  ///< the stages it separates (from == to: phases of one stage)
  int producer = -1;      ///< the stage that wrote order.tensor, where known
  int te = -1;            ///< op index of the first TE of stage `to` (where decisions apply)
  /// The cost model's price of what it adds (µs): a grid barrier over the kernel's grid, a
  /// launch, or per-tile flags (releases and waits); 0 for none and block.
  double cost_us = 0;
};

/// A decision's order for one stage boundary: the stage that starts with TE `te` (its analysis
/// name) after the stages before it, by `kind` (Grid or Flags).
struct ForcedSync {
  std::string te;
  BoundaryKind kind = BoundaryKind::Grid;
  bool operator==(const ForcedSync&) const = default;
};

/// One kernel.
struct Partition {
  int id = 0;
  std::vector<int> tes;          ///< op indices, in execution order
  std::vector<std::string> ops;  ///< ONNX nodes its TEs come from, first appearance order
  std::vector<Stage> stages;
  PartitionKind kind = PartitionKind::Memory;
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
  std::vector<Reason> reasons;      ///< why it starts here, why each TE joined
  std::vector<Decision> decisions;  ///< the souffle strategy's priced decisions
  /// Filled by a KernelPricer from the kernels built for the partition: launches, barriers,
  /// DRAM bytes and time are theirs (grid_syncs = their grid barriers). False: cost model v1.
  bool priced = false;
  int launches = 1;        ///< kernels launched (rules/unfused split where a barrier would be)
  int block_barriers = 0;  ///< block barrier statements of its kernels
  int64_t l2_bytes = 0;    ///< global reads its kernels' L2 serves (reuse within the L2's size)
  double launch_us = 0, barrier_us = 0;  ///< parts of est_time_us
  std::string build_error;               ///< why its kernels could not be built (priced false)
  /// Its reductions of fewer rows than the GPU has SMs split each row over blocks, joined
  /// across a grid barrier (schedule::ScheduleConfig::cross_block_rows; souffle strategies
  /// only). The souffle strategy turns it off where that prices cheaper.
  bool split_rows = true;
  /// Intermediates the kernel could keep in shared memory (proven block-owned, only this
  /// partition reads them) but keeps in global scratch, where the souffle strategy priced that
  /// cheaper (schedule::KernelBuildOptions::shared_residents for the rest).
  std::vector<std::string> global_scratch;
  /// The user's orders for stage boundaries (decisions of kind sync): the stage whose first TE
  /// is `te` is ordered after the stages before it by this kind (grid or flags) where it can be.
  std::vector<ForcedSync> forced_sync;
  /// Filled with `priced`: the stages of its built kernels in launch order, and every boundary
  /// between them (one per stage after the first, one per barrier between the phases of a
  /// stage, a launch boundary where rules/unfused start another kernel).
  std::vector<BuiltStage> built_stages;
  std::vector<Boundary> boundaries;
};

/// The figures of the kernels built for one partition, priced by cost model v2.
struct PartitionPrice {
  std::string error;  ///< why the kernels could not be built; the figures are empty then
  int launches = 0;
  int grid_barriers = 0, block_barriers = 0;
  int64_t blocks = 0;  ///< the largest launch grid
  int threads = 0;     ///< the largest block
  int regs = 0;
  int64_t smem = 0;
  int64_t co_resident = 0;
  bool cooperative = false;
  int64_t flops = 0, dram_bytes = 0, l2_bytes = 0;
  double est_time_us = 0, launch_us = 0, barrier_us = 0;
  std::vector<std::string> on_chip;
  /// The TEs (op indices) that start a stage after a grid barrier between stages: the sites
  /// where the partition could be cut.
  std::vector<int> barrier_sites;
  std::vector<BuiltStage> stages;    ///< Partition::built_stages
  std::vector<Boundary> boundaries;  ///< Partition::boundaries
  bool ok() const { return error.empty(); }
};

struct FusionPlan;

/// Builds and prices the kernels of a partition. The planner reaches kernels only through this
/// interface; core/schedule implements it (schedule::PlanPricer), caching by content.
class KernelPricer {
 public:
  virtual ~KernelPricer() = default;
  /// The kernels of `p`, a partition of a plan over `context.program` (with context's strategy,
  /// GPU, precision and analysis; context.partitions are not read).
  virtual PartitionPrice price(const FusionPlan& context, const Partition& p) const = 0;
  /// Where the cost constants come from ("spec A100-SXM4-40GB" or "calibration FILE (...)").
  virtual std::string constants() const = 0;
};

/// One observable step of the pipeline: which step, its time, and a printable snapshot.
struct PassRecord {
  Step step = Step::Import;
  double ms = 0;
  /// What the step produced, printed (only with snapshots on). Empty, with `changed` false, when
  /// it prints the same as the step before it: the step left the IR as it found it.
  std::string snapshot;
  bool changed = true;  ///< false: the snapshot is the previous step's (snapshots on)
  /// What the step counted, by name ("tes", "sites", "applied", "compute", "kernels", ...):
  /// what an observer says about the step (the step-through's sentences) without running it
  /// again. Filled whether or not snapshots are on.
  std::map<std::string, int64_t> counts;
  /// The ONNX nodes the step changed or decided about (origins of applied sites, of
  /// compute-intensive TEs, ...), in first-met order.
  std::vector<std::string> nodes;
  std::string_view name() const { return step_name(step); }
};
/// Observes the steps as they run: `before` as a step starts, `after` with its record once it
/// has run (`--dump-after STEP` prints the snapshot of STEP). Either may be empty.
struct PassInstrument {
  std::function<void(Step)> before;
  std::function<void(const PassRecord&)> after;
};

struct PlanOptions {
  Strategy strategy = Strategy::Souffle;
  gpu::GpuSpec gpu;  ///< must be filled (gpu::gpu_spec("a100"))
  Decisions decisions;
  gpu::Precision precision = gpu::Precision::FP32;
  /// What orders dependent stages of a cooperative kernel: grid barriers (Souffle's), per-tile
  /// flags where proven, or the cheaper of the two per boundary; its kernels and prices use it.
  SyncMode sync = SyncMode::Grid;
  /// Independent stages of a cooperative kernel packed side by side in waves where the cost
  /// model prices that below program order (schedule::KernelBuildOptions::waves); off: program
  /// order, for comparison.
  bool waves = true;
  /// GEMM stages of a cooperative kernel that multiply by the same weights keep them in shared
  /// memory where they fit (schedule::KernelBuildOptions::weight_panels); off: each stage
  /// streams them, for comparison.
  bool weight_panels = true;
  /// On a GPU of compute capability 9.0: tensor-core GEMM stages whose tile allows it run the
  /// Hopper mainloop (warpgroup MMA, docs/mainloop.md; schedule::ScheduleConfig::wgmma_mainloop)
  /// and their kernels compile for sm_90a. Off: the Ampere mainloop, as on every other GPU.
  bool wgmma = false;
  PassInstrument instrument;  ///< optional
  /// Build the printable snapshots (costs time on big models; off, records carry only times).
  bool snapshots = false;
  /// Keep what the analyze and horizontal steps made (FusionPlan::steps), for drawing each
  /// step's program: nothing is made again to show it.
  bool keep_steps = false;
  /// Prices partitions from their built kernels (cost model v2), and lets the souffle strategy
  /// choose its cuts by price. Null: cost model v1 over the partitions, souffle cuts like
  /// souffle-paper.
  std::shared_ptr<const KernelPricer> pricer;
};

/// What the planner's first steps made on the way to FusionPlan::program, kept when
/// PlanOptions::keep_steps asks.
struct PlanSteps {
  analysis::Analysis input_analysis;  ///< the analyze step's, of FusionPlan::input
  /// The horizontal step's program; empty where the strategy does not transform.
  te::TeProgram after_horizontal;
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
  SyncMode sync = SyncMode::Grid;  ///< PlanOptions::sync; kernels built from the plan use it
  bool waves = true;               ///< PlanOptions::waves; kernels built from the plan use it
  bool weight_panels = true;       ///< PlanOptions::weight_panels; the same
  bool wgmma = false;              ///< PlanOptions::wgmma; the same
  te::TeProgram input;             ///< the program given to plan()
  te::TeProgram program;           ///< the (transformed) program the partitions refer to
  analysis::Analysis analysis;     ///< of `program`
  /// The producer and readers of each tensor of `program`, built once by plan() and shared by
  /// every partition it (and a re-plan of the same program) builds and prices; may be null or
  /// stale in a plan made otherwise (read from a file, edited): see index_of().
  std::shared_ptr<const te::ProgramIndex> index;
  std::vector<Partition> partitions;
  std::vector<TransformSite> transforms;
  std::vector<RefusedEdit> refused;  ///< decisions that could not be applied, with reasons
  std::vector<Edit> applied;         ///< decisions that were applied
  std::vector<PassRecord> passes;
  /// With PlanOptions::keep_steps: what the first steps made (a re-plan that reuses the
  /// transformed program takes its previous plan's); null otherwise.
  std::shared_ptr<const PlanSteps> steps;
  size_t input_tes = 0;  ///< TEs of the program before transformation
  int64_t flops = 0, dram_bytes = 0;
  int grid_syncs = 0;
  double est_time_us = 0;
  int launches = 0, block_barriers = 0;
  /// "v2: built kernels" (a pricer priced every partition) or "v1: partition roofline".
  std::string cost_model;
  std::string cost_constants;  ///< KernelPricer::constants(), or "spec NAME" under v1
  size_t kernels() const { return partitions.size(); }
};

/// The index of `p.program`: `p.index` when it is that program's, else one built now.
std::shared_ptr<const te::ProgramIndex> index_of(const FusionPlan& p);

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

/// Throws UserError naming `decisions_file` and the first edit of the plan's decisions that
/// names nothing in the model (RefusedEdit::unknown_name): a decisions file a command was given
/// must fit the model. Edits refused for other reasons are reported with the plan, not thrown.
void require_known_names(const FusionPlan& p, const std::string& decisions_file);

/// Readable text: totals, then each kernel with stages, TEs and reasons.
std::string print(const FusionPlan& p);
/// Checks every TE is in exactly one partition, partitions respect dependencies, stages respect
/// dependencies inside a kernel, totals add up. Throws InternalError naming the problem.
void verify(const FusionPlan& p);

}  // namespace souffle::plan
