// souffle-runner: the protocol answered in process (emulator backend), bundle manifests, the
// co-residency refusal, and the runner as a process that fails, hangs or dies mid-run.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/plan/plan.h"
#include "core/session/bundle.h"
#include "core/session/bundle_manifest.h"
#include "core/session/compare.h"
#include "core/session/compile.h"
#include "core/session/pipeline.h"
#include "core/session/profile.h"
#include "core/session/runner.h"
#include "core/session/runner_client.h"
#include "core/support/error.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kRunner = std::string(SOUFFLE_BINARY_DIR) + "/app/runner/souffle-runner";

/// MMoE's bundle for `strategy` (CUDA C only, no NVRTC: the emulator runs loop IR), its stages
/// ordered across blocks by `sync`.
std::string mmoe_bundle(const std::string& strategy,
                        schedule::SyncMode sync = schedule::SyncMode::Grid) {
  std::string dir = (fs::temp_directory_path() /
                     ("runner_test_" + strategy + "_" + schedule::sync_mode_name(sync)))
                        .string();
  fs::remove_all(dir);
  const LoadedModel& m = test::sample_model("mmoe");
  PipelineOptions pipe;
  pipe.strategy = plan::parse_strategy(strategy);
  pipe.gpu = gpu::gpu_spec("a100");
  plan::FusionPlan p = plan::plan(m.program, plan_options(pipe));
  CompileOptions co;
  co.archs.clear();
  co.sync = sync;
  CompileReport rep = compile_plan(p, co);
  BundleReport br = write_model_bundle(dir, test::sample_model_path("mmoe"), "", p, rep, co);
  EXPECT_TRUE(br.harness);
  return dir;
}

/// Serves `requests` (one per line) on a fresh emulator backend; the answers, one per request.
std::vector<json> serve(const std::vector<json>& requests, int* rc = nullptr) {
  std::stringstream in, out;
  for (const json& r : requests) in << r.dump() << "\n";
  auto backend = runner::make_emulator_backend();
  int code = runner::serve(in, out, *backend);
  if (rc) *rc = code;
  std::vector<json> answers;
  std::string line;
  while (std::getline(out, line))
    if (!line.empty()) {
      json j = json::parse(line);
      if (!j.contains("event")) answers.push_back(j);
    }
  return answers;
}

/// `bad` as a bundle.json is refused with a message holding `part`, naming the file.
void refuses(const json& bad, const std::string& part) {
  try {
    parse_manifest(bad.dump(), "b.json");
    ADD_FAILURE() << "accepted " << part;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "b.json");
  }
}

TEST(RunnerProtocol, HelloNamesProtocolAndBackend) {
  auto a = serve({{{"id", 1}, {"op", "hello"}, {"protocol", 1}}});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0]["ok"]);
  EXPECT_EQ(a[0]["id"], 1);
  EXPECT_EQ(a[0]["protocol"], runner::kProtocolVersion);
  EXPECT_EQ(a[0]["backend"], "emulator");
  EXPECT_TRUE(a[0]["devices"][0]["emulator"]);
}

TEST(RunnerProtocol, BadRequestsAreAnsweredNotFatal) {
  std::stringstream in, out;
  in << "not json\n"
     << R"({"id": 2, "op": "hello", "protocol": 99})"
     << "\n"
     << R"({"id": 3, "op": "frobnicate"})"
     << "\n"
     << R"({"id": 4, "op": "run"})"
     << "\n"
     << R"({"id": 5})"
     << "\n"
     << R"({"id": 6, "op": "load", "bundle": "/no/such/folder"})"
     << "\n"
     << R"({"id": 7, "op": "calibrate"})"
     << "\n"
     << R"({"id": 8, "op": "quit"})"
     << "\n"
     << R"({"id": 9, "op": "hello"})"
     << "\n";  // after quit: never read
  auto backend = runner::make_emulator_backend();
  EXPECT_EQ(runner::serve(in, out, *backend), 0);
  std::vector<json> a;
  std::string line;
  while (std::getline(out, line)) a.push_back(json::parse(line));
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a[0]["code"], "bad_request");
  EXPECT_TRUE(a[0]["id"].is_null());
  EXPECT_NE(a[0]["error"].get<std::string>().find("line 1 is not JSON"), std::string::npos);
  EXPECT_EQ(a[1]["code"], "bad_protocol");
  EXPECT_NE(a[2]["error"].get<std::string>().find("unknown op 'frobnicate'"), std::string::npos);
  EXPECT_NE(a[3]["error"].get<std::string>().find("no bundle is loaded"), std::string::npos);
  EXPECT_NE(a[4]["error"].get<std::string>().find("'op'"), std::string::npos);
  EXPECT_NE(a[5]["error"].get<std::string>().find("/no/such/folder/bundle.json"),
            std::string::npos);
  EXPECT_EQ(a[6]["code"], "unsupported");
  EXPECT_TRUE(a[7]["ok"]);
  for (const json& x : a) EXPECT_TRUE(x.contains("ok"));
}

TEST(RunnerProtocol, LoadRunVerifyProfileReadOnTheEmulator) {
  std::string dir = mmoe_bundle("rules");
  std::string out_file = dir + "/read_back.bin";
  BundleManifest m = load_manifest(dir);
  std::string output;
  for (const ManifestTensor& t : m.tensors)
    if (t.output_index == 0) output = t.name;
  ASSERT_FALSE(output.empty());
  auto a = serve({{{"id", 1}, {"op", "load"}, {"bundle", dir}},
                  {{"id", 2}, {"op", "run"}},
                  {{"id", 3}, {"op", "verify"}, {"rtol", 1e-4}, {"atol", 1e-5}},
                  {{"id", 4}, {"op", "profile"}, {"runs", 2}},
                  {{"id", 5}, {"op", "read"}, {"tensor", output}, {"file", out_file}},
                  {{"id", 6}, {"op", "read"}, {"tensor", "no such tensor"}, {"file", out_file}}});
  ASSERT_EQ(a.size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(a[i]["ok"]) << a[i].dump();
  EXPECT_EQ(a[0]["kernels"].size(), m.kernels.size());
  EXPECT_GT(a[0]["uploaded_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(a[2]["pass"]);
  EXPECT_EQ(a[2]["outputs"].size(), 2u);
  for (const json& o : a[2]["outputs"]) EXPECT_LT(o["rel_l2"].get<double>(), 1e-5);
  runner::ProfileData p = runner::profile_from_json(a[3]);
  EXPECT_EQ(p.timer, "emulator");
  EXPECT_EQ(p.runs, 2);
  ASSERT_EQ(p.kernels.size(), m.kernels.size());
  EXPECT_EQ(p.kernels[0].duration_us.count, 2);
  EXPECT_GT(p.kernels[0].duration_us.median, 0);
  EXPECT_EQ(p.graph_note, "no CUDA graphs on the emulator");
  EXPECT_TRUE(p.counters.empty());
  EXPECT_EQ(p.counters_note, "no hardware counters on the emulator");
  EXPECT_EQ(fs::file_size(out_file), static_cast<uintmax_t>(a[4]["bytes"].get<int64_t>()));
  EXPECT_FALSE(a[5]["ok"]);
}

TEST(RunnerProtocol, AWrongInputFailsVerification) {
  std::string dir = mmoe_bundle("unfused");
  BundleManifest m = load_manifest(dir);
  std::string input, file = dir + "/other_input.bin";
  for (const ManifestTensor& t : m.tensors)
    if (t.kind == "input") {
      input = t.name;
      std::ofstream(file, std::ios::binary) << std::string(static_cast<size_t>(t.bytes), '\x3f');
    }
  auto a = serve({{{"id", 1}, {"op", "load"}, {"bundle", dir}},
                  {{"id", 2}, {"op", "upload"}, {"tensor", input}, {"file", file}},
                  {{"id", 3}, {"op", "run"}},
                  {{"id", 4}, {"op", "verify"}}});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_TRUE(a[1]["ok"]) << a[1].dump();
  EXPECT_TRUE(a[3]["ok"]);
  EXPECT_FALSE(a[3]["pass"]);
  // Each output says how far off it is: elements outside the (default fp32) tolerance, named.
  for (const json& o : a[3]["outputs"]) {
    EXPECT_FALSE(o["ok"]) << o.dump();
    EXPECT_GT(o["mismatches"].get<int64_t>(), 0) << o.dump();
    EXPECT_EQ(o["rtol"], 1e-4) << o.dump();
    EXPECT_EQ(o["atol"], 1e-5) << o.dump();
    EXPECT_NE(o["detail"].get<std::string>().find("elements outside rtol 0.0001 + atol 1e-05"),
              std::string::npos)
        << o.dump();
  }
}

TEST(RunnerProtocol, TheEmulatorRefusesAnEditedBundle) {
  std::string dir = mmoe_bundle("souffle");
  BundleManifest m = load_manifest(dir);
  std::string cu = dir + "/" + m.kernels[0].source;
  std::ofstream(cu, std::ios::app) << "\n// edited by hand\n";
  auto a = serve({{{"id", 1}, {"op", "load"}, {"bundle", dir}}});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0]["ok"]);
  EXPECT_EQ(a[0]["code"], "bad_bundle");
  EXPECT_EQ(a[0]["kernel"], m.kernels[0].name);
  EXPECT_NE(a[0]["error"].get<std::string>().find("differs"), std::string::npos);
}

TEST(BundleManifest, RoundTripsAndRefusesBadFields) {
  std::string dir = mmoe_bundle("souffle");
  BundleManifest m = load_manifest(dir);
  EXPECT_EQ(m.source.strategy, "souffle");
  EXPECT_EQ(m.source.gpu.name, "A100-SXM4-40GB");
  EXPECT_TRUE(fs::path(m.source.model).is_absolute());
  EXPECT_TRUE(m.has_expected);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_TRUE(m.kernels[0].cooperative);
  BundleManifest again = parse_manifest(manifest_json(m), "x");
  EXPECT_EQ(again.tensors.size(), m.tensors.size());
  EXPECT_EQ(again.kernels[0].args, m.kernels[0].args);
  EXPECT_EQ(again.source.gpu.sm_count, 108);

  json j = json::parse(manifest_json(m));
  json escape = j;
  escape["weights"] = "../../etc/passwd";
  refuses(escape, "outside the bundle");
  json bytes = j;
  bytes["tensors"][0]["bytes"] = 3;
  refuses(bytes, "does not match its shape");
  json arg = j;
  arg["kernels"][0]["args"][0] = 100000;
  refuses(arg, "not in the bundle");
  json future = j;
  future["version"] = 99;
  refuses(future, "newer");
  refuses(json{{"format", "other"}}, "not a kernel bundle");
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The int32 counters of a raw array.
std::vector<int32_t> counters(const std::string& bytes) {
  std::vector<int32_t> c(bytes.size() / 4);
  std::memcpy(c.data(), bytes.data(), c.size() * 4);
  return c;
}

TEST(BundleFlags, ManifestCarriesCountersAndTheEpoch) {
  std::string dir = mmoe_bundle("souffle", schedule::SyncMode::Flags);
  json j = json::parse(file_text(dir + "/bundle.json"));
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["source"]["sync"], "flags");
  BundleManifest m = load_manifest(dir);
  EXPECT_EQ(m.source.sync, "flags");
  EXPECT_TRUE(m.has_flags());
  ASSERT_EQ(m.kernels.size(), 1u);
  const ManifestKernel& k = m.kernels[0];
  EXPECT_TRUE(k.flag_epoch);
  EXPECT_TRUE(k.cooperative);
  EXPECT_EQ(k.grid_barriers, 0);
  EXPECT_GT(k.flag_waits, 0);
  EXPECT_GT(k.flag_releases, 0);
  int flag_args = 0;
  for (int a : k.args) {
    const ManifestTensor& t = m.tensors[static_cast<size_t>(a)];
    if (t.kind != "flags") continue;
    ++flag_args;
    EXPECT_EQ(t.dtype, DType::Int32);
    EXPECT_FALSE(t.zeroed());  // not before every run
    EXPECT_TRUE(t.zeroed_at_load());
  }
  EXPECT_GT(flag_args, 0);
  // The kernel's source takes the epoch after its tensors.
  EXPECT_NE(file_text(dir + "/" + k.source).find("long long souffle_flag_epoch"),
            std::string::npos);

  // Round trip.
  BundleManifest again = parse_manifest(manifest_json(m), "x");
  EXPECT_EQ(again.source.sync, "flags");
  ASSERT_EQ(again.kernels.size(), 1u);
  EXPECT_TRUE(again.kernels[0].flag_epoch);
  EXPECT_EQ(again.kernels[0].flag_waits, k.flag_waits);
  EXPECT_EQ(again.kernels[0].flag_releases, k.flag_releases);
  EXPECT_EQ(again.kernels[0].args, k.args);
  ASSERT_EQ(again.tensors.size(), m.tensors.size());
  for (size_t i = 0; i < m.tensors.size(); ++i) EXPECT_EQ(again.tensors[i].kind, m.tensors[i].kind);
  EXPECT_EQ(manifest_json(again), manifest_json(m));

  json not_coop = j;
  not_coop["kernels"][0]["cooperative"] = false;
  refuses(not_coop, "must launch cooperatively");
  json no_epoch = j;
  no_epoch["kernels"][0].erase("flag_epoch");
  refuses(no_epoch, "'flag_epoch' is not set");
  json old = j;
  old["version"] = 1;  // a version-1 reader's view: no counters
  refuses(old, "needs bundle version 2");
  json bad_sync = j;
  bad_sync["source"]["sync"] = "sometimes";
  refuses(bad_sync, "grid, flags or auto");
}

TEST(BundleFlags, AGridBundleIsStillVersion1) {
  // Bundles without flags are written as version 1 wrote them (no new fields), so runners that
  // read only version 1 keep loading them, and this build reads them with sync "grid".
  std::string dir = mmoe_bundle("souffle");
  std::string text = file_text(dir + "/bundle.json");
  json j = json::parse(text);
  EXPECT_EQ(j["version"], 1);
  EXPECT_FALSE(j["source"].contains("sync"));
  EXPECT_EQ(text.find("\"flag_"), std::string::npos);
  EXPECT_EQ(text.find("\"flags\""), std::string::npos);
  BundleManifest m = load_manifest(dir);
  EXPECT_EQ(m.source.sync, "grid");
  EXPECT_FALSE(m.has_flags());
  EXPECT_GT(m.kernels[0].grid_barriers, 0);
  for (const ManifestTensor& t : m.tensors) EXPECT_NE(t.kind, "flags");
  EXPECT_EQ(manifest_json(parse_manifest(text, "x")), text);
}

TEST(BundleFlags, TheEmulatorRunsAFlagsBundleThreeTimesWithTheEpochGrowing) {
  std::string dir = mmoe_bundle("souffle", schedule::SyncMode::Flags);
  BundleManifest m = load_manifest(dir);
  std::string flags;
  for (const ManifestTensor& t : m.tensors)
    if (t.kind == "flags") flags = t.name;
  ASSERT_FALSE(flags.empty());
  std::vector<json> requests = {{{"id", 0}, {"op", "load"}, {"bundle", dir}}};
  for (int run = 1; run <= 3; ++run) {
    requests.push_back({{"id", 10 * run}, {"op", "run"}});
    requests.push_back({{"id", 10 * run + 1}, {"op", "verify"}});
    requests.push_back({{"id", 10 * run + 2},
                        {"op", "read"},
                        {"tensor", flags},
                        {"file", dir + "/counters" + std::to_string(run) + ".bin"}});
  }
  auto a = serve(requests);
  ASSERT_EQ(a.size(), 10u);
  for (const json& x : a) EXPECT_TRUE(x["ok"]) << x.dump();
  for (int run = 0; run < 3; ++run) {
    const json& v = a[static_cast<size_t>(2 + 3 * run)];
    EXPECT_TRUE(v["pass"]) << "run " << run + 1 << ": " << v.dump();
    for (const json& o : v["outputs"]) EXPECT_LT(o["rel_l2"].get<double>(), 1e-5);
  }
  // The counters were zeroed once, at load, and count on: after the third run each holds three
  // times what the first run left (the kernel's one counter buffer has a slot per stage; only the
  // producer stages' slots count).
  std::vector<int32_t> c1 = counters(file_text(dir + "/counters1.bin"));
  std::vector<int32_t> c3 = counters(file_text(dir + "/counters3.bin"));
  ASSERT_EQ(c1.size(), c3.size());
  ASSERT_FALSE(c1.empty());
  size_t counted = 0;
  for (size_t i = 0; i < c1.size(); ++i) {
    counted += c1[i] > 0;
    EXPECT_GE(c1[i], 0) << i;
    EXPECT_EQ(c3[i], 3 * c1[i]) << i;
  }
  EXPECT_GT(counted, 0u);
}

TEST(BundleFlags, StaleCountersAreCaughtAsARace) {
  // Counters that already hold the next run's target (what a launch that did not advance its
  // epoch would see) meet every wait before its producer ran: the emulator reports the read of
  // a store no release ordered. After the fault the counters start again from zero.
  std::string dir = mmoe_bundle("souffle", schedule::SyncMode::Flags);
  BundleManifest m = load_manifest(dir);
  std::vector<std::pair<std::string, std::string>> ahead;  // tensor, file
  std::vector<json> requests = {{{"id", 0}, {"op", "load"}, {"bundle", dir}},
                                {{"id", 1}, {"op", "run"}}};
  for (const ManifestTensor& t : m.tensors)
    if (t.kind == "flags") {
      std::string f = dir + "/" + t.name + ".first.bin";
      requests.push_back({{"id", 2}, {"op", "read"}, {"tensor", t.name}, {"file", f}});
      ahead.emplace_back(t.name, f);
    }
  auto first = serve(requests);
  for (const json& x : first) ASSERT_TRUE(x["ok"]) << x.dump();
  requests.resize(2);
  for (auto& [name, f] : ahead) {
    std::vector<int32_t> c = counters(file_text(f));
    for (int32_t& v : c) v *= 2;  // the counts a second run would leave
    std::string twice = dir + "/" + name + ".twice.bin";
    std::ofstream(twice, std::ios::binary)
        .write(reinterpret_cast<const char*>(c.data()), static_cast<std::streamsize>(c.size() * 4));
    requests.push_back({{"id", 3}, {"op", "upload"}, {"tensor", name}, {"file", twice}});
  }
  requests.push_back({{"id", 4}, {"op", "run"}});  // epoch 2 against counts of 2 runs: stale
  requests.push_back({{"id", 5}, {"op", "run"}});  // zeroed after the fault: epoch 1 again
  requests.push_back({{"id", 6}, {"op", "verify"}});
  auto a = serve(requests);
  ASSERT_EQ(a.size(), requests.size());
  const json& stale = a[a.size() - 3];
  EXPECT_FALSE(stale["ok"]);
  EXPECT_EQ(stale["code"], "kernel_fault");
  EXPECT_EQ(stale["kernel"], m.kernels[0].name);
  EXPECT_NE(stale["error"].get<std::string>().find("data race"), std::string::npos) << stale.dump();
  std::cout << "stale counters: " << stale["error"].get<std::string>() << "\n";
  EXPECT_TRUE(a[a.size() - 2]["ok"]) << a[a.size() - 2].dump();
  EXPECT_TRUE(a.back()["pass"]) << a.back().dump();
}

TEST(LaunchRefusal, CoResidencyOnTheDevice) {
  ManifestKernel k;
  k.name = "kernel0";
  k.grid = 264;
  k.block = 256;
  k.cooperative = true;
  EXPECT_EQ(runner::launch_refusal(k, 2, 132, true, "H200", "256 threads"), "");
  std::string r = runner::launch_refusal(k, 1, 132, true, "H200", "256 threads");
  EXPECT_NE(r.find("kernel0 needs 264 co-resident blocks (256 threads), but H200 holds 1 per SM x "
                   "132 SMs = 132"),
            std::string::npos)
      << r;
  EXPECT_NE(runner::launch_refusal(k, 4, 132, false, "X", "").find("cooperative launch"),
            std::string::npos);
  EXPECT_NE(runner::launch_refusal(k, 0, 132, true, "X", "").find("does not fit an SM"),
            std::string::npos);
  k.cooperative = false;  // without grid barriers any grid may launch
  EXPECT_EQ(runner::launch_refusal(k, 1, 1, true, "X", ""), "");
  // Per-tile flags: blocks wait on each other, so they must all be resident (cooperative).
  k.flag_epoch = true;
  EXPECT_NE(runner::launch_refusal(k, 4, 132, true, "X", "").find("not launched cooperatively"),
            std::string::npos);
  k.cooperative = true;
  EXPECT_EQ(runner::launch_refusal(k, 2, 132, true, "H200", ""), "");
  r = runner::launch_refusal(k, 1, 132, true, "H200", "256 threads");
  EXPECT_NE(r.find("its per-tile flags would never complete"), std::string::npos) << r;
}

TEST(RunnerVerify, JudgesRawArraysElementWise) {
  // The runner's read-back buffers go through the same comparison as every verification.
  std::string a(8, '\0'), b(8, '\0');
  float x[2] = {3, 4}, y[2] = {3, 4.5f};
  std::memcpy(a.data(), x, 8);
  std::memcpy(b.data(), y, 8);
  Comparison c = compare_bytes(a, b, DType::Float32, Tolerance{1e-4, 1e-5});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_NEAR(c.rel_l2_error, 0.5 / 5, 1e-7);
  EXPECT_NEAR(c.max_abs_error, 0.5, 1e-7);
  EXPECT_TRUE(compare_bytes(a, a, DType::Float32, Tolerance{}).ok());
  EXPECT_FALSE(compare_bytes(a, std::string(4, '\0'), DType::Float32, Tolerance{}).shape_ok);
}

// ---- the runner as a process ----

TEST(RunnerProcess, TalksToTheRealRunner) {
  RunnerProcess p(kRunner + " --backend emulator");
  json h = p.call({{"op", "hello"}}, 30);
  EXPECT_EQ(h["backend"], "emulator");
  EXPECT_THROW(p.call({{"op", "nonsense"}}, 30), RunnerFailure);
  EXPECT_TRUE(p.alive());  // a refused request leaves the runner up
}

TEST(RunnerProcess, ACommandThatIsNoRunnerDies) {
  RunnerProcess p("exit 3");
  try {
    p.call({{"op", "hello"}}, 10);
    FAIL();
  } catch (const RunnerFailure& e) {
    EXPECT_EQ(e.code(), "died");
    EXPECT_NE(std::string(e.what()).find("exit code 3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(p.alive());
}

TEST(RunnerProcess, AHangIsKilledAfterTheTimeout) {
  RunnerProcess p("sleep 30");
  auto t0 = std::chrono::steady_clock::now();
  try {
    p.call({{"op", "hello"}}, 0.5);
    FAIL();
  } catch (const RunnerFailure& e) {
    EXPECT_EQ(e.code(), "timeout");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_FALSE(p.alive());
}

// A request past its limit says which backend ran out of time: on the emulator a slow run, with
// how to raise the limit; "hung kernel" only where a GPU kernel may hang.
TEST(RunnerProcess, ATimeLimitOnTheEmulatorIsNotCalledAHang) {
  const std::string fake = [](const std::string& backend) {
    return "read l; echo '{\"id\":1,\"ok\":true,\"backend\":\"" + backend +
           "\"}'; read l; echo '{\"event\":\"launch\",\"kernel\":\"kernel7\"}'; sleep 30";
  }("emulator");
  RunnerProcess p(fake);
  EXPECT_EQ(p.call({{"op", "hello"}}, 10)["backend"], "emulator");
  EXPECT_EQ(p.backend(), "emulator");
  p.set_limit_hint("raise it with --timeout SECONDS");
  try {
    p.call({{"op", "profile"}}, 0.5);
    FAIL();
  } catch (const RunnerFailure& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), "timeout");
    EXPECT_EQ(e.kernel(), "kernel7");
    EXPECT_NE(m.find("emulator backend"), std::string::npos) << m;
    EXPECT_NE(m.find("time limit of 1 s"), std::string::npos) << m;
    EXPECT_NE(m.find("time limit was reached"), std::string::npos) << m;
    EXPECT_NE(m.find("still running kernel7"), std::string::npos) << m;
    EXPECT_NE(m.find("--timeout SECONDS"), std::string::npos) << m;
    EXPECT_EQ(m.find("(a hung kernel"), std::string::npos) << m;
  }
  RunnerProcess gpu(
      "read l; echo '{\"id\":1,\"ok\":true,\"backend\":\"cuda\"}'; read l; "
      "echo '{\"event\":\"launch\",\"kernel\":\"kernel2\"}'; sleep 30");
  gpu.call({{"op", "hello"}}, 10);
  try {
    gpu.call({{"op", "run"}}, 0.5);
    FAIL();
  } catch (const RunnerFailure& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda backend"), std::string::npos) << m;
    EXPECT_NE(m.find("kernel2 (a hung kernel"), std::string::npos) << m;
  }
}

TEST(RunnerProcess, ARunnerKilledMidRunNamesTheKernel) {
  std::string dir = mmoe_bundle("unfused");
  RunnerProcess p("SOUFFLE_RUNNER_ABORT_AT=kernel3 " + kRunner + " --backend emulator");
  p.call({{"op", "load"}, {"bundle", dir}}, 60);
  std::vector<std::string> launched;
  try {
    p.call({{"op", "run"}}, 60, [&](const json& e) { launched.push_back(e.value("kernel", "")); });
    FAIL();
  } catch (const RunnerFailure& e) {
    EXPECT_EQ(e.code(), "died");
    EXPECT_EQ(e.kernel(), "kernel3");
    EXPECT_NE(std::string(e.what()).find("while running kernel3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("signal 9"), std::string::npos) << e.what();
  }
  EXPECT_EQ(launched.size(), 4u);
  EXPECT_FALSE(p.alive());
}

TEST(ProfileSession, EmulatorEndToEndThroughTheRunner) {
  ProfileOptions o;
  o.backend = "emulator";
  o.runner = kRunner;
  o.runs = 1;
  o.warmup = 0;
  ProfileSession s(o);
  EXPECT_TRUE(s.emulator());
  EXPECT_EQ(s.arch(), "");
  EXPECT_FALSE(s.device_spec());
  const LoadedModel& m = test::sample_model("mmoe");
  PipelineOptions pipe;
  pipe.gpu = gpu::gpu_spec("a100");
  for (plan::Strategy st : plan::all_strategies()) {
    pipe.strategy = st;
    plan::FusionPlan p = plan::plan(m.program, plan_options(pipe));
    ProfileReport r = s.profile(test::sample_model_path("mmoe"), p);
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(r.verified);
    EXPECT_FALSE(r.gpu_time());
    EXPECT_EQ(r.timer, "emulator");
    EXPECT_EQ(r.kernels.size(), p.partitions.size());
    EXPECT_GT(r.kernels_us, 0);
    EXPECT_DOUBLE_EQ(r.est_total_us, p.est_time_us);
    ProfileReport back = profile_report_from_json(profile_report_json(r));
    EXPECT_EQ(back.kernels.size(), r.kernels.size());
    EXPECT_EQ(back.timer, "emulator");
    EXPECT_EQ(back.verified, r.verified);
    EXPECT_EQ(back.counters_note, "no hardware counters on the emulator");
    for (const KernelMeasurement& k : back.kernels) EXPECT_FALSE(k.has_counters()) << k.name;
  }
}

// Cancel during the kernel build: the build stops at the next kernel, and the runner is never
// asked to load anything.
TEST(ProfileSession, CancelDuringTheKernelBuildStopsTheBuild) {
  std::atomic<bool> cancel{false};
  std::vector<std::string> said;
  ProfileOptions o;
  o.backend = "emulator";
  o.runner = kRunner;
  o.runs = 1;
  o.warmup = 0;
  o.timeline = true;
  o.cancel = &cancel;
  o.progress = [&](const std::string& s) {
    said.push_back(s);
    if (s.rfind("building ", 0) == 0) cancel = true;
  };
  ProfileSession s(o);
  PipelineOptions pipe;
  pipe.gpu = gpu::gpu_spec("a100");
  pipe.strategy = plan::Strategy::Unfused;
  plan::FusionPlan p = plan::plan(test::sample_model("mmoe").program, plan_options(pipe));
  ASSERT_GT(p.kernels(), 2u);
  ProfileReport r = s.profile(test::sample_model_path("mmoe"), p);
  EXPECT_EQ(r.error, "cancelled");
  int building = 0, loading = 0;
  for (const std::string& m : said) {
    building += m.rfind("building ", 0) == 0 ? 1 : 0;
    loading += m.rfind("loading the bundle", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(building, 1);  // of p.kernels(): none started after Cancel
  EXPECT_EQ(loading, 0);
}

TEST(ProfileSession, ACudaBackendWithoutAGpuSaysWhatIsMissing) {
  ProfileOptions o;
  o.backend = "cuda";
  o.runner = kRunner;  // a runner command is given: its hello answers
  try {
    ProfileSession s(o);
    GTEST_SKIP() << "a CUDA device is present";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend emulator"), std::string::npos) << e.what();
  }
}

TEST(ProfileSession, ARunnerThatExitsAfterTheProfileKeepsTheTimings) {
  // A fault in the graph replay or the counted run poisons the runner's context: it answers
  // the profile with the timings and exits. The report keeps the timings, says the outputs were
  // not verified, and the next profile starts a new runner. A proxy in front of the emulator
  // runner stands in for that runner: it passes every line on and exits after the profile.
  const fs::path dir = fs::temp_directory_path() / "souffle_exit_after_profile";
  fs::create_directories(dir);
  const fs::path proxy = dir / "proxy.py";
  std::ofstream(proxy) << R"(import json, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    req = json.loads(line)
    child.stdin.write(line); child.stdin.flush()
    while True:
        out = child.stdout.readline()
        if not out:
            sys.exit(0)
        sys.stdout.write(out); sys.stdout.flush()
        msg = json.loads(out)
        if "id" in msg and msg["id"] == req.get("id"):
            break
    if req.get("op") == "profile":
        child.kill()
        sys.exit(3)
)";
  ProfileOptions o;
  o.backend = "emulator";
  o.runner = "python3 " + proxy.string() + " " + kRunner + " --backend emulator";
  o.runs = 1;
  o.warmup = 0;
  ProfileSession s(o);
  const LoadedModel& m = test::sample_model("mmoe");
  PipelineOptions pipe;
  pipe.gpu = gpu::gpu_spec("a100");
  pipe.strategy = plan::Strategy::Souffle;
  const plan::FusionPlan p = plan::plan(m.program, plan_options(pipe));
  const ProfileReport r = s.profile(test::sample_model_path("mmoe"), p);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.kernels.size(), p.partitions.size());
  EXPECT_GT(r.kernels_us, 0);
  EXPECT_FALSE(r.verified);
  EXPECT_NE(r.error.find("not verified"), std::string::npos) << r.error;
  EXPECT_NE(r.verify_note.find("exited after the profile"), std::string::npos) << r.verify_note;
  // A new runner (through the same proxy, which now exits after its first profile again)
  // answers the next plan.
  const ProfileReport again = s.profile(test::sample_model_path("mmoe"), p);
  EXPECT_EQ(again.kernels.size(), p.partitions.size());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace souffle
