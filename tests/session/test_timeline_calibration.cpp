// Measured stage times fed back into the calibration file (docs/timeline.md, Calibrating from a
// timeline): a synthetic GPU timeline of the sample MMoE's souffle kernel (the emulator's records
// retimed as a GPU's global timer, each stage taking a chosen multiple of its estimate) becomes
// per-template corrections; the pricer's corrected estimates move to the measured times and stay
// labelled as estimates; an emulator's timeline, one naming no device and one of another device
// than the calibration it joins are refused naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "core/emulate/emulate.h"
#include "core/gpu/calibration.h"
#include "core/loop/timeline.h"
#include "core/schedule/price.h"
#include "core/session/pipeline.h"
#include "core/session/timeline.h"
#include "core/session/timeline_calibration.h"
#include "core/support/error.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("timeline_calibration_" + name)).string();
}

/// How much slower than the estimate the synthetic GPU runs each template.
double factor_of(const std::string& tmpl) {
  return tmpl == "gemm" ? 3.0 : 0.5;
}

struct Fixture : ::testing::Test {
  static inline plan::FusionPlan plan;
  static inline CompileReport compiled;
  static inline std::vector<std::vector<double>> raw_est;  ///< per kernel, per stage
  static inline std::vector<std::vector<std::string>> templates;
  static inline std::string gpu_doc, emu_doc;  ///< timeline documents written once

  static gpu::CostConstants constants(const gpu::Calibration* c) {
    return gpu::cost_constants(plan.gpu_spec, plan.precision, c);
  }
  static schedule::KernelPrice price(const CompiledKernel& ck, const gpu::Calibration* c) {
    std::map<std::string, int64_t> flops;
    for (const analysis::TeInfo& te : plan.analysis.tes) flops[te.name] = te.flops;
    return schedule::price_kernel(
        ck.kernel, plan.gpu_spec, constants(c),
        [&](const std::string& n) { return flops.count(n) ? flops[n] : 0; }, ck.register_cap);
  }

  static void SetUpTestSuite() {
    PipelineOptions pipe;
    pipe.strategy = plan::Strategy::Souffle;
    pipe.gpu = gpu::gpu_spec("a100");
    plan = plan::plan(test::sample_model("mmoe").program, plan_options(pipe));
    CompileOptions co;
    co.archs.clear();
    co.timeline.enabled = true;
    compiled = compile_plan(plan, co);
    ASSERT_TRUE(compiled.ok());
    emulate::Buffers bufs;
    for (const te::Tensor& in : plan.program.inputs)
      bufs[in->name] = std::make_shared<TensorData>(in->dtype, in->shape);
    std::vector<KernelTimeline> gpu, emu;
    for (const CompiledKernel& ck : compiled.kernels) {
      emulate::EmulateOptions eo;
      emulate::Timeline et;
      eo.timeline = &et;
      emulate::run_kernel(ck.kernel, bufs, eo);
      std::optional<loop::TimelineLayout> tl = loop::timeline_layout(ck.kernel);
      ASSERT_TRUE(tl);
      const TensorData& d = *bufs[tl->buffer];
      std::vector<int64_t> words(static_cast<size_t>(d.byte_size() / 8));
      std::memcpy(words.data(), d.raw(), words.size() * 8);
      const std::string raw(reinterpret_cast<const char*>(words.data()), words.size() * 8);
      const schedule::KernelPrice p = price(ck, nullptr);
      raw_est.emplace_back();
      templates.emplace_back();
      for (size_t s = 0; s < ck.kernel.stages.size(); ++s) {
        raw_est.back().push_back(p.stages[s].cost.total_us);
        templates.back().push_back(gpu::schedule_template(ck.kernel.stages[s].schedule));
      }
      // The emulator's records as they are, and retimed as a GPU's: every block walks its
      // records in program order on a clock in ns, each stage taking factor x its estimate
      // and each wait 50 ns, on "SM" block % 108.
      const std::string emu_file = temp(ck.name + ".emu.timeline");
      write_timeline_file(emu_file, *tl, "emulator", 1000, raw);
      emu.push_back(read_timeline_file(emu_file));
      attach_stage_info(emu.back(), ck, plan);
      for (int64_t row = 0; row < tl->rows; ++row) {
        int64_t t = 1000;
        for (int64_t slot = 0; slot < tl->slot_count; ++slot) {
          int64_t* r = &words[static_cast<size_t>((row * tl->slot_count + slot) * 3)];
          const int64_t tag = r[2] & 0xffffffff;
          if (tag == 0) continue;
          const int event = static_cast<int>(tag & 0xf) - 1;
          const size_t stage = static_cast<size_t>(tag >> 8);
          if (event == static_cast<int>(loop::TimelineEvent::StageEnd))
            t += std::llround(1000 * raw_est.back()[stage] * factor_of(templates.back()[stage]));
          else if (event == static_cast<int>(loop::TimelineEvent::WaitEnd))
            t += 50;
          r[0] = t;
          r[1] = t * 141 / 100;  // clock64 at 1410 MHz
          r[2] = ((row % 108) << 32) | tag;
        }
      }
      const std::string gpu_file = temp(ck.name + ".gpu.timeline");
      write_timeline_file(
          gpu_file, *tl, "globaltimer", 1410,
          std::string(reinterpret_cast<const char*>(words.data()), words.size() * 8));
      gpu.push_back(read_timeline_file(gpu_file));
      attach_stage_info(gpu.back(), ck, plan);
      fs::remove(emu_file);
      fs::remove(gpu_file);
    }
    auto write_doc = [](const std::vector<KernelTimeline>& ts, const std::string& backend,
                        const std::string& file) {
      std::vector<TimelineAnalysis> as;
      for (const KernelTimeline& t : ts) as.push_back(analyse_timeline(t));
      ProfileReport r;
      r.model = "mmoe";
      r.strategy = "souffle";
      r.backend = backend;
      r.device = backend == "cuda" ? "NVIDIA A100-SXM4-40GB" : "CPU emulator";
      r.driver_version = backend == "cuda" ? 13000 : 0;
      r.date = "2026-12-06T09:00:00Z";
      std::ofstream(file) << timeline_document(r, as).dump(1);
    };
    gpu_doc = temp("gpu.timeline.json");
    emu_doc = temp("emu.timeline.json");
    write_doc(gpu, "cuda", gpu_doc);
    write_doc(emu, "emulator", emu_doc);
  }
  static void TearDownTestSuite() {
    fs::remove(gpu_doc);
    fs::remove(emu_doc);
  }
};

using TimelineCalibration = Fixture;

TEST_F(TimelineCalibration, TheDocumentNamesTheDeviceAndEachStagesTemplate) {
  std::ifstream f(gpu_doc);
  const json doc = json::parse(f);
  EXPECT_EQ(doc["format"], "souffle-timeline");
  EXPECT_EQ(doc["device"], "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(doc["emulated"], false);
  ASSERT_EQ(doc["kernels"].size(), compiled.kernels.size());
  for (const json& s : doc["kernels"][0]["stages"])
    EXPECT_EQ(s["template"], templates[0][s["stage"].get<size_t>()]);
}

TEST_F(TimelineCalibration, CorrectedEstimatesMoveToTheMeasuredTimes) {
  const gpu::Calibration c = calibration_from_timelines({gpu_doc}, std::nullopt);
  EXPECT_EQ(c.device, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(c.driver_version, 13000);
  ASSERT_GE(c.stage_corrections.size(), 2u);  // MMoE's GEMMs and its elementwise stages
  const gpu::StageCorrection* gemm = c.stage_correction("gemm");
  ASSERT_TRUE(gemm);
  EXPECT_NEAR(gemm->ratio, 3.0, 0.01);  // every GEMM stage ran 3x its estimate
  EXPECT_EQ(gemm->device, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gemm->source, gpu_doc);
  EXPECT_NE(gemm->describe().find("measured on NVIDIA A100-SXM4-40GB, driver 13000"),
            std::string::npos)
      << gemm->describe();
  for (const gpu::StageCorrection& s : c.stage_corrections) {
    // Short stages round to the global timer's nanosecond: 0.5 within a tenth.
    if (s.template_name == "gemm") continue;
    EXPECT_NEAR(s.ratio, 0.5, 0.1) << s.template_name;
  }

  // Written and read back as the calibration file holds them.
  const gpu::Calibration back = gpu::parse_calibration(gpu::calibration_json(c), "c.json");
  ASSERT_EQ(back.stage_corrections.size(), c.stage_corrections.size());
  EXPECT_DOUBLE_EQ(back.stage_correction("gemm")->ratio, gemm->ratio);
  EXPECT_EQ(back.stage_correction("gemm")->date, "2026-12-06T09:00:00Z");

  // Priced with the corrections, every stage's estimate is closer to what was measured than
  // before, and says that it is a corrected estimate; summed over the stages it is within 5%
  // of the measured sum, which the uncorrected estimates missed by far.
  int moved = 0;
  double sum_measured = 0, sum_before = 0, sum_after = 0;
  for (size_t k = 0; k < compiled.kernels.size(); ++k) {
    const schedule::KernelPrice p = price(compiled.kernels[k], &back);
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const double measured = raw_est[k][s] * factor_of(templates[k][s]);
      const double before = raw_est[k][s], after = p.stages[s].cost.total_us;
      EXPECT_LE(std::abs(after - measured), std::abs(before - measured) + 1e-12)
          << p.stages[s].name;
      EXPECT_NE(p.stages[s].cost.corrected.find("estimate x"), std::string::npos);
      moved += std::abs(after - before) > 1e-9;
      sum_measured += measured;
      sum_before += before;
      sum_after += after;
    }
  }
  EXPECT_GT(moved, 0);
  EXPECT_NEAR(sum_after, sum_measured, 0.05 * sum_measured);
  EXPECT_GT(std::abs(sum_before - sum_measured), 0.5 * sum_measured);
  std::cout << "stages estimated " << sum_before << " us, corrected " << sum_after
            << " us, measured " << sum_measured << " us\n";
  EXPECT_NE(constants(&back).source.find("corrected per template"), std::string::npos);

  // The plan priced with the file: stages name their correction, the total moves.
  const std::string file = temp("corrected.json");
  std::ofstream(file) << gpu::calibration_json(c);
  PipelineOptions pipe;
  pipe.strategy = plan::Strategy::Souffle;
  pipe.gpu = gpu::gpu_spec("a100");
  pipe.calibration = file;
  plan::FusionPlan q = plan::plan(test::sample_model("mmoe").program, plan_options(pipe));
  int corrected = 0;
  for (const plan::Partition& part : q.partitions)
    for (const plan::BuiltStage& st : part.built_stages) corrected += !st.corrected.empty();
  EXPECT_GT(corrected, 0);
  EXPECT_NE(q.est_time_us, plan.est_time_us);
  fs::remove(file);
}

TEST_F(TimelineCalibration, AnotherTimelineJoinsACalibrationOfTheSameDeviceOnly) {
  gpu::Calibration base;
  base.device = "NVIDIA A100-SXM4-40GB";
  base.launch_overhead_us = 2.5;
  base.stage_corrections.push_back({"gemm", 9.0, 1, 9.0, 9.0, base.device, 1, "old", "old"});
  base.stage_corrections.push_back({"attention", 2.0, 1, 2.0, 2.0, base.device, 1, "old", "old"});
  const gpu::Calibration c = calibration_from_timelines({gpu_doc}, base);
  EXPECT_DOUBLE_EQ(c.launch_overhead_us, 2.5);
  EXPECT_NEAR(c.stage_correction("gemm")->ratio, 3.0, 0.01);      // replaced
  EXPECT_DOUBLE_EQ(c.stage_correction("attention")->ratio, 2.0);  // kept
  base.device = "NVIDIA H200";
  try {
    calibration_from_timelines({gpu_doc}, base);
    ADD_FAILURE() << "a timeline of another device joined the calibration";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), gpu_doc);
    EXPECT_NE(std::string(e.what()).find("one calibration is for one device"), std::string::npos);
  }
}

TEST_F(TimelineCalibration, TheEmulatorsTimelineAndBadDocumentsAreRefusedNamingTheFile) {
  auto refused = [](const std::string& file, const std::string& part) {
    try {
      calibration_from_timelines({file}, std::nullopt);
      ADD_FAILURE() << "accepted " << file;
    } catch (const UserError& e) {
      EXPECT_EQ(e.file(), file);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused(emu_doc, "the timeline is the emulator's");
  std::ifstream f(gpu_doc);
  json doc = json::parse(f);
  doc["device"] = "";
  const std::string nameless = temp("nameless.json");
  std::ofstream(nameless) << doc.dump();
  refused(nameless, "names no device");
  const std::string other = temp("other.json");
  std::ofstream(other) << "{\"traceEvents\": []}";
  refused(other, "not a timeline document");
  refused(temp("missing.json"), "cannot read");
  fs::remove(nameless);
  fs::remove(other);
  // A calibration file with a correction that names no device is refused naming the field.
  try {
    gpu::parse_calibration(
        R"({"version": 1, "device": "X", "stage_corrections": [{"template": "gemm", "ratio": 2}]})",
        "c.json");
    ADD_FAILURE() << "a correction without its device was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("stage_corrections[0]"), std::string::npos) << e.what();
  }
}

TEST(ScheduleTemplate, EachTemplateFamilyHasItsOwnCorrection) {
  EXPECT_EQ(gpu::schedule_template("gemm 64x64x16 tile 4x4"), "gemm");
  EXPECT_EQ(gpu::schedule_template("gemm_mma f16 tensor-core tile 64x64x32"), "gemm_mma");
  EXPECT_EQ(gpu::schedule_template("reduction, warp shuffles"), "reduction");
  // The f32 fused attention and the one on tensor cores are measured apart.
  EXPECT_EQ(gpu::schedule_template("fused attention (online softmax): 32 query rows"), "attention");
  EXPECT_EQ(gpu::schedule_template(
                "fused attention (online softmax) on tensor cores: 64 query rows x 32 keys"),
            "attention_mma");
  EXPECT_EQ(gpu::schedule_template(""), "");
}

}  // namespace
}  // namespace souffle
