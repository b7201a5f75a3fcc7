// --bind on every command that takes a model, and what a model from another exporter meets:
// an If decided by an input (refused naming it, bound by --bind, bound from the data by verify),
// a Paddle-style -1 dim, a tf2onnx layer norm under the rules strategy.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_util.h"

namespace souffle::cli_test {
namespace {

const std::string kData = std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/exporters/";
const std::string kIf = kData + "if_on_input/model.onnx";

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CliBind, AnUnboundIfInputIsRefusedSayingHowToBindIt) {
  const std::string out = " --out " + testing::TempDir() + "unbound.json";
  for (std::string cmd : {"inspect", "plan", "compile", "report"}) {
    CliRun r = run_cli(cmd + " " + kIf + (cmd == "report" ? out : ""), true);
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "If 'If_0' depends on input 'sr': bind it with --bind sr=VALUE"))
        << cmd << ": " << r.out;
    EXPECT_FALSE(contains(r.out, "internal error")) << r.out;
  }
}

TEST(CliBind, EveryCommandTakesBind) {
  const std::string b = " --bind sr=16000";
  CliRun inspect = run_cli("inspect --json " + kIf + b, true);
  EXPECT_EQ(inspect.code, 0) << inspect.out;
  for (const char* s : {"unfused", "rules", "souffle", "souffle-paper"}) {
    CliRun plan = run_cli(std::string("plan -q --strategy ") + s + " " + kIf + b, true);
    EXPECT_EQ(plan.code, 0) << s << ": " << plan.out;
  }
  // A bundle's data sets lose the bound input's values (they hold one per input of the file).
  CliRun bundle = run_cli(
      "compile -q --arch sm_90 " + kIf + b + " --out " + testing::TempDir() + "bind_bundle", true);
  EXPECT_EQ(bundle.code, 0) << bundle.out;
  // The emulator makes the kernels again from the bundle's model, with the bundle's bindings.
  CliRun profile = run_cli("profile -q --backend emulator " + kIf + b, true);
  EXPECT_EQ(profile.code, 0) << profile.out;
  CliRun verify = run_cli("verify -q " + kIf + b, true);
  EXPECT_EQ(verify.code, 0) << verify.out;
  EXPECT_TRUE(contains(verify.out, "verified")) << verify.out;
  CliRun report = run_cli("report " + kIf + b + " --out " + testing::TempDir() + "bind.json", true);
  EXPECT_EQ(report.code, 0) << report.out;
  // The walk-through and the lesson import the model as the plan does, bound (they ran the
  // import again without the bindings and failed on the If).
  for (const char* lesson : {"", " --lesson"}) {
    std::string cmd = "report --steps";
    cmd += lesson;
    cmd += " " + kIf;
    cmd += b;
    cmd += " --out " + testing::TempDir() + "bind_steps.html";
    CliRun steps = run_cli(cmd, true);
    EXPECT_EQ(steps.code, 0) << lesson << ": " << steps.out;
  }
  // A name that is no input, a malformed value: usage errors naming them.
  CliRun bad = run_cli("plan -q " + kIf + " --bind rate=16000", true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.out, "'rate'") && contains(bad.out, "'sr'")) << bad.out;
  CliRun malformed = run_cli("plan -q " + kIf + " --bind sr", true);
  EXPECT_EQ(malformed.code, 2);
  EXPECT_TRUE(contains(malformed.out, "NAME=VALUE")) << malformed.out;
}

TEST(CliBind, VerifyBindsTheDecidingInputFromEachDataSet) {
  for (const char* level : {"te", "kernels"}) {
    CliRun r = run_cli(std::string("verify --level ") + level + " " + kIf, true);
    EXPECT_EQ(r.code, 0) << level << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "bound from each data set")) << r.out;
    EXPECT_TRUE(contains(r.out, "over 2 data sets")) << r.out;
  }
}

TEST(CliWild, PaddleUnknownDimsVerifyWithAWarning) {
  CliRun r = run_cli("verify " + kData + "paddle_unknown_dims/model.onnx", true);
  EXPECT_EQ(r.code, 0) << r.out;
  CliRun inspect = run_cli("inspect --json " + kData + "paddle_unknown_dims/model.onnx", true);
  EXPECT_EQ(inspect.code, 0) << inspect.out;
  EXPECT_TRUE(contains(inspect.out, "save_infer_model/scale_0.tmp_1")) << inspect.out;
}

TEST(CliWild, Tf2onnxLayerNormPlansUnderRules) {
  CliRun r = run_cli("plan -q --strategy rules " + kData + "tf2onnx_layernorm/model.onnx", true);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(contains(r.out, "internal error")) << r.out;
}

}  // namespace
}  // namespace souffle::cli_test
