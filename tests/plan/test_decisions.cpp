// Decisions: JSON round trip, every edit applied, every refusal with its exact reason.
#include <gtest/gtest.h>

#include "core/plan/plan.h"
#include "core/support/error.h"
#include "core/te/builder.h"

namespace souffle::plan {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

/// G1 = A x W1, R1 = relu(G1), G2 = R1 x W2, R2 = relu(G2), all n x n.
te::TeProgram two_layers(int64_t n) {
  auto a = te::make_input("A", {n, n}, DType::Float32);
  auto w1 = te::make_input("W1", {n, n}, DType::Float32);
  auto w2 = te::make_input("W2", {n, n}, DType::Float32);
  auto gemm = [&](const std::string& name, const te::Tensor& x, const te::Tensor& w) {
    return te::reduce(name, {n, n}, DType::Float32, te::ReduceKind::Sum, {n},
                      [&](const Idx& i, const Idx& r) {
                        return te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]});
                      },
                      {}, {"/fc_" + name, "MatMul"});
  };
  auto relu = [&](const std::string& name, const te::Tensor& x) {
    return te::compute(name, {n, n}, DType::Float32, [&](const Idx& i) {
      return te::max(te::read(x, {i[0], i[1]}), te::float_imm(0));
    });
  };
  te::Op g1 = gemm("G1", a, w1);
  te::Op r1 = relu("R1", g1->output);
  te::Op g2 = gemm("G2", r1->output, w2);
  te::Op r2 = relu("R2", g2->output);
  te::TeProgram p;
  p.name = "two_layers";
  p.inputs = {a, w1, w2};
  p.outputs = {r2->output};
  p.ops = {g1, r1, g2, r2};
  return p;
}

std::vector<std::vector<std::string>> kernels(const FusionPlan& p) {
  std::vector<std::vector<std::string>> out;
  for (const Partition& k : p.partitions) {
    std::vector<std::string> names;
    for (int te : k.tes) names.push_back(p.program.ops[te]->name);
    out.push_back(names);
  }
  return out;
}

FusionPlan plan_with(const te::TeProgram& prog, Strategy s, std::vector<Edit> edits) {
  PlanOptions o;
  o.strategy = s;
  o.gpu = gpu::gpu_spec("a100");
  o.decisions.edits = std::move(edits);
  FusionPlan p = plan(prog, o);
  verify(p);
  return p;
}

using K = Edit::Kind;
using Names = std::vector<std::vector<std::string>>;

TEST(Decisions, JsonRoundTrip) {
  Decisions d;
  d.edits = {{K::Merge, "G1", "/fc_G2"}, {K::Split, "R1", ""},     {K::Pin, "G2", ""},
             {K::Force, "h:a,b", ""},    {K::Forbid, "v:x>y", ""}, {K::Sync, "G3", "flags"}};
  std::string text = to_json(d);
  EXPECT_NE(text.find("\"order\": \"flags\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos);
  EXPECT_NE(text.find("\"at\": \"R1\""), std::string::npos);
  EXPECT_EQ(parse_decisions(text), d);
  EXPECT_EQ(parse_decisions("{\"version\": 1}"), Decisions{});
}

TEST(Decisions, MalformedJsonIsAUserError) {
  auto reason = [](const std::string& text) {
    try {
      parse_decisions(text, "d.json");
    } catch (const UserError& e) {
      return e.node() + ": " + e.reason();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(reason("{\"version\": 2, \"edits\": []}"),
            ": unsupported decisions version 2 (this build reads version 1)");
  EXPECT_EQ(reason("{\"edits\": []}"), ": missing integer field 'version'");
  EXPECT_EQ(reason("{\"version\": 1, \"edits\": [{\"kind\": \"fuse\"}]}"),
            "edits[0]: unknown kind 'fuse' (merge, split, pin, force, forbid, sync)");
  EXPECT_EQ(reason("{\"version\": 1, \"edits\": [{\"kind\": \"sync\", \"at\": \"x\"}]}"),
            "edits[0]: 'sync' needs a non-empty string 'order'");
  EXPECT_EQ(reason("{\"version\": 1, \"edits\": [{\"kind\": \"sync\", \"at\": \"x\", "
                   "\"order\": \"barrier\"}]}"),
            "edits[0]: 'sync' orders a stage by \"grid\" or \"flags\", not 'barrier'");
  EXPECT_EQ(reason("{\"version\": 1, \"edits\": [{\"kind\": \"merge\", \"a\": \"x\"}]}"),
            "edits[0]: 'merge' needs a non-empty string 'b'");
  EXPECT_EQ(reason("[1, 2"), reason("[1, 2"));  // not valid JSON: still a UserError
  EXPECT_NE(reason("[1, 2"), "accepted");
}

TEST(Decisions, BaselinePlans) {
  te::TeProgram p = two_layers(64);
  EXPECT_EQ(kernels(plan_with(p, Strategy::Unfused, {})), (Names{{"G1"}, {"R1"}, {"G2"}, {"R2"}}));
  EXPECT_EQ(kernels(plan_with(p, Strategy::Rules, {})), (Names{{"G1", "R1"}, {"G2", "R2"}}));
  FusionPlan s = plan_with(p, Strategy::Souffle, {});
  ASSERT_EQ(s.kernels(), 1u) << print(s);
  EXPECT_EQ(s.grid_syncs, 1);
}

TEST(Decisions, AppliedEdits) {
  te::TeProgram p = two_layers(64);
  // Anchored by ONNX node name.
  FusionPlan m = plan_with(p, Strategy::Rules, {{K::Merge, "/fc_G1", "G2"}});
  EXPECT_EQ(kernels(m), (Names{{"G1", "R1", "G2", "R2"}}));
  EXPECT_EQ(m.grid_syncs, 1);
  EXPECT_TRUE(m.refused.empty());
  ASSERT_EQ(m.applied.size(), 1u);
  EXPECT_EQ(kernels(plan_with(p, Strategy::Rules, {{K::Split, "R1", ""}})),
            (Names{{"G1"}, {"R1"}, {"G2", "R2"}}));
  EXPECT_EQ(kernels(plan_with(p, Strategy::Souffle, {{K::Pin, "R1", ""}})),
            (Names{{"G1"}, {"R1"}, {"G2", "R2"}}));
  // Edits apply in order: merge everything, then split it again.
  EXPECT_EQ(
      kernels(plan_with(p, Strategy::Unfused,
                        {{K::Merge, "G1", "R1"}, {K::Merge, "G2", "R2"}, {K::Split, "G2", ""}})),
      (Names{{"G1", "R1"}, {"G2", "R2"}}));
}

void expect_refused(const te::TeProgram& p, Strategy s, const Edit& e, const std::string& reason) {
  FusionPlan base = plan_with(p, s, {});
  FusionPlan r = plan_with(p, s, {e});
  ASSERT_EQ(r.refused.size(), 1u) << describe(e);
  EXPECT_EQ(r.refused[0].edit, e);
  EXPECT_EQ(r.refused[0].reason, reason);
  EXPECT_TRUE(r.applied.empty());
  EXPECT_EQ(kernels(r), kernels(base)) << "a refused edit must leave the plan unchanged";
  EXPECT_EQ(r.est_time_us, base.est_time_us);
}

TEST(Decisions, RefusedEditsSayWhy) {
  te::TeProgram p = two_layers(64);
  expect_refused(
      p, Strategy::Unfused, {K::Merge, "G1", "R2"},
      "merging would create a dependency cycle: R1 depends on the kernel of G1 (/fc_G1), and "
      "the kernel of R2 depends on R1");
  expect_refused(p, Strategy::Unfused, {K::Merge, "G1", "nope"}, "unknown TE or ONNX node 'nope'");
  expect_refused(p, Strategy::Rules, {K::Merge, "G1", "R1"},
                 "G1 (/fc_G1) and R1 are already in one kernel");
  expect_refused(p, Strategy::Rules, {K::Split, "G2", ""}, "G2 (/fc_G2) already starts a kernel");
  expect_refused(p, Strategy::Unfused, {K::Pin, "R1", ""}, "R1 already has a kernel of its own");
  expect_refused(p, Strategy::Rules, {K::Force, "h:G1,G2", ""},
                 "transformations run only under the souffle strategy, not rules");
  expect_refused(p, Strategy::Souffle, {K::Forbid, "h:zzz", ""},
                 "no transformation site with key 'h:zzz'");
}

TEST(Decisions, MergeBeyondCoResidencyIsRefused) {
  // 4096 x 4096 GEMMs need far more tiles than an A100 keeps resident: each is its own kernel,
  // and merging them would put a grid sync after a stage that cannot all be resident.
  te::TeProgram p = two_layers(4096);
  FusionPlan base = plan_with(p, Strategy::Souffle, {});
  ASSERT_EQ(base.kernels(), 2u) << print(base);
  const Partition& k0 = base.partitions[0];
  ASSERT_EQ(k0.stages[0].kind, StageKind::Compute);
  ASSERT_GT(k0.stages[0].blocks, k0.co_resident);
  EXPECT_EQ(base.partitions[1].reasons[0].kind, ReasonKind::Cut);
  EXPECT_EQ(base.partitions[1].reasons[0].text.rfind("cut before G2 (/fc_G2): needs ", 0), 0u)
      << base.partitions[1].reasons[0].text;
  FusionPlan r = plan_with(p, Strategy::Souffle, {{K::Merge, "G1", "G2"}});
  ASSERT_EQ(r.refused.size(), 1u);
  const Stage& g1 = k0.stages[0];
  // The merged kernel's launch keeps the larger of the two blocks' resources (the same here).
  std::string expected =
      "merging is impossible: the kernel would need 1 grid sync but its stage G1 "
      "(/fc_G1) (" +
      g1.schedule + ") needs " + std::to_string(g1.blocks) + " blocks, only " +
      std::to_string(k0.co_resident) + " co-resident on A100-SXM4-40GB";
  EXPECT_EQ(r.refused[0].reason, expected);
  EXPECT_EQ(kernels(r), kernels(base));
}

TEST(Decisions, ReplanReusesTheTransformedProgram) {
  te::TeProgram p = two_layers(64);
  PlanOptions o;
  o.gpu = gpu::gpu_spec("a100");
  FusionPlan base = plan(p, o);
  o.decisions.edits = {{K::Pin, "R1", ""}};
  FusionPlan r = replan(base, o);
  verify(r);
  EXPECT_EQ(kernels(r), (Names{{"G1"}, {"R1"}, {"G2", "R2"}}));
  for (const PassRecord& rec : r.passes) EXPECT_NE(rec.step, Step::Horizontal);
  EXPECT_EQ(print(plan(p, o)), print(r));
}

}  // namespace
}  // namespace souffle::plan
