/// \file The souffle-cli subcommands; each returns the process exit code (0 ok, 1 check failed,
/// 2 bad usage or a model it cannot take).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace souffle::cli {

struct CommonOptions {
  std::string model;
  bool json = false;
  std::vector<std::string> dims;  ///< "name=value"
};

struct VerifyOptions {
  CommonOptions common;
  std::string data_dir;  ///< default: the model's folder
  std::string level = "te";
  double tolerance = 1e-4;  ///< relative L2 error limit per output
  bool f64 = false;
  std::string strategy;  ///< verify the TE program this strategy transforms to ("" = lowered)
  std::string precision = "fp32";  ///< compute type of the kernels (--level kernels)
};

struct PlanCliOptions {
  CommonOptions common;
  std::string strategy = "souffle";
  std::string gpu = "a100";        ///< a built-in name or a spec file
  std::string precision = "fp32";  ///< compute type of GEMM-like kernels (cost and kernels)
  std::string decisions;           ///< a decisions JSON file
  std::string dump_after;          ///< print this step's snapshot (to stderr)
  std::string calibration;         ///< a calibration file (souffle-runner calibrate)
};

struct CompileCliOptions {
  CommonOptions common;
  std::string out;                    ///< bundle folder ("" compiles and reports only)
  std::string archs = "sm_80,sm_90";  ///< comma-separated NVRTC targets
  std::string strategy = "souffle";
  std::string gpu = "a100";        ///< co-residency is checked on this GPU
  std::string data_dir;            ///< test_data_set_0's folder (default: the model's)
  int threads = 0;                 ///< NVRTC compilations at once (0: cores)
  std::string precision = "fp32";  ///< compute type of GEMM-like kernels
  int batch = 1;                   ///< kernels per NVRTC unit (report only; a bundle needs 1)
  std::string calibration;         ///< a calibration file: the plan is priced with it
};

struct ConformanceOptions {
  std::vector<std::string> dirs;
  bool json = false;
  double rtol = 1e-3, atol = 1e-7;
  int jobs = 0;
  double timeout_s = 120;
  int64_t min_pass = 0;      ///< exit 1 when fewer tests pass
  double min_pass_rate = 0;  ///< exit 1 when the pass fraction is lower
  bool quiet = false;
};

int run_inspect(const CommonOptions& o);
int run_verify(const VerifyOptions& o);
int run_plan(const PlanCliOptions& o);
int run_conformance(const ConformanceOptions& o);
int run_compile(const CompileCliOptions& o);

/// Parses --dim name=value pairs; throws UserError on a malformed one.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims);

}  // namespace souffle::cli
