/// \file The pipeline as teaching steps: run_pipeline (import … emit) observed through its pass
/// instrument, each record a step with text before and after and one generated sentence.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/session/pipeline.h"

namespace souffle {

/// One change a step made, a line of the step-through's list: "Add + Relu → fused",
/// "MatMul ∥ MatMul → batched", a kernel and why it starts where it does, a stage boundary and
/// what it waits for. Made from the plan the pipeline produced (its transform sites, partitions
/// and built stages), never by running a step again.
struct StepSite {
  std::string label;
  /// Why, as the step recorded it, with the prices it compared where it priced the choice.
  std::string reason;
  /// The boxes it concerns in the step's "before" and "after" graphs (ONNX node names in the
  /// import and fold steps' graphs, TE names from lower on; see step_graphs).
  std::vector<std::string> before, after;
};

/// Which program or graph a step reads and produces, for drawing it: the graph as imported, as
/// folded, the TE program as lowered, after the horizontal transformation, as planned.
enum class StepGraph { None, Imported, Folded, Lowered, Horizontal, Planned };

/// One step of the pipeline as the step-through mode shows it.
struct PipelineStep {
  plan::Step step = plan::Step::Import;  ///< the PassRecord's step
  std::string name;                      ///< its printed name: "import", "fold", "lower", ...
  std::string title;                     ///< "Import the ONNX file"
  std::string before;  ///< what the step reads, as text: the previous step's snapshot
  std::string after;   ///< what it produced: its snapshot (for build kernels and emit, the
                       ///< shown partition's kernels)
  /// One sentence generated from what the step decided ("Folded 212 constant nodes; 605 remain").
  std::string sentence;
  /// ONNX nodes the step changed or decided about (for highlighting in the graph).
  std::vector<std::string> nodes;
  double ms = 0;
  /// The changes it made, one per line (empty for a step that only describes: analyze, price).
  std::vector<StepSite> sites;
  /// False for a step that left the program as it was (a transformation that applied no site,
  /// no constant to fold, no decision): the step-through hides it unless asked.
  bool changed = true;
  StepGraph graph_before = StepGraph::None, graph_after = StepGraph::None;
};

struct PipelineStepOptions {
  plan::Strategy strategy = plan::Strategy::Souffle;
  gpu::GpuSpec gpu;  ///< filled by the caller (gpu::gpu_spec("a100"))
  /// The compute type of GEMM-like kernels: the plan, its pricing and the kernels use it, as
  /// compile does.
  gpu::Precision precision = gpu::Precision::FP32;
  /// The user's edits (merge, split, pin, force/forbid), applied as compile's plan applies them.
  plan::Decisions decisions;
  /// How the model is imported (dims, bound inputs, input shapes), as every other command does.
  onnx_import::ImportOptions import;
  /// The partition whose kernels the build kernels and emit steps show; -1 lets `choose` pick.
  int partition = -1;
  /// Picks the partition (an index into the plan's) when `partition` is -1, from the plan the
  /// pipeline made; null: default_step_partition.
  std::function<int(const plan::FusionPlan&)> choose;
  /// Text longer than this is cut (with a note) so that big models stay displayable.
  size_t max_text = 300000;
  /// Also keep what drawing every step's graphs takes: the graph as imported and the program
  /// after the horizontal transformation, as the pipeline made them (PipelineOptions::keep_steps;
  /// PipelineWalk::graph_of and program_of).
  bool programs = false;
};

/// The steps and what the pipeline produced for them (the report draws its graphs from it).
struct PipelineWalk {
  std::vector<PipelineStep> steps;
  PipelineResult result;  ///< the model, plan and emitted kernels the steps describe
  int partition = -1;     ///< the partition the build kernels and emit steps show; -1: none
  /// The graph or program `which` names (null for None, or one not kept): the graph before
  /// folding and the TE program after the horizontal transformation are kept with
  /// PipelineStepOptions::programs (after horizontal is the lowered program where the strategy
  /// does not transform, or where they were not kept).
  const graph::Graph* graph_of(StepGraph which) const;
  const te::TeProgram* program_of(StepGraph which) const;
};

/// Fills every step's sites, `changed` and graphs from the walk's plan (walk_pipeline calls it).
void describe_step_changes(PipelineWalk& walk, const PipelineStepOptions& options);

/// The step names of the souffle strategy, in pipeline order: plan::all_steps() up to emit.
/// Other strategies run no transformation, so their steps lack horizontal, vertical and
/// re-analyze.
const std::vector<std::string>& pipeline_step_names();

/// Runs run_pipeline on the model at `path` up to "emit", one step per PassRecord. Throws
/// UserError for a model that cannot be loaded (as load_model does); a kernel that cannot be
/// built or emitted is reported in that step's text and sentence instead.
PipelineWalk walk_pipeline(const std::string& path, const PipelineStepOptions& options);

/// walk_pipeline's steps.
std::vector<PipelineStep> pipeline_steps(const std::string& path,
                                         const PipelineStepOptions& options);

/// The partition pipeline_steps shows by default: the first compute kernel of more than one TE,
/// else the first compute kernel, else the first; -1 for a plan without partitions.
int default_step_partition(const plan::FusionPlan& plan);

}  // namespace souffle
