/// \file Progress of a long command on stderr: each pipeline step as it ends and the step that
/// runs next, on one line rewritten in place. Only when stderr is a terminal and the user did
/// not ask for quiet; a pipe or a file gets nothing (scripts parse stdout and stderr).
#pragma once

#include <string>

#include "core/plan/plan.h"

namespace souffle::cli {

class StepProgress {
 public:
  /// `until`: the last step the command runs (PipelineOptions::until); `transforms`: whether
  /// the strategy runs the horizontal, vertical and re-analyze steps (souffle's do).
  StepProgress(bool quiet, plan::Step until, bool transforms);
  ~StepProgress();  ///< clears the line
  StepProgress(const StepProgress&) = delete;
  StepProgress& operator=(const StepProgress&) = delete;
  bool on() const { return m_on; }
  /// An instrument that reports each step, then calls `chain`'s hooks (either may be empty).
  plan::PassInstrument instrument(plan::PassInstrument chain);
  /// Says what runs first (before any step has ended).
  void start() const;
  /// Shows `text` as the line (what a step reports while it runs).
  void say(const std::string& text) const;

 private:
  bool m_on;
  plan::Step m_until;
  bool m_transforms;
};

}  // namespace souffle::cli
