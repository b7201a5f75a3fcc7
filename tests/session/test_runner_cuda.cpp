// The CUDA backend of souffle-runner on a fake driver (no GPU here): what it asks the driver to
// do with a kernel that has per-tile flags. The fake's kernel checks the epoch scheme at every
// launch — its counters hold exactly (epoch - 1) releases before it adds this launch's — for
// plain runs, warm-up and timed runs, and a CUDA graph replayed (captured memsets and launches
// replayed with the arguments they were captured with, as the driver does).
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
#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/gpu/nvrtc.h"
#include "core/session/bundle_manifest.h"
#include "core/session/chrome_trace.h"
#include "core/session/gemm_bench.h"
#include "core/session/profile.h"
#include "core/session/runner.h"
#include "core/session/tune_measure.h"
#include "core/support/error.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;

constexpr int kCounters = 4;

/// The fake driver's state (its entry points are plain functions, so it is global).
struct FakeDriver {
  bool capturing = false;
  std::vector<std::function<void()>> captured;  ///< of the capture under way
  std::vector<std::vector<std::function<void()>>> graphs;
  std::vector<long long> epochs;        ///< seen by the flag kernel, per launch
  std::vector<std::string> violations;  ///< launches that broke the epoch scheme
  int plain_launches = 0;
  std::map<CUfunction, std::string> functions;
  std::vector<std::string> names;
  std::string device_name = "Fake H200";
  std::map<CUdevice_attribute, int> attributes;  ///< what cuDeviceGetAttribute reports instead
  /// The GEMM kernels of the calibration: whether they compute C = K * A * B as the device
  /// would (every A and B element alike), and their launch configurations by name.
  bool gemm_right = true;
  struct Launch {
    unsigned grid = 0, block = 0, shared = 0;
    int count = 0;
  };
  std::map<std::string, Launch> gemm_launches;
  /// A virtual GPU clock: each launch, when it runs, takes durations_us[its name] (1 us unless
  /// given); an event reads the clock when it is recorded.
  double clock_us = 0;
  std::map<std::string, double> durations_us;
  std::vector<double> events;  ///< the clock at each event's last record, by handle - 1
};
FakeDriver* g_fake = nullptr;

/// The flag kernel: params = {in, out, flags, &epoch}. Before this launch's releases, each
/// counter must hold exactly one release per earlier launch since the counters were zeroed.
void flag_kernel(long long epoch, CUdeviceptr flags) {
  auto* c = reinterpret_cast<int32_t*>(flags);
  g_fake->epochs.push_back(epoch);
  for (int i = 0; i < kCounters; ++i) {
    if (c[i] != epoch - 1)
      g_fake->violations.push_back("launch with epoch " + std::to_string(epoch) + ": counter " +
                                   std::to_string(i) + " is " + std::to_string(c[i]));
    ++c[i];
  }
}

CUresult launch(CUfunction f, void** params, bool cooperative, unsigned grid = 0,
                unsigned block = 0, unsigned shared = 0) {
  const std::string& name = g_fake->functions.at(f);
  std::function<void()> run;
  if (name.rfind("souffle_gemm_", 0) == 0) {
    FakeDriver::Launch& l = g_fake->gemm_launches[name];
    l = {grid, block, shared, l.count + 1};
    const float* a = *static_cast<float**>(params[0]);
    const float* b = *static_cast<float**>(params[1]);
    float* c = *static_cast<float**>(params[2]);
    const int64_t n = kCalibrationGemmSize;
    const float value = g_fake->gemm_right ? static_cast<float>(n) * a[0] * b[0] : 1.0f;
    run = [=] { std::fill(c, c + n * n, value); };
  } else if (name == "flagged") {
    if (!cooperative) g_fake->violations.push_back("flagged launched without cooperation");
    // A launch (captured or not) copies its arguments when it is made.
    CUdeviceptr flags = *static_cast<CUdeviceptr*>(params[2]);
    long long epoch = *static_cast<long long*>(params[3]);
    run = [=] { flag_kernel(epoch, flags); };
  } else {
    run = [] { ++g_fake->plain_launches; };
  }
  auto it = g_fake->durations_us.find(name);
  const double us = it == g_fake->durations_us.end() ? 1.0 : it->second;
  auto timed = [run, us] {
    run();
    g_fake->clock_us += us;
  };
  if (g_fake->capturing)
    g_fake->captured.push_back(timed);
  else
    timed();
  return CUDA_SUCCESS;
}

gpu::CudaApi fake_api() {
  gpu::CudaApi a;
  a.library = "fake";
  a.cuInit = [](unsigned) { return CUDA_SUCCESS; };
  a.cuDriverGetVersion = [](int* v) {
    *v = 13000;
    return CUDA_SUCCESS;
  };
  a.cuDeviceGetCount = [](int* n) {
    *n = 1;
    return CUDA_SUCCESS;
  };
  a.cuDeviceGet = [](CUdevice* d, int) {
    *d = 0;
    return CUDA_SUCCESS;
  };
  a.cuDeviceGetName = [](char* name, int len, CUdevice) {
    std::strncpy(name, g_fake->device_name.c_str(), static_cast<size_t>(len));
    return CUDA_SUCCESS;
  };
  a.cuDeviceGetAttribute = [](int* v, CUdevice_attribute attr, CUdevice) {
    if (auto it = g_fake->attributes.find(attr); it != g_fake->attributes.end()) {
      *v = it->second;
      return CUDA_SUCCESS;
    }
    switch (attr) {
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        break;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = 132;
        break;
      case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
        *v = 1;
        break;
      default:
        *v = 0;
    }
    return CUDA_SUCCESS;
  };
  a.cuDeviceTotalMem = [](size_t* b, CUdevice) {
    *b = size_t{80} << 30;
    return CUDA_SUCCESS;
  };
  a.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice) {
    *c = reinterpret_cast<CUcontext>(0x1);
    return CUDA_SUCCESS;
  };
  a.cuDevicePrimaryCtxRelease = [](CUdevice) { return CUDA_SUCCESS; };
  a.cuCtxSetCurrent = [](CUcontext) { return CUDA_SUCCESS; };
  a.cuCtxSynchronize = []() { return CUDA_SUCCESS; };
  a.cuGetErrorName = [](CUresult, const char** s) {
    *s = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
  };
  a.cuGetErrorString = [](CUresult, const char** s) {
    *s = "fake";
    return CUDA_SUCCESS;
  };
  a.cuModuleLoadDataEx = [](CUmodule* m, const void*, unsigned, CUjit_option*, void**) {
    *m = reinterpret_cast<CUmodule>(0x2);
    return CUDA_SUCCESS;
  };
  a.cuModuleUnload = [](CUmodule) { return CUDA_SUCCESS; };
  a.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) {
    g_fake->names.emplace_back(name);
    *f = reinterpret_cast<CUfunction>(static_cast<uintptr_t>(0x100 + g_fake->names.size()));
    g_fake->functions[*f] = name;
    return CUDA_SUCCESS;
  };
  a.cuFuncGetAttribute = [](int* v, CUfunction_attribute, CUfunction) {
    *v = 32;
    return CUDA_SUCCESS;
  };
  a.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; };
  a.cuOccupancyMaxActiveBlocksPerMultiprocessor = [](int* n, CUfunction, int, size_t) {
    *n = 4;
    return CUDA_SUCCESS;
  };
  a.cuMemAlloc = [](CUdeviceptr* p, size_t bytes) {
    // Garbage, as device memory is: only what the runner zeroes is zero.
    void* m = std::malloc(bytes);
    std::memset(m, 0x5a, bytes);
    *p = reinterpret_cast<CUdeviceptr>(m);
    return CUDA_SUCCESS;
  };
  a.cuMemFree = [](CUdeviceptr p) {
    std::free(reinterpret_cast<void*>(p));
    return CUDA_SUCCESS;
  };
  a.cuMemcpyHtoD = [](CUdeviceptr d, const void* s, size_t n) {
    std::memcpy(reinterpret_cast<void*>(d), s, n);
    return CUDA_SUCCESS;
  };
  a.cuMemcpyDtoH = [](void* d, CUdeviceptr s, size_t n) {
    std::memcpy(d, reinterpret_cast<const void*>(s), n);
    return CUDA_SUCCESS;
  };
  a.cuMemcpyDtoDAsync = [](CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
    std::memcpy(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
    return CUDA_SUCCESS;
  };
  a.cuMemsetD8Async = [](CUdeviceptr d, unsigned char v, size_t n, CUstream) {
    auto run = [=] { std::memset(reinterpret_cast<void*>(d), v, n); };
    if (g_fake->capturing)
      g_fake->captured.push_back(run);
    else
      run();
    return CUDA_SUCCESS;
  };
  a.cuStreamCreate = [](CUstream* s, unsigned) {
    *s = reinterpret_cast<CUstream>(0x3);
    return CUDA_SUCCESS;
  };
  a.cuStreamDestroy = [](CUstream) { return CUDA_SUCCESS; };
  a.cuStreamSynchronize = [](CUstream) { return CUDA_SUCCESS; };
  a.cuEventCreate = [](CUevent* e, unsigned) {
    g_fake->events.push_back(0);
    *e = reinterpret_cast<CUevent>(static_cast<uintptr_t>(g_fake->events.size()));
    return CUDA_SUCCESS;
  };
  a.cuEventDestroy = [](CUevent) { return CUDA_SUCCESS; };
  a.cuEventRecord = [](CUevent e, CUstream) {
    g_fake->events.at(reinterpret_cast<uintptr_t>(e) - 1) = g_fake->clock_us;
    return CUDA_SUCCESS;
  };
  a.cuEventSynchronize = [](CUevent) { return CUDA_SUCCESS; };
  a.cuEventElapsedTime = [](float* ms, CUevent a, CUevent b) {
    *ms = static_cast<float>((g_fake->events.at(reinterpret_cast<uintptr_t>(b) - 1) -
                              g_fake->events.at(reinterpret_cast<uintptr_t>(a) - 1)) /
                             1e3);
    return CUDA_SUCCESS;
  };
  a.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned,
                        unsigned, unsigned shared, CUstream, void** params,
                        void**) { return launch(f, params, false, gx, bx, shared); };
  a.cuLaunchCooperativeKernel = [](CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, CUstream,
                                   void** params) { return launch(f, params, true); };
  a.cuStreamBeginCapture = [](CUstream, CUstreamCaptureMode) {
    g_fake->capturing = true;
    g_fake->captured.clear();
    return CUDA_SUCCESS;
  };
  a.cuStreamEndCapture = [](CUstream, CUgraph* g) {
    g_fake->capturing = false;
    g_fake->graphs.push_back(g_fake->captured);
    *g = reinterpret_cast<CUgraph>(static_cast<uintptr_t>(g_fake->graphs.size()));
    return CUDA_SUCCESS;
  };
  a.cuGraphInstantiate = [](CUgraphExec* e, CUgraph g, unsigned long long) {
    *e = reinterpret_cast<CUgraphExec>(g);
    return CUDA_SUCCESS;
  };
  a.cuGraphLaunch = [](CUgraphExec e, CUstream) {
    for (const auto& op : g_fake->graphs.at(reinterpret_cast<uintptr_t>(e) - 1)) op();
    return CUDA_SUCCESS;
  };
  a.cuGraphExecDestroy = [](CUgraphExec) { return CUDA_SUCCESS; };
  a.cuGraphDestroy = [](CUgraph) { return CUDA_SUCCESS; };
  return a;
}

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
  gpu::CudaApi api = fake_api();
  std::string dir = (fs::temp_directory_path() / "runner_cuda_fake").string();
  void SetUp() override {
    g_fake = &fake;
    // No CUPTI in this process: kernel times come from (fake) events.
    std::string why;
    gpu::CuptiKernelTracer::instance(&why, "/nonexistent/libcupti.so");
  }
  void TearDown() override { g_fake = nullptr; }
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
  // Two warm-up runs, three timed, the graph replayed twice untimed and three times timed.
  runner::ProfileData p = backend->profile(3, 2, true, false, quiet);
  EXPECT_TRUE(p.counters.empty());
  EXPECT_TRUE(p.counters_note.empty());  // not asked for
  EXPECT_TRUE(p.graph_note.empty()) << p.graph_note;
  backend->run(quiet);  // after the graph: counters and epochs start over
  EXPECT_TRUE(fake.violations.empty()) << fake.violations.front();
  std::vector<long long> want = {1, 2, 3, 4, 5, 6, 7, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(fake.epochs, want);
  EXPECT_EQ(fake.plain_launches, 13);
  // The graph: the run's clearing, then the counters' memset, then the two kernels.
  ASSERT_EQ(fake.graphs.size(), 1u);
  EXPECT_EQ(fake.graphs[0].size(), 1u + 1u + 2u);  // y cleared, counters zeroed, launches
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

}  // namespace
}  // namespace souffle
