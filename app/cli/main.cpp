// souffle-cli: the command-line face of the pipeline (contract in DESIGN.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/cli/commands.h"
#include "core/support/error.h"

int main(int argc, char** argv) {
  using namespace souffle::cli;
  CLI::App app{"Souffle Explorer command line: inspect, verify and test ONNX models"};
  app.require_subcommand(1);

  CommonOptions inspect;
  auto* c_inspect = app.add_subcommand("inspect", "ops, tensors, TE count, unsupported ops");
  c_inspect->add_option("MODEL", inspect.model, "model.onnx")->required();
  c_inspect->add_flag("--json", inspect.json, "print one JSON object");
  c_inspect->add_option("--dim", inspect.dims, "bind a symbolic dimension: name=value");

  VerifyOptions verify;
  auto* c_verify = app.add_subcommand("verify", "run the model and compare with reference data");
  c_verify->add_option("MODEL", verify.common.model, "model.onnx")->required();
  c_verify->add_option("--data", verify.data_dir, "folder with test_data_set_N (default: model's)");
  c_verify
      ->add_option("--level", verify.level,
                   "te: the TE program in the interpreter; kernels: the plan's kernels in the "
                   "emulator")
      ->check(CLI::IsMember({"te", "kernels"}));
  c_verify->add_option("--tolerance", verify.tolerance, "relative L2 error limit (default 1e-4)");
  c_verify->add_option("--precision", verify.precision,
                       "kernel compute type: fp32 (default), tf32, fp16, bf16 (--level kernels)");
  c_verify->add_flag("--f64", verify.f64, "keep float64 between ops in the interpreter");
  c_verify
      ->add_option("--strategy", verify.strategy,
                   "verify the TE program transformed by unfused, rules, souffle or souffle-paper")
      ->check(CLI::IsMember({"unfused", "rules", "souffle", "souffle-paper"}));
  c_verify->add_flag("--json", verify.common.json, "print one JSON object");
  c_verify->add_option("--dim", verify.common.dims, "bind a symbolic dimension: name=value");

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
  c_plan->add_option("--decisions", plan.decisions, "decisions JSON file");
  c_plan->add_option("--dump-after", plan.dump_after,
                     "print a step's result to stderr: analyze, horizontal, vertical, "
                     "partition, decisions, price");
  c_plan->add_flag("--json", plan.common.json, "print one JSON object");
  c_plan->add_option("--dim", plan.common.dims, "bind a symbolic dimension: name=value");

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
  c_compile->add_option("--data", compile.data_dir,
                        "folder with test_data_set_0 (default: model's)");
  c_compile->add_option("-j,--jobs", compile.threads,
                        "NVRTC compilations at once (default: cores)");
  c_compile->add_option("--precision", compile.precision, "fp32 (default), tf32, fp16 or bf16");
  c_compile->add_option("--batch", compile.batch,
                        "kernels per NVRTC translation unit (faster check; not with --out)");
  c_compile->add_flag("--json", compile.common.json, "print one JSON object");
  c_compile->add_option("--dim", compile.common.dims, "bind a symbolic dimension: name=value");

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (*c_inspect) return run_inspect(inspect);
    if (*c_verify) return run_verify(verify);
    if (*c_plan) return run_plan(plan);
    if (*c_conf) return run_conformance(conf);
    if (*c_compile) return run_compile(compile);
  } catch (const souffle::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
