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

}  // namespace
