/// \file The pipeline's steps as one enum, in order, with the one table of their printed names
/// (PassRecord, `plan --json`'s passes, `--dump-after`, the step-through).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace souffle::plan {

/// Every step run_pipeline (core/session/pipeline.h) runs, in pipeline order: the session runs
/// import … lower and build kernels … compile, the planner analyze … price.
enum class Step : uint8_t {
  Import,
  Fold,
  Lower,
  Analyze,
  Horizontal,
  Vertical,
  Reanalyze,
  Partition,
  Decisions,
  Price,
  BuildKernels,
  Emit,
  Compile,
};

/// Every step in pipeline order.
const std::vector<Step>& all_steps();

/// The step's printed name ("import", "re-analyze", "build kernels", ...): the one name table.
std::string_view step_name(Step s);

/// The step printed as `name`; nullopt for a name that is no step.
std::optional<Step> parse_step(std::string_view name);

/// The step names joined with ", " (for messages that list them).
std::string step_names(const std::vector<Step>& steps);

}  // namespace souffle::plan
