/// \file The whole pipeline as teaching steps (import … emit), each with text before and after
/// and one sentence on what it decided, built from the load steps and the plan's PassRecords.
#pragma once

#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/plan/plan.h"

namespace souffle {

/// One step of the pipeline as the step-through mode shows it.
struct PipelineStep {
  std::string name;    ///< "import", "fold", "lower", "characterize", "horizontal", ...
  std::string title;   ///< "Import the ONNX file"
  std::string before;  ///< what the step reads, as text (graph summary, TE program, …)
  std::string after;   ///< what it produced
  /// One sentence generated from what the step decided ("Folded 212 constant nodes; 605 remain").
  std::string sentence;
  /// ONNX nodes the step changed or decided about (for highlighting in the graph).
  std::vector<std::string> nodes;
  double ms = 0;
};

struct PipelineStepOptions {
  plan::Strategy strategy = plan::Strategy::Souffle;
  gpu::GpuSpec gpu;  ///< filled by the caller (gpu::gpu_spec("a100"))
  /// The compute type of GEMM-like kernels: the plan, its pricing and the schedule step's kernel
  /// use it, as compile does.
  gpu::Precision precision = gpu::Precision::FP32;
  /// The partition whose kernel the schedule and emit steps show; -1 picks the first kernel
  /// with a compute-intensive stage (the most instructive), else the first one.
  int partition = -1;
  /// Text longer than this is cut (with a note) so that big models stay displayable.
  size_t max_text = 300000;
};

/// The canonical step names, in pipeline order.
const std::vector<std::string>& pipeline_step_names();

/// Runs the pipeline on the model at `path` step by step. Throws UserError for a model that
/// cannot be loaded (as load_model does); a kernel that cannot be scheduled or emitted is
/// reported in that step's text and sentence instead.
std::vector<PipelineStep> pipeline_steps(const std::string& path,
                                         const PipelineStepOptions& options);

/// The partition pipeline_steps shows for `options.partition == -1`.
int default_step_partition(const plan::FusionPlan& plan);

}  // namespace souffle
