/// \file The teaching pack: questions a teacher asks at each pipeline step, with the answer
/// made from what the step decided on this model (its changes, reasons and prices), and the
/// line diff of a step's texts as HTML.
#pragma once

#include <string>
#include <vector>

#include "core/session/pipeline_steps.h"

namespace souffle::report {

struct LessonQuestion {
  std::string question;  ///< "Why does stage 3 need a grid barrier before it?"
  std::string answer;    ///< plain text, generated from the walk
};

/// The questions of one step (none for a step with nothing to ask about).
std::vector<LessonQuestion> lesson_questions(const PipelineStep& step, const PipelineWalk& walk);

/// `before` and `after` as two <pre> blocks side by side, the lines the diff removed marked in
/// the first and those it added in the second (plain blocks when the texts share too little to
/// diff: a translation, say loop IR to CUDA C). Texts past `max_lines` are cut.
std::string diff_pair_html(const std::string& before, const std::string& after,
                           size_t max_lines = 400);

/// The memory picture of a step that changed memory traffic (the partition step: the shown
/// kernel as the emulator recorded it, emulate/access_record.h), with the global bytes before
/// and after the step: HTML with inline SVG, or empty for other steps, a walk without a shown
/// kernel, or a kernel too large to record (`max_threads` threads of grid x block).
std::string lesson_memory_html(const PipelineStep& step, const PipelineWalk& walk,
                               int64_t max_threads = int64_t{1} << 20);

/// The CSS the lesson adds to the report's.
const char* lesson_css();

}  // namespace souffle::report
