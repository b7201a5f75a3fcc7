// `souffle-cli report`: every sample model in every format, the walk-through, the errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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
  fs::path d = fs::temp_directory_path() / ("souffle_cli_report_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ReportEveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportEveryModel, EveryFormat) {
  const std::string m = GetParam();
  fs::path d = scratch(m);
  for (const char* ext : {"html", "json", "csv", "dot"}) {
    fs::path out = d / (m + "." + ext);
    CliRun r = run_cli("report " + sample(m) + " --strategy all --out " + out.string());
    ASSERT_EQ(r.code, 0) << ext << ": " << r.out;
    EXPECT_NE(r.out.find("3 plans"), std::string::npos) << r.out;
    ASSERT_TRUE(fs::exists(out)) << out;
    EXPECT_GT(fs::file_size(out), 1000u) << out;
  }
  std::string html = read(d / (m + ".html"));
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  auto j = nlohmann::json::parse(read(d / (m + ".json")));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["plans"].size(), 3u);
  EXPECT_EQ(read(d / (m + ".dot")).find("digraph"), read(d / (m + ".dot")).find('\n') + 1);
}

INSTANTIATE_TEST_SUITE_P(Samples, ReportEveryModel,
                         ::testing::Values("bert", "efficientnet", "lstm", "mmoe", "resnext",
                                           "swin"));

TEST(CliReport, CompareAndDecisions) {
  fs::path d = scratch("compare");
  CliRun r = run_cli("report " + sample("bert") + " --strategy rules --compare souffle --out " +
                     (d / "c.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(read(d / "c.json"));
  EXPECT_EQ(j["comparison"]["basis"], "strategies");
  EXPECT_EQ(j["plans"][1]["strategy"], "souffle");
  r = run_cli("report " + sample("bert") + " --decisions " + SOUFFLE_SOURCE_DIR +
              "/tests/report/bert_split.json --out " + (d / "d.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::string html = read(d / "d.html");
  EXPECT_NE(html.find("Before and after the decisions file"), std::string::npos);
  EXPECT_NE(html.find("souffle + bert_split.json"), std::string::npos);
}

TEST(CliReport, StepsWritesOnePagePerStep) {
  fs::path d = scratch("steps");
  CliRun r = run_cli("report " + sample("mmoe") + " --steps --out " + (d / "walk.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(d / "walk.html"));
  for (const char* step :
       {"1-import", "2-fold", "3-lower", "4-analyze", "5-horizontal", "6-vertical", "7-re-analyze",
        "8-partition", "9-decisions", "10-price", "11-build-kernels", "12-emit"})
    EXPECT_TRUE(fs::exists(d / ("walk-" + std::string(step) + ".html"))) << step;
  r = run_cli("report " + sample("bert") + " --steps --layer layers.1 --strategy rules --out " +
              (d / "l.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
}

TEST(CliReport, BadUsageIsExit2NamingTheReason) {
  fs::path d = scratch("bad");
  struct Case {
    std::string args, says;
  };
  const std::string out = (d / "r.html").string();
  for (const Case& c : std::vector<Case>{
           {"report /nonexistent/model.onnx --out " + out, "/nonexistent/model.onnx"},
           {"report " + sample("mmoe") + " --out " + (d / "r.pdf").string(), "r.pdf"},
           {"report " + sample("mmoe") + " --out /nonexistent/dir/r.html", "/nonexistent/dir"},
           {"report " + sample("mmoe") + " --out " + out + " --gpu no-such-gpu", "no-such-gpu"},
           {"report " + sample("mmoe") + " --out " + out + " --decisions /nonexistent/d.json",
            "/nonexistent/d.json"},
           {"report " + sample("mmoe") + " --out " + out + " --compare rules --decisions x.json",
            "--compare"},
           {"report " + sample("mmoe") + " --out " + out + " --compare souffle", "--compare"},
           {"report " + sample("mmoe") + " --out " + (d / "s.json").string() + " --steps", ".html"},
           {"report " + sample("mmoe") + " --out " + out + " --steps --layer nowhere", "nowhere"},
           {"report " + sample("mmoe") + " --out " + out + " --layer x", "--steps"},
           {"report " + sample("mmoe") + " --out " + out + " --strategy fastest", "fastest"},
       }) {
    CliRun r = run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
  std::ofstream(d / "broken.onnx") << "not a model";
  CliRun r = run_cli("report " + (d / "broken.onnx").string() + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("broken.onnx"), std::string::npos) << r.out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// profile --timeline on the emulator keeps each kernel's record file; report --timeline shows it
// per kernel: an SVG with one span per stage and per wait of every recorded row, the per-stage
// table with one row per stage, the wait table with one row per wait, labelled as emulated.
TEST(CliReport, TimelineFromProfileRecords) {
  fs::path d = scratch("timeline");
  const fs::path tl = d / "tl";
  CliRun p = run_cli("profile " + sample("mmoe") +
                     " --backend emulator --timeline --timeline-dir " + tl.string());
  ASSERT_EQ(p.code, 0) << p.out;
  const fs::path records = tl / "souffle.kernel0.timeline";
  ASSERT_TRUE(fs::exists(records)) << p.out;
  CliRun r = run_cli("report " + sample("mmoe") + " --timeline " + tl.string() + " --out " +
                     (d / "r.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_cli("report " + sample("mmoe") + " --timeline " + tl.string() + " --out " +
              (d / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(read(d / "r.json"));
  const auto& t = j["plans"][0]["partitions"][0]["timeline"];
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["kernel"], "kernel0");
  EXPECT_EQ(t[0]["emulated"], true);
  EXPECT_EQ(t[0]["records"], records.string());
  const size_t stages = t[0]["stages"].size(), waits = t[0]["waits"].size();
  EXPECT_GT(stages, 10u);
  EXPECT_GT(waits, 5u);
  size_t stage_spans = 0, wait_spans = 0;
  for (const auto& s : t[0]["stages"]) stage_spans += s["blocks"].get<size_t>();
  for (const auto& w : t[0]["waits"]) wait_spans += w["blocks"].get<size_t>();

  const std::string html = read(d / "r.html");
  EXPECT_EQ(count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart timeline\""), 1u);
  EXPECT_EQ(count(html, "class=\"tl-stage\""), stage_spans);
  EXPECT_EQ(count(html, "class=\"tl-wait\""), wait_spans);
  EXPECT_GE(count(html, "class=\"tl-barrier\""), 1u);
  EXPECT_NE(html.find("emulated µs from the kernel"), std::string::npos);
  EXPECT_NE(html.find("not GPU time"), std::string::npos);
  auto table_rows = [&](const std::string& cls) {
    const size_t at = html.find("class=\"grid " + cls + "\"");
    if (at == std::string::npos) return size_t{0};
    const std::string table = html.substr(at, html.find("</table>", at) - at);
    return count(table, "<tr");
  };
  EXPECT_EQ(table_rows("tl-stages"), stages + 1);  // with its header
  EXPECT_EQ(table_rows("tl-waits"), waits + 1);

  // A truncated record file, a folder without records and no folder: errors naming them.
  const fs::path bad = d / "bad";
  fs::create_directories(bad);
  const fs::path cut = bad / "souffle.kernel0.timeline";
  fs::copy_file(records, cut);
  fs::resize_file(cut, fs::file_size(records) - 10);
  r = run_cli("report " + sample("mmoe") + " --timeline " + bad.string() + " --out " +
              (d / "bad.html").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(cut.string()), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "bad.html"));
  fs::remove(cut);
  fs::copy_file(records, bad / "souffle.kernel7.timeline");
  r = run_cli("report " + sample("mmoe") + " --timeline " + bad.string() + " --out " +
              (d / "bad.html").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("kernel7"), std::string::npos) << r.out;
  fs::remove(bad / "souffle.kernel7.timeline");
  for (const fs::path& dir : {bad, d / "nowhere"}) {
    r = run_cli("report " + sample("mmoe") + " --timeline " + dir.string() + " --out " +
                (d / "bad.html").string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(dir.string()), std::string::npos) << r.out;
  }
}

}  // namespace
