// Structural twins: a partition priced from a twin's price, renamed, is priced exactly as if its
// own kernels had been built. Every sample model's plan under every strategy (and sync auto) is
// byte-identical with twins shared and with every partition built; names and op indices are
// renamed, and a planted difference (a shape, a constant) makes no twins.
#include <gtest/gtest.h>

#include "core/schedule/plan_pricer.h"
#include "core/schedule/price_twins.h"
#include "tests/sample_model.h"
#include "tests/session/plan_dump.h"

namespace souffle {
namespace {

plan::FusionPlan priced(const std::string& model, plan::Strategy s, SyncMode sync, bool share,
                        size_t* twin_hits = nullptr) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = a100;
  po.sync = sync;
  auto pricer = schedule::make_pricer(a100, gpu::Precision::FP32);
  pricer->set_share_structures(share);
  po.pricer = pricer;
  plan::FusionPlan p = plan::plan(test::sample_model(model).program, po);
  if (twin_hits) *twin_hits = pricer->twin_hits();
  return p;
}

class PriceTwinsModel : public testing::TestWithParam<std::string> {};

TEST_P(PriceTwinsModel, PlanIsTheSameWithTwinsShared) {
  const std::string& m = GetParam();
  size_t hits = 0;
  for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Souffle}) {
    for (SyncMode sync : {SyncMode::Grid, SyncMode::Auto}) {
      SCOPED_TRACE(m + " " + plan::strategy_name(s) + " " + sync_mode_name(sync));
      size_t h = 0;
      const std::string shared = test::plan_dump(m, priced(m, s, sync, true, &h));
      hits += h;
      EXPECT_EQ(shared, test::plan_dump(m, priced(m, s, sync, false)));
    }
  }
  // The sample BERT's and LSTM's layers are twins: their prices are shared.
  if (m == "bert" || m == "lstm") {
    EXPECT_GT(hits, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, PriceTwinsModel,
                         testing::Values("bert", "lstm", "mmoe", "resnext", "efficientnet",
                                         "swin"));

TEST(PriceTwins, AbstractsNamesInOrderOfAppearance) {
  const schedule::PartitionStructure a =
      schedule::abstract_names("x=/l.0/A+/l.0/A_1 w/l.0/A", {"/l.0/A", "/l.0/A_1"}, {3, 4});
  const schedule::PartitionStructure b =
      schedule::abstract_names("x=/l.7/A+/l.7/A_1 w/l.7/A", {"/l.7/A_1", "/l.7/A"}, {9, 10});
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.names, (std::vector<std::string>{"/l.0/A", "/l.0/A_1"}));
  EXPECT_EQ(b.names, (std::vector<std::string>{"/l.7/A", "/l.7/A_1"}));
  // Another shape is another structure.
  EXPECT_NE(
      a.key,
      schedule::abstract_names("x=/l.0/A+/l.0/A_1 v/l.0/A", {"/l.0/A", "/l.0/A_1"}, {3, 4}).key);
}

TEST(PriceTwins, RenamesNamesAndOpIndices) {
  const schedule::PartitionStructure a =
      schedule::abstract_names("/l.0/A;/l.0/B", {"/l.0/A", "/l.0/B"}, {3, 4});
  const schedule::PartitionStructure b =
      schedule::abstract_names("/l.7/A;/l.7/B", {"/l.7/A", "/l.7/B"}, {9, 10});
  plan::PartitionPrice p;
  p.on_chip = {"/l.0/B"};
  p.barrier_sites = {4};
  plan::BuiltStage st;
  st.tes = {"/l.0/A", "/l.0/B"};
  st.schedule = "gemm of /l.0/A, then /l.0/B in registers; a launch of its own (kernel3.1)";
  p.stages.push_back(st);
  plan::Boundary bd;
  bd.te = 4;
  bd.order.tensor = "/l.0/A";
  p.boundaries.push_back(bd);
  std::optional<plan::PartitionPrice> r = schedule::rename_price(p, a, b, 3, 8);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->on_chip, (std::vector<std::string>{"/l.7/B"}));
  EXPECT_EQ(r->barrier_sites, (std::vector<int>{10}));
  EXPECT_EQ(r->stages[0].tes, (std::vector<std::string>{"/l.7/A", "/l.7/B"}));
  EXPECT_EQ(r->stages[0].schedule,
            "gemm of /l.7/A, then /l.7/B in registers; a launch of its own (kernel8.1)");
  EXPECT_EQ(r->boundaries[0].te, 10);
  EXPECT_EQ(r->boundaries[0].order.tensor, "/l.7/A");
  // An op index the twin does not list: no renamed price.
  p.barrier_sites = {5};
  EXPECT_FALSE(schedule::rename_price(p, a, b, 3, 8));
}

}  // namespace
}  // namespace souffle
