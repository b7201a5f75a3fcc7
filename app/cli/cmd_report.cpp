#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/gpu/sass.h"
#include "core/report/write.h"
#include "core/support/error.h"

namespace souffle::cli {

int run_report(const ReportCliOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const std::string format = report::report_format(o.out);
  if (!std::filesystem::exists(o.common.model))
    throw UserError(o.common.model, "", "no such model file");
  if (!o.compare.empty() && !o.decisions.empty())
    throw UserError("--compare and --decisions both ask for a comparison: give one");
  const std::filesystem::path folder = std::filesystem::path(o.out).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder))
    throw UserError(o.out, "", "--out: the folder " + folder.string() + " does not exist");
  const gpu::GpuSpec spec = gpu::gpu_spec(o.gpu);

  if (o.steps && !o.timeline.empty())
    throw UserError("--timeline shows measured kernels in a report: not with --steps");
  if (o.steps) {
    if (o.strategy == "all") throw UserError("--steps follows one strategy: not --strategy all");
    if (!o.compare.empty() || !o.decisions.empty())
      throw UserError("--steps shows one plan: --compare and --decisions are for reports");
    report::StepsOptions so;
    so.strategy = plan::parse_strategy(o.strategy);
    so.gpu = spec;
    so.precision = gpu::parse_precision(o.precision);
    so.layer = o.layer;
    so.partition = o.kernel;
    so.lesson = o.lesson;
    so.import.dims = parse_dims(o.common.dims);
    so.import.bind = parse_binds(o.common.binds);
    so.import.shapes = parse_shapes(o.common.shapes);
    std::vector<std::string> pages = report::write_walkthrough(o.common.model, so, o.out);
    if (o.lesson) {
      std::cout << fmt::format("wrote the lesson {}, {:.1f} kB, in {:.1f} s\n", o.out,
                               std::filesystem::file_size(pages.at(0)) / 1024.0, seconds());
      return 0;
    }
    size_t bytes = 0;
    for (const std::string& p : pages) bytes += std::filesystem::file_size(p);
    std::cout << fmt::format("wrote {} pages ({} and one per step), {:.1f} kB, in {:.1f} s\n",
                             pages.size(), o.out, bytes / 1024.0, seconds());
    return 0;
  }
  if (o.lesson) throw UserError("--lesson is a walk-through: use it with --steps");
  if (!o.layer.empty() || o.kernel >= 0)
    throw UserError(
        "--layer and --kernel choose what the walk-through shows: use them with --steps");

  report::ReportOptions ro;
  if (o.strategy == "all")
    ro.strategies = plan::all_strategies();
  else
    ro.strategies = {plan::parse_strategy(o.strategy)};
  ro.gpu = spec;
  ro.precision = gpu::parse_precision(o.precision);
  if (!o.compare.empty()) ro.compare = plan::parse_strategy(o.compare);
  ro.decisions = o.decisions;
  ro.calibration = o.calibration;
  ro.measurements = o.measurements;
  ro.dims = parse_dims(o.common.dims);
  ro.bind = parse_binds(o.common.binds);
  ro.shapes = parse_shapes(o.common.shapes);
  ro.code = report::format_has_code(format);
  ro.sass = o.sass;
  ro.timeline = o.timeline;
  if (o.sass && gpu::find_nvdisasm().empty())
    throw UserError("--sass: " + gpu::nvdisasm_missing_message());
  report::Report r = report::gather_report(o.common.model, ro);
  const size_t bytes = report::write_report(r, o.out);
  size_t kernels = 0;
  for (const report::ReportPlan& p : r.plans) kernels += p.kernels.size();
  std::cout << fmt::format("wrote {} ({:.1f} kB): {} plans, {} kernels, in {:.1f} s\n", o.out,
                           bytes / 1024.0, r.plans.size(), kernels, seconds());
  return 0;
}

}  // namespace souffle::cli
