// souffle-cli: the command-line face of the pipeline (contract in DESIGN.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/cli/cmd_sweep.h"
#include "app/cli/commands.h"
#include "core/schedule/price_store.h"
#include "core/support/error.h"

namespace {
const char* const kBindHelp =
    "fix a model input as a constant, e.g. one that decides an If: NAME=VALUE (numbers, "
    "comma-separated, or a .pb file)";
const char* const kShapeHelp =
    "an input's shape, sizing its dims declared without one (unnamed or -1): NAME=D0,D1,...";
}  // namespace

int main(int argc, char** argv) {
  using namespace souffle::cli;
  CLI::App app{"Souffle Explorer command line: inspect, verify and test ONNX models"};
  app.require_subcommand(1);

  CommonOptions inspect;
  auto* c_inspect = app.add_subcommand("inspect", "ops, tensors, TE count, unsupported ops");
  c_inspect->add_option("MODEL", inspect.model, "model.onnx")->required();
  c_inspect->add_flag("--json", inspect.json, "print one JSON object");
  c_inspect->add_option("--dim", inspect.dims, "bind a symbolic dimension: name=value");
  c_inspect->add_option("--bind", inspect.binds, kBindHelp);
  c_inspect->add_option("--shape", inspect.shapes, kShapeHelp);

  VerifyOptions verify;
  auto* c_verify = app.add_subcommand("verify", "run the model and compare with reference data");
  c_verify->add_option("MODEL", verify.common.model, "model.onnx")->required();
  c_verify->add_option("--data", verify.data_dir, "folder with test_data_set_N (default: model's)");
  c_verify
      ->add_option("--level", verify.level,
                   "te: the TE program in the interpreter; kernels: the plan's kernels in the "
                   "emulator")
      ->check(CLI::IsMember({"te", "kernels"}));
  c_verify->add_option("--rtol", verify.rtol,
                       "element-wise relative tolerance: |got - want| <= atol + rtol |want| "
                       "(default by precision: fp32 1e-4, tf32 5e-3, fp16 1e-2, bf16 5e-2)");
  c_verify->add_option("--atol", verify.atol,
                       "element-wise absolute tolerance (default by precision: fp32 1e-5, tf32 "
                       "5e-4, fp16 1e-3, bf16 5e-3; int8 QDQ models 1e-2)");
  // Hidden: the old relative L2 limit, still accepted so that old scripts run (with a warning).
  c_verify->add_option("--tolerance", verify.tolerance)->group("");
  c_verify->add_option("--precision", verify.precision,
                       "kernel compute type: fp32 (default), tf32, fp16, bf16 (--level kernels)");
  c_verify->add_flag("--f64", verify.f64, "keep float64 between ops in the interpreter");
  c_verify->add_flag("--timeline", verify.timeline,
                     "--level kernels: record and analyse each block's stages and waits");
  c_verify
      ->add_option("--sync", verify.sync,
                   "order of dependent stages across blocks (--level kernels): grid (default), "
                   "flags (per-tile flags wherever a consumer block reads fewer producer blocks "
                   "than the grid) or auto (per boundary the cheaper of the two by the cost model)")
      ->check(CLI::IsMember({"grid", "flags", "auto"}));
  c_verify
      ->add_option("--strategy", verify.strategy,
                   "verify the TE program transformed by unfused, rules, souffle or souffle-paper")
      ->check(CLI::IsMember({"unfused", "rules", "souffle", "souffle-paper"}));
  c_verify->add_flag("--no-waves", verify.no_waves,
                     "kernels keep their stages in program order (--level kernels; default: "
                     "independent stages side by side in waves where the cost model prices that "
                     "lower)");
  c_verify->add_option(
      "--gpu", verify.gpu,
      "GPU spec the kernels are built for (--level kernels; a built-in name or a "
      "spec file; default a100): co-resident grids and weight panels depend on it");
  c_verify->add_flag("--no-weight-panels", verify.no_weight_panels,
                     "every GEMM stage streams its weights (--level kernels; default: GEMM "
                     "stages that multiply by the same weights keep them in shared memory where "
                     "they fit and the cost model prices that lower)");
  c_verify->add_flag(
      "--wgmma", verify.wgmma,
      "tensor-core GEMMs on a compute capability 9.0 GPU (--gpu h100, h200) run the Hopper "
      "mainloop: warpgroup MMA, compiled for sm_90a (default: the Ampere mainloop)");
  c_verify->add_flag("--json", verify.common.json, "print one JSON object");
  c_verify->add_flag("-q,--quiet", verify.common.quiet, "no progress on stderr");
  c_verify->add_option("--dim", verify.common.dims, "bind a symbolic dimension: name=value");
  c_verify->add_option("--bind", verify.common.binds, kBindHelp);
  c_verify->add_option("--shape", verify.common.shapes, kShapeHelp);

  PlanCliOptions plan;
  auto* c_plan = app.add_subcommand("plan", "fusion plan: kernels, stages, reasons, cost");
  c_plan->add_option("MODEL", plan.common.model, "model.onnx")->required();
  c_plan
      ->add_option("--strategy", plan.strategy,
                   "unfused, rules, souffle (default) or souffle-paper")
      ->check(CLI::IsMember({"unfused", "rules", "souffle", "souffle-paper"}));
  c_plan->add_option("--calibration", plan.calibration,
                     "calibration file measured by souffle-runner: its constants price the plan");
  c_plan->add_option("--gpu", plan.gpu, "GPU name or spec file (default a100)");
  c_plan->add_option("--precision", plan.precision,
                     "compute type of GEMM-like kernels: fp32 (default), tf32, fp16, bf16");
  c_plan
      ->add_option("--sync", plan.sync,
                   "order of dependent stages across blocks: grid (default, Souffle's grid "
                   "barriers), flags (per-tile flags wherever proven) or auto (per boundary the "
                   "cheaper by the cost model); the plan is priced with it")
      ->check(CLI::IsMember({"grid", "flags", "auto"}));
  c_plan->add_flag("--no-waves", plan.no_waves,
                   "kernels keep their stages in program order (default: independent stages "
                   "side by side in waves where the cost model prices that lower)");
  c_plan->add_flag(
      "--wgmma", plan.wgmma,
      "tensor-core GEMMs on a compute capability 9.0 GPU (--gpu h100, h200) run the Hopper "
      "mainloop: warpgroup MMA, compiled for sm_90a (default: the Ampere mainloop)");
  c_plan->add_flag("--no-weight-panels", plan.no_weight_panels,
                   "every GEMM stage streams its weights (default: GEMM stages that multiply by "
                   "the same weights keep them in shared memory where they fit and the cost "
                   "model prices that lower)");
  c_plan->add_option("--decisions", plan.decisions, "decisions JSON file");
  c_plan->add_flag("--no-cache", plan.no_cache,
                   "price every partition by building its kernels, neither reading nor writing "
                   "the price cache (souffle-cli cache)");
  c_plan->add_option("--dump-after", plan.dump_after,
                     "print a step's result to stderr: analyze, horizontal, vertical, "
                     "partition, decisions, price");
  c_plan->add_flag("--json", plan.common.json, "print one JSON object");
  c_plan->add_flag("-q,--quiet", plan.common.quiet, "no progress on stderr");
  c_plan->add_option("--dim", plan.common.dims, "bind a symbolic dimension: name=value");
  c_plan->add_option("--bind", plan.common.binds, kBindHelp);
  c_plan->add_option("--shape", plan.common.shapes, kShapeHelp);

  CompileCliOptions compile;
  auto* c_compile =
      app.add_subcommand("compile", "CUDA kernels compiled with NVRTC; --out writes a bundle");
  c_compile->add_option("MODEL", compile.common.model, "model.onnx")->required();
  c_compile->add_option("--out", compile.out,
                        "bundle folder: .cu, .ptx, weights, data, host harness, CMakeLists.txt");
  c_compile->add_option("--arch", compile.archs, "NVRTC targets (default sm_80,sm_90)");
  c_compile
      ->add_option("--strategy", compile.strategy,
                   "unfused, rules, souffle (default) or souffle-paper")
      ->check(CLI::IsMember({"unfused", "rules", "souffle", "souffle-paper"}));
  c_compile->add_option("--calibration", compile.calibration,
                        "calibration file: the plan is priced (and so cut) with its constants");
  c_compile->add_option("--gpu", compile.gpu, "GPU name or spec file (default a100)");
  c_compile->add_option("--decisions", compile.decisions,
                        "decisions JSON file: the plan with these edits (as plan --decisions)");
  c_compile->add_option("--data", compile.data_dir,
                        "folder with test_data_set_0 (default: model's)");
  c_compile->add_option("-j,--jobs", compile.threads,
                        "NVRTC compilations at once (default: cores)");
  c_compile->add_option("--precision", compile.precision, "fp32 (default), tf32, fp16 or bf16");
  c_compile->add_flag("--no-waves", compile.no_waves,
                      "kernels keep their stages in program order, for comparison");
  c_compile->add_flag(
      "--wgmma", compile.wgmma,
      "tensor-core GEMMs on a compute capability 9.0 GPU (--gpu h100, h200) run the Hopper "
      "mainloop: warpgroup MMA, compiled for sm_90a (default: the Ampere mainloop)"
      "; --arch defaults to sm_90");
  c_compile->add_flag("--no-weight-panels", compile.no_weight_panels,
                      "every GEMM stage streams its weights, for comparison");
  c_compile
      ->add_option(
          "--sync", compile.sync,
          "order of dependent stages across blocks: grid (default), flags or auto (per-tile "
          "flags, as verify --level kernels --sync; a bundle carries their counters)")
      ->check(CLI::IsMember({"grid", "flags", "auto"}));
  c_compile
      ->add_option("--tune", compile.tune,
                   "GEMM tiles by the tile cost model (model, default) or by timing its top "
                   "candidates on the runner's GPU (measure)")
      ->check(CLI::IsMember({"model", "measure"}));
  c_compile->add_option(
      "--runner", compile.runner,
      "--tune measure: command that starts souffle-runner (default: beside this)");
  c_compile->add_flag("--timeline", compile.timeline,
                      "record each block's stages and waits in every kernel (docs/timeline.md)");
  c_compile->add_option("--tune-top", compile.tune_top,
                        "--tune measure: candidates timed per GEMM problem (default 8)");
  c_compile->add_option("--tune-dir", compile.tune_dir,
                        "--tune measure: folder for the candidate bundles (a remote runner must "
                        "see it at the same path; default: a temporary folder)");
  c_compile->add_option("--batch", compile.batch,
                        "kernels per NVRTC translation unit (faster check; not with --out)");
  c_compile->add_flag("--no-cache", compile.no_cache,
                      "compile every kernel with NVRTC and price every partition by building it, "
                      "neither reading nor writing the compile and price caches (souffle-cli "
                      "cache)");
  c_compile->add_flag("--no-dedup", compile.no_dedup,
                      "compile each launch alone under its own name, even where launches run the "
                      "same code (for comparison)");
  c_compile->add_option("--separate", compile.separate,
                        "how a kernel with stage functions compiles: objects (each function an "
                        "NVRTC program of its own, to SASS side by side, linked with nvJitLink; "
                        "the default), lto (every stage outlined, LTO-IR, the link generates the "
                        "code) or whole (one program); docs/compile_dedup.md");
  c_compile->add_flag("--lto", compile.lto, "the same as --separate lto");
  c_compile->add_flag("--sass", compile.sass,
                      "disassemble each kernel's cubin (nvdisasm, compiled again with line "
                      "information) and count its instructions per stage: MMA, cp.async/TMA, "
                      "ldmatrix, barriers, local memory");
  c_compile->add_flag("--json", compile.common.json, "print one JSON object");
  c_compile->add_flag("-q,--quiet", compile.common.quiet, "no progress on stderr");
  c_compile->add_option("--dim", compile.common.dims, "bind a symbolic dimension: name=value");
  c_compile->add_option("--bind", compile.common.binds, kBindHelp);
  c_compile->add_option("--shape", compile.common.shapes, kShapeHelp);

  ProfileCliOptions prof;
  auto* c_prof = app.add_subcommand(
      "profile", "run, verify and time the kernels through souffle-runner (GPU or emulator)");
  c_prof->add_option("MODEL", prof.common.model, "model.onnx")->required();
  c_prof->add_option("--strategy", prof.strategy, "a strategy, or all (default souffle)");
  c_prof->add_option("--runs", prof.runs, "timed runs (default 20 on a GPU, 1 on the emulator)");
  c_prof->add_option("--warmup", prof.warmup, "untimed runs first (default 3 on a GPU)");
  c_prof->add_option("--backend", prof.backend, "cuda (default) or emulator")
      ->check(CLI::IsMember({"cuda", "emulator"}));
  c_prof->add_option("--runner", prof.runner,
                     "command that starts souffle-runner (e.g. \"ssh gpu-host souffle-runner\")");
  c_prof->add_option("--gpu", prof.gpu, "plan for this GPU spec (default: the runner's device)");
  c_prof->add_option("--precision", prof.precision, "fp32 (default), tf32, fp16 or bf16");
  c_prof->add_option("--decisions", prof.decisions, "decisions JSON file");
  c_prof
      ->add_option("--sync", prof.sync,
                   "order of dependent stages across blocks: grid (default), flags or auto")
      ->check(CLI::IsMember({"grid", "flags", "auto"}));
  c_prof->add_option("--rtol", prof.rtol,
                     "element-wise relative tolerance of the outputs (default by precision, as "
                     "verify)");
  c_prof->add_option("--atol", prof.atol,
                     "element-wise absolute tolerance of the outputs (default by precision)");
  c_prof->add_option("--tolerance", prof.tolerance)->group("");  // hidden, as verify's
  c_prof->add_option("--bundle-dir", prof.bundle_dir,
                     "keep the bundles here (one folder per strategy; default: temporary)");
  c_prof->add_option("--data", prof.data_dir, "folder with test_data_set_0 (default: model's)");
  c_prof->add_option("--trace", prof.trace, "write Chrome-trace JSON (Perfetto) here");
  c_prof->add_flag("--timeline", prof.timeline,
                   "record each block's stages and waits inside the kernels (docs/timeline.md)");
  c_prof->add_option("--timeline-dir", prof.timeline_dir,
                     "where --timeline writes its traces and CSVs (default souffle-timeline)");
  c_prof->add_option("--timeout", prof.timeout_s, "seconds per runner request (default 600)");
  c_prof->add_flag("--no-graph", prof.no_graph, "skip the CUDA graph replay");
  c_prof->add_flag("--no-counters", prof.no_counters,
                   "skip the run under CUPTI's range profiler (DRAM bytes, occupancy)");
  c_prof->add_flag("--no-waves", prof.no_waves,
                   "kernels keep their stages in program order, for comparison");
  c_prof->add_flag("--no-weight-panels", prof.no_weight_panels,
                   "every GEMM stage streams its weights, for comparison");
  c_prof->add_flag("--no-cache", prof.no_cache,
                   "compile every kernel with NVRTC and price every partition by building it, "
                   "neither reading nor writing the compile and price caches");
  c_prof->add_flag("-q,--quiet", prof.quiet, "no progress on stderr");
  c_prof->add_flag("--json", prof.common.json, "print one JSON object");
  c_prof->add_option("--dim", prof.common.dims, "bind a symbolic dimension: name=value");
  c_prof->add_option("--bind", prof.common.binds, kBindHelp);
  c_prof->add_option("--shape", prof.common.shapes, kShapeHelp);

  CalibrateCliOptions cal;
  auto* c_cal = app.add_subcommand(
      "calibrate", "measure the GPU for the cost model: launch, grid barrier, bandwidth");
  c_cal->add_option("--out", cal.out, "calibration file to write")->required();
  c_cal->add_option("--runner", cal.runner, "command that starts souffle-runner");
  c_cal->add_option("--timeout", cal.timeout_s, "seconds (default 300)");
  c_cal->add_flag("--json", cal.json, "print the calibration as JSON");
  c_cal->add_option("--from-timeline", cal.from_timeline,
                    "a GPU timeline document (profile --timeline's STRATEGY.timeline.json; "
                    "repeatable): per-template corrections of the stage estimates, no runner");
  c_cal->add_option("--calibration", cal.base,
                    "with --from-timeline: the device's calibration file the corrections join");
  ReportCliOptions report;
  auto* c_report = app.add_subcommand(
      "report", "a report to share: HTML, JSON, CSV or DOT; --steps: the walk-through pages");
  c_report->add_option("MODEL", report.common.model, "model.onnx")->required();
  c_report
      ->add_option("--out", report.out,
                   "FILE.html, .json, .csv or .dot (DOT: the first plan's kernels as clusters)")
      ->required();
  c_report->add_option("--strategy", report.strategy, "unfused, rules, souffle (default) or all")
      ->check(CLI::IsMember({"unfused", "rules", "souffle", "all"}));
  c_report->add_flag("--steps", report.steps,
                     "the walk-through: one HTML page per pipeline step (FILE.html the first)");
  c_report->add_flag("--lesson", report.lesson,
                     "--steps: one self-contained HTML lesson, questions at each step");
  c_report->add_flag("--sass", report.sass,
                     "compile each launch (NVRTC, sm_80 and sm_90) and add its SASS instruction "
                     "mix per stage to the report, JSON or HTML (needs nvdisasm; docs/sass.md)");
  c_report->add_option("--timeline", report.timeline,
                       "a folder `profile --timeline --timeline-dir` wrote: each kernel's "
                       "timeline and per-stage table (docs/timeline.md)");
  c_report->add_option("--compare", report.compare, "compare with this strategy, kernel by kernel")
      ->check(CLI::IsMember({"unfused", "rules", "souffle"}));
  c_report->add_option("--decisions", report.decisions,
                       "compare the (first) strategy's plan without and with this decisions file");
  c_report->add_option("--gpu", report.gpu, "GPU name or spec file (default a100)");
  c_report->add_option("--precision", report.precision, "fp32 (default), tf32, fp16 or bf16");
  c_report->add_option("--calibration", report.calibration, "a calibration file to record");
  c_report->add_option("--measurements", report.measurements,
                       "measured kernel times (JSON) shown beside the estimates");
  c_report->add_option("--layer", report.layer,
                       "--steps: only ONNX nodes whose name contains this");
  c_report->add_option("--kernel", report.kernel,
                       "--steps: the kernel the schedule and emit pages show");
  c_report->add_option("--dim", report.common.dims, "bind a symbolic dimension: name=value");
  c_report->add_option("--bind", report.common.binds, kBindHelp);
  c_report->add_option("--shape", report.common.shapes, kShapeHelp);

  CacheCliOptions cache;
  auto* c_cache = app.add_subcommand(
      "cache", "the compile cache on disk: stats (entries, size, hits) or clear");
  c_cache->add_option("ACTION", cache.action, "stats (default) or clear")
      ->check(CLI::IsMember({"stats", "clear"}));
  c_cache->add_flag("--json", cache.json, "print one JSON object");

  ConformanceOptions conf;
  auto* c_conf = app.add_subcommand("conformance", "run ONNX backend-test folders");
  c_conf->add_option("DIR", conf.dirs, "test folders, or folders of test folders")->required();
  c_conf->add_flag("--json", conf.json, "print one JSON object with every test");
  c_conf->add_option("--rtol", conf.rtol, "relative tolerance (default 1e-3)");
  c_conf->add_option("--atol", conf.atol, "absolute tolerance (default 1e-7)");
  c_conf->add_option("-j,--jobs", conf.jobs, "tests run at once (default: cores)");
  c_conf->add_option("--timeout", conf.timeout_s, "seconds per test before it counts as a hang");
  c_conf->add_option("--min-pass", conf.min_pass, "exit 1 if fewer tests pass");
  c_conf->add_option("--min-pass-rate", conf.min_pass_rate, "exit 1 if a lower fraction passes");
  c_conf->add_flag("-q,--quiet", conf.quiet, "print only the summary");
  c_conf->add_option("--expect", conf.expect,
                     "expected status per test (NAME STATUS lines): exit 1 on any change");
  c_conf->add_option("--update-expected", conf.update_expected,
                     "write this run's status per test to FILE");
  c_conf->add_option("--level", conf.level,
                     "te (default), or kernels: each TE pass also planned under every strategy, "
                     "its kernels emulated and compiled with NVRTC");
  std::string conf_archs = "sm_80";
  c_conf->add_option("--arch", conf_archs,
                     "NVRTC targets at kernel level, comma-separated (default sm_80; none: off)");
  c_conf->add_option("--sample", conf.sample, "run every Nth test only (name order)");

  // The rest of the line goes to the Python sweep (its own --help lists its options).
  auto* c_sweep = app.add_subcommand(
      "sweep",
      "plan, compile, verify and profile every model x strategy x GPU of a manifest, on "
      "this machine's cores or a Dask cluster (MANIFEST [--scheduler ADDR] [--out DIR])");
  c_sweep->prefix_command();
  c_sweep->set_help_flag();  // --help is the sweep's own

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    // Partition prices kept between runs (the price cache beside the compile cache), unless
    // the command was told not to use the cache.
    const bool no_cache = (*c_plan && plan.no_cache) || (*c_compile && compile.no_cache) ||
                          (*c_prof && prof.no_cache);
    if (!no_cache && !*c_cache) {
      souffle::schedule::set_default_price_store(souffle::schedule::open_user_price_store(
          [](const std::string& w) { std::cerr << "warning: " << w << "\n"; }));
    }
    if (*c_inspect) return run_inspect(inspect);
    if (*c_verify) return run_verify(verify);
    if (*c_plan) return run_plan(plan);
    if (*c_conf) {
      conf.archs.clear();
      for (size_t at = 0; at < conf_archs.size() && conf_archs != "none";) {
        size_t end = conf_archs.find(',', at);
        if (end == std::string::npos) end = conf_archs.size();
        if (end > at) conf.archs.push_back(conf_archs.substr(at, end - at));
        at = end + 1;
      }
      return run_conformance(conf);
    }
    if (*c_compile) return run_compile(compile);
    if (*c_prof) return run_profile(prof);
    if (*c_cal) return run_calibrate(cal);
    if (*c_report) return run_report(report);
    if (*c_cache) return run_cache(cache);
    if (*c_sweep) return run_sweep(c_sweep->remaining());
  } catch (const souffle::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // An InternalError's message starts with "internal error: " already.
    const std::string what = e.what();
    std::cerr << (what.rfind("internal error", 0) == 0 ? "" : "internal error: ") << what << "\n";
    return 3;
  }
  return 2;
}
