// Partition prices kept on disk (schedule/price_store.h): every sample model's plan is
// byte-identical built, priced into an empty store and taken back from it by a new pricer (a
// new process, as far as the pricer knows), which builds nothing where every price is stored;
// another GPU spec, precision, calibration or program finds nothing; a corrupt entry is said once
// and priced again; an unusable folder costs a warning, not the plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/schedule/plan_pricer.h"
#include "core/schedule/price_store.h"
#include "core/support/build_id.h"
#include "tests/sample_model.h"
#include "tests/session/plan_dump.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;

struct Priced {
  std::string json;
  size_t builds = 0, store_hits = 0;
};

Priced priced(const std::string& model, plan::Strategy s, SyncMode sync,
              std::shared_ptr<schedule::PriceStore> store,
              gpu::Precision precision = gpu::Precision::FP32, const std::string& gpu = "a100") {
  const gpu::GpuSpec spec = gpu::gpu_spec(gpu);
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = spec;
  po.sync = sync;
  po.precision = precision;
  auto pricer = schedule::make_pricer(spec, precision);
  pricer->set_price_store(std::move(store));
  po.pricer = pricer;
  Priced out;
  out.json = test::plan_dump(model, plan::plan(test::sample_model(model).program, po));
  out.builds = pricer->builds();
  out.store_hits = pricer->store_hits();
  return out;
}

class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : m_path(fs::temp_directory_path() / ("souffle_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(m_path);
  }
  ~TempDir() { fs::remove_all(m_path); }
  const fs::path& path() const { return m_path; }

 private:
  fs::path m_path;
};

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "prices", ec))
    if (e.path().extension() == ".entry") out.push_back(e.path());
  return out;
}

class PriceStoreModel : public testing::TestWithParam<std::string> {};

TEST_P(PriceStoreModel, PlanIsTheSameBuiltStoredAndTakenBack) {
  const std::string& m = GetParam();
  for (SyncMode sync : {SyncMode::Grid, SyncMode::Auto}) {
    SCOPED_TRACE(m + " " + sync_mode_name(sync));
    TempDir dir("price_store_" + m);
    auto store = std::make_shared<schedule::PriceStore>(dir.path().string(), int64_t{1} << 30);
    const Priced built = priced(m, plan::Strategy::Souffle, sync, nullptr);
    const Priced cold = priced(m, plan::Strategy::Souffle, sync, store);
    EXPECT_EQ(cold.json, built.json);
    EXPECT_EQ(cold.store_hits, 0u);
    EXPECT_EQ(cold.builds, built.builds);
    EXPECT_GT(store->stored(), 0);
    EXPECT_FALSE(entries(dir.path()).empty());
    // A new pricer on the same folder: every price built before comes from the store, twins
    // of it are renamed as before, nothing is built.
    const Priced warm = priced(m, plan::Strategy::Souffle, sync, store);
    EXPECT_EQ(warm.json, built.json);
    EXPECT_GT(warm.store_hits, 0u);
    EXPECT_EQ(warm.builds, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, PriceStoreModel,
                         testing::Values("bert", "lstm", "mmoe", "resnext", "efficientnet",
                                         "swin"));

TEST(PriceStore, AnotherGpuOrPrecisionFindsNothing) {
  TempDir dir("price_store_keys");
  auto store = std::make_shared<schedule::PriceStore>(dir.path().string(), int64_t{1} << 30);
  priced("mmoe", plan::Strategy::Souffle, SyncMode::Grid, store);
  EXPECT_EQ(
      priced("mmoe", plan::Strategy::Souffle, SyncMode::Grid, store, gpu::Precision::FP32, "h100")
          .store_hits,
      0u);
  EXPECT_EQ(priced("mmoe", plan::Strategy::Souffle, SyncMode::Grid, store, gpu::Precision::FP16)
                .store_hits,
            0u);
  EXPECT_GT(priced("mmoe", plan::Strategy::Souffle, SyncMode::Grid, store).store_hits, 0u);

  // The full key names the code, the spec's every figure, the precision and the calibration.
  gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  const std::string key =
      schedule::price_store_key(a100, a100, gpu::Precision::FP32, nullptr, "the partition");
  EXPECT_NE(key.find(std::string(build_id())), std::string::npos);
  EXPECT_NE(key.find("calibration none"), std::string::npos);
  gpu::GpuSpec faster = a100;
  faster.dram_bandwidth_gbps += 0.5;  // a figure the partition's content key does not print
  EXPECT_NE(key, schedule::price_store_key(faster, faster, gpu::Precision::FP32, nullptr,
                                           "the partition"));
  gpu::Calibration cal;
  cal.launch_overhead_us = 3.25;
  EXPECT_NE(key,
            schedule::price_store_key(a100, a100, gpu::Precision::FP32, &cal, "the partition"));
}

TEST(PriceStore, AnotherProgramFindsNothing) {
  // The same model but for its last op, which computes something else: every partition but
  // that op's prints the same, yet none is taken from the store (a partition's kernels read
  // more of the program than its own TEs, so a price is the whole program's).
  TempDir dir("price_store_program");
  auto store = std::make_shared<schedule::PriceStore>(dir.path().string(), int64_t{1} << 30);
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  auto plan_of = [&](const te::TeProgram& program) {
    plan::PlanOptions po;
    po.strategy = plan::Strategy::Souffle;
    po.gpu = a100;
    auto pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
    pricer->set_price_store(store);
    po.pricer = pricer;
    plan::plan(program, po);
    return pricer->store_hits();
  };
  const te::TeProgram program = test::sample_model("bert").program;
  plan_of(program);
  ASSERT_GT(plan_of(program), 0u);  // the same program: taken back
  te::TeProgram other = program;
  auto last = std::make_shared<te::ComputeOp>(*other.ops.back());
  last->body = last->body * 0.5;
  other.ops.back() = last;
  EXPECT_EQ(plan_of(other), 0u);
}

TEST(PriceStore, PriceBytesRoundTripAndRefuseDamage) {
  TempDir dir("price_store_bytes");
  auto store = std::make_shared<schedule::PriceStore>(dir.path().string(), int64_t{1} << 30);
  priced("bert", plan::Strategy::Souffle, SyncMode::Auto, store);
  size_t prices = 0, twins = 0;
  for (const fs::path& e : entries(dir.path())) {
    std::ifstream in(e, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    // The body follows the 32-byte header and the full key (u64 length, then its bytes).
    uint64_t key_len = 0;
    std::memcpy(&key_len, bytes.data() + 32, 8);
    const std::string body = bytes.substr(40 + key_len);
    // A partition's price, or a structure's first price with what its twins rename.
    plan::PartitionPrice p;
    schedule::PriceStore::Twin t;
    if (schedule::decode_price(body, p)) {
      EXPECT_EQ(schedule::encode_price(p), body);
      plan::PartitionPrice untouched;
      untouched.error = "untouched";
      EXPECT_FALSE(schedule::decode_price(body.substr(0, body.size() - 1), untouched));
      EXPECT_FALSE(schedule::decode_price(body + "x", untouched));
      EXPECT_EQ(untouched.error, "untouched");
      ++prices;
    } else {
      ASSERT_TRUE(schedule::decode_twin(body, t)) << e;
      EXPECT_EQ(schedule::encode_twin(t), body);
      EXPECT_FALSE(t.structure.names.empty());
      EXPECT_EQ(t.structure.names.size() > 0, t.structure.tes.size() > 0);
      schedule::PriceStore::Twin untouched;
      untouched.id = -7;
      EXPECT_FALSE(schedule::decode_twin(body.substr(0, body.size() - 1), untouched));
      EXPECT_EQ(untouched.id, -7);
      ++twins;
    }
  }
  EXPECT_GT(prices, 0u);
  EXPECT_GT(twins, 0u);
}

TEST(PriceStore, CorruptEntryIsSaidOnceAndPricedAgain) {
  TempDir dir("price_store_corrupt");
  std::vector<std::string> said;
  auto warn = [&said](const std::string& w) { said.push_back(w); };
  const std::string reference =
      priced("bert", plan::Strategy::Souffle, SyncMode::Grid, nullptr).json;
  {
    auto store = std::make_shared<schedule::PriceStore>(dir.path().string(), int64_t{1} << 30);
    priced("bert", plan::Strategy::Souffle, SyncMode::Grid, store);
  }
  std::vector<fs::path> all = entries(dir.path());
  ASSERT_GE(all.size(), 2u);
  // Every entry damaged: half truncated, half overwritten with garbage of the same size.
  for (size_t i = 0; i < all.size(); ++i) {
    const auto n = static_cast<size_t>(fs::file_size(all[i]));
    if (i % 2 == 0) {
      fs::resize_file(all[i], n / 2);
    } else {
      std::ofstream(all[i], std::ios::binary | std::ios::trunc) << std::string(n, 'z');
    }
  }
  auto store = std::make_shared<schedule::PriceStore>(dir.path().string(), int64_t{1} << 30, warn);
  const Priced again = priced("bert", plan::Strategy::Souffle, SyncMode::Grid, store);
  EXPECT_EQ(again.json, reference);
  EXPECT_GT(again.builds, 0u);  // built again
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("price cache"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("removed a corrupt entry"), std::string::npos) << said[0];
  // Built again and stored again: a third pricer builds nothing.
  EXPECT_EQ(priced("bert", plan::Strategy::Souffle, SyncMode::Grid, store).builds, 0u);
}

TEST(PriceStore, UnusableFolderCostsOneWarningNotThePlan) {
  TempDir dir("price_store_unusable");
  fs::create_directories(dir.path());
  std::ofstream(dir.path() / "file") << "x";  // a folder under a regular file: unusable
  std::vector<std::string> said;
  auto store = std::make_shared<schedule::PriceStore>(
      (dir.path() / "file" / "cache").string(), int64_t{1} << 30,
      [&said](const std::string& w) { said.push_back(w); });
  const Priced p = priced("mmoe", plan::Strategy::Souffle, SyncMode::Grid, store);
  EXPECT_EQ(p.json, priced("mmoe", plan::Strategy::Souffle, SyncMode::Grid, nullptr).json);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("cannot be used"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("prices not kept"), std::string::npos) << said[0];
}

}  // namespace
}  // namespace souffle
