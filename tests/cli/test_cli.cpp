// The command-line contract of DESIGN.md: exit codes, messages naming the file, JSON keys.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {
namespace fs = std::filesystem;

using souffle::cli_test::CliRun;

CliRun run_cli(const std::string& args) {
  return souffle::cli_test::run_cli(args, true);
}

std::string sample(const std::string& name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + name + "/model.onnx";
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("souffle_cli_test_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Cli, NoSubcommandIsUsageError) {
  EXPECT_EQ(run_cli("").code, 2);
}

TEST(Cli, MissingFileNamesIt) {
  CliRun r = run_cli("inspect /nonexistent/model.onnx");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent/model.onnx"), std::string::npos) << r.out;
}

TEST(Cli, CorruptModelIsExit2WithFileName) {
  fs::path d = scratch("corrupt");
  std::ofstream(d / "model.onnx") << "this is not a protobuf \x01\x02\x03";
  CliRun r = run_cli("inspect " + (d / "model.onnx").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.onnx"), std::string::npos) << r.out;
}

TEST(Cli, TruncatedModelIsExit2) {
  fs::path d = scratch("truncated");
  std::ifstream in(sample("mmoe"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 100u);
  std::ofstream(d / "model.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CliRun r = run_cli("inspect " + (d / "model.onnx").string());
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(Cli, InspectJsonHasContractKeys) {
  CliRun r = run_cli("inspect --json " + sample("mmoe"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"model", "opset", "onnx_nodes", "nodes", "tes", "inputs", "outputs",
                          "op_counts", "unsupported", "tensors"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j["tes"].get<int>(), 0);
  EXPECT_TRUE(j["unsupported"].empty());
}

TEST(Cli, VerifyPassesOnSample) {
  CliRun r = run_cli("verify " + sample("mmoe"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
}

TEST(Cli, VerifyDetectsWrongReference) {
  // Reference outputs of one model paired with another model's inputs cannot match: a mismatch is
  // exit 1, and the data-set/model disagreement in counts is exit 2.
  fs::path d = scratch("wrong_ref");
  fs::path src = fs::path(sample("mmoe")).parent_path();
  fs::copy(src, d, fs::copy_options::recursive);
  fs::path out0 = d / "test_data_set_0" / "output_0.pb";
  ASSERT_TRUE(fs::exists(out0));
  // Swap output_0 with output_1 when the model has two outputs of equal shape (MMoE's two tasks),
  // otherwise replace it with the input (shape mismatch) — both must fail.
  fs::path out1 = d / "test_data_set_0" / "output_1.pb";
  if (fs::exists(out1)) {
    fs::rename(out0, d / "tmp.pb");
    fs::rename(out1, out0);
    fs::rename(d / "tmp.pb", out1);
  } else {
    fs::copy_file(d / "test_data_set_0" / "input_0.pb", out0, fs::copy_options::overwrite_existing);
  }
  CliRun r = run_cli("verify " + (d / "model.onnx").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
}

TEST(Cli, VerifyWithoutExpectedOutputsIsExit2) {
  // A data set with no output files, or fewer than the model gives, proves nothing: exit 2 with
  // the folder named, at TE and kernel level, and conformance cannot count it as a pass.
  fs::path src = fs::path(sample("mmoe")).parent_path();
  for (const char* removed : {"output_1.pb", "output_0.pb"}) {
    fs::path d = scratch(std::string("missing_") + removed);
    fs::copy(src, d, fs::copy_options::recursive);
    // Removing output_0 leaves output_1 unread (outputs are numbered from 0): no outputs.
    fs::remove(d / "test_data_set_0" / removed);
    bool one_left = fs::exists(d / "test_data_set_0" / "output_0.pb");
    const std::string want = one_left ? "has 1 expected outputs" : "has 0 expected outputs";
    for (const char* level : {"te", "kernels"}) {
      CliRun r = run_cli("verify " + (d / "model.onnx").string() + " --level " + level);
      EXPECT_EQ(r.code, 2) << level << "\n" << r.out;
      EXPECT_NE(r.out.find((d / "test_data_set_0").string()), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("verified"), std::string::npos) << r.out;
    }
    CliRun c = run_cli("conformance --json " + d.string());
    size_t b = c.out.find('{'), e = c.out.rfind('}');
    ASSERT_NE(b, std::string::npos) << c.out;
    auto j = nlohmann::json::parse(c.out.substr(b, e - b + 1));
    EXPECT_EQ(j["passed"].get<int>(), 0);
    EXPECT_EQ(j["failed"].get<int>(), 1);
    EXPECT_NE(j["tests"][0]["detail"].get<std::string>().find(want), std::string::npos) << c.out;
  }
}

TEST(Cli, BadDimOption) {
  CliRun r = run_cli("inspect " + sample("mmoe") + " --dim batch");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("name=value"), std::string::npos) << r.out;
}

TEST(Cli, ConformanceCountsAndJson) {
  const std::string node = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(node)) GTEST_SKIP() << "libonnx-testdata not installed";
  CliRun r = run_cli("conformance --json " + node + "/test_abs " + node + "/test_relu");
  ASSERT_EQ(r.code, 0) << r.out;
  size_t b = r.out.find('{'), e = r.out.rfind('}');
  ASSERT_NE(b, std::string::npos) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(b, e - b + 1));
  EXPECT_EQ(j["total"].get<int>(), 2);
  EXPECT_EQ(j["passed"].get<int>(), 2);
}

TEST(Cli, ConformanceAtKernelLevel) {
  const std::string node = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(node)) GTEST_SKIP() << "libonnx-testdata not installed";
  // A TE-level pass is planned under every strategy, emulated and compiled (no NVRTC here, to
  // stay fast); a test that does not pass at TE level is not run at kernel level.
  CliRun r = run_cli("conformance --json --level kernels --arch none " + node + "/test_abs " +
                     node + "/test_bernoulli");
  ASSERT_EQ(r.code, 0) << r.out;
  size_t b = r.out.find('{'), e = r.out.rfind('}');
  ASSERT_NE(b, std::string::npos) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(b, e - b + 1));
  EXPECT_EQ(j["kernels_passed"].get<int>(), 1);
  for (const auto& t : j["tests"]) {
    std::string want = t["name"] == "test_abs" ? "pass" : "not-run";
    EXPECT_EQ(t["kernel_status"], want) << t;
  }
  EXPECT_EQ(run_cli("conformance --level gpu " + node + "/test_abs").code, 2);
}

TEST(Cli, ConformanceExpectedStatusNamesEachChange) {
  const std::string node = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(node)) GTEST_SKIP() << "libonnx-testdata not installed";
  fs::path d = scratch("expect");
  const std::string tests = node + "/test_abs " + node + "/test_relu";
  // As recorded: exit 0. test_abs recorded as unsupported, test_relu missing, an extra test
  // listed: exit 1 and each change named.
  CliRun w = run_cli("conformance -q " + tests + " --update-expected " + (d / "ok.txt").string());
  ASSERT_EQ(w.code, 0) << w.out;
  CliRun same = run_cli("conformance -q " + tests + " --expect " + (d / "ok.txt").string());
  EXPECT_EQ(same.code, 0) << same.out;
  EXPECT_NE(same.out.find("every status as expected"), std::string::npos) << same.out;
  std::ofstream(d / "changed.txt") << "test_abs unsupported  # old reason\ntest_zzz pass\n";
  CliRun r = run_cli("conformance -q " + tests + " --expect " + (d / "changed.txt").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("3 tests changed status"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test_abs: unsupported -> pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test_relu: new (pass)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test_zzz: gone (was pass)"), std::string::npos) << r.out;
}

}  // namespace

namespace {

/// A calibration file as souffle-runner writes it (launch, bandwidth and barrier samples).
fs::path calibration_file(const fs::path& dir) {
  const fs::path f = dir / "h200.json";
  std::ofstream(f) << R"({"version": 1, "device": "NVIDIA H200", "compute_capability": "9.0",
    "sm_count": 132, "driver_version": 13000, "date": "2026-12-01T10:00:00Z", "clocks": "",
    "launch_overhead_us": 2.5, "graph_launch_us": 1.0,
    "grid_barrier": [{"blocks": 132, "blocks_per_sm": 1, "threads": 256, "us": 2.0},
                     {"blocks": 264, "blocks_per_sm": 2, "threads": 256, "us": 3.0}],
    "dram_bandwidth_gbps": 4000, "gemm_fp32_tflops": 40, "gemm_fp16_tflops": 500})";
  return f;
}

}  // namespace

TEST(Cli, PlanSaysWhichCostConstantsItUsed) {
  CliRun spec = run_cli("plan " + sample("mmoe") + " --json");
  ASSERT_EQ(spec.code, 0) << spec.out;
  nlohmann::json s = nlohmann::json::parse(spec.out.substr(spec.out.find('{')));
  EXPECT_EQ(s["cost_model"], "v2: built kernels");
  EXPECT_EQ(s["cost_constants"], "spec A100-SXM4-40GB");

  fs::path d = scratch("calibration");
  const fs::path cal = calibration_file(d);
  CliRun r = run_cli("plan " + sample("mmoe") + " --gpu h200 --json --calibration " + cal.string());
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const std::string used = j["cost_constants"];
  EXPECT_NE(used.find("calibration " + cal.string()), std::string::npos) << used;
  EXPECT_NE(used.find("device NVIDIA H200"), std::string::npos) << used;
  EXPECT_EQ(j["calibration"], cal.string());
  EXPECT_NE(j["est_time_us"], s["est_time_us"]);
  CliRun text = run_cli("plan " + sample("mmoe") + " --gpu h200 --calibration " + cal.string());
  EXPECT_NE(text.out.find("constants from calibration " + cal.string()), std::string::npos);

  std::ofstream(d / "bad.json") << "{\"version\": 1, \"launch_overhead_us\": -3}";
  CliRun bad = run_cli("plan " + sample("mmoe") + " --calibration " + (d / "bad.json").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("bad.json"), std::string::npos) << bad.out;
}

TEST(Cli, PlanAndCompileJsonAgreeOnKernelsAndBarriers) {
  for (const char* strategy : {"rules", "souffle"}) {
    SCOPED_TRACE(strategy);
    CliRun p = run_cli("plan " + sample("mmoe") + " --json --strategy " + strategy);
    CliRun c = run_cli("compile " + sample("mmoe") + " --json --arch sm_80 --strategy " + strategy);
    ASSERT_EQ(p.code, 0) << p.out;
    nlohmann::json pj = nlohmann::json::parse(p.out.substr(p.out.find('{')));
    nlohmann::json cj = nlohmann::json::parse(c.out.substr(c.out.find('{')));
    EXPECT_EQ(pj["launches"], cj["launches"]);
    EXPECT_EQ(pj["grid_syncs"], cj["grid_barriers"]);
    EXPECT_EQ(pj["kernels"], cj["plan"]["kernels"]);
    EXPECT_EQ(pj["dram_bytes"], cj["plan"]["dram_bytes"]);
    std::vector<std::string> steps;
    for (const nlohmann::json& s : pj["passes"]) steps.push_back(s["name"]);
    EXPECT_EQ(steps.front(), "import");
    EXPECT_EQ(steps.back(), "price");
  }
}

namespace {

TEST(Cli, RulesLaunchBoundariesExplainEachExtraLaunch) {
  // Sample Swin under rules: some partitions are cut into several launches where merging their
  // stages would need a grid barrier; each later launch has a launch boundary naming the
  // cross-block read that forced it.
  CliRun r = run_cli("plan " + sample("swin") + " --json --strategy rules");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  int split = 0;
  for (const nlohmann::json& p : j["partitions"]) {
    int launch_bounds = 0;
    for (const nlohmann::json& b : p["boundaries"]) {
      EXPECT_NE(b["kind"], "grid") << b;  // rules launch without grid synchronization
      if (b["kind"] != "launch") continue;
      ++launch_bounds;
      EXPECT_EQ(b["reason"]["kind"], "cross-block") << b;
      EXPECT_TRUE(b["reason"]["tensor"].is_string()) << b;
      EXPECT_TRUE(b["reason"]["consumer"].is_string()) << b;
      const nlohmann::json& to = p["built_stages"][b["to"].get<size_t>()];
      const nlohmann::json& from = p["built_stages"][b["from"].get<size_t>()];
      EXPECT_EQ(to["launch"].get<int>(), from["launch"].get<int>() + 1) << b;
    }
    EXPECT_EQ(launch_bounds + 1, p["launches"].get<int>()) << p["id"];
    split += p["launches"].get<int>() > 1;
  }
  EXPECT_GT(split, 0);
}

}  // namespace

namespace {

TEST(Cli, VerifyKernelsWithPerTileFlags) {
  // MMoE's souffle kernel: two grid barriers, each replaced by waits on the producer blocks a
  // consumer block reads; the emulator runs the blocks as tasks and finds no race or deadlock.
  CliRun grid = run_cli("verify --json --level kernels " + sample("mmoe"));
  ASSERT_EQ(grid.code, 0) << grid.out;
  auto g = nlohmann::json::parse(grid.out);
  EXPECT_GT(g["grid_barriers"].get<int>(), 0);
  EXPECT_EQ(g["flag_waits"].get<int>(), 0);
  CliRun flags = run_cli("verify --json --level kernels --sync flags " + sample("mmoe"));
  ASSERT_EQ(flags.code, 0) << flags.out;
  auto f = nlohmann::json::parse(flags.out);
  EXPECT_EQ(f["grid_barriers"].get<int>(), 0);
  EXPECT_GT(f["flag_waits"].get<int>(), 0);
  EXPECT_EQ(f["sync"], "flags");
  // A bundle carries them: counters of kind "flags", the kernel takes the epoch.
  fs::path dir = scratch("flag_bundle");
  CliRun out =
      run_cli("compile --sync flags --arch sm_80 --out " + dir.string() + " " + sample("mmoe"));
  ASSERT_EQ(out.code, 0) << out.out;
  std::ifstream in(dir / "bundle.json");
  auto b = nlohmann::json::parse(in);
  EXPECT_EQ(b["version"], 2);
  EXPECT_EQ(b["source"]["sync"], "flags");
  ASSERT_EQ(b["kernels"].size(), 1u);
  EXPECT_TRUE(b["kernels"][0]["flag_epoch"]);
  EXPECT_EQ(b["kernels"][0]["flag_waits"], f["flag_waits"]);
  int counters = 0;
  for (const auto& t : b["tensors"]) counters += t["kind"] == "flags";
  EXPECT_GT(counters, 0);
  EXPECT_TRUE(fs::exists(dir / "kernel0.sm_80.cubin"));
}

TEST(Cli, WeightPanelsAreOnByDefaultAndCanBeTurnedOffForComparison) {
  // The sample LSTM's gate GEMMs keep their weights in shared memory: priced below streaming
  // them every step, which --no-weight-panels builds (plan, verify, compile without --out).
  CliRun on = run_cli("plan --json " + sample("lstm"));
  CliRun off = run_cli("plan --json --no-weight-panels " + sample("lstm"));
  ASSERT_EQ(on.code, 0) << on.out;
  ASSERT_EQ(off.code, 0) << off.out;
  auto a = nlohmann::json::parse(on.out.substr(on.out.find('{')));
  auto b = nlohmann::json::parse(off.out.substr(off.out.find('{')));
  EXPECT_LT(a["est_time_us"].get<double>(), b["est_time_us"].get<double>());
  // Which stages load their panel and which read it there (plan --json built_stages).
  auto panels = [](const nlohmann::json& j, bool loads) {
    int n = 0;
    for (const auto& st : j["partitions"][0]["built_stages"])
      n += st.contains("weight_panel") && st["weight_panel"]["loads"] == loads;
    return n;
  };
  EXPECT_EQ(panels(a, true), 2);
  EXPECT_EQ(panels(a, false), 30);
  EXPECT_EQ(panels(b, true) + panels(b, false), 0);
  CliRun verify = run_cli("verify --level kernels --no-weight-panels " + sample("lstm"));
  EXPECT_EQ(verify.code, 0) << verify.out;
  // A bundle carries the form it was built in, and the emulator runner, which builds the kernels
  // again from the bundle's model, builds the same (it checks the CUDA C is identical).
  fs::path dir = scratch("no_panels");
  CliRun bundle = run_cli("compile --no-weight-panels --no-waves --arch sm_80 --out " +
                          dir.string() + " " + sample("lstm"));
  ASSERT_EQ(bundle.code, 0) << bundle.out;
  std::ifstream in(dir / "bundle.json");
  auto m = nlohmann::json::parse(in);
  EXPECT_EQ(m["version"], 2);
  EXPECT_EQ(m["source"]["weight_panels"], false);
  EXPECT_EQ(m["source"]["waves"], false);
  for (const char* form : {"", " --no-weight-panels", " --no-waves --no-weight-panels"}) {
    CliRun p =
        run_cli(std::string("profile --backend emulator --json -q") + form + " " + sample("lstm"));
    ASSERT_EQ(p.code, 0) << form << p.out;
    auto j = nlohmann::json::parse(p.out.substr(p.out.find('{')));
    const auto& r = j["strategies"][0];
    EXPECT_EQ(r["weight_panels"], std::string(form).find("panels") == std::string::npos) << form;
    EXPECT_EQ(r["waves"], std::string(form).find("waves") == std::string::npos) << form;
    EXPECT_EQ(j["ok"], true) << form;
    EXPECT_FALSE(r.contains("error")) << form << r.dump();
  }
}

// Progress on stderr: the steps of plan, compile and verify on a terminal (a pseudo-terminal made
// by `script`), nothing into a pipe, nothing with -q; stdout the same either way.
TEST(Cli, ProgressOnlyOnATerminal) {
  const std::string model = sample("mmoe");
  const CliRun piped = run_cli("plan " + model);
  ASSERT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find("partition"), std::string::npos) << piped.out;
  if (std::system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  auto on_terminal = [&](const std::string& args) {
    // stdout to /dev/null, so what the pseudo-terminal shows is stderr.
    const std::string cmd =
        "script -qec \"" + std::string(SOUFFLE_CLI) + " " + args + " > /dev/null\" /dev/null 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    std::array<char, 4096> buf{};
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
    pclose(p);
    return out;
  };
  const std::string plan = on_terminal("plan " + model);
  EXPECT_NE(plan.find("partition"), std::string::npos) << plan;
  EXPECT_NE(plan.find("\033[K"), std::string::npos);  // rewritten in place
  const std::string compile = on_terminal("compile " + model + " --arch sm_80");
  EXPECT_NE(compile.find("emit"), std::string::npos) << compile;
  EXPECT_EQ(on_terminal("plan " + model + " -q").find("partition"), std::string::npos);
  // verify --level kernels: the planning steps, then the emulator's kernel and stage.
  const std::string verify = on_terminal("verify " + model + " --level kernels");
  EXPECT_NE(verify.find("partition"), std::string::npos) << verify;
  EXPECT_NE(verify.find("emulating kernel0, stage 1 of"), std::string::npos) << verify;
}

}  // namespace
