#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/report/csv.h"
#include "core/report/dot.h"
#include "core/report/html.h"
#include "core/report/json.h"
#include "core/report/report_model.h"
#include "core/report/steps.h"
#include "core/support/error.h"

namespace souffle::cli {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path.string(), "", "cannot write the report here");
  out << text;
  out.close();
  if (!out) throw UserError(path.string(), "", "writing the report failed");
}

std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

int run_report(const ReportCliOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  const fs::path out(o.out);
  const std::string ext = lower_ext(out);
  if (ext != ".html" && ext != ".json" && ext != ".csv" && ext != ".dot")
    throw UserError(o.out, "", "--out: the extension names the format: .html, .json, .csv or .dot");
  if (!fs::exists(o.common.model)) throw UserError(o.common.model, "", "no such model file");
  if (!out.parent_path().empty() && !fs::is_directory(out.parent_path()))
    throw UserError(o.out, "",
                    "--out: the folder " + out.parent_path().string() + " does not exist");
  if (!o.compare.empty() && !o.decisions.empty())
    throw UserError("--compare and --decisions both ask for a comparison: give one");
  const gpu::GpuSpec spec = gpu::gpu_spec(o.gpu);
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  if (o.steps) {
    if (ext != ".html") throw UserError(o.out, "", "--steps writes HTML pages: name a .html file");
    if (o.strategy == "all") throw UserError("--steps follows one strategy: not --strategy all");
    if (!o.compare.empty() || !o.decisions.empty())
      throw UserError("--steps shows one plan: --compare and --decisions are for reports");
    report::StepsOptions so;
    so.strategy = plan::parse_strategy(o.strategy);
    so.gpu = spec;
    so.layer = o.layer;
    so.partition = o.kernel;
    const std::string base = out.stem().string();
    std::vector<report::StepPage> pages = report::walkthrough(o.common.model, so, base);
    size_t bytes = 0;
    for (const report::StepPage& p : pages) {
      write_file(out.parent_path() / p.file, p.html);
      bytes += p.html.size();
    }
    std::cout << fmt::format("wrote {} pages ({} and one per step), {:.1f} kB, in {:.1f} s\n",
                             pages.size(), o.out, bytes / 1024.0, seconds());
    return 0;
  }
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
  ro.code = ext == ".html" || ext == ".json";
  report::Report r = report::gather_report(o.common.model, ro);

  std::string text;
  if (ext == ".html")
    text = report::report_html(r);
  else if (ext == ".json")
    text = report::report_json(r).dump(1) + "\n";
  else if (ext == ".csv")
    text = report::report_csv(r);
  else
    text = report::report_dot(r);
  write_file(out, text);
  size_t kernels = 0;
  for (const report::ReportPlan& p : r.plans) kernels += p.kernels.size();
  std::cout << fmt::format("wrote {} ({:.1f} kB): {} plans, {} kernels, in {:.1f} s\n", o.out,
                           text.size() / 1024.0, r.plans.size(), kernels, seconds());
  return 0;
}

}  // namespace souffle::cli
