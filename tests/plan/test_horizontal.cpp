// Horizontal transformation: before/after TE text on Q/K/V-style programs, decisions, and the
// interpreter's outputs before and after on random inputs and on every sample model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "core/analysis/analysis.h"
#include "core/interp/interpreter.h"
#include "core/plan/horizontal.h"
#include "core/plan/vertical.h"
#include "core/session/load.h"
#include "core/session/test_data.h"
#include "core/te/builder.h"
#include "core/te/printer.h"
#include "core/te/verify.h"
#include "tests/plan/plan_test_util.h"

namespace souffle::plan {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;
using namespace souffle::plan::testing;

TransformResult horizontal(const te::TeProgram& p, const TransformOptions& o = {}) {
  TransformResult r = horizontal_transform(p, analysis::analyze(p), o);
  te::verify(r.program);
  expect_same_outputs(p, r.program, 11);
  return r;
}

te::Op gemm(const std::string& name, const te::Tensor& a, const te::Tensor& b) {
  int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  return te::reduce(name, {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const Idx& i, const Idx& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

/// x -> Q, K, V projections; S = Q + K * V element-wise.
struct Qkv {
  te::TeProgram p;
  te::Op q, k, v, s;
};
Qkv qkv_program() {
  Qkv r;
  auto x = te::make_input("x", {4, 8}, DType::Float32);
  auto wq = te::make_input("Wq", {8, 6}, DType::Float32);
  auto wk = te::make_input("Wk", {8, 6}, DType::Float32);
  auto wv = te::make_input("Wv", {8, 6}, DType::Float32);
  r.q = gemm("Q", x, wq);
  r.k = gemm("K", x, wk);
  r.v = gemm("V", x, wv);
  r.s = te::compute("S", {4, 6}, DType::Float32, [&](const Idx& i) {
    return te::read(r.q->output, i) + te::read(r.k->output, i) * te::read(r.v->output, i);
  });
  r.p = program({x, wq, wk, wv}, {r.q, r.k, r.v, r.s}, {r.s->output});
  return r;
}

TEST(Horizontal, QkvProjectionsBecomeOneTe) {
  Qkv m = qkv_program();
  EXPECT_EQ(te::print(*m.q), "Q[i0 < 4, i1 < 6] = sum(k0 < 8; (x[i0, k0] * Wq[k0, i1]))");
  TransformResult res = horizontal(m.p);
  ASSERT_EQ(res.program.ops.size(), 2u);
  EXPECT_EQ(te::print(*res.program.ops[0]),
            "Q_h3[g < 3, i0 < 4, i1 < 6] = sum(k0 < 8; select((g == 0), (x[i0, k0] * Wq[k0, i1]), "
            "select((g == 1), (x[i0, k0] * Wk[k0, i1]), (x[i0, k0] * Wv[k0, i1]))))");
  EXPECT_EQ(te::print(*res.program.ops[1]),
            "S[i0 < 4, i1 < 6] = (Q_h3[0, i0, i1] + (Q_h3[1, i0, i1] * Q_h3[2, i0, i1]))");
  ASSERT_EQ(res.sites.size(), 1u);
  const TransformSite& s = res.sites[0];
  EXPECT_EQ(s.key, "h:K,Q,V");
  EXPECT_TRUE(s.applied);
  EXPECT_EQ(s.result, "Q_h3");
  EXPECT_EQ(s.reason, "spatial reuse of x: 3 independent contractions read it");
}

TEST(Horizontal, ForbidAndIllegalForce) {
  Qkv m = qkv_program();
  TransformOptions o;
  o.forbid = {"h:K,Q,V"};
  TransformResult res = horizontal(m.p, o);
  EXPECT_EQ(res.program.ops.size(), 4u);
  ASSERT_EQ(res.sites.size(), 1u);
  EXPECT_FALSE(res.sites[0].applied);
  EXPECT_EQ(res.sites[0].reason, "forbidden by a decision");

  TransformOptions f;
  f.force = {"h:Q,S"};
  res = horizontal(m.p, f);
  ASSERT_GE(res.sites.size(), 1u);
  EXPECT_EQ(res.sites[0].key, "h:Q,S");
  EXPECT_FALSE(res.sites[0].applied);
  EXPECT_EQ(res.sites[0].reason,
            "forced merge refused: Q and S differ in shape, dtype or reduction");
  f.force = {"h:Q,nope"};
  res = horizontal(m.p, f);
  EXPECT_EQ(res.sites[0].reason, "forced merge refused: no TE named nope");
}

TEST(Horizontal, ForcedPairIsMergedAndTheRestSearched) {
  Qkv m = qkv_program();
  TransformOptions f;
  f.force = {"h:K,V"};
  TransformResult res = horizontal(m.p, f);
  ASSERT_EQ(res.sites.size(), 1u);  // Q alone is left: no group of two
  EXPECT_TRUE(res.sites[0].applied);
  EXPECT_EQ(res.sites[0].result, "K_h2");
  EXPECT_EQ(res.program.ops.size(), 3u);
}

TEST(Horizontal, DependentReadersAreNotMerged) {
  auto x = te::make_input("x", {4, 4}, DType::Float32);
  auto a = gemm("A", x, x);
  auto b = te::reduce("B", {4, 4}, DType::Float32, te::ReduceKind::Sum, {4},
                      [&](const Idx& i, const Idx& r) {
                        return te::read(x, {i[0], r[0]}) * te::read(a->output, {r[0], i[1]});
                      });
  TransformResult res = horizontal(program({x}, {a, b}, {b->output}));
  EXPECT_TRUE(res.sites.empty());
  EXPECT_EQ(res.program.ops.size(), 2u);
}

TEST(Horizontal, ElementWiseGroupsAreLeftUnlessForced) {
  auto x = te::make_input("x", {8}, DType::Float32);
  auto a = te::compute("a", {8}, DType::Float32,
                       [&](const Idx& i) { return te::sigmoid(te::read(x, i)); });
  auto b =
      te::compute("b", {8}, DType::Float32, [&](const Idx& i) { return te::tanh(te::read(x, i)); });
  auto p = program({x}, {a, b}, {a->output, b->output});
  TransformResult res = horizontal(p);
  ASSERT_EQ(res.sites.size(), 1u);
  EXPECT_EQ(res.sites[0].reason, "element-wise TEs: left to the vertical transformation");
  TransformOptions f;
  f.force = {"h:a,b"};
  res = horizontal(p, f);
  // Both were outputs: they stay as views of the merged TE.
  ASSERT_EQ(res.program.ops.size(), 3u);
  EXPECT_EQ(te::print(*res.program.ops[0]),
            "a_h2[g < 2, i0 < 8] = select((g == 0), sigmoid(x[i0]), tanh(x[i0]))");
  EXPECT_EQ(te::print(*res.program.ops[1]), "a[i0 < 8] = a_h2[0, i0]");
  EXPECT_EQ(te::print(*res.program.ops[2]), "b[i0 < 8] = a_h2[1, i0]");
}

TEST(Horizontal, TwoMergesThatWouldFormACycleAreRefused) {
  // A1, A2 read x; B1, B2 read y; A1 -> B2 and B1 -> A2 via the second operand.
  auto x = te::make_input("x", {4, 4}, DType::Float32);
  auto y = te::make_input("y", {4, 4}, DType::Float32);
  auto a1 = gemm("A1", x, x);
  auto b1 = gemm("B1", y, y);
  auto a2 = gemm("A2", x, b1->output);
  auto b2 = gemm("B2", y, a1->output);
  auto p = program({x, y}, {a1, b1, a2, b2}, {a2->output, b2->output});
  TransformResult res = horizontal(p);
  ASSERT_EQ(res.sites.size(), 2u);
  EXPECT_NE(res.sites[0].applied, res.sites[1].applied);
  const TransformSite& refused = res.sites[0].applied ? res.sites[1] : res.sites[0];
  EXPECT_EQ(refused.reason, "merging would create a cycle with an earlier merge");
}

// ---------------------------------------------------------------- sample models

TEST(Horizontal, EverySampleModelKeepsItsOutputs) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(SOUFFLE_SOURCE_DIR) / "sample_models";
  int models = 0;
  for (const char* name : {"bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"}) {
    const fs::path dir = root / name;
    if (!fs::exists(dir / "model.onnx")) continue;
    SCOPED_TRACE(name);
    ++models;
    LoadedModel m = load_model((dir / "model.onnx").string());
    auto sets = read_test_data(dir.string());
    ASSERT_FALSE(sets.empty());
    TransformResult h = horizontal_transform(m.program, analysis::analyze(m.program));
    te::verify(h.program);
    // Then vertical on the merged program: the pipeline order the souffle strategy uses.
    TransformResult v = vertical_transform(h.program, analysis::analyze(h.program));
    int applied = 0, v_applied = 0;
    for (const TransformSite& s : h.sites) applied += s.applied;
    for (const TransformSite& s : v.sites) v_applied += s.applied;
    interp::InterpOptions f64;
    f64.f64 = true;
    auto before = interp::run(m.program, sets[0].inputs, f64);
    double h_vs_original = worst_rel_l2(before, interp::run(h.program, sets[0].inputs, f64));
    double hv_vs_original = worst_rel_l2(before, interp::run(v.program, sets[0].inputs, f64));
    EXPECT_LE(h_vs_original, 1e-6);
    EXPECT_LE(hv_vs_original, 1e-6);
    double vs_reference = worst_rel_l2(sets[0].outputs, interp::run(v.program, sets[0].inputs));
    EXPECT_LE(vs_reference, 1e-4);
    // The other order: vertical first resolves views (LSTM's per-step slices of Y), which
    // exposes the wavefront's common inputs to the horizontal search.
    TransformResult v1 = vertical_transform(m.program, analysis::analyze(m.program));
    TransformResult h2 = horizontal_transform(v1.program, analysis::analyze(v1.program));
    te::verify(h2.program);
    int h2_applied = 0;
    for (const TransformSite& s : h2.sites) h2_applied += s.applied;
    double vh_vs_original = worst_rel_l2(before, interp::run(h2.program, sets[0].inputs, f64));
    EXPECT_LE(vh_vs_original, 1e-6);
    std::cout << "[horizontal] " << name << " vertical first: " << v1.program.ops.size()
              << " TEs, then horizontal " << h2_applied << " of " << h2.sites.size()
              << " sites applied -> " << h2.program.ops.size() << " TEs; rel L2 vs original "
              << vh_vs_original << "\n";
    std::cout << "[horizontal] " << name << ": " << m.program.ops.size() << " TEs -> "
              << h.program.ops.size() << ", sites " << h.sites.size() << ", applied " << applied
              << "; then vertical -> " << v.program.ops.size() << " TEs (" << v_applied << " of "
              << v.sites.size() << " sites); rel L2 vs original " << hv_vs_original
              << ", vs reference " << vs_reference << "\n";
  }
  EXPECT_GT(models, 0);
}

}  // namespace
}  // namespace souffle::plan
