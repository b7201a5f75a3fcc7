// `souffle-cli compile`: exit codes (2 for bad usage or a missing model, 0 when every kernel
// compiles) and the JSON it prints.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {
namespace fs = std::filesystem;

using souffle::cli_test::CliRun;

CliRun run_cli(const std::string& args) {
  return souffle::cli_test::run_cli(args, false);
}

std::string mmoe() {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx";
}

TEST(CliCompile, BadArchIsUsageError) {
  EXPECT_EQ(run_cli("compile " + mmoe() + " --arch sm80").code, 2);
  EXPECT_EQ(run_cli("compile " + mmoe() + " --arch sm_80,,sm_90").code, 2);
  EXPECT_EQ(run_cli("compile " + mmoe() + " --arch gfx90a").code, 2);
}

TEST(CliCompile, MissingModelIsExit2) {
  EXPECT_EQ(run_cli("compile /nonexistent/model.onnx --arch sm_80").code, 2);
}

TEST(CliCompile, BadStrategyIsUsageError) {
  EXPECT_EQ(run_cli("compile " + mmoe() + " --strategy fastest").code, 2);
}

TEST(CliCompile, SouffleKernelJson) {
  fs::path out = fs::path(SOUFFLE_BINARY_DIR) / "test_cli_compile_out";
  fs::remove_all(out);
  CliRun r = run_cli("compile " + mmoe() + " --arch sm_80 --json --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["strategy"], "souffle");
  EXPECT_EQ(j["errors"], 0);
  EXPECT_EQ(j["archs"], nlohmann::json::array({"sm_80"}));
  ASSERT_EQ(j["kernels"].size(), 1u);
  const nlohmann::json& k = j["kernels"][0];
  EXPECT_EQ(k["cooperative"], true);
  ASSERT_EQ(k["per_arch"].size(), 1u);
  EXPECT_EQ(k["per_arch"][0]["ok"], true);
  EXPECT_GT(k["per_arch"][0]["registers"].get<int>(), 0);
  EXPECT_GT(k["per_arch"][0]["ptx_bytes"].get<int>(), 0);
  EXPECT_LE(k["grid"].get<int64_t>(), k["co_resident"].get<int64_t>());
  // The kernel's own barriers: a cooperative kernel has at least one grid barrier.
  EXPECT_GE(k["grid_barriers"].get<int>(), 1);
  EXPECT_GE(k["block_barriers"].get<int>(), 0);
  EXPECT_TRUE(fs::exists(out / "kernel0.sm_80.ptx"));
  EXPECT_TRUE(fs::exists(out / "main.cu"));
}

}  // namespace
