#include "views/plan_export.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QSaveFile>
#include <QtConcurrent/QtConcurrent>
#include <utility>

#include "core/report/write.h"
#include "core/session/bundle.h"
#include "core/session/plan_json.h"

namespace souffle::views {

namespace {

gpu::GpuSpec specOf(const plan::FusionPlan& plan) {
  return plan.gpu_spec.sm_count > 0 ? plan.gpu_spec : gpu::gpu_spec(plan.gpu);
}

}  // namespace

ExportOutcome writePlanJson(const plan::FusionPlan& plan, const std::string& model,
                            const QString& path) {
  const std::string text = plan_json(model, plan).dump(2) + "\n";
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(text.data(), qint64(text.size())) < 0 || !f.commit())
    return {false, QObject::tr("Could not write %1").arg(path)};
  return {true, QObject::tr("Exported the plan to %1").arg(QFileInfo(path).fileName())};
}

ExportOutcome writeBundle(const plan::FusionPlan& plan, const std::string& model,
                          const std::string& dir) {
  try {
    CompileOptions options;
    options.sync = plan.sync;
    CompileReport report = compile_plan(plan, options);
    BundleReport b = write_model_bundle(dir, model, "", plan, report, options);
    if (!report.ok())
      return {false, QObject::tr("Bundle in %1: %2 kernel(s) failed to compile (ERRORS.txt)")
                         .arg(QString::fromStdString(dir))
                         .arg(report.errors)};
    return {true, QObject::tr("Exported %1 kernels (%2 files, harness%3) to %4")
                      .arg(report.kernels.size())
                      .arg(b.files.size())
                      .arg(b.harness ? QString() : QObject::tr(" not written"))
                      .arg(QString::fromStdString(dir))};
  } catch (const std::exception& e) {
    return {false, QObject::tr("Bundle export failed: %1").arg(QString::fromUtf8(e.what()))};
  }
}

ExportOutcome writeReport(const plan::FusionPlan& plan, const plan::Decisions& edits,
                          const std::string& model, const std::string& path,
                          const std::string& measurements) {
  try {
    report::ReportOptions o;
    o.strategies = {plan.strategy};
    o.gpu = specOf(plan);
    o.precision = plan.precision;
    o.edits = edits;
    o.code = report::format_has_code(report::report_format(path));
    report::Report r = report::gather_report(model, o);
    if (!measurements.empty()) {
      // The run measured the plan on screen: with edits, that is the report's last plan (the
      // one after them), which the reader of runs skips as a decisions plan; it reads the run
      // into that plan alone, as the plan measured.
      const bool edited = !edits.edits.empty() && r.plans.size() > 1;
      std::vector<report::ReportPlan> measured;
      std::string decisions;
      if (edited) {
        measured.push_back(std::move(r.plans.back()));
        decisions = std::exchange(measured.front().decisions, std::string());
      }
      report::parse_measurements(measurements, "the explorer's profile run",
                                 edited ? measured : r.plans);
      if (edited) {
        measured.front().decisions = std::move(decisions);
        r.plans.back() = std::move(measured.front());
      }
    }
    const size_t bytes = report::write_report(r, path);
    return {true, QObject::tr("Wrote the report %1 (%2 kB)")
                      .arg(QString::fromStdString(path))
                      .arg(bytes / 1024)};
  } catch (const std::exception& e) {
    return {false, QObject::tr("Report export failed: %1").arg(QString::fromUtf8(e.what()))};
  }
}

ExportOutcome writeWalkthrough(const plan::FusionPlan& plan, const plan::Decisions& decisions,
                               const std::string& model, const std::string& path) {
  try {
    report::StepsOptions o;
    o.strategy = plan.strategy;
    o.gpu = specOf(plan);
    o.precision = plan.precision;
    o.decisions = decisions;
    std::vector<std::string> pages = report::write_walkthrough(model, o, path);
    return {true, QObject::tr("Wrote the walk-through: %1 pages from %2")
                      .arg(pages.size())
                      .arg(QString::fromStdString(path))};
  } catch (const std::exception& e) {
    return {false, QObject::tr("Walk-through export failed: %1").arg(QString::fromUtf8(e.what()))};
  }
}

void runExport(QObject* context, std::function<ExportOutcome()> job,
               std::function<void(const ExportOutcome&)> done) {
  auto* watcher = new QFutureWatcher<ExportOutcome>(context);
  QObject::connect(watcher, &QFutureWatcherBase::finished, context,
                   [watcher, done = std::move(done)] {
                     const ExportOutcome outcome = watcher->result();
                     watcher->deleteLater();
                     done(outcome);
                   });
  watcher->setFuture(QtConcurrent::run(std::move(job)));
}

}  // namespace souffle::views
