// `souffle-cli compile`: exit codes (2 for bad usage or a missing model, 0 when every kernel
// compiles) and the JSON it prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
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

TEST(CliCompile, TuneMeasureWithoutAGpuSaysWhatIsMissing) {
  EXPECT_EQ(run_cli("compile " + mmoe() + " --tune fastest").code, 2);
  CliRun r = souffle::cli_test::run_cli("compile " + mmoe() + " --tune measure -q", true);
  if (r.code == 0) GTEST_SKIP() << "a GPU is present: the tiles were measured";
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("error: --tune measure times GEMM tiles on a GPU: "), std::string::npos)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(CliCompile, BadStrategyIsUsageError) {
  EXPECT_EQ(run_cli("compile " + mmoe() + " --strategy fastest").code, 2);
}

// --decisions compiles the plan with a decisions file's edits (a split before a TE of the sample
// MMoE's one souffle kernel gives two), and a file naming nothing in the model is exit 2.
TEST(CliCompile, DecisionsAreThePlansEdits) {
  const fs::path dir = fs::path(SOUFFLE_BINARY_DIR) / "test_cli_compile_decisions";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& at) {
    const fs::path f = dir / name;
    std::ofstream(f) << R"({"version": 1, "edits": [{"kind": "split", "at": ")" << at << "\"}]}";
    return f.string();
  };
  auto kernels = [&](const std::string& extra) {
    CliRun r = run_cli("compile " + mmoe() + " --arch compute_80 --json -q" + extra);
    EXPECT_EQ(r.code, 0) << r.out;
    return r.code == 0 ? nlohmann::json::parse(r.out)["kernels"].size() : size_t{0};
  };
  EXPECT_EQ(kernels(""), 1u);
  EXPECT_EQ(kernels(" --decisions " + write("split.json", "/Unsqueeze_8")), 2u);
  EXPECT_EQ(run_cli("compile " + mmoe() + " --arch compute_80 -q --decisions " +
                    write("unknown.json", "no_such_te"))
                .code,
            2);
  fs::remove_all(dir);
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
  // Its block barriers include at least those that order one stage after another.
  EXPECT_GE(k["block_barriers"].get<int>(), k["stage_block_barriers"].get<int>());
  EXPECT_TRUE(fs::exists(out / "kernel0.sm_80.ptx"));
  EXPECT_TRUE(fs::exists(out / "main.cu"));
}

}  // namespace

namespace {

/// Per partition id: the plan's boundaries by kind ("none", "block", "grid", "launch").
std::map<int, std::map<std::string, int>> plan_boundaries(const nlohmann::json& plan) {
  std::map<int, std::map<std::string, int>> out;
  for (const nlohmann::json& p : plan["partitions"]) {
    std::map<std::string, int>& m = out[p["id"].get<int>()];
    for (const nlohmann::json& b : p["boundaries"]) ++m[b["kind"].get<std::string>()];
  }
  return out;
}

void check_plan_and_compile_agree(const std::string& strategy) {
  SCOPED_TRACE(strategy);
  CliRun pr = run_cli("plan " + mmoe() + " --strategy " + strategy + " --json");
  ASSERT_EQ(pr.code, 0) << pr.out;
  const nlohmann::json plan = nlohmann::json::parse(pr.out);
  fs::path out = fs::path(SOUFFLE_BINARY_DIR) / ("test_cli_boundaries_" + strategy);
  fs::remove_all(out);
  CliRun cr = run_cli("compile " + mmoe() + " --strategy " + strategy +
                      " --arch sm_80 --json --out " + out.string());
  ASSERT_EQ(cr.code, 0) << cr.out;
  const nlohmann::json compiled = nlohmann::json::parse(cr.out);

  // Every boundary names its two stages, a kind and a typed reason; a grid barrier forced by a
  // cross-block read names the tensor, the stage that wrote it and the one that reads it.
  int grid_total = 0;
  for (const nlohmann::json& p : plan["partitions"]) {
    ASSERT_TRUE(p.contains("boundaries")) << p["id"];
    const size_t stages = p["built_stages"].size();
    size_t between = 0;
    for (const nlohmann::json& b : p["boundaries"]) {
      const std::string kind = b["kind"];
      EXPECT_TRUE(kind == "none" || kind == "block" || kind == "grid" || kind == "launch") << b;
      EXPECT_TRUE(b["to_anchor"].is_string()) << b;
      EXPECT_TRUE(b["from_anchor"].is_string()) << b;
      EXPECT_TRUE(b["reason"]["kind"].is_string()) << b;
      EXPECT_FALSE(b["text"].get<std::string>().empty()) << b;
      if (b["from"] != b["to"]) ++between;
      if (b["reason"]["kind"] == "cross-block") {
        EXPECT_EQ(kind == "grid" || kind == "launch", true) << b;
        EXPECT_TRUE(b["reason"]["tensor"].is_string()) << b;
        EXPECT_TRUE(b["reason"]["producer"].is_string()) << b;
        EXPECT_TRUE(b["reason"]["consumer"].is_string()) << b;
        EXPECT_GE(b["reason"]["awaited_tiles"].get<int64_t>(), 1) << b;
      }
      if (kind == "grid") {
        ++grid_total;
        EXPECT_GT(b["cost_us"].get<double>(), 0) << b;
      }
    }
    // One boundary per stage after the first, besides those between phases of one stage.
    EXPECT_EQ(between + 1, stages) << p["id"];
  }

  // The plan's boundaries agree with the barrier statements compile finds between the stages
  // of each kernel, partition by partition.
  std::map<int, std::map<std::string, int>> from_plan = plan_boundaries(plan);
  std::map<int, std::map<std::string, int>> from_kernels;
  for (const nlohmann::json& k : compiled["kernels"]) {
    std::map<std::string, int>& m = from_kernels[k["partition"].get<int>()];
    m["grid"] += k["stage_grid_barriers"].get<int>();
    m["block"] += k["stage_block_barriers"].get<int>();
    m["kernels"] += 1;
    EXPECT_EQ(k["boundaries"]["grid"], k["stage_grid_barriers"]) << k["name"];
    EXPECT_EQ(k["boundaries"]["block"], k["stage_block_barriers"]) << k["name"];
    EXPECT_LE(k["stage_grid_barriers"].get<int>(), k["grid_barriers"].get<int>());
  }
  for (auto& [id, kinds] : from_plan)
    if (!from_kernels.count(id)) {
      // A partition of views only launches nothing and has no boundary.
      for (auto& [kind, n] : kinds) EXPECT_EQ(n, 0) << "partition " << id << " " << kind;
    }
  for (auto& [id, kinds] : from_kernels) {
    SCOPED_TRACE("partition " + std::to_string(id));
    EXPECT_EQ(from_plan[id]["grid"], kinds["grid"]);
    EXPECT_EQ(from_plan[id]["block"], kinds["block"]);
    EXPECT_EQ(from_plan[id]["launch"] + 1, kinds["kernels"]);
  }
  EXPECT_EQ(compiled["grid_barriers"].get<int>() >= grid_total, true);

  // The CUDA C annotates each grid barrier between stages with its kind and reason.
  if (grid_total > 0) {
    std::string cu;
    for (const auto& e : fs::directory_iterator(out))
      if (e.path().extension() == ".cu" && e.path().filename() != "main.cu") {
        std::ifstream in(e.path());
        cu += std::string(std::istreambuf_iterator<char>(in), {});
      }
    EXPECT_NE(cu.find("grid.sync();  // grid: "), std::string::npos);
  }
}

TEST(CliCompile, BoundariesAgreeBetweenPlanAndCompileSouffle) {
  check_plan_and_compile_agree("souffle");
}

TEST(CliCompile, BoundariesAgreeBetweenPlanAndCompileRules) {
  check_plan_and_compile_agree("rules");
}

}  // namespace

namespace {

// compile --sass --json: each kernel's SASS per arch, counted per stage; with the sample MMoE at
// fp16 its tensor-core stages have MMA instructions on sm_80. Without nvdisasm, exit 2 saying how
// to get it (setup.sh installs it, so a machine set up by it takes the first branch).
TEST(CliCompile, SassJsonCountsInstructionsPerStage) {
  CliRun r = run_cli("compile " + mmoe() + " --precision fp16 --arch sm_80 --sass --json -q");
  if (r.code == 2) {
    EXPECT_NE(r.out.find("nvdisasm"), std::string::npos) << r.out;
    FAIL() << "nvdisasm is missing (scripts/setup.sh installs it): " << r.out;
  }
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("sass_problems"));
  int tensor_stages = 0;
  for (const nlohmann::json& k : j["kernels"]) {
    ASSERT_EQ(k["sass"].size(), 1u);
    const nlohmann::json& s = k["sass"][0];
    EXPECT_EQ(s["arch"], "sm_80");
    ASSERT_TRUE(s["ok"].get<bool>()) << s.dump();
    int64_t sum = s["outside"]["total"].get<int64_t>();
    for (const nlohmann::json& st : s["stages"]) {
      sum += st["mix"]["total"].get<int64_t>();
      if (st["tensor_core"].get<bool>() && st["mma_in_source"].get<bool>()) {
        ++tensor_stages;
        EXPECT_GT(st["mix"]["mma"].get<int64_t>(), 0) << st.dump();
      }
    }
    // Every instruction is on one stage's lines or outside all of them.
    EXPECT_EQ(sum, s["mix"]["total"].get<int64_t>());
  }
  EXPECT_GT(tensor_stages, 0);
}

}  // namespace
