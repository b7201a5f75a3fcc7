// Kernel timelines (docs/timeline.md): the record statement in the loop IR, the emulator's
// records of sample models (every stage covered, waits adding up to the emulator's own barrier
// accounting, the analysis naming the slowest stage and longest wait), the runner's profile with
// timeline: true on the emulator and on the strict fake driver (allocation, readback, decoding,
// the smid and globaltimer fields), NVRTC of instrumented CUDA C, and bad files and bundles.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "core/emulate/emulate.h"
#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/loop/mutator.h"
#include "core/loop/timeline.h"
#include "core/loop/verify.h"
#include "core/session/bundle.h"
#include "core/session/pipeline.h"
#include "core/session/runner.h"
#include "core/session/test_data.h"
#include "core/session/timeline.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"
#include "tests/sample_model.h"
#include "tests/session/fake_cuda.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

plan::FusionPlan souffle_plan(const std::string& model) {
  PipelineOptions pipe;
  pipe.strategy = plan::Strategy::Souffle;
  pipe.gpu = gpu::gpu_spec("a100");
  return plan::plan(test::sample_model(model).program, plan_options(pipe));
}

CompileReport instrumented(const plan::FusionPlan& p, std::vector<std::string> archs = {}) {
  CompileOptions co;
  co.archs = std::move(archs);
  co.timeline.enabled = true;
  return compile_plan(p, co);
}

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("timeline_test_" + name)).string();
}

std::string bytes_of(const TensorData& d) {
  return std::string(reinterpret_cast<const char*>(d.raw()), static_cast<size_t>(d.byte_size()));
}

TEST(TimelineIR, RecordsSitAroundStagesAndWaitsAndArePrinted) {
  plan::FusionPlan p = souffle_plan("mmoe");
  CompileReport rep = instrumented(p);
  ASSERT_TRUE(rep.ok());
  const loop::Kernel& k = rep.kernels.at(0).kernel;
  loop::verify(k);
  std::optional<loop::TimelineLayout> tl = loop::timeline_layout(k);
  ASSERT_TRUE(tl);
  EXPECT_EQ(tl->stride, 1);
  EXPECT_EQ(tl->rows, k.launch.grid_x);
  int stages = 0, waits = 0, records = 0;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    stages += s.as<loop::Stage>() != nullptr;
    waits += s.as<loop::BlockBarrier>() || s.as<loop::GridBarrier>() || s.as<loop::FlagWait>();
    records += s.as<loop::TimelineRecord>() != nullptr;
  });
  // Two records per stage, two per barrier outside the stages; those inside stay work.
  EXPECT_GE(records, 2 * stages);
  EXPECT_LE(records, 2 * (stages + waits));
  EXPECT_EQ(tl->slot_count, records);
  const std::string text = loop::print(k);
  EXPECT_NE(text.find("timeline stage_begin stage 0"), std::string::npos);
  EXPECT_NE(text.find("timeline wait_begin grid_barrier"), std::string::npos);
  EXPECT_NE(rep.kernels[0].cuda.find("%%globaltimer"), std::string::npos);
  EXPECT_NE(rep.kernels[0].cuda.find("%%smid"), std::string::npos);
  EXPECT_THROW(loop::instrument_timeline(rep.kernels[0].kernel), InternalError);

  // A record inside a stage would be hidden in the stage's function: refused.
  loop::Kernel bad = k;
  loop::Tensor buf =
      loop::make_buffer(k.name + "_timeline", {tl->rows, tl->slot_count, 3}, DType::Int64);
  loop::Stmt rec = loop::timeline_record(buf, loop::TimelineEvent::StageBegin,
                                         loop::TimelineWait::None, 0, 0, 1);
  bad.body = loop::allocate(buf, loop::MemScope::Global, loop::stage(0, rec));
  EXPECT_THROW(loop::verify(bad), InternalError);
  // A wait names what it waits for, a stage record nothing.
  EXPECT_THROW(
      loop::timeline_record(buf, loop::TimelineEvent::WaitBegin, loop::TimelineWait::None, 0, 0, 1),
      InternalError);
}

TEST(TimelineIR, AKernelPastTheLimitRecordsASampleOfBlocks) {
  plan::FusionPlan p = souffle_plan("bert");
  CompileReport rep = compile_plan(p, [] {
    CompileOptions co;
    co.archs.clear();
    return co;
  }());
  ASSERT_TRUE(rep.ok());
  loop::Kernel k = rep.kernels.at(0).kernel;
  loop::TimelineOptions o;
  o.enabled = true;
  o.max_bytes = 24 * 1024;  // far less than every block's records
  loop::TimelineLayout l = loop::instrument_timeline(k, o);
  EXPECT_GT(l.stride, 1);
  EXPECT_LE(l.bytes(), o.max_bytes);
  EXPECT_GE(l.rows * l.stride, l.grid);
  loop::verify(k);
  KernelTimeline t;
  t.grid = l.grid;
  t.rows = l.rows;
  t.stride = l.stride;
  EXPECT_NE(t.sample_note().find("of " + std::to_string(l.grid)), std::string::npos);
  for (auto [stride, ordinal] : std::vector<std::pair<int64_t, std::string>>{
           {2, "2nd"}, {3, "3rd"}, {4, "4th"}, {11, "11th"}, {12, "12th"}, {21, "21st"}}) {
    t.stride = stride;
    EXPECT_EQ(t.sample_note().rfind("every " + ordinal + " block (", 0), 0u) << t.sample_note();
  }
}

/// Every sample model: the emulator's records decode, cover every stage of every kernel, and
/// their waits add up to the emulator's own barrier time; the analysis names the slowest stage
/// and the longest wait. CTest runs MMoE, LSTM and BERT in test_timeline and the three larger
/// models in test_timeline_models.
class TimelineEmulator : public ::testing::TestWithParam<std::string> {};

TEST_P(TimelineEmulator, WaitsAddUpAndEveryStageIsCovered) {
  {
    const std::string model = GetParam();
    SCOPED_TRACE(model);
    plan::FusionPlan p = souffle_plan(model);
    CompileReport rep = instrumented(p);
    ASSERT_TRUE(rep.ok());
    emulate::Buffers bufs;
    for (const te::Tensor& in : p.program.inputs)
      bufs[in->name] = std::make_shared<TensorData>(in->dtype, in->shape);
    for (const CompiledKernel& ck : rep.kernels) {
      emulate::Timeline et;
      emulate::EmulateOptions eo;
      eo.timeline = &et;
      emulate::run_kernel(ck.kernel, bufs, eo);
      EXPECT_EQ(et.kernels, 1);
      std::optional<loop::TimelineLayout> tl = loop::timeline_layout(ck.kernel);
      ASSERT_TRUE(tl);
      ASSERT_TRUE(bufs.count(tl->buffer));
      const std::string file = temp(model + "_" + ck.name + ".timeline");
      write_timeline_file(file, *tl, "emulator", 1000, bytes_of(*bufs[tl->buffer]));
      KernelTimeline t = read_timeline_file(file);
      attach_stage_info(t, ck, p);
      EXPECT_TRUE(t.emulated);
      EXPECT_NE(t.time_base.find("not a GPU time"), std::string::npos);
      std::set<int> seen;
      for (const TimelineSpan& sp : t.spans)
        if (sp.wait == loop::TimelineWait::None) seen.insert(sp.stage);
      EXPECT_EQ(seen.size(), ck.kernel.stages.size()) << ck.name;
      TimelineAnalysis a = analyse_timeline(t);
      EXPECT_NEAR(a.wait_us * 1000, static_cast<double>(et.barrier_wait_cycles),
                  1e-6 * (1 + a.wait_us * 1000));
      ASSERT_GE(a.slowest_stage, 0);
      const StageTiming& slow = a.stages[static_cast<size_t>(a.slowest_stage)];
      for (const StageTiming& s : a.stages) EXPECT_LE(s.max_us, slow.max_us);
      EXPECT_GE(slow.est_us, 0);  // estimated beside measured
      const std::string summary = timeline_summary(a);
      EXPECT_NE(summary.find("slowest stage: " + std::to_string(slow.stage)), std::string::npos);
      if (!a.waits.empty()) {
        ASSERT_GE(a.longest_wait, 0);
        EXPECT_NE(summary.find("longest wait"), std::string::npos);
        EXPECT_GE(a.waits[static_cast<size_t>(a.longest_wait)].straggler, 0);
      }
      // Waves of packed stages: balance in (0, 1], overlap at least one stage's worth.
      for (const WaveTiming& w : a.waves) {
        EXPECT_GE(w.stages, 2);
        EXPECT_GT(w.balance(), 0);
        EXPECT_LE(w.balance(), 1 + 1e-9);
        EXPECT_LE(w.mean_us, w.slowest_us + 1e-9);
      }
      if (model == std::string("mmoe")) {
        EXPECT_FALSE(a.waves.empty());  // its expert and gate GEMMs are packed
        EXPECT_NE(summary.find("least balanced wave"), std::string::npos);
      }
      // The trace: one slice per span, every stage named.
      json trace = json::parse(timeline_trace_json({t}));
      size_t slices = 0;
      for (const json& e : trace["traceEvents"]) slices += e["ph"] == "X";
      EXPECT_EQ(slices, t.spans.size());
      const std::string csv = timeline_csv({a});
      EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(a.stages.size() + 1));
      fs::remove(file);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SampleModels, TimelineEmulator,
                         ::testing::Values("mmoe", "lstm", "bert", "efficientnet", "resnext",
                                           "swin"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(TimelineVerify, KernelLevelVerificationAnalysesEachKernel) {
  const LoadedModel& m = test::sample_model("mmoe");
  std::vector<TestDataSet> sets =
      read_test_data(fs::path(test::sample_model_path("mmoe")).parent_path().string());
  PipelineOptions pipe;
  pipe.gpu = gpu::gpu_spec("a100");
  VerifyOptions vo;
  vo.timeline = true;
  KernelVerifyReport rep = verify_kernels(m, sets, pipe, vo);
  EXPECT_TRUE(rep.ok()) << rep.error;
  ASSERT_EQ(rep.timelines.size(), rep.kernels);
  for (const KernelTimeline& t : rep.timelines) {
    EXPECT_TRUE(t.emulated);
    EXPECT_FALSE(t.spans.empty());
    EXPECT_GE(analyse_timeline(t).slowest_stage, 0);
  }
}

std::vector<json> serve(runner::Backend& backend, const std::vector<json>& requests) {
  std::stringstream in, out;
  for (const json& r : requests) in << r.dump() << "\n";
  runner::serve(in, out, backend);
  std::vector<json> answers;
  std::string line;
  while (std::getline(out, line))
    if (!line.empty() && !json::parse(line).contains("event")) answers.push_back(json::parse(line));
  return answers;
}

TEST(TimelineRunner, TheEmulatorAnswersAFilePerKernelAndRefusesAPlainBundle) {
  plan::FusionPlan p = souffle_plan("mmoe");
  for (bool timeline : {true, false}) {
    const std::string dir = temp(timeline ? "bundle_on" : "bundle_off");
    fs::remove_all(dir);
    CompileOptions co;
    co.archs.clear();
    co.timeline.enabled = timeline;
    CompileReport rep = compile_plan(p, co);
    ASSERT_TRUE(write_model_bundle(dir, test::sample_model_path("mmoe"), "", p, rep, co).harness);
    const BundleManifest m = load_manifest(dir);
    EXPECT_EQ(m.source.timeline, timeline);
    auto backend = runner::make_emulator_backend();
    std::vector<json> a = serve(*backend, {{{"op", "load"}, {"bundle", dir}},
                                           {{"op", "profile"}, {"runs", 1}, {"timeline", true}}});
    ASSERT_EQ(a.size(), 2u);
    if (!timeline) {
      EXPECT_FALSE(a[1].value("ok", true));
      const std::string msg = a[1].dump();
      EXPECT_NE(msg.find(dir + "/bundle.json"), std::string::npos) << msg;
      EXPECT_NE(msg.find("without a timeline"), std::string::npos) << msg;
      continue;
    }
    ASSERT_TRUE(a[1].value("ok", false)) << a[1].dump();
    std::vector<TimelineFileRef> refs = timeline_refs_from_json(a[1]["timeline"]);
    ASSERT_EQ(refs.size(), m.kernels.size());
    EXPECT_EQ(refs[0].timer, "emulator");
    KernelTimeline t = read_timeline_file(refs[0].file);
    EXPECT_FALSE(t.spans.empty());
    EXPECT_EQ(t.grid, m.kernels[0].grid);
  }
}

TEST(TimelineFiles, BadFilesAreRefusedNamingTheFile) {
  loop::TimelineLayout l;
  l.grid = 2;
  l.rows = 2;
  l.slot_count = 2;
  std::vector<int64_t> words(12, 0);
  auto put = [&](int64_t row, int64_t slot, int64_t t, int64_t tag) {
    int64_t* r = &words[static_cast<size_t>((row * 2 + slot) * 3)];
    r[0] = r[1] = t;
    r[2] = (row << 32) | tag;
  };
  const int64_t begin =
      loop::timeline_tag(loop::TimelineEvent::StageBegin, loop::TimelineWait::None, 0);
  const int64_t end =
      loop::timeline_tag(loop::TimelineEvent::StageEnd, loop::TimelineWait::None, 0);
  put(0, 0, 10, begin);
  put(0, 1, 30, end);
  put(1, 0, 10, begin);
  put(1, 1, 20, end);
  auto raw = [&] { return std::string(reinterpret_cast<const char*>(words.data()), 96); };
  const std::string good = temp("good.timeline");
  write_timeline_file(good, l, "globaltimer", 1410, raw());
  KernelTimeline t = read_timeline_file(good);
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_DOUBLE_EQ(t.spans[0].us(), 0.020);
  EXPECT_EQ(t.spans[1].sm, 1);

  auto refused = [](const std::string& file, const std::string& part) {
    try {
      read_timeline_file(file);
      ADD_FAILURE() << "accepted " << file;
    } catch (const UserError& e) {
      EXPECT_EQ(e.file(), file);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  // Truncated: the header promises more records than the file holds.
  const std::string cut = temp("cut.timeline");
  {
    std::ifstream f(good, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << all.substr(0, all.size() - 10);
  }
  refused(cut, "truncated");
  // A record kind nobody decodes.
  put(1, 1, 20, 0x7f);
  const std::string odd = temp("odd.timeline");
  write_timeline_file(odd, l, "globaltimer", 1410, raw());
  refused(odd, "record kind");
  const std::string other = temp("other.timeline");
  std::ofstream(other) << "{}";
  refused(other, "not a timeline file");
  refused(temp("missing.timeline"), "cannot read");
}

/// The CUDA backend on the strict fake driver: the timeline buffer allocated and zeroed as the
/// kernel's scratch, read back after the timed runs and decoded with its SMs and global times.
struct TimelineFake : ::testing::Test {
  fake::FakeDriver fake;
  gpu::CudaApi api = fake::fake_api();
  void SetUp() override {
    fake::g_fake = &fake;
    std::string why;
    gpu::CuptiKernelTracer::instance(&why, "/nonexistent/libcupti.so");
  }
  void TearDown() override {
    EXPECT_EQ(fake.live_allocations(), 0u);
    for (const std::string& v : fake.violations) ADD_FAILURE() << v;
    fake::g_fake = nullptr;
  }
};

TEST_F(TimelineFake, TheCudaBackendReadsBackAndDecodesTheRecords) {
  const std::string dir = temp("fake_bundle");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "k.sm_90.ptx") << "// fake\n";
  BundleManifest m;
  m.dir = dir;
  m.source.gpu = gpu::gpu_spec("h200");
  m.source.timeline = true;
  m.source.timeline_max_bytes = 1 << 20;
  ManifestTensor tt;
  tt.name = "timed.timed_timeline";
  tt.dtype = DType::Int64;
  tt.shape = {4, 6, 3};
  tt.bytes = 4 * 6 * 3 * 8;
  tt.kind = "scratch";
  m.tensors.push_back(tt);
  ManifestImage img;
  img.arch = "sm_90";
  img.ptx = "k.sm_90.ptx";
  ManifestKernel k;
  k.name = "timed";
  k.grid = 4;
  k.block = 128;
  k.cooperative = true;
  k.args = {0};
  k.images = {img};
  k.timeline_tensor = 0;
  k.timeline_rows = 4;
  k.timeline_slots = 6;
  k.timeline_stride = 1;
  m.kernels = {k};
  std::ofstream(fs::path(dir) / "bundle.json") << manifest_json(m);
  auto backend = runner::make_cuda_backend(api);
  std::vector<json> a =
      serve(*backend, {{{"op", "load"}, {"bundle", dir}},
                       {{"op", "profile"}, {"runs", 2}, {"warmup", 1}, {"timeline", true}}});
  ASSERT_EQ(a.size(), 2u);
  ASSERT_TRUE(a[1].value("ok", false)) << a[1].dump();
  std::vector<TimelineFileRef> refs = timeline_refs_from_json(a[1]["timeline"]);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].timer, "globaltimer");
  KernelTimeline t = read_timeline_file(refs[0].file);
  EXPECT_FALSE(t.emulated);
  EXPECT_EQ(t.time_base, "GPU global timer (ns)");
  ASSERT_EQ(t.spans.size(), 12u);  // 4 blocks x (stage 0, grid barrier, stage 1)
  std::set<int64_t> sms;
  for (const TimelineSpan& sp : t.spans) sms.insert(sp.sm);
  EXPECT_EQ(sms, (std::set<int64_t>{0, 1}));
  TimelineAnalysis an = analyse_timeline(t);
  ASSERT_EQ(an.stages.size(), 2u);
  EXPECT_NEAR(an.stages[0].max_us, 0.4, 1e-9);  // block 3: 400 ns
  EXPECT_EQ(an.stages[0].slowest_block, 3);
  EXPECT_NEAR(an.stages[0].median_us, 0.25, 1e-9);
  ASSERT_EQ(an.waits.size(), 1u);
  EXPECT_EQ(an.waits[0].kind, loop::TimelineWait::GridBarrier);
  EXPECT_EQ(an.waits[0].straggler, 3);  // it arrived last, waited 0
  EXPECT_NEAR(an.waits[0].total_us, 0.3 + 0.2 + 0.1, 1e-9);
  EXPECT_NEAR(an.span_us, 0.45, 1e-9);
  json trace = json::parse(timeline_trace_json({t}));
  std::set<std::string> tracks;
  for (const json& e : trace["traceEvents"])
    if (e["name"] == "thread_name") tracks.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(tracks, (std::set<std::string>{"SM 0", "SM 1"}));
  // The grid barrier as a line across the kernel where its last waiter left.
  int lines = 0;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "i") {
      ++lines;
      EXPECT_NEAR(e["ts"].get<double>(), 0.4, 1e-9);
      EXPECT_EQ(e["name"], "grid barrier before stage 1 released");
    }
  EXPECT_EQ(lines, 1);
}

/// Instrumented CUDA C compiles for sm_80 and sm_90 (the compile cache serves repeats); its
/// register count beside the uninstrumented kernel's.
TEST(TimelineNvrtc, InstrumentedKernelsCompileBesideThePlainOnes) {
  plan::FusionPlan p = souffle_plan("mmoe");
  CompileOptions plain;
  plain.archs = {"sm_80", "sm_90"};
  CompileReport a = compile_plan(p, plain);
  CompileReport b = instrumented(p, {"sm_80", "sm_90"});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok()) << b.kernels[0].error;
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i)
    for (size_t r = 0; r < 2; ++r) {
      const gpu::CompileResult &x = a.kernels[i].per_arch[r], &y = b.kernels[i].per_arch[r];
      ASSERT_TRUE(y.ok) << y.log;
      const gpu::KernelResources* rx = x.find_kernel(a.kernels[i].image_entry());
      const gpu::KernelResources* ry = y.find_kernel(b.kernels[i].image_entry());
      ASSERT_TRUE(rx && ry);
      EXPECT_GT(ry->registers, 0);
      std::cout << b.kernels[i].name << " " << y.arch << ": " << rx->registers
                << " registers plain, " << ry->registers << " with the timeline\n";
    }
}

}  // namespace
}  // namespace souffle
