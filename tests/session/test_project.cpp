// Projects: round trip, relative model paths, and errors that name the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/session/profile.h"
#include "core/session/project.h"
#include "core/support/error.h"

using namespace souffle;
namespace fs = std::filesystem;

namespace {

class ProjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("souffle_project_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
           "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "models");
    std::ofstream(dir / "models" / "m.onnx") << "not really a model";
  }
  void TearDown() override { fs::remove_all(dir); }

  Project sample() const {
    Project p;
    p.model = (dir / "models" / "m.onnx").string();
    p.strategy = "rules";
    p.gpu = "H100";
    p.precision = "fp16";
    p.sync = "auto";
    p.te_level = true;
    p.calibration = (dir / "h100_calibration.json").string();
    p.decisions.edits.push_back({plan::Edit::Kind::Merge, "t1", "t2"});
    p.decisions.edits.push_back({plan::Edit::Kind::Split, "MatMul_3", ""});
    p.decisions.edits.push_back({plan::Edit::Kind::Forbid, "h:0", ""});
    p.measurements.push_back(
        R"({"backend":"cuda","device":"NVIDIA H100","kernels":[],"plan_key":"rules|H100|fp16|{}"})");
    return p;
  }

  std::string error_of(const std::string& text) const {
    try {
      parse_project(text, (dir / "p.souffle").string());
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return "";
  }

  fs::path dir;
};

TEST_F(ProjectTest, RoundTrip) {
  const Project p = sample();
  const std::string path = (dir / "p.souffle").string();
  save_project(p, path);
  EXPECT_EQ(load_project(path), p);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(ProjectTest, ModelInputsRoundTripAndMalformedOnesAreRefused) {
  Project p = sample();
  p.dims = {"batch=1"};
  p.bind = {"sr=16000"};
  p.shapes = {"x=1,3,48,192"};
  const std::string path = (dir / "p.souffle").string();
  save_project(p, path);
  EXPECT_EQ(load_project(path), p);
  const std::string base = R"({"version": 1, "model": "m.onnx", "inputs": )";
  EXPECT_NE(error_of(base + R"({"bind": ["sr"]}})").find("NAME=VALUE"), std::string::npos);
  EXPECT_NE(error_of(base + R"({"shape": "x=1"}})").find("inputs.shape"), std::string::npos);
  EXPECT_NE(error_of(base + R"({"dim": ["n=-2"]}})").find("--dim"), std::string::npos);
  EXPECT_EQ(error_of(base + R"({}})"), "");
}

TEST_F(ProjectTest, CalibrationIsAFileName) {
  EXPECT_NE(error_of(R"({"version": 1, "model": "m.onnx", "calibration": 3})")
                .find("field 'calibration' must be a string"),
            std::string::npos);
  // None saved when there is none.
  Project p = sample();
  p.calibration.clear();
  EXPECT_EQ(project_to_json(p, (dir / "p.souffle").string()).find("calibration"),
            std::string::npos);
}

TEST_F(ProjectTest, MeasurementsMustBeKeyedObjects) {
  const std::string head = R"({"version": 1, "model": "m.onnx", "measurements": )";
  EXPECT_NE(error_of(head + R"("fast"})").find("must be an array"), std::string::npos);
  EXPECT_NE(error_of(head + R"([{"device": "x"}]})").find("measurements[0]"), std::string::npos);
}

// A kept profile run is read back when its plan is on screen: a field of the wrong type is a
// refusal naming it, never the JSON library's exception (found by fuzz_project: a boolean
// "graph_us" ended the process).
TEST(ProfileRun, WrongFieldTypesAreUserErrors) {
  const auto reason = [](const char* text) {
    try {
      (void)profile_report_from_json(nlohmann::json::parse(text));
    } catch (const UserError& e) {
      return e.reason();
    }
    return std::string("accepted");
  };
  EXPECT_NE(reason(R"({"plan_key": "k", "graph_us": false})").find("graph_us"), std::string::npos);
  EXPECT_NE(reason(R"({"kernels": [{"name": 3}]})").find("kernels[].name"), std::string::npos);
  EXPECT_NE(reason(R"([1, 2])").find("JSON object"), std::string::npos);
  EXPECT_NE(reason(R"({"runs": 1.36667e55})").find("'runs' is a number out of range"),
            std::string::npos);
  EXPECT_NE(reason(R"({"kernels": [{"registers": 2.5}]})").find("kernels[].registers"),
            std::string::npos);
  EXPECT_EQ(profile_report_from_json(nlohmann::json::parse(R"({"graph_us": 2.5})")).graph_us, 2.5);
}

TEST_F(ProjectTest, ModelBelowTheProjectIsStoredRelative) {
  const std::string text = project_to_json(sample(), (dir / "p.souffle").string());
  EXPECT_NE(text.find("\"model\": \"models/m.onnx\""), std::string::npos) << text;
  // Moving the folder keeps the project working.
  const fs::path moved = dir.string() + "_moved";
  fs::remove_all(moved);
  save_project(sample(), (dir / "p.souffle").string());
  fs::rename(dir, moved);
  const Project back = load_project((moved / "p.souffle").string());
  EXPECT_EQ(back.model, (moved / "models" / "m.onnx").lexically_normal().string());
  fs::rename(moved, dir);
}

// The Timeline panel's record files: relative below the project's folder, absolute elsewhere,
// with the plan_key they were recorded for; a path climbing out and a malformed entry refused.
TEST_F(ProjectTest, TimelineRecordsRoundTrip) {
  Project p = sample();
  p.timeline = {(dir / "p.timeline" / "souffle.kernel0.timeline").string(),
                "/elsewhere/souffle.kernel1.timeline"};
  p.timeline_plan = "rules|H100|fp16|{}";
  const std::string path = (dir / "p.souffle").string();
  const std::string text = project_to_json(p, path);
  EXPECT_NE(text.find("\"p.timeline/souffle.kernel0.timeline\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"/elsewhere/souffle.kernel1.timeline\""), std::string::npos) << text;
  save_project(p, path);
  EXPECT_EQ(load_project(path), p);
  // None saved when there is none.
  EXPECT_EQ(project_to_json(sample(), path).find("timeline"), std::string::npos);
  const std::string head = R"({"version": 1, "model": "m.onnx", "timeline": )";
  EXPECT_NE(error_of(head + R"({"plan_key": "k", "records": ["../x.timeline"]}})")
                .find("leaves the project's folder"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"({"records": ["x.timeline"]}})").find("field 'timeline'"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"({"plan_key": "k", "records": [3]}})").find("field 'timeline'"),
            std::string::npos);
}

TEST_F(ProjectTest, ModelElsewhereIsStoredAbsolute) {
  fs::create_directories(dir / "sub");
  const std::string text = project_to_json(sample(), (dir / "sub" / "p.souffle").string());
  EXPECT_NE(text.find((dir / "models" / "m.onnx").string()), std::string::npos) << text;
}

TEST_F(ProjectTest, UnknownVersionNamesFileAndField) {
  const std::string e = error_of(R"({"version": 7, "model": "m.onnx"})");
  EXPECT_NE(e.find("p.souffle"), std::string::npos) << e;
  EXPECT_NE(e.find("version"), std::string::npos) << e;
  EXPECT_NE(e.find("7"), std::string::npos) << e;
}

TEST_F(ProjectTest, MissingFieldsAreNamed) {
  EXPECT_NE(error_of(R"({"model": "m.onnx"})").find("version"), std::string::npos);
  const std::string e = error_of(R"({"version": 1, "strategy": "souffle"})");
  EXPECT_NE(e.find("missing field 'model'"), std::string::npos) << e;
  EXPECT_NE(error_of(R"({"version": 1, "model": "m.onnx", "gpu": 3})").find("'gpu'"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2").find("invalid JSON"), std::string::npos);
  const std::string d =
      error_of(R"({"version": 1, "model": "m.onnx", "decisions": {"version": 1, "edits": [)"
               R"({"kind": "explode", "a": "x"}]}})");
  EXPECT_NE(d.find("explode"), std::string::npos) << d;
  const std::string s = error_of(R"({"version": 1, "model": "m.onnx", "sync": "barrier"})");
  EXPECT_NE(s.find("'sync' is 'barrier'"), std::string::npos) << s;
}

TEST_F(ProjectTest, DefaultsForOptionalFields) {
  const Project p =
      parse_project(R"({"version": 1, "model": "m.onnx"})", (dir / "p.souffle").string());
  EXPECT_EQ(p.strategy, "souffle");
  EXPECT_EQ(p.precision, "fp32");
  EXPECT_EQ(p.sync, "grid");
  EXPECT_FALSE(p.te_level);
  EXPECT_TRUE(p.decisions.edits.empty());
  EXPECT_EQ(p.model, (dir / "m.onnx").string());
}

TEST_F(ProjectTest, MissingModelSaysWhereItLooked) {
  Project p = sample();
  const std::string path = (dir / "p.souffle").string();
  save_project(p, path);
  fs::remove(dir / "models" / "m.onnx");
  // Reading keeps the decisions; loading says which model path it looked for.
  EXPECT_EQ(read_project(path).decisions, p.decisions);
  try {
    load_project(path);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(e.reason().find((dir / "models" / "m.onnx").string()), std::string::npos)
        << e.reason();
  }
}

TEST_F(ProjectTest, UnreadableFileIsAUserError) {
  EXPECT_THROW(read_project((dir / "nope.souffle").string()), UserError);
  EXPECT_THROW(save_project(sample(), (dir / "no" / "such" / "dir" / "p.souffle").string()),
               UserError);
}

}  // namespace
