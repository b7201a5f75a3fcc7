// The GEMM benchmark kernel the runner's calibration and `compile --tune measure` time: the
// project's own templates, emulated against the interpreter at small sizes, and compiled by NVRTC
// at the calibration's size.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "../schedule/schedule_test_util.h"
#include "core/gpu/nvrtc.h"
#include "core/session/gemm_bench.h"
#include "core/session/test_data.h"
#include "core/session/tune_measure.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

/// Relative L2 error of `b`'s kernel in the emulator against the interpreter on random A and B.
double emulated_error(const GemmBench& b) {
  te::TeProgram p = schedule_test::program_of({b.op});
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    auto d = schedule_test::random_data(p.inputs[i], static_cast<uint32_t>(3 + i));
    in.push_back(d);
    buffers[p.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = {b.kernel};
  emulate::Buffers got = emulate::run_kernels(ks, buffers);
  return schedule_test::rel_l2(*got.at("C"), *want[0]);
}

schedule::GemmProblem problem(int64_t batch, int64_t m, int64_t n, int64_t k) {
  schedule::GemmProblem p;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

TEST(GemmBench, TunedSimtKernelMatchesInterpreter) {
  // Edge tiles on both axes and a partial K step, with the tuner's tile for an A100.
  GemmBench b =
      make_gemm_bench(problem(1, 70, 50, 40), gpu::gpu_spec("a100"), gpu::Precision::FP32);
  EXPECT_FALSE(b.tile.tensor_core);
  EXPECT_NE(b.why.find("best of"), std::string::npos) << b.why;
  EXPECT_LT(emulated_error(b), 1e-5);
  EXPECT_DOUBLE_EQ(b.flops(), 2.0 * 70 * 50 * 40);
}

TEST(GemmBench, BatchedAndGivenTile) {
  gpu::Tile t{16, 16, 8, 2, 2, true};
  GemmBench b =
      make_gemm_bench(problem(3, 33, 20, 17), gpu::gpu_spec("h100"), gpu::Precision::FP32, &t);
  EXPECT_EQ(b.why, "given");
  EXPECT_EQ(b.kernel.launch.block_x, 64);
  EXPECT_LT(emulated_error(b), 1e-5);
}

TEST(GemmBench, TensorCoreKernelMatchesInterpreter) {
  GemmBench b =
      make_gemm_bench(problem(1, 48, 64, 80), gpu::gpu_spec("h100"), gpu::Precision::FP16);
  EXPECT_TRUE(b.tile.tensor_core);
  EXPECT_LT(emulated_error(b), 5e-3);  // fp16 operands, fp32 accumulation
}

TEST(GemmBench, RefusesATileOfTheOtherTemplate) {
  gpu::Tile simt{64, 64, 16, 4, 4, false};
  try {
    make_gemm_bench(problem(1, 64, 64, 64), gpu::gpu_spec("h100"), gpu::Precision::FP16, &simt);
    FAIL() << "a SIMT tile ran the fp16 template";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("SIMT tile cannot run the fp16 GEMM"), std::string::npos)
        << e.what();
  }
}

TEST(GemmBench, CalibrationSizeCompilesForHopper) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const int64_t n = kCalibrationGemmSize;
  for (gpu::Precision p : {gpu::Precision::FP32, gpu::Precision::FP16}) {
    GemmBench b = make_gemm_bench(problem(1, n, n, n), gpu::gpu_spec("h200"), p);
    ASSERT_EQ(b.params.size(), 3u);
    EXPECT_EQ(b.params[0].tensor->name, "A");
    EXPECT_EQ(b.params[1].tensor->name, "B");
    EXPECT_EQ(b.params[2].tensor->name, "C");
    EXPECT_EQ(b.params[2].role, codegen::KernelParam::Role::Output);
    EXPECT_FALSE(b.kernel.launch.cooperative);
    EXPECT_DOUBLE_EQ(gemm_bench_expected(b, 0.5, 0.25), n * 0.125);
    gpu::CompileOptions o;
    o.arch = "sm_90";
    gpu::CompileResult r = gpu::compile_cuda(b.cuda, "gemm_bench.cu", o);
    ASSERT_TRUE(r.ok) << gpu::precision_name(p) << ": " << r.error.substr(0, 4000);
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].name, b.name);
    EXPECT_EQ(r.kernels[0].spill_store_bytes, 0) << gpu::precision_name(p) << " " << b.why;
  }
}

TEST(GemmBench, MeasuredTilesVerifyOnSampleBert) {
  // A measurement that prefers the model's last-ranked candidate of each GEMM: the kernels are
  // built with those tiles (recorded as measured) and still match the reference data.
  int measured = 0;
  schedule::MeasureFn prefer_last = [&](const te::ComputeOp&,
                                        const std::vector<schedule::TileEstimate>& c) {
    ++measured;
    std::vector<double> t;
    for (size_t i = 0; i < c.size(); ++i) t.push_back(10.0 - static_cast<double>(i));
    return t;
  };
  PipelineOptions po;
  po.gpu = gpu::gpu_spec("a100");
  po.strategy = plan::Strategy::Souffle;
  VerifyOptions vo;  // the default element-wise tolerance of the plan's precision
  PipelineOptions measured_po = po;
  measured_po.tune_measure = prefer_last;
  KernelVerifyReport rep = verify_kernels(
      test::sample_model("bert"),
      read_test_data(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert"), measured_po, vo);
  EXPECT_TRUE(rep.ok()) << rep.error;
  EXPECT_GT(measured, 0);
  // The same plan with the model's own choice: its GEMM stages run other tiles.
  KernelVerifyReport model = verify_kernels(
      test::sample_model("bert"),
      read_test_data(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert"), po, vo);
  EXPECT_TRUE(model.ok()) << model.error;
  auto gemm_schedules = [](const KernelVerifyReport& r) {
    std::vector<std::string> out;
    for (const loop::Kernel& k : r.built.kernels)
      for (const loop::StageInfo& s : k.stages)
        if (s.schedule.rfind("gemm", 0) == 0) out.push_back(s.schedule);
    return out;
  };
  const std::vector<std::string> chosen = gemm_schedules(rep), modelled = gemm_schedules(model);
  ASSERT_FALSE(chosen.empty());
  ASSERT_EQ(chosen.size(), modelled.size());
  EXPECT_NE(chosen, modelled);
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

/// A runner that answers load, run and profile for a candidate bundle without a GPU: every
/// kernel of the bundle "took" 1 us, so each candidate that compiled comes back measured.
RunnerBatch bundle_reader(std::vector<size_t>* kernels) {
  return [kernels](const std::vector<nlohmann::json>& reqs) {
    BundleManifest m = load_manifest(reqs.at(0).at("bundle").get<std::string>());
    kernels->push_back(m.kernels.size());
    nlohmann::json ks = nlohmann::json::array();
    for (const ManifestKernel& k : m.kernels)
      ks.push_back({{"name", k.name},
                    {"duration_us", {{"median", 1.0}, {"min", 1.0}, {"max", 1.0}, {"count", 1}}}});
    return std::vector<nlohmann::json>{
        nlohmann::json::object(), nlohmann::json::object(), {{"timer", "cupti"}, {"kernels", ks}}};
  };
}

TEST(GemmBench, EveryCandidateOfTheSampleGemmsCompiles) {
  // The candidates `compile --tune measure` would time for the GEMMs of the sample BERT and
  // ResNeXt (implicit-GEMM convolutions, grouped ones batched): each problem's bundle compiles
  // for sm_90 with every candidate in it.
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (const char* model : {"bert", "resnext"}) {
    TileMeasureOptions o;
    o.arch = "sm_90";
    o.gpu = gpu::gpu_spec("h200");
    o.dir = (std::filesystem::temp_directory_path() / "gemm_bench_candidates" / model).string();
    std::vector<size_t> kernels;
    TileMeasurer measurer(o, bundle_reader(&kernels));
    plan::PlanOptions po;
    po.gpu = o.gpu;
    po.strategy = plan::Strategy::Rules;
    plan::FusionPlan p = plan::plan(test::sample_model(model).program, po);
    schedule::PlanBuild b = schedule::plan_build(p);
    b.options.measure = measurer.fn();
    b.options.measure_top = 3;
    schedule::tune_plan(p, b.config, b.options);
    // measurements() returns a copy: held here, so that `t` below refers to a live element. (A
    // reference into the temporary read freed memory; a note or problem whose length was garbage
    // then grew the process to 21 GB while streaming the failure message, or crashed it.)
    const std::vector<TileMeasurement> measured = measurer.measurements();
    ASSERT_FALSE(measured.empty()) << model;
    ASSERT_EQ(kernels.size(), measured.size()) << model;
    for (size_t m = 0; m < kernels.size(); ++m) {
      const TileMeasurement& t = measured[m];
      EXPECT_TRUE(t.note.empty()) << model << " " << t.problem << ": " << t.note;
      EXPECT_EQ(t.tiles.size(), 3u) << model << " " << t.problem;          // measure_top
      EXPECT_EQ(kernels[m], t.tiles.size()) << model << " " << t.problem;  // all compiled
      for (size_t i = 0; i < t.us.size(); ++i)
        EXPECT_GE(t.us[i], 0) << model << " " << t.problem << " " << t.tiles[i];
    }
    std::cerr << model << ": " << measured.size() << " GEMM problems\n";
  }
}

}  // namespace
}  // namespace souffle
