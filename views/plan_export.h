/// \file Writing the plan on screen out of the explorer: the plan JSON, the kernel bundle, the
/// report and the teaching walk-through. Each writer says what it wrote, or why it could not;
/// the long ones run off the GUI thread through runExport.
#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <string>

#include "core/plan/decisions.h"
#include "core/plan/plan.h"

namespace souffle::views {

struct ExportOutcome {
  bool ok = false;
  QString message;  ///< where and what was written, or why it failed
};

/// The plan as `souffle-cli plan --json` prints it (for the model file `model`) into `path`.
ExportOutcome writePlanJson(const plan::FusionPlan& plan, const std::string& model,
                            const QString& path);
/// Compiles the plan's kernels and writes them as a bundle (.cu, .ptx, weights, data, host
/// harness, CMakeLists.txt) into `dir`.
ExportOutcome writeBundle(const plan::FusionPlan& plan, const std::string& model,
                          const std::string& dir);
/// A report of the plan (HTML, JSON, CSV or DOT by `path`'s extension) with the user's `edits`:
/// the plan before and after them. `measurements`: a profile run of the plan in the shape of
/// `souffle-cli profile --json` (empty: none), its times beside the estimates; it measured the
/// plan after the `edits` when there are some.
ExportOutcome writeReport(const plan::FusionPlan& plan, const plan::Decisions& edits,
                          const std::string& model, const std::string& path,
                          const std::string& measurements = {});
/// The walk-through: one HTML page per pipeline step, the first at `path`, the others beside it.
ExportOutcome writeWalkthrough(const plan::FusionPlan& plan, const plan::Decisions& decisions,
                               const std::string& model, const std::string& path);

/// Runs `job` on a worker thread; `done` gets its outcome on `context`'s thread (not at all when
/// `context` is gone by then).
void runExport(QObject* context, std::function<ExportOutcome()> job,
               std::function<void(const ExportOutcome&)> done);

}  // namespace souffle::views
