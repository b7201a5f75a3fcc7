// The CUDA backend of souffle-runner on a strict fake driver and CUPTI (tests/session/fake_cuda.h;
// no GPU here): what it asks the driver to do with a kernel that has per-tile flags (the fake's
// kernel checks the epoch scheme at every launch — its counters hold exactly (epoch - 1)
// releases before it adds this launch's — for plain runs, warm-up and timed runs, and a CUDA
// graph replayed with the arguments it was captured with, as the driver does), and what it does
// when the driver or CUPTI is unforgiving: unordered streams, the shared-memory rule, faults
// that poison the context, graphs and counter runs that fail, CUPTI versions and dropped records.
#include <gtest/gtest.h>

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/gpu/nvrtc.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/session/bundle_manifest.h"
#include "core/session/chrome_trace.h"
#include "core/session/gemm_bench.h"
#include "core/session/profile.h"
#include "core/session/runner.h"
#include "core/session/runner_cuda.h"
#include "core/session/tune_measure.h"
#include "core/support/error.h"
#include "tests/session/fake_cuda.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;

using fake::FakeDriver;
using fake::g_fake;
using fake::kCounters;

/// A bundle of two kernels: `plain` (no flags) and `flagged` (per-tile flags: counters and the
/// epoch), with a PTX file each the fake driver "loads".
BundleManifest two_kernels(const std::string& dir, bool cooperative = true) {
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "k.sm_90.ptx") << "// fake\n";
  BundleManifest m;
  m.dir = dir;
  m.source.sync = "flags";
  auto tensor = [&](const std::string& name, DType t, const std::string& kind) {
    ManifestTensor mt;
    mt.name = name;
    mt.dtype = t;
    mt.shape = {kCounters};
    mt.bytes = kCounters * 4;
    mt.kind = kind;
    m.tensors.push_back(mt);
  };
  tensor("x", DType::Float32, "input");
  tensor("y", DType::Float32, "output");
  tensor("flagged_flags0", DType::Int32, "flags");
  ManifestImage img;
  img.arch = "sm_90";
  img.ptx = "k.sm_90.ptx";
  ManifestKernel plain;
  plain.name = "plain";
  plain.grid = 4;
  plain.block = 128;
  plain.args = {0, 1};
  plain.images = {img};
  ManifestKernel flagged = plain;
  flagged.name = "flagged";
  flagged.cooperative = cooperative;
  flagged.flag_epoch = true;
  flagged.args = {0, 1, 2};
  m.kernels = {plain, flagged};
  return m;
}

struct FakeFixture : ::testing::Test {
  FakeDriver fake;
  gpu::CudaApi api = fake::fake_api();
  std::string dir = (fs::temp_directory_path() / "runner_cuda_fake").string();
  gpu::CuptiActivityApi activity = fake::fake_activity_api();
  gpu::CuptiProfilerApi profiler = fake::fake_profiler_api();
  std::unique_ptr<gpu::CuptiKernelTracer> tracer;
  std::function<void(const nlohmann::json&)> no_events = [](const nlohmann::json&) {};

  /// A backend on the fake driver and the fake CUPTI (activity records and range profiler).
  std::unique_ptr<runner::Backend> backend_with_cupti() {
    std::string why;
    tracer = gpu::CuptiKernelTracer::open(activity, &why);
    EXPECT_TRUE(tracer) << why;
    runner::CudaBackendApis apis;
    apis.driver = &api;
    apis.tracer = tracer.get();
    apis.profiler = &profiler;
    return runner::make_cuda_backend(apis);
  }

  /// The runner's answers to `requests` served on `backend` (after loading two_kernels, written
  /// as a bundle, when `load`), and the runner's exit code.
  std::pair<std::vector<nlohmann::json>, int> serve_bundle(
      runner::Backend& backend, const std::vector<nlohmann::json>& requests, bool load = true) {
    BundleManifest m = two_kernels(dir);
    m.source.gpu = gpu::gpu_spec("h200");
    std::ofstream(fs::path(dir) / "bundle.json") << manifest_json(m);
    std::stringstream in, out;
    if (load) in << nlohmann::json({{"op", "load"}, {"bundle", dir}}).dump() << "\n";
    for (const nlohmann::json& r : requests) in << r.dump() << "\n";
    int code = runner::serve(in, out, backend);
    std::vector<nlohmann::json> answers;
    std::string line;
    while (std::getline(out, line))
      if (!line.empty() && !nlohmann::json::parse(line).contains("event"))
        answers.push_back(nlohmann::json::parse(line));
    return {answers, code};
  }

  void SetUp() override {
    g_fake = &fake;
    // No CUPTI in this process: kernel times come from (fake) events.
    std::string why;
    gpu::CuptiKernelTracer::instance(&why, "/nonexistent/libcupti.so");
  }
  void TearDown() override {
    // Whatever a test did, once its backend is gone nothing the driver made is left, and the
    // driver saw no misuse.
    EXPECT_EQ(fake.live_events(), 0u);
    EXPECT_EQ(fake.live_graphs(), 0u);
    EXPECT_EQ(fake.live_execs(), 0u);
    EXPECT_EQ(fake.live_modules(), 0u);
    EXPECT_EQ(fake.live_allocations(), 0u);
    EXPECT_EQ(fake.live_streams(), 0u);
    EXPECT_EQ(fake.live_contexts(), 0);
    for (const std::string& v : fake.violations) ADD_FAILURE() << v;
    g_fake = nullptr;
  }
};

TEST_F(FakeFixture, TheEpochGrowsPerLaunchAndTheGraphStartsFromZero) {
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  // Zeroed once at load, though the fake's fresh memory is not zero.
  std::string counters = backend->read(2);
  EXPECT_EQ(counters, std::string(kCounters * 4, '\0'));
  auto quiet = [](const nlohmann::json&) {};
  backend->run(quiet);
  backend->run(quiet);
  // Two warm-up runs, three timed per kernel, three timed end to end, the graph replayed twice
  // untimed and three times timed.
  runner::ProfileData p = backend->profile(3, 2, true, false, quiet);
  EXPECT_TRUE(p.counters.empty());
  EXPECT_TRUE(p.counters_note.empty());  // not asked for
  EXPECT_TRUE(p.graph_note.empty()) << p.graph_note;
  backend->run(quiet);  // after the graph: counters and epochs start over
  EXPECT_TRUE(fake.violations.empty()) << fake.violations.front();
  std::vector<long long> want = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(fake.epochs, want);
  EXPECT_EQ(fake.plain_launches, 16);
  // The graph: the run's clearing, then the counters' memset, then the two kernels.
  ASSERT_EQ(fake.captured_sizes.size(), 1u);
  EXPECT_EQ(fake.captured_sizes[0], 1u + 1u + 2u);  // y cleared, counters zeroed, launches
  std::string after(kCounters * 4, '\0');
  std::vector<int32_t> ones(kCounters, 1);
  std::memcpy(after.data(), ones.data(), after.size());
  EXPECT_EQ(backend->read(2), after);  // one launch since the restart
}

TEST_F(FakeFixture, AFlagKernelThatIsNotCooperativeIsRefused) {
  auto backend = runner::make_cuda_backend(api);
  try {
    backend->load(two_kernels(dir, false));
    ADD_FAILURE() << "loaded";
  } catch (const runner::RunnerError& e) {
    EXPECT_EQ(e.code(), "not_co_resident");
    EXPECT_EQ(e.kernel(), "flagged");
    EXPECT_NE(std::string(e.what()).find("not launched cooperatively"), std::string::npos)
        << e.what();
  }
}

TEST_F(FakeFixture, CalibrationTimesTheProjectsGemmKernels) {
  // The tiles the tuner picks for the device's spec, compiled for it, launched as built, and
  // their results checked; the rate is FLOPs over the (fake) time per launch.
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  fake.device_name = "NVIDIA H200";
  auto backend = runner::make_cuda_backend(api);
  gpu::Calibration c = backend->calibrate([](const nlohmann::json&) {});
  EXPECT_TRUE(c.gemm_note.empty()) << c.gemm_note;
  schedule::GemmProblem p;
  p.m = p.n = p.k = kCalibrationGemmSize;
  for (gpu::Precision precision : {gpu::Precision::FP32, gpu::Precision::FP16}) {
    const bool fp32 = precision == gpu::Precision::FP32;
    GemmBench b = make_gemm_bench(p, gpu::gpu_spec("h200"), precision, nullptr,
                                  fp32 ? "souffle_gemm_fp32" : "souffle_gemm_fp16");
    const FakeDriver::Launch& l = fake.gemm_launches.at(b.name);
    EXPECT_EQ(l.grid, b.kernel.launch.grid_x);
    EXPECT_EQ(l.block, b.kernel.launch.block_x);
    EXPECT_EQ(l.shared, b.kernel.launch.dynamic_shared_bytes);
    EXPECT_EQ(l.count, 6 * 3);  // a warm-up repetition and five timed, of three launches
    // Each launch takes 1 us on the fake's clock.
    EXPECT_NEAR(fp32 ? c.gemm_fp32_tflops : c.gemm_fp16_tflops, b.flops() / 1e-6 / 1e12,
                1e-4 * b.flops() / 1e-6 / 1e12);
    EXPECT_EQ(fp32 ? c.gemm_fp32_tile : c.gemm_fp16_tile, b.tile.describe());
  }
  gpu::Calibration back = gpu::parse_calibration(gpu::calibration_json(c), "cal.json");
  EXPECT_EQ(back.gemm_fp16_tile, c.gemm_fp16_tile);
  EXPECT_DOUBLE_EQ(back.gemm_fp32_tflops, c.gemm_fp32_tflops);
}

TEST_F(FakeFixture, CalibrationRecordsTheMainloopItsRateBelongsTo) {
  // The fp16 rate belongs to the mainloop the bench kernel was built with (the schedule
  // templates with the tuner's tile for the device: at 4096 cubed on the H200 the tile ranking
  // takes an Ampere mma.sync tile with a cp.async pipeline): the file names that template, and
  // the pricer applies the measured rate to stages built the same way and to no others.
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  fake.device_name = "NVIDIA H200";
  auto backend = runner::make_cuda_backend(api);
  gpu::Calibration c = backend->calibrate([](const nlohmann::json&) {});
  ASSERT_GT(c.gemm_fp16_tflops, 0) << c.gemm_note;
  const gpu::GpuSpec spec = gpu::gpu_spec("h200");
  schedule::GemmProblem p;
  p.m = p.n = p.k = kCalibrationGemmSize;
  const GemmBench b = make_gemm_bench(p, spec, gpu::Precision::FP16, nullptr, "souffle_gemm_fp16");
  ASSERT_FALSE(b.mainloop_template.empty());
  EXPECT_EQ(c.gemm_fp16_template, b.mainloop_template);
  EXPECT_EQ(c.gemm_fp16_template.rfind("mma.sync, cp.async depth ", 0), 0u)
      << c.gemm_fp16_template << ": " << b.tile.describe();
  EXPECT_TRUE(make_gemm_bench(p, spec, gpu::Precision::FP32).mainloop_template.empty());
  // The written file carries it.
  const std::string text = gpu::calibration_json(c);
  EXPECT_NE(text.find("\"gemm_fp16_template\": \"" + c.gemm_fp16_template + "\""),
            std::string::npos)
      << text;
  const gpu::Calibration back = gpu::parse_calibration(text, "cal.json");
  EXPECT_EQ(back.gemm_fp16_template, c.gemm_fp16_template);
  const gpu::CostConstants k = gpu::cost_constants(spec, gpu::Precision::FP16, &back);
  EXPECT_TRUE(k.tensor_calibrated);
  EXPECT_EQ(k.tensor_template, c.gemm_fp16_template);

  auto flops_of = [&](const std::string&) { return static_cast<int64_t>(b.flops()); };
  const auto& op = static_cast<const te::ComputeOp&>(*b.op);
  auto tensor_stage = [&](const loop::Kernel& kernel) {
    const schedule::KernelPrice price = schedule::price_kernel(kernel, spec, k, flops_of);
    for (const schedule::StagePrice& s : price.stages)
      if (s.work.tensor_core) return s;
    ADD_FAILURE() << kernel.name << " has no tensor-core stage";
    return schedule::StagePrice{};
  };
  // The timed kernel itself: priced at the measured rate.
  const schedule::StagePrice same = tensor_stage(b.kernel);
  EXPECT_EQ(same.work.mainloop.template_name(), c.gemm_fp16_template);
  EXPECT_TRUE(same.cost.mainloop.calibrated) << same.cost.mainloop.from;
  EXPECT_NE(same.cost.mainloop.from.find("calibration: " + c.gemm_fp16_template), std::string::npos)
      << same.cost.mainloop.from;
  // The same GEMM on the default tile of each template: only the calibrated one's stage takes
  // the rate; the mma.sync mainloop's is priced from its structure.
  schedule::ScheduleConfig config;
  config.precision = gpu::Precision::FP16;
  config.mma_mainloop = true;
  const schedule::StagePrice mma = tensor_stage(schedule::schedule_op(op, config));
  config.mma_mainloop = false;
  const schedule::StagePrice wmma = tensor_stage(schedule::schedule_op(op, config));
  // (fp32 operands in global memory are converted at the tile load, so this one stages them
  // synchronously too: "mma.sync, synchronous".)
  EXPECT_EQ(mma.work.mainloop.template_name().rfind("mma.sync, ", 0), 0u)
      << mma.work.mainloop.template_name();
  EXPECT_EQ(wmma.work.mainloop.template_name(), "wmma, synchronous");
  for (const schedule::StagePrice* s : {&mma, &wmma})
    EXPECT_EQ(s->cost.mainloop.calibrated, s->work.mainloop.template_name() == c.gemm_fp16_template)
        << s->work.mainloop.template_name() << ": " << s->cost.mainloop.from;
  // A rate recorded for the mma.sync mainloop goes to its stages, not to the wmma template's.
  gpu::Calibration ampere = back;
  ampere.gemm_fp16_template = mma.work.mainloop.template_name();
  const gpu::CostConstants ka = gpu::cost_constants(spec, gpu::Precision::FP16, &ampere);
  EXPECT_TRUE(gpu::stage_cost(spec, ka, mma.work).mainloop.calibrated);
  EXPECT_FALSE(gpu::stage_cost(spec, ka, wmma.work).mainloop.calibrated);
}

TEST_F(FakeFixture, AGemmThatComputesWrongValuesHasNoRate) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  fake.device_name = "NVIDIA H100 80GB HBM3";
  fake.gemm_right = false;
  auto backend = runner::make_cuda_backend(api);
  gpu::Calibration c = backend->calibrate([](const nlohmann::json&) {});
  EXPECT_EQ(c.gemm_fp32_tflops, 0);
  EXPECT_EQ(c.gemm_fp16_tflops, 0);
  EXPECT_TRUE(c.gemm_fp32_tile.empty());
  EXPECT_NE(c.gemm_note.find("the fp32 GEMM kernel computed 1.000000 where"), std::string::npos)
      << c.gemm_note;
  EXPECT_NE(c.gemm_note.find("the fp16 GEMM kernel computed"), std::string::npos) << c.gemm_note;
}

TEST_F(FakeFixture, ADeviceWithoutASpecHasNoGemmRates) {
  auto backend = runner::make_cuda_backend(api);  // "Fake H200"
  gpu::Calibration c = backend->calibrate([](const nlohmann::json&) {});
  EXPECT_EQ(c.gemm_fp32_tflops, 0);
  EXPECT_NE(c.gemm_note.find("no built-in GPU spec matches Fake H200"), std::string::npos)
      << c.gemm_note;
  EXPECT_TRUE(fake.gemm_launches.empty());
}

TEST_F(FakeFixture, CountersThatCannotBeHadAreNamedNotFatal) {
  // CUPTI's range profiler missing: the timed runs stand, the counters say why they are absent.
  auto backend = runner::make_cuda_backend(api, 0, "/nonexistent/libcupti_counters.so");
  backend->load(two_kernels(dir));
  runner::ProfileData p = backend->profile(2, 1, false, true, [](const nlohmann::json&) {});
  EXPECT_EQ(p.kernels.size(), 2u);
  EXPECT_TRUE(p.counters.empty());
  EXPECT_NE(p.counters_note.find("/nonexistent/libcupti_counters.so"), std::string::npos)
      << p.counters_note;
  EXPECT_TRUE(fake.violations.empty()) << fake.violations.front();
  // Through the protocol's JSON and back.
  runner::ProfileData back = runner::profile_from_json(runner::profile_json(p));
  EXPECT_EQ(back.counters_note, p.counters_note);
}

TEST(ProfileCounters, TravelThroughTheProtocolAndTheReport) {
  runner::ProfileData p;
  p.timer = "cupti";
  p.kernels.resize(1);
  p.kernels[0].name = "kernel0";
  gpu::KernelCounters c;
  c.name = "kernel0";
  c.dram_read_bytes = 1.5e6;
  c.dram_write_bytes = 2.5e5;
  c.achieved_occupancy = 0.42;
  p.counters = {c};
  runner::ProfileData back = runner::profile_from_json(runner::profile_json(p));
  ASSERT_EQ(back.counters.size(), 1u);
  EXPECT_EQ(back.counters[0].name, "kernel0");
  EXPECT_DOUBLE_EQ(back.counters[0].dram_read_bytes, 1.5e6);
  EXPECT_DOUBLE_EQ(back.counters[0].dram_write_bytes, 2.5e5);
  EXPECT_DOUBLE_EQ(back.counters[0].achieved_occupancy, 0.42);

  ProfileReport r;
  r.backend = "cuda";
  KernelMeasurement m;
  m.name = "kernel0";
  m.dram_read_bytes = 1.5e6;
  m.achieved_occupancy = 0.42;
  m.est_dram_bytes = 1200000;
  r.kernels = {m, KernelMeasurement{}};
  r.counters_note = "each kernel replayed 2 times by CUPTI (GH100)";
  ProfileReport rb = profile_report_from_json(profile_report_json(r));
  ASSERT_EQ(rb.kernels.size(), 2u);
  EXPECT_TRUE(rb.kernels[0].has_counters());
  EXPECT_DOUBLE_EQ(rb.kernels[0].dram_read_bytes, 1.5e6);
  EXPECT_DOUBLE_EQ(rb.kernels[0].dram_write_bytes, -1);
  EXPECT_DOUBLE_EQ(rb.kernels[0].achieved_occupancy, 0.42);
  EXPECT_EQ(rb.kernels[0].est_dram_bytes, 1200000);
  EXPECT_FALSE(rb.kernels[1].has_counters());
  EXPECT_EQ(rb.counters_note, r.counters_note);
  // And into the Chrome trace's kernel events.
  nlohmann::json trace = nlohmann::json::parse(chrome_trace_json({r}));
  int counted = 0;
  for (const nlohmann::json& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "kernel0") {
      ++counted;
      EXPECT_DOUBLE_EQ(e["args"]["dram_read_bytes"].get<double>(), 1.5e6);
      EXPECT_DOUBLE_EQ(e["args"]["achieved_occupancy"].get<double>(), 0.42);
      EXPECT_FALSE(e["args"].contains("dram_write_bytes"));
      EXPECT_EQ(e["args"]["estimated_dram_bytes"], 1200000);
    }
  EXPECT_EQ(counted, 1);
}

/// The runner's requests served in this process on `backend`, as a RunnerBatch; a failed
/// request throws with the runner's answer.
RunnerBatch in_process(runner::Backend& backend) {
  return [&backend](const std::vector<nlohmann::json>& requests) {
    std::stringstream in, out;
    for (const nlohmann::json& r : requests) in << r.dump() << "\n";
    runner::serve(in, out, backend);
    std::vector<nlohmann::json> answers;
    std::string line;
    while (std::getline(out, line)) {
      if (line.empty()) continue;
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("event")) continue;
      if (!j.value("ok", false)) throw UserError("the runner refused: " + j.dump());
      answers.push_back(j);
    }
    return answers;
  };
}

TEST_F(FakeFixture, TileCandidatesAreTimedOnTheRunnerAndReRanked) {
  // The tuner's top three tiles for a GEMM, built as benchmark kernels, compiled for sm_90,
  // loaded and timed by the CUDA backend; the fake clock makes the model's second the fastest.
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  auto backend = runner::make_cuda_backend(api, 0, "/nonexistent/libcupti_counters.so");
  TileMeasureOptions o;
  o.arch = "sm_90";
  o.gpu = gpu::gpu_spec("h200");
  o.dir = dir + "/tiles";
  o.runs = 3;
  o.warmup = 1;
  TileMeasurer measurer(o, in_process(*backend));
  schedule::GemmProblem p;
  p.m = 96;
  p.n = 80;
  p.k = 64;
  te::Op op = gemm_bench_op(p);
  schedule::TuneOptions to;
  to.gpu = o.gpu;
  to.measure_top = 3;
  schedule::TuneResult model = schedule::tune_gemm(*op, to);
  ASSERT_GE(model.ranked.size(), 3u);
  fake.durations_us = {{"tile0", 3.0}, {"tile1", 1.0}, {"tile2", 2.0}};
  to.measure = measurer.fn();
  schedule::TuneResult r = schedule::tune_gemm(*op, to);
  EXPECT_TRUE(r.measured) << (measurer.measurements().empty() ? std::string("none")
                                                              : measurer.measurements()[0].note);
  EXPECT_EQ(r.ranked[0].tile.describe(), model.ranked[1].tile.describe());
  EXPECT_EQ(r.ranked[1].tile.describe(), model.ranked[2].tile.describe());
  EXPECT_EQ(r.ranked[2].tile.describe(), model.ranked[0].tile.describe());
  EXPECT_NEAR(r.ranked[0].measured_us, 1.0, 1e-3);
  EXPECT_NE(r.reason().find("(measured)"), std::string::npos) << r.reason();
  std::vector<TileMeasurement> m = measurer.measurements();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].problem, "batch 1, 96 x 80 x 64");
  EXPECT_EQ(m[0].timer, "cuda-events");
  ASSERT_EQ(m[0].us.size(), 3u);
  EXPECT_NEAR(m[0].us[0], 3.0, 1e-3);
  EXPECT_NEAR(m[0].us[2], 2.0, 1e-3);
  // The candidate bundle is one a runner loads: three kernels over one A, B and C.
  BundleManifest bundle = load_manifest(o.dir + "/gemm0");
  EXPECT_EQ(bundle.kernels.size(), 3u);
  EXPECT_EQ(bundle.tensors.size(), 3u);
  // The same problem again is answered from what was measured.
  const int launches = fake.plain_launches;
  schedule::tune_gemm(*op, to);
  EXPECT_EQ(fake.plain_launches, launches);
  EXPECT_EQ(measurer.measurements().size(), 1u);
}

TEST_F(FakeFixture, ARunnerThatFailsLeavesTheModelsOrder) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  TileMeasureOptions o;
  o.arch = "sm_90";
  o.gpu = gpu::gpu_spec("h100");
  o.dir = dir + "/tiles_failing";
  TileMeasurer measurer(o, [](const std::vector<nlohmann::json>&) -> std::vector<nlohmann::json> {
    throw UserError("runner died: CUDA_ERROR_ILLEGAL_ADDRESS in tile1");
  });
  schedule::GemmProblem p;
  p.m = p.n = p.k = 64;
  te::Op op = gemm_bench_op(p);
  schedule::TuneOptions to;
  to.gpu = o.gpu;
  to.measure_top = 4;
  schedule::TuneResult model = schedule::tune_gemm(*op, to);
  to.measure = measurer.fn();
  schedule::TuneResult r = schedule::tune_gemm(*op, to);
  EXPECT_FALSE(r.measured);
  EXPECT_EQ(r.best().tile.describe(), model.best().tile.describe());
  EXPECT_EQ(r.reason().find("(measured)"), std::string::npos) << r.reason();
  ASSERT_EQ(measurer.measurements().size(), 1u);
  EXPECT_NE(measurer.measurements()[0].note.find("ILLEGAL_ADDRESS in tile1"), std::string::npos)
      << measurer.measurements()[0].note;
}

TEST_F(FakeFixture, HelloReportsTheDevicesAttributesAndTheSpecMadeFromThem) {
  // An H100 PCIe: the name alone would plan it as the 132-SM SXM part.
  fake.device_name = "NVIDIA H100 PCIe";
  fake.attributes = {{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 114},
                     {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
                     {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
                     {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
                     {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
                     {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
                     {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
                     {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
                     {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
                     {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
                     {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
                     {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1755000},
                     {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1593000},
                     {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120}};
  auto backend = runner::make_cuda_backend(api);
  std::stringstream in(R"({"op": "hello", "id": 1})"
                       "\n"),
      out;
  runner::serve(in, out, *backend);
  nlohmann::json h = nlohmann::json::parse(out.str());
  ASSERT_TRUE(h.value("ok", false)) << h.dump();
  const nlohmann::json& d = h["devices"][0];
  EXPECT_EQ(d["sm_count"], 114);
  EXPECT_EQ(d["shared_memory_per_sm"], 233472);
  EXPECT_EQ(d["max_shared_memory_per_block"], 232448);
  EXPECT_EQ(d["registers_per_sm"], 65536);
  EXPECT_EQ(d["clock_mhz"], 1755);
  EXPECT_EQ(d["memory_clock_mhz"], 1593);
  EXPECT_EQ(d["memory_bus_bits"], 5120);
  EXPECT_EQ(runner::device_attributes_from_json(d).max_threads_per_block, 1024);
  // The spec the device is planned for, in a spec file's form.
  ASSERT_TRUE(d.contains("gpu_spec")) << d.dump();
  std::vector<gpu::GpuSpec> specs = gpu::parse_gpu_specs(d["gpu_spec"].dump(), "hello");
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].name, "H100 PCIe");
  EXPECT_EQ(specs[0].sm_count, 114);
  EXPECT_EQ(specs[0].dram_bandwidth_gbps, 2039);
  // The device check's dry run replays this answer (tests/gpu_check/answers/hello.json): it
  // must be what this runner answers. SOUFFLE_RECORD_ANSWERS=1 writes it again.
  const fs::path recorded =
      fs::path(SOUFFLE_SOURCE_DIR) / "tests" / "gpu_check" / "answers" / "hello.json";
  if (std::getenv("SOUFFLE_RECORD_ANSWERS")) {
    nlohmann::json file = {{"what",
                            "souffle-runner's answer to hello on the fake driver of "
                            "tests/session/test_runner_cuda.cpp describing an H100 PCIe (114 SMs)"},
                           {"rc", 0},
                           {"stdout_lines", {h.dump()}},
                           {"stderr", ""},
                           {"seconds", 0.2}};
    std::ofstream(recorded) << file.dump(1) << "\n";
  }
  std::ifstream in_file(recorded);
  ASSERT_TRUE(in_file) << recorded;
  nlohmann::json file = nlohmann::json::parse(in_file);
  EXPECT_EQ(nlohmann::json::parse(file["stdout_lines"][0].get<std::string>()), h)
      << "the recorded hello is not this runner's: record it again with SOUFFLE_RECORD_ANSWERS=1";
  // A device no built-in spec names has none, and says so.
  fake.device_name = "Fake H200";
  std::stringstream in2(R"({"op": "hello", "id": 2})"
                        "\n"),
      out2;
  runner::serve(in2, out2, *backend);
  nlohmann::json h2 = nlohmann::json::parse(out2.str());
  EXPECT_FALSE(h2["devices"][0].contains("gpu_spec"));
  EXPECT_EQ(h2["devices"][0]["gpu_spec_note"], "no built-in GPU spec matches Fake H200");
}

TEST_F(FakeFixture, PackedKernelsGetTheirTensorsInOneArrayAndTheEpochAfterIt) {
  // Images that take their tensors packed (what the emitter writes for kernels of
  // codegen::kPackedParamsMin tensors or more): `plain` copies x to y read from the array,
  // `flagged` finds its counters there and its epoch in the second parameter.
  fake.packed = {"plain", "flagged"};
  BundleManifest m = two_kernels(dir);
  for (ManifestKernel& k : m.kernels) k.packed_args = true;
  auto backend = runner::make_cuda_backend(api);
  backend->load(m);
  std::string x(kCounters * 4, '\0');
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<char>(3 * i + 1);
  backend->upload(0, x);
  auto quiet = [](const nlohmann::json&) {};
  backend->run(quiet);
  backend->run(quiet);
  EXPECT_EQ(backend->read(1), x);
  runner::ProfileData p = backend->profile(2, 1, true, false, quiet);
  EXPECT_TRUE(p.graph_note.empty()) << p.graph_note;
  // Two runs, one warm-up, two timed per kernel, two timed end to end; the graph replayed
  // twice untimed and twice timed, each from a fresh start.
  std::vector<long long> want = {1, 2, 3, 4, 5, 6, 7, 1, 1, 1, 1};
  EXPECT_EQ(fake.epochs, want);
  // The manifest says so, and only a version-3 reader takes it.
  const nlohmann::json j = nlohmann::json::parse(manifest_json(m));
  EXPECT_EQ(j["version"], 3);
  EXPECT_TRUE(j["kernels"][0]["packed_args"].get<bool>());
}

// ---- Uploads (the upload and the kernels on one stream, in order) ----

TEST_F(FakeFixture, AnUploadIsWhatTheNextRunReads) {
  // The fake's `plain` copies x to y. A copy from pageable memory on the legacy stream reaches
  // the device in that stream's order, after kernels on the runner's non-blocking stream may
  // have read x.
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  std::string x(kCounters * 4, '\0');
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<char>(i + 1);
  backend->upload(0, x);
  backend->run(no_events);
  EXPECT_EQ(backend->read(1), x);
}

// ---- Shared memory: static and dynamic together against the 48 KiB default ----

TEST_F(FakeFixture, StaticSharedMemoryCountsTowardTheOptIn) {
  // 8 KiB static and 44 KiB dynamic pass the default though the dynamic part alone does not:
  // the function must raise its dynamic limit to 44 KiB, or it has no occupancy (and would not
  // launch).
  fake.static_shared["plain"] = 8 * 1024;
  BundleManifest m = two_kernels(dir);
  m.kernels[0].shared_bytes = 44 * 1024;
  auto backend = runner::make_cuda_backend(api);
  nlohmann::json loaded = backend->load(m);
  EXPECT_EQ(fake.opted_in["plain"], 44 * 1024);
  EXPECT_EQ(fake.opted_in.count("flagged"), 0u);  // within the default: nothing to raise
  EXPECT_EQ(loaded["kernels"][0]["shared_bytes"], 52 * 1024);
  EXPECT_GT(loaded["kernels"][0]["blocks_per_sm"].get<int>(), 0);
  backend->run(no_events);
  EXPECT_EQ(fake.plain_launches, 1);
}

// ---- Graph replay and counter runs: a failure is a note, the timings stand ----

TEST_F(FakeFixture, AGraphReplayThatFailsKeepsTheTimings) {
  fake.graph_launch_error = CUDA_ERROR_NOT_SUPPORTED;
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  runner::ProfileData p = backend->profile(3, 1, true, false, no_events);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].duration_us.count, 3);
  EXPECT_EQ(p.end_to_end_us.count, 3);
  EXPECT_EQ(p.graph_us.count, 0);
  EXPECT_NE(p.graph_note.find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << p.graph_note;
  EXPECT_FALSE(backend->dead());
  // Nothing of the graph is left, and the flags start over for the next run.
  EXPECT_EQ(fake.live_graphs(), 0u);
  EXPECT_EQ(fake.live_execs(), 0u);
  EXPECT_EQ(fake.live_events(), 0u);
  backend->run(no_events);
  EXPECT_EQ(fake.epochs.back(), 1);
}

TEST_F(FakeFixture, AGraphThatCannotBeInstantiatedKeepsTheTimings) {
  fake.instantiate_error = CUDA_ERROR_NOT_SUPPORTED;
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  runner::ProfileData p = backend->profile(2, 1, true, false, no_events);
  EXPECT_EQ(p.kernels.size(), 2u);
  EXPECT_NE(p.graph_note.find("cuGraphInstantiate"), std::string::npos) << p.graph_note;
  EXPECT_EQ(fake.live_graphs(), 0u);
  EXPECT_EQ(fake.live_events(), 0u);
}

TEST_F(FakeFixture, AGraphReplayThatFaultsAnswersWithTheTimingsAndTheRunnerExits) {
  // The context is lost: the answer keeps what was measured and says why there is no graph
  // figure, then the runner exits as after any fault.
  fake.graph_faults["flagged"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto backend = runner::make_cuda_backend(api);
  auto [answers, code] = serve_bundle(
      *backend, {{{"op", "profile"}, {"runs", 3}, {"warmup", 1}, {"counters", false}}});
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_TRUE(answers[0].value("ok", false)) << answers[0].dump();
  EXPECT_TRUE(answers[1].value("ok", false)) << answers[1].dump();
  EXPECT_EQ(answers[1]["kernels"].size(), 2u);
  EXPECT_NE(answers[1].value("graph_note", "").find("CUDA_ERROR_ILLEGAL_ADDRESS"),
            std::string::npos)
      << answers[1].dump();
  EXPECT_EQ(code, 3);
  EXPECT_TRUE(backend->dead());
}

TEST_F(FakeFixture, CountersComeFromTheRangeProfiler) {
  auto backend = backend_with_cupti();
  backend->load(two_kernels(dir));
  runner::ProfileData p = backend->profile(2, 1, false, true, no_events);
  ASSERT_EQ(p.counters.size(), 2u) << p.counters_note;
  EXPECT_EQ(p.counters[1].name, "flagged");
  EXPECT_DOUBLE_EQ(p.counters[0].dram_read_bytes, 1000);
  EXPECT_DOUBLE_EQ(p.counters[0].achieved_occupancy, 0.5);
  EXPECT_EQ(p.counters_note, "each kernel replayed 2 times by CUPTI (GH100)");
  EXPECT_FALSE(fake.range_profiling);
}

TEST_F(FakeFixture, ACounterRunThatFailsKeepsTheTimings) {
  // CUPTI's kernel replay refuses the cooperative kernel.
  fake.replay_error = CUDA_ERROR_NOT_SUPPORTED;
  auto backend = backend_with_cupti();
  backend->load(two_kernels(dir));
  runner::ProfileData p = backend->profile(2, 1, false, true, no_events);
  EXPECT_EQ(p.timer, "cupti");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_TRUE(p.counters.empty());
  EXPECT_NE(p.counters_note.find("flagged"), std::string::npos) << p.counters_note;
  EXPECT_NE(p.counters_note.find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << p.counters_note;
  EXPECT_FALSE(fake.range_profiling);  // the range profiler was stopped and disabled
  EXPECT_FALSE(backend->dead());
  backend->run(no_events);  // and the runner goes on
}

TEST_F(FakeFixture, CounterRefusalsAreNamedAndTheTimingsStand) {
  auto backend = backend_with_cupti();
  backend->load(two_kernels(dir));
  fake.profiler_enable_error = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  runner::ProfileData p = backend->profile(2, 1, false, true, no_events);
  EXPECT_EQ(p.kernels.size(), 2u);
  EXPECT_NE(p.counters_note.find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), std::string::npos)
      << p.counters_note;
  fake.profiler_enable_error = CUPTI_SUCCESS;
  fake.virtual_gpu = true;
  p = backend->profile(2, 1, false, true, no_events);
  EXPECT_EQ(p.kernels.size(), 2u);
  EXPECT_NE(p.counters_note.find("virtual GPU"), std::string::npos) << p.counters_note;
}

// ---- Calibration: a GEMM that fails keeps what was measured ----

TEST_F(FakeFixture, AGemmThatFailsKeepsTheRestOfTheCalibration) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  fake.device_name = "NVIDIA H200";
  fake.launch_errors["souffle_gemm_fp32"] = CUDA_ERROR_INVALID_VALUE;
  auto backend = runner::make_cuda_backend(api);
  gpu::Calibration c = backend->calibrate(no_events);
  EXPECT_GT(c.launch_overhead_us, 0);
  EXPECT_FALSE(c.grid_barrier.empty());
  EXPECT_EQ(c.gemm_fp32_tflops, 0);
  EXPECT_GT(c.gemm_fp16_tflops, 0);
  EXPECT_NE(c.gemm_note.find("fp32 GEMM"), std::string::npos) << c.gemm_note;
  EXPECT_NE(c.gemm_note.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << c.gemm_note;
  EXPECT_FALSE(backend->dead());
}

TEST_F(FakeFixture, AGemmThatFaultsKeepsWhatWasMeasuredAndTheRunnerExits) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  fake.device_name = "NVIDIA H200";
  fake.faults["souffle_gemm_fp16"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto backend = runner::make_cuda_backend(api);
  auto [answers, code] = serve_bundle(*backend, {{{"op", "calibrate"}}}, false);
  ASSERT_EQ(answers.size(), 1u);
  ASSERT_TRUE(answers[0].value("ok", false)) << answers[0].dump();
  gpu::Calibration c = gpu::parse_calibration(answers[0]["calibration"].dump(), "answer");
  EXPECT_GT(c.launch_overhead_us, 0);
  EXPECT_GT(c.gemm_fp32_tflops, 0);
  EXPECT_EQ(c.gemm_fp16_tflops, 0);
  EXPECT_NE(c.gemm_note.find("fp16 GEMM"), std::string::npos) << c.gemm_note;
  EXPECT_NE(c.gemm_note.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << c.gemm_note;
  EXPECT_EQ(code, 3);
}

// ---- CUPTI: versions, dropped records, end to end without tracing ----

TEST_F(FakeFixture, Cupti13_0IsReadByABuildAgainstALaterUpdate) {
  fake.cupti_version = 130000;  // 13.0 GA; these headers say 130001
  std::string why;
  EXPECT_TRUE(gpu::CuptiKernelTracer::open(activity, &why)) << why;
  fake.cupti_version = 140000;  // another major lays out its records otherwise
  EXPECT_FALSE(gpu::CuptiKernelTracer::open(activity, &why));
  EXPECT_NE(why.find("140000"), std::string::npos) << why;
  fake.cupti_version = 26;  // CUDA 12's numbering
  EXPECT_FALSE(gpu::CuptiKernelTracer::open(activity, &why));
}

TEST_F(FakeFixture, DroppedActivityRecordsAreCountedAndReported) {
  auto backend = backend_with_cupti();
  backend->load(two_kernels(dir));
  fake.cupti_drop = 1;
  runner::ProfileData p = backend->profile(3, 1, false, false, no_events);
  EXPECT_EQ(p.dropped_records, 1u);
  EXPECT_NE(p.timer_note.find("dropped 1"), std::string::npos) << p.timer_note;
  // The kernels are timed all the same (by CUDA events), never from incomplete records.
  EXPECT_EQ(p.timer, "cuda-events");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].duration_us.count, 3);
  EXPECT_EQ(runner::profile_from_json(runner::profile_json(p)).dropped_records, 1u);
}

TEST_F(FakeFixture, EndToEndIsTimedWithoutTracing) {
  // Tracing adds 5 us to each kernel on the fake's clock; the two kernels take 1 us each.
  fake.tracing_overhead_us = 5;
  auto backend = backend_with_cupti();
  backend->load(two_kernels(dir));
  runner::ProfileData p = backend->profile(3, 1, false, false, no_events);
  EXPECT_EQ(p.timer, "cupti") << p.timer_note;
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_NEAR(p.kernels[0].duration_us.median, 1.0, 1e-6);
  EXPECT_EQ(p.end_to_end_us.count, 3);
  EXPECT_NEAR(p.end_to_end_us.median, 2.0, 1e-6);
  EXPECT_FALSE(fake.tracing);
}

// ---- Faults: sticky errors kill the runner ----

TEST_F(FakeFixture, AFaultInARunNamesTheKernel) {
  fake.faults["flagged"] = CUDA_ERROR_ASSERT;
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  try {
    backend->run(no_events);
    ADD_FAILURE() << "ran";
  } catch (const runner::RunnerError& e) {
    EXPECT_EQ(e.code(), "kernel_fault");
    EXPECT_EQ(e.kernel(), "flagged");
  }
  EXPECT_TRUE(backend->dead());
}

TEST_F(FakeFixture, ARefusedLaunchLeavesTheRunnerAlive) {
  fake.launch_errors["plain"] = CUDA_ERROR_INVALID_VALUE;
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  try {
    backend->run(no_events);
    ADD_FAILURE() << "ran";
  } catch (const runner::RunnerError& e) {
    EXPECT_EQ(e.code(), "launch_failed");
    EXPECT_EQ(e.kernel(), "plain");
  }
  EXPECT_FALSE(backend->dead());
  fake.launch_errors.clear();
  backend->run(no_events);
  EXPECT_EQ(fake.plain_launches, 1);
}

// ---- A check that throws half-way leaves nothing behind ----

TEST_F(FakeFixture, AThrowingCheckAnywhereInAProfileLeavesNothingBehind) {
  // Each entry point the profile calls is made to refuse its first, second, ... call in turn, so
  // that a check throws at every point of the kernel timing, the end-to-end runs and the graph's
  // capture and replays. Whether the profile then fails or notes it (the graph part), no event,
  // graph or executable graph is left, no capture stays open, the bundle's modules and tensors
  // are what load made, and the runner still runs.
  auto backend = runner::make_cuda_backend(api);
  backend->load(two_kernels(dir));
  const size_t modules = fake.live_modules(), allocations = fake.live_allocations();
  ASSERT_GT(modules, 0u);
  for (const char* entry : {"cuEventCreate", "cuEventRecord", "cuMemsetD8Async", "cuGraphLaunch"}) {
    int failed = 0, noted = 0;
    for (int n = 0;; ++n) {
      SCOPED_TRACE(std::string(entry) + " refused after " + std::to_string(n) + " calls");
      fake.fail_after = {{entry, n}};
      bool threw = false;
      runner::ProfileData p;
      try {
        p = backend->profile(2, 1, true, false, no_events);
      } catch (const runner::RunnerError& e) {
        threw = true;
        EXPECT_EQ(e.code(), "launch_failed") << e.what();
      }
      const bool reached = fake.fail_after.empty();
      EXPECT_EQ(fake.live_events(), 0u);
      EXPECT_EQ(fake.live_graphs(), 0u);
      EXPECT_EQ(fake.live_execs(), 0u);
      EXPECT_FALSE(fake.capturing);
      EXPECT_EQ(fake.live_modules(), modules);
      EXPECT_EQ(fake.live_allocations(), allocations);
      EXPECT_FALSE(backend->dead());
      if (!reached) break;  // the profile makes fewer calls than n: every point was tried
      failed += threw;
      noted += !threw && !p.graph_note.empty();
      ASSERT_LT(n, 1000);
    }
    fake.fail_after.clear();
    // cuGraphLaunch is called only by the optional graph part: its refusals are notes.
    if (std::string(entry) != "cuGraphLaunch") {
      EXPECT_GT(failed, 0) << entry;
    }
    EXPECT_GT(noted, 0) << entry;
  }
  backend->run(no_events);
  EXPECT_EQ(fake.epochs.back(), 1);
}

TEST_F(FakeFixture, AThrowingCheckInACalibrationLeavesNothingBehind) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  auto backend = runner::make_cuda_backend(api);
  // The calibration module is made once and kept; events and scratch memory go with the throw.
  // Refusals among the launch-overhead timing's records throw; one in the graph's replays is a
  // gap the calibration goes on past.
  int threw = 0;
  for (int n : {0, 3, 11, 12, 13}) {
    SCOPED_TRACE("cuEventRecord refused after " + std::to_string(n) + " calls");
    fake.fail_after = {{"cuEventRecord", n}};
    try {
      backend->calibrate(no_events);
    } catch (const runner::RunnerError& e) {
      ++threw;
      EXPECT_EQ(e.code(), "launch_failed") << e.what();
    }
    EXPECT_TRUE(fake.fail_after.empty());
    EXPECT_EQ(fake.live_events(), 0u);
    EXPECT_EQ(fake.live_graphs(), 0u);
    EXPECT_EQ(fake.live_execs(), 0u);
    EXPECT_FALSE(fake.capturing);
    EXPECT_EQ(fake.live_modules(), 1u);
    EXPECT_EQ(fake.live_allocations(), 0u);
    EXPECT_FALSE(backend->dead());
  }
  EXPECT_GE(threw, 3);
}

TEST_F(FakeFixture, AContextThatCannotBeSetUpIsNotKept) {
  // The stream cannot be made: the primary context is released again, and the next call tries
  // the whole setup anew.
  fake.fail_after = {{"cuStreamCreate", 0}};
  auto backend = runner::make_cuda_backend(api);
  EXPECT_THROW(backend->load(two_kernels(dir)), runner::RunnerError);
  EXPECT_EQ(fake.live_contexts(), 0);
  EXPECT_EQ(fake.live_streams(), 0u);
  backend->load(two_kernels(dir));
  EXPECT_EQ(fake.live_contexts(), 1);
  EXPECT_EQ(fake.live_streams(), 1u);
  backend->run(no_events);
  backend.reset();
  EXPECT_EQ(fake.live_contexts(), 0);
  EXPECT_EQ(fake.live_streams(), 0u);
}

class StickyErrors : public FakeFixture, public ::testing::WithParamInterface<CUresult> {};

TEST_P(StickyErrors, KillTheRunner) {
  // The fault shows at the host's next call after the kernel (the device runs ahead of it):
  // here the second warm-up run's first call.
  fake.faults["flagged"] = GetParam();
  auto backend = runner::make_cuda_backend(api);
  auto [answers, code] =
      serve_bundle(*backend, {{{"op", "profile"}, {"runs", 2}, {"warmup", 2}}, {{"op", "run"}}});
  ASSERT_EQ(answers.size(), 2u) << answers.back().dump();  // the runner exited before the run
  EXPECT_EQ(answers[1].value("code", ""), "kernel_fault") << answers[1].dump();
  EXPECT_EQ(code, 3);
  EXPECT_TRUE(backend->dead());
}

INSTANTIATE_TEST_SUITE_P(Fake, StickyErrors,
                         ::testing::Values(CUDA_ERROR_ASSERT, CUDA_ERROR_INVALID_ADDRESS_SPACE,
                                           CUDA_ERROR_INVALID_PC, CUDA_ERROR_ILLEGAL_INSTRUCTION,
                                           CUDA_ERROR_MISALIGNED_ADDRESS,
                                           CUDA_ERROR_HARDWARE_STACK_ERROR,
                                           CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_ADDRESS,
                                           // Any error after which the context cannot synchronize.
                                           CUDA_ERROR_UNKNOWN));

}  // namespace
}  // namespace souffle
