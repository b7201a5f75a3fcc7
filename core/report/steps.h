/// \file The teaching walk-through: the pipeline's steps (import … emit) as one self-contained
/// HTML page each, with the graph and the text before and after and the step's sentence, for
/// the whole model or one layer.
#pragma once

#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/onnx/importer.h"
#include "core/plan/plan.h"

namespace souffle::report {

struct StepsOptions {
  plan::Strategy strategy = plan::Strategy::Souffle;
  gpu::GpuSpec gpu;                                 ///< must be filled (gpu::gpu_spec("a100"))
  gpu::Precision precision = gpu::Precision::FP32;  ///< of the plan and its kernels
  plan::Decisions decisions;                        ///< the user's edits, applied as compile does
  onnx_import::ImportOptions import;  ///< dims, bound inputs and input shapes of the import
  /// Only ONNX nodes whose name contains this (and their TEs) are drawn and listed; the kernel
  /// the build kernels and emit steps show is one of theirs. Empty: the whole model.
  std::string layer;
  /// The kernel the build kernels and emit steps show; -1 picks one (see default_step_partition).
  int partition = -1;
  /// Graphs with more boxes than this are not drawn (the page says to choose a layer).
  size_t max_graph_nodes = 1500;
  /// One self-contained page instead: every step in turn with its changes, its graphs, its
  /// texts with the changed lines marked, and questions with their answers folded.
  bool lesson = false;
};

/// One page of the walk-through.
struct StepPage {
  std::string name;  ///< "import", "fold", ... ("index" for the first page)
  std::string file;  ///< its file name, "<base>-3-lower.html" (the index is "<base>.html")
  std::string html;
};

/// The index page (every step's sentence, linked) and one page per step, each standing alone
/// and linking to the others by file name (with `lesson`, one page "<base>.html"). `base` names the
/// files. Throws UserError for a model that cannot be loaded, or a layer that matches no node.
std::vector<StepPage> walkthrough(const std::string& model_path, const StepsOptions& options,
                                  const std::string& base);

}  // namespace souffle::report
