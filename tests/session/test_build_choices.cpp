// The kernel builder's priced choices as typed values: keep_cheaper keeps the cheaper of two
// forms and says so, and on sample models every choice sentence of a built stage's schedule
// text is one of its typed choices, told from it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/schedule/build_choice.h"
#include "core/schedule/plan_pricer.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

TEST(BuildChoices, KeepCheaperKeepsTheCandidateOnlyWhereItPricesBelow) {
  std::vector<std::string> asked;
  auto price = [&](const std::string& s) {
    asked.push_back(s);
    return s == "flags" ? 3.0 : s == "grid" ? 5.0 : s == "nan" ? std::nan("") : 4.0;
  };
  std::string kernel = "flags";
  BuildChoice c = schedule::keep_cheaper(ChoiceKind::SyncForm, kernel, std::string("grid"), price);
  EXPECT_EQ(asked, (std::vector<std::string>{"flags", "grid"}));  // the candidate first
  EXPECT_EQ(kernel, "flags");
  EXPECT_EQ(c.kind, ChoiceKind::SyncForm);
  EXPECT_TRUE(c.kept);
  EXPECT_EQ(c.price_kept_us, 3.0);
  EXPECT_EQ(c.price_other_us, 5.0);
  EXPECT_EQ(c.candidate_us(), 3.0);
  EXPECT_EQ(c.other_us(), 5.0);

  kernel = "grid";  // a dearer candidate gives way
  c = schedule::keep_cheaper(ChoiceKind::Waves, kernel, std::string("flags"), price, "2 waves");
  EXPECT_EQ(kernel, "flags");
  EXPECT_FALSE(c.kept);
  EXPECT_EQ(c.price_kept_us, 3.0);
  EXPECT_EQ(c.price_other_us, 5.0);
  EXPECT_EQ(c.candidate_us(), 5.0);
  EXPECT_EQ(c.reason, "2 waves");

  kernel = "a";  // a tie keeps the other form
  c = schedule::keep_cheaper(ChoiceKind::WeightPanels, kernel, std::string("b"), price);
  EXPECT_EQ(kernel, "b");
  EXPECT_FALSE(c.kept);

  kernel = "nan";  // so does an unpriced candidate
  c = schedule::keep_cheaper(ChoiceKind::WeightPanels, kernel, std::string("b"), price);
  EXPECT_EQ(kernel, "b");
  EXPECT_FALSE(c.kept);
  EXPECT_EQ(c.price_kept_us, 4.0);
}

TEST(BuildChoices, DescribeTellsTheCandidatesPriceFirst) {
  BuildChoice c;
  c.kind = ChoiceKind::WeightPanels;
  c.kept = false;
  c.price_kept_us = 35.654;
  c.price_other_us = 40;
  EXPECT_EQ(schedule::describe(c),
            "weight panels not kept (estimated 40.00 us with them, 35.65 us without)");
  c.kind = ChoiceKind::SyncForm;
  c.kept = true;
  EXPECT_EQ(schedule::describe(c),
            "sync auto: per-tile flags kept (estimated 35.65 us with per-tile flags where each "
            "prices below its grid barrier, 40.00 us with grid barriers only)");
  c.kind = ChoiceKind::Waves;
  c.reason = "3 dependence levels in 3 waves";
  EXPECT_EQ(schedule::describe(c),
            "waves: 3 dependence levels in 3 waves; kept (estimated 35.65 us in waves, 40.00 us "
            "in program order)");
}

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Sample models whose souffle plans under sync auto make each kind of choice (A100): BERT
/// keeps grid barriers over flags, LSTM keeps waves and weight panels.
TEST(BuildChoices, BuiltPlansCarryTheirChoicesTypedAndToldFromThem) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  std::map<ChoiceKind, int> kinds;
  for (const std::string m : {"bert", "lstm"}) {
    SCOPED_TRACE(m);
    plan::PlanOptions po;
    po.strategy = plan::Strategy::Souffle;
    po.gpu = a100;
    po.sync = SyncMode::Auto;
    po.pricer = schedule::make_pricer(a100, po.precision);
    const plan::FusionPlan p = plan::plan(test::sample_model(m).program, po);
    for (const plan::Partition& part : p.partitions)
      for (size_t i = 0; i < part.built_stages.size(); ++i) {
        const plan::BuiltStage& st = part.built_stages[i];
        // Only a launch's first stage holds them.
        if (i > 0 && part.built_stages[i - 1].launch == st.launch) {
          EXPECT_TRUE(st.choices.empty());
        }
        int told = 0;
        for (const BuildChoice& c : st.choices) {
          ++kinds[c.kind];
          EXPECT_LE(c.price_kept_us, c.price_other_us);
          EXPECT_GT(c.price_kept_us, 0);
          if (c.kept) {
            EXPECT_LT(c.price_kept_us, c.price_other_us);
          }
          if (c.kind == ChoiceKind::SyncForm) {
            EXPECT_NE(c.price_kept_us, c.price_other_us);
          }
          EXPECT_EQ(c.kind == ChoiceKind::Waves, !c.reason.empty());
          told += occurrences(st.schedule, "; " + schedule::describe(c));
        }
        // Every priced choice in the text is a typed one, and each typed one is in the text.
        const int priced = occurrences(st.schedule, " (estimated ");
        EXPECT_EQ(told, static_cast<int>(st.choices.size())) << st.schedule;
        EXPECT_EQ(priced, static_cast<int>(st.choices.size())) << st.schedule;
      }
  }
  EXPECT_GT(kinds[ChoiceKind::SyncForm], 0);
  EXPECT_GT(kinds[ChoiceKind::WeightPanels], 0);
  EXPECT_GT(kinds[ChoiceKind::Waves], 0);
}

}  // namespace
}  // namespace souffle
