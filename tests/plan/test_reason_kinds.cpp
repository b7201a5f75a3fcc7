// A partition's reasons carry their kind (and, for the rules strategy's refusals, why) as typed
// values, set where the reason is made; reports read the kind instead of parsing the sentence.
// Across every sample model and strategy the typed kinds agree with what the sentences said
// (the parser the report used before), except where that parser was wrong (a TE named
// ".../epilogue" that joins a stage, an attention chain left apart).
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "tests/sample_model.h"

namespace souffle::plan {
namespace {

/// The report's former reading of a reason's sentence.
std::string kind_from_text(const std::string& text) {
  auto starts = [&](const char* p) { return text.rfind(p, 0) == 0; };
  auto has = [&](const char* p) { return text.find(p) != std::string::npos; };
  if (has("by decision")) return "decision";
  if (starts("cut before")) return "cut";
  if (starts("kernel starts at")) return has("(first TE)") ? "start" : "cut";
  if (starts("one kernel for")) return "start";
  if (has("epilogue")) return "epilogue";
  if (has("pure view")) return "view";
  if (has(" joins") || has("stays with") || has("fused")) return "join";
  return "other";
}

std::string refusal_text(Refusal r) {
  switch (r) {
    case Refusal::ComputeIntensive:
      return ": compute-intensive";
    case Refusal::Reduction:
      return ": a reduction";
    case Refusal::OneReliesOnMany:
      return "one-relies-on-many";
    case Refusal::Gather:
      return ": gathers from ";
    case Refusal::ModelInputsOnly:
      return ": reads only model inputs and constants";
    case Refusal::BroadcastRead:
      return "through a broadcast";
    case Refusal::None:
      break;
  }
  return "?";
}

TEST(ReasonKinds, TypedKindsAgreeWithTheSentences) {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  size_t reasons = 0, refused = 0, corrected = 0;
  for (const char* model : {"bert", "efficientnet", "lstm", "mmoe", "resnext", "swin"}) {
    for (Strategy s : all_strategies()) {
      PlanOptions po;
      po.strategy = s;
      po.gpu = a100;
      po.pricer = schedule::shared_pricer(a100, po.precision);
      const FusionPlan p = plan(test::sample_model(model).program, po);
      for (const Partition& k : p.partitions) {
        EXPECT_FALSE(k.reasons.empty()) << model << " " << strategy_name(s) << " K" << k.id;
        for (const Reason& r : k.reasons) {
          ++reasons;
          SCOPED_TRACE(std::string(model) + " " + strategy_name(s) + ": " + r.text);
          EXPECT_EQ(r.refusal != Refusal::None, r.kind == ReasonKind::Refused);
          if (r.kind == ReasonKind::Refused) {
            ++refused;
            EXPECT_EQ(s, Strategy::Rules);
            EXPECT_NE(r.text.find(refusal_text(r.refusal)), std::string::npos)
                << refusal_name(r.refusal);
          }
          const std::string before = kind_from_text(r.text);
          // An attention chain left as separate stages was read as a join (its sentence
          // mentions the fused stage); it joins nothing.
          if (r.text.rfind("attention ", 0) == 0 &&
              r.text.find("left as separate stages") != std::string::npos) {
            EXPECT_EQ(r.kind, ReasonKind::Other);
            ++corrected;
            continue;
          }
          // A souffle join of a TE named ".../epilogue" was read as an epilogue of the rules
          // strategy (the name has the word).
          if (before == "epilogue" && r.kind == ReasonKind::Join &&
              r.text.find("/epilogue ") != std::string::npos) {
            ++corrected;
            continue;
          }
          EXPECT_EQ(reason_kind_name(r.kind), before);
        }
      }
    }
  }
  EXPECT_GT(reasons, 500u);
  EXPECT_GT(refused, 20u);
  std::cerr << reasons << " reasons, " << refused << " refusals, " << corrected
            << " read wrongly from their sentences before\n";
}

TEST(ReasonKinds, Names) {
  EXPECT_STREQ(reason_kind_name(ReasonKind::Refused), "cut");
  EXPECT_STREQ(reason_kind_name(ReasonKind::Other), "other");
  EXPECT_STREQ(refusal_name(Refusal::BroadcastRead), "broadcast-read");
  EXPECT_STREQ(refusal_name(Refusal::None), "none");
  Decision d;
  d.kind = DecisionKind::CutCheaper;
  d.reason = "cut before x: cheaper";
  EXPECT_EQ(reason_of(d), (Reason{ReasonKind::Cut, Refusal::None, "cut before x: cheaper"}));
  d.kind = DecisionKind::UserMerge;
  EXPECT_EQ(reason_of(d).kind, ReasonKind::Decision);
}

}  // namespace
}  // namespace souffle::plan
