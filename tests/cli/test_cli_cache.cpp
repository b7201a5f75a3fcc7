// `souffle-cli cache stats|clear` and the compile cache across processes: a second compile of a
// model in a new process is served from disk with the same figures, --no-cache compiles anyway,
// and an unusable cache folder costs one warning, not the compile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {
namespace fs = std::filesystem;

using souffle::cli_test::CliRun;
using souffle::cli_test::run_cli;

std::string mmoe() {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx";
}

/// Points souffle-cli (through the environment it inherits) at a fresh cache folder.
class CliCache : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("souffle_cli_cache_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    const char* old = std::getenv("SOUFFLE_CACHE_DIR");
    m_saved = old ? old : "";
    ::setenv("SOUFFLE_CACHE_DIR", m_dir.c_str(), 1);
  }
  void TearDown() override {
    if (m_saved.empty())
      ::unsetenv("SOUFFLE_CACHE_DIR");
    else
      ::setenv("SOUFFLE_CACHE_DIR", m_saved.c_str(), 1);
    fs::remove_all(m_dir);
  }
  nlohmann::json json_of(const std::string& args) {
    CliRun r = run_cli(args, false);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
    return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }
  fs::path m_dir;
  std::string m_saved;
};

/// Registers and spills per kernel and arch, as compile --json prints them.
std::vector<std::string> figures(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& k : j["kernels"])
    for (const auto& a : k["per_arch"])
      out.push_back(k["name"].get<std::string>() + " " + a["arch"].get<std::string>() + " " +
                    a.value("registers", nlohmann::json(-1)).dump() + " " +
                    a.value("spills", nlohmann::json(-1)).dump());
  return out;
}

TEST_F(CliCache, ASecondProcessIsServedFromTheCache) {
  const std::string compile = "compile " + mmoe() + " --arch sm_80 --json -q";
  const nlohmann::json cold = json_of(compile);
  ASSERT_TRUE(cold.contains("cache")) << cold.dump();
  const int kernels = cold["cache"]["kernels"].get<int>();
  ASSERT_GT(kernels, 0);
  EXPECT_EQ(cold["cache"]["dir"], m_dir.string());
  EXPECT_EQ(cold["cache"]["kernels_from_cache"], 0);  // an empty folder: NVRTC ran for each
  EXPECT_EQ(cold["cache"]["compiles_from_cache"], 0);

  const nlohmann::json stats = json_of("cache stats --json");
  EXPECT_EQ(stats["dir"], m_dir.string());
  EXPECT_GE(stats["entries"].get<int>(), kernels);
  EXPECT_GT(stats["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(stats["hits"], 0);
  EXPECT_GE(stats["misses"].get<int>(), kernels);
  EXPECT_FALSE(stats["oldest"].is_null());

  const nlohmann::json warm = json_of(compile);
  EXPECT_EQ(warm["cache"]["kernels"], kernels);
  EXPECT_EQ(warm["cache"]["kernels_from_cache"], kernels);
  EXPECT_EQ(warm["cache"]["compiles_from_cache"], warm["cache"]["compiles"]);
  EXPECT_EQ(figures(warm), figures(cold));
  EXPECT_GE(json_of("cache stats --json")["hits"].get<int>(), kernels);

  // The human summary says it too.
  CliRun human = run_cli("compile " + mmoe() + " --arch sm_80 -q", false);
  ASSERT_EQ(human.code, 0) << human.out;
  const std::string line = std::to_string(kernels) + " of " + std::to_string(kernels) +
                           " kernels from the compile cache";
  EXPECT_NE(human.out.find(line), std::string::npos) << human.out;

  // --no-cache: NVRTC compiles every kernel, and the folder is left as it was.
  const int64_t entries = json_of("cache stats --json")["entries"].get<int64_t>();
  const nlohmann::json fresh = json_of(compile + " --no-cache");
  EXPECT_EQ(fresh["cache"]["enabled"], false);
  EXPECT_EQ(fresh["cache"]["kernels_from_cache"], 0);
  EXPECT_EQ(figures(fresh), figures(cold));
  EXPECT_EQ(json_of("cache stats --json")["entries"].get<int64_t>(), entries);

  const nlohmann::json cleared = json_of("cache clear --json");
  EXPECT_EQ(cleared["removed"].get<int64_t>(), entries);
  const nlohmann::json empty = json_of("cache stats --json");
  EXPECT_EQ(empty["entries"], 0);
  EXPECT_EQ(empty["hits"], 0);
  EXPECT_TRUE(empty["oldest"].is_null());
  CliRun human_stats = run_cli("cache stats", false);
  EXPECT_EQ(human_stats.code, 0);
  EXPECT_NE(human_stats.out.find("compile cache: " + m_dir.string()), std::string::npos)
      << human_stats.out;
}

TEST_F(CliCache, AnUnusableFolderCostsOneWarningNotTheCompile) {
  // A folder under a regular file: unusable even by root.
  fs::create_directories(m_dir);
  std::ofstream(m_dir / "file") << "x";
  ::setenv("SOUFFLE_CACHE_DIR", (m_dir / "file" / "cache").c_str(), 1);
  CliRun r = run_cli("compile " + mmoe() + " --arch sm_80 -q", true);
  EXPECT_EQ(r.code, 0) << r.out;
  size_t warnings = 0;
  for (size_t at = r.out.find("warning: compile cache"); at != std::string::npos;
       at = r.out.find("warning: compile cache", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << r.out;
  EXPECT_NE(r.out.find("compiled but not kept"), std::string::npos) << r.out;
}

TEST_F(CliCache, BadActionIsUsageError) {
  EXPECT_EQ(run_cli("cache prune", false).code, 2);
}

}  // namespace
