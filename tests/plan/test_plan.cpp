// Every sample model under every strategy: the plan verifies, kernel counts are ordered, the
// transformed TE program matches PyTorch's outputs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "core/plan/plan.h"
#include "core/session/load.h"
#include "core/session/test_data.h"
#include "core/session/verify.h"
#include "tests/sample_model.h"

namespace souffle::plan {
namespace {

const std::vector<std::string> kModels = {"bert",         "resnext", "lstm",
                                          "efficientnet", "swin",    "mmoe"};

/// Each model loaded once for the whole binary.
const LoadedModel& model(const std::string& name) {
  return test::sample_model(name);
}

class SampleModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SampleModel, PlansUnderEveryStrategy) {
  const LoadedModel& m = model(GetParam());
  PlanOptions o;
  o.gpu = gpu::gpu_spec("a100");
  std::map<Strategy, FusionPlan> plans;
  for (Strategy s : all_strategies()) {
    o.strategy = s;
    auto t0 = std::chrono::steady_clock::now();
    FusionPlan p = plan(m.program, o);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_NO_THROW(verify(p)) << strategy_name(s);
    EXPECT_TRUE(p.refused.empty());
    EXPECT_GT(p.kernels(), 0u);
    EXPECT_GT(p.est_time_us, 0);
    EXPECT_GT(p.dram_bytes, 0);
    for (const Partition& k : p.partitions) {
      EXPECT_FALSE(k.reasons.empty()) << "kernel " << k.id;
      if (s != Strategy::Souffle) {
        EXPECT_EQ(k.grid_syncs, 0) << "kernel " << k.id;
      }
    }
    std::cout << fmt::format(
        "{:13} {:8} {:5} kernels {:4} syncs {:9.3f} MB {:9.1f} us  ({:.0f} ms)\n", GetParam(),
        strategy_name(s), p.kernels(), p.grid_syncs, p.dram_bytes / 1e6, p.est_time_us, ms);
    plans.emplace(s, std::move(p));
  }
  size_t unfused = plans[Strategy::Unfused].kernels(), rules = plans[Strategy::Rules].kernels(),
         souffle = plans[Strategy::Souffle].kernels();
  EXPECT_LT(souffle, rules);
  EXPECT_LT(rules, unfused);  // every sample model has an element-wise chain to fuse
  EXPECT_LE(plans[Strategy::Souffle].dram_bytes, plans[Strategy::Rules].dram_bytes);
  EXPECT_LE(plans[Strategy::Rules].dram_bytes, plans[Strategy::Unfused].dram_bytes);
  // FLOPs of the lowered program are the same for both untransformed strategies.
  EXPECT_EQ(plans[Strategy::Unfused].flops, plans[Strategy::Rules].flops);
}

TEST_P(SampleModel, TransformedProgramMatchesReference) {
  const LoadedModel& m = model(GetParam());
  std::string dir =
      std::filesystem::path(test::sample_model_path(GetParam())).parent_path().string();
  std::vector<TestDataSet> sets = read_test_data(dir);
  ASSERT_FALSE(sets.empty());
  LoadedModel t = m;
  t.program = transformed_program(m.program, Strategy::Souffle);
  VerifyOptions vo;
  VerifyReport rep = verify_program(t, sets, vo);
  EXPECT_TRUE(rep.ok) << "max relative L2 error " << rep.max_rel_l2;
  EXPECT_LE(rep.max_rel_l2, 1e-4);
}

TEST_P(SampleModel, DumpAfterEveryStep) {
  const LoadedModel& m = model(GetParam());
  PlanOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.snapshots = true;
  std::vector<std::string> seen;
  double steps_ms = 0;
  o.instrument.after = [&](const PassRecord& r) {
    seen.emplace_back(r.name());
    // A snapshot, unless the step printed as the one before it.
    EXPECT_NE(r.snapshot.empty(), r.changed) << r.name();
    EXPECT_TRUE(std::isfinite(r.ms) && r.ms >= 0) << r.name() << ": " << r.ms;
    steps_ms += r.ms;
  };
  const auto start = std::chrono::steady_clock::now();
  FusionPlan p = plan(m.program, o);
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // The steps are timed one after another inside plan(): together no longer than the call.
  EXPECT_LE(steps_ms, wall_ms + 0.5);
  EXPECT_EQ(seen, (std::vector<std::string>{"analyze", "horizontal", "vertical", "re-analyze",
                                            "partition", "decisions", "price"}));
  // The price step's snapshot is the plan's kernels, as the printer shows them at the end.
  const std::string& snap = p.passes.back().snapshot;
  std::string kernels = snap.substr(snap.find('\n') + 1);
  std::string full = print(p);
  ASSERT_GE(full.size(), kernels.size());
  EXPECT_EQ(full.substr(full.size() - kernels.size()), kernels);
}

INSTANTIATE_TEST_SUITE_P(All, SampleModel, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return info.param; });

TEST(Strategy, NamesRoundTrip) {
  for (Strategy s : all_strategies()) EXPECT_EQ(parse_strategy(strategy_name(s)), s);
  EXPECT_THROW(parse_strategy("xla"), UserError);
}

}  // namespace
}  // namespace souffle::plan
