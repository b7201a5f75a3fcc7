// souffle-cli compile --timeline reports each instrumented kernel's registers beside the plain
// kernel's, per arch (docs/timeline.md, Cost).
//
// souffle-cli calibrate --from-timeline (docs/timeline.md, Calibrating from a timeline): the
// timeline document profile --timeline writes on the emulator is refused naming it; the same
// document as a GPU's (device named, not emulated) becomes per-template corrections that
// `plan --calibration` prices with, each corrected stage saying so, the estimate still an estimate.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using souffle::cli_test::CliRun;

CliRun run_cli(const std::string& args) {
  return souffle::cli_test::run_cli(args, true);
}

std::string sample(const std::string& name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + name + "/model.onnx";
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

TEST(CliCalibrate, FromTimelineRefusesTheEmulatorAndCorrectsThePlan) {
  const fs::path d = fs::temp_directory_path() / "souffle_cli_calibrate";
  fs::remove_all(d);
  fs::create_directories(d);
  const fs::path tl = d / "tl";
  CliRun p = run_cli("profile " + sample("mmoe") +
                     " --backend emulator --timeline -q --timeline-dir " + tl.string());
  ASSERT_EQ(p.code, 0) << p.out;
  const fs::path doc = tl / "souffle.timeline.json";
  ASSERT_TRUE(fs::exists(doc)) << p.out;
  EXPECT_NE(p.out.find(doc.string()), std::string::npos) << p.out;

  // The emulator's clock is its cost model: refused, naming the file, nothing written.
  const fs::path cal = d / "cal.json";
  CliRun r = run_cli("calibrate --from-timeline " + doc.string() + " --out " + cal.string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find(doc.string() + ": the timeline is the emulator's"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(cal));

  // The same document as a GPU's.
  json j = read_json(doc);
  j["backend"] = "cuda";
  j["emulated"] = false;
  j["device"] = "NVIDIA A100-SXM4-40GB";
  j["driver_version"] = 13000;
  for (json& k : j["kernels"]) k["emulated"] = false;
  const fs::path gpu = d / "gpu.timeline.json";
  std::ofstream(gpu) << j.dump();
  r = run_cli("calibrate --from-timeline " + gpu.string() + " --out " + cal.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("gemm: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measured on NVIDIA A100-SXM4-40GB, driver 13000"), std::string::npos)
      << r.out;
  const json c = read_json(cal);
  ASSERT_TRUE(c.contains("stage_corrections")) << c.dump();
  EXPECT_EQ(c["device"], "NVIDIA A100-SXM4-40GB");

  CliRun plain = run_cli("plan " + sample("mmoe") + " --json -q");
  CliRun corrected = run_cli("plan " + sample("mmoe") + " --json -q --calibration " + cal.string());
  ASSERT_EQ(plain.code, 0) << plain.out;
  ASSERT_EQ(corrected.code, 0) << corrected.out;
  const json a = json::parse(plain.out), b = json::parse(corrected.out);
  EXPECT_NE(a["est_time_us"], b["est_time_us"]);
  int marked = 0;
  for (const json& part : b["partitions"])
    for (const json& st : part["built_stages"])
      if (st.contains("est_corrected")) {
        ++marked;
        EXPECT_NE(st["est_corrected"].get<std::string>().find("estimate x"), std::string::npos);
      }
  EXPECT_GT(marked, 0) << b["partitions"].dump().substr(0, 2000);
  EXPECT_NE(b["cost_constants"].dump().find("corrected per template"), std::string::npos)
      << b["cost_constants"].dump();

  // --calibration without --from-timeline is a mistake, said so.
  r = run_cli("calibrate --calibration " + cal.string() + " --out " + (d / "x.json").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--from-timeline"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(CliTimeline, CompileReportsRegistersBesideThePlainKernel) {
  CliRun r = run_cli("compile " + sample("mmoe") + " --timeline --arch sm_80,sm_90 --json -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out.substr(r.out.find('{')));
  ASSERT_EQ(j["kernels"].size(), 1u);
  int archs = 0;
  for (const json& a : j["kernels"][0]["per_arch"]) {
    ++archs;
    EXPECT_TRUE(a["ok"].get<bool>()) << a.dump();
    EXPECT_GT(a["registers"].get<int>(), 0) << a.dump();
    EXPECT_GT(a["plain_registers"].get<int>(), 0) << a.dump();
    EXPECT_TRUE(a.contains("plain_spills")) << a.dump();
  }
  EXPECT_EQ(archs, 2);
  r = run_cli("compile " + sample("mmoe") + " --timeline --arch sm_80,sm_90 -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(plain "), std::string::npos) << r.out;
  // Without --timeline there is nothing to put beside.
  r = run_cli("compile " + sample("mmoe") + " --arch sm_80 --json -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("plain_registers"), std::string::npos);
}

}  // namespace
