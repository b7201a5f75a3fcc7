// Vertical transformation: before/after TE text on hand-built chains, and the interpreter's
// outputs before and after on random inputs and on every sample model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "core/analysis/analysis.h"
#include "core/interp/interpreter.h"
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

Expr ci(int64_t v) {
  return te::int_imm(v);
}

TransformResult vertical(const te::TeProgram& p, const TransformOptions& o = {}) {
  TransformResult r = vertical_transform(p, analysis::analyze(p), o);
  te::verify(r.program);
  expect_same_outputs(p, r.program);
  return r;
}

const TransformSite* site(const TransformResult& r, const std::string& key) {
  for (const TransformSite& s : r.sites)
    if (s.key == key) return &s;
  return nullptr;
}

te::Op relu(const std::string& name, const te::Tensor& x) {
  return te::compute(name, x->shape, DType::Float32,
                     [&](const Idx& i) { return te::max(te::read(x, i), te::float_imm(0)); });
}

TEST(Vertical, ReshapeTransposeReluBecomesOneTe) {
  auto x = te::make_input("x", {2, 3, 4}, DType::Float32);
  auto r = te::compute("r", {6, 4}, DType::Float32, [&](const Idx& i) {
    return te::read(x, {te::floordiv(i[0], ci(3)), te::floormod(i[0], ci(3)), i[1]});
  });
  auto t = te::compute("t", {4, 6}, DType::Float32, [&](const Idx& i) {
    return te::read(r->output, {i[1], i[0]});
  });
  auto y = relu("y", t->output);
  auto p = program({x}, {r, t, y});
  EXPECT_EQ(te::print(*y), "y[i0 < 4, i1 < 6] = max(t[i0, i1], 0f)");
  TransformResult res = vertical(p);
  ASSERT_EQ(res.program.ops.size(), 1u);
  EXPECT_EQ(te::print(*res.program.ops[0]),
            "y[i0 < 4, i1 < 6] = max(x[floordiv(i1, 3), floormod(i1, 3), i0], 0f)");
  ASSERT_EQ(res.sites.size(), 2u);
  EXPECT_EQ(res.sites[0].key, "v:r>t");
  EXPECT_TRUE(res.sites[0].applied);
  EXPECT_EQ(res.sites[0].result, "t");
  EXPECT_EQ(res.sites[1].key, "v:t>y");
  EXPECT_EQ(res.sites[1].reason, "pure view: composed into the consumer's index map");
}

TEST(Vertical, ReshapeAndItsInverseCancel) {
  auto x = te::make_input("x", {12}, DType::Float32);
  auto a = te::compute("a", {3, 4}, DType::Float32,
                       [&](const Idx& i) { return te::read(x, {i[0] * ci(4) + i[1]}); });
  auto b = te::compute("b", {2, 6}, DType::Float32, [&](const Idx& i) {
    Expr lin = i[0] * ci(6) + i[1];
    return te::read(a->output, {te::floordiv(lin, ci(4)), te::floormod(lin, ci(4))});
  });
  auto c = te::compute("c", {12}, DType::Float32, [&](const Idx& i) {
    return te::read(b->output, {te::floordiv(i[0], ci(6)), te::floormod(i[0], ci(6))}) * 2.0;
  });
  TransformResult res = vertical(program({x}, {a, b, c}));
  ASSERT_EQ(res.program.ops.size(), 1u);
  EXPECT_EQ(te::print(*res.program.ops[0]), "c[i0 < 12] = (x[i0] * 2f)");
}

TEST(Vertical, SliceOfConcatResolvesTheGuard) {
  auto x = te::make_input("x", {4}, DType::Float32);
  auto y = te::make_input("y", {4}, DType::Float32);
  auto cat = te::compute("cat", {8}, DType::Float32, [&](const Idx& i) {
    return te::select(te::lt(i[0], ci(4)), te::read(x, {i[0]}), te::read(y, {i[0] - ci(4)}));
  });
  auto sl = te::compute("sl", {3}, DType::Float32, [&](const Idx& i) {
    return te::exp(te::read(cat->output, {i[0] + ci(5)}));
  });
  TransformResult res = vertical(program({x, y}, {cat, sl}));
  ASSERT_EQ(res.program.ops.size(), 1u);
  EXPECT_EQ(te::print(*res.program.ops[0]), "sl[i0 < 3] = exp(y[(i0 + 1)])");
}

te::Op gemm(const std::string& name, const te::Tensor& a, const te::Tensor& b) {
  int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  return te::reduce(name, {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const Idx& i, const Idx& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

TEST(Vertical, TransposeFeedingAGemmBecomesItsReadIndices) {
  auto a = te::make_input("A", {8, 16}, DType::Float32);
  auto w = te::make_input("W", {4, 16}, DType::Float32);
  auto wt = te::compute("Wt", {16, 4}, DType::Float32, [&](const Idx& i) {
    return te::read(w, {i[1], i[0]});
  });
  auto c = gemm("C", a, wt->output);
  auto g = te::compute("G", {8, 4}, DType::Float32,
                       [&](const Idx& i) { return te::tanh(te::read(c->output, i)); });
  TransformResult res = vertical(program({a, w}, {wt, c, g}));
  ASSERT_EQ(res.program.ops.size(), 2u);
  EXPECT_EQ(te::print(*res.program.ops[0]),
            "C[i0 < 8, i1 < 4] = sum(k0 < 16; (A[i0, k0] * W[i1, k0]))");
  // A reduction is never inlined, even into an element-wise consumer.
  const TransformSite* s = site(res, "v:C>G");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->applied);
  EXPECT_EQ(s->reason, "producer is a reduction");
}

te::TeProgram softmax_program() {
  auto x = te::make_input("x", {4, 8}, DType::Float32);
  auto mx = te::reduce("mx", {4}, DType::Float32, te::ReduceKind::Max, {8},
                       [&](const Idx& i, const Idx& k) {
                         return te::read(x, {i[0], k[0]});
                       });
  auto e = te::compute("e", {4, 8}, DType::Float32, [&](const Idx& i) {
    return te::exp(te::read(x, i) - te::read(mx->output, {i[0]}));
  });
  auto s = te::reduce("s", {4}, DType::Float32, te::ReduceKind::Sum, {8},
                      [&](const Idx& i, const Idx& k) {
                        return te::read(e->output, {i[0], k[0]});
                      });
  auto y = te::compute("y", {4, 8}, DType::Float32, [&](const Idx& i) {
    return te::read(e->output, i) / te::read(s->output, {i[0]});
  });
  return program({x}, {mx, e, s, y});
}

TEST(Vertical, SoftmaxExpIsRecomputedInBothReaders) {
  TransformResult res = vertical(softmax_program());
  ASSERT_EQ(res.program.ops.size(), 3u);
  EXPECT_EQ(te::print(*res.program.ops[1]), "s[i0 < 4] = sum(k0 < 8; exp((x[i0, k0] - mx[i0])))");
  EXPECT_EQ(te::print(*res.program.ops[2]),
            "y[i0 < 4, i1 < 8] = (exp((x[i0, i1] - mx[i0])) / s[i0])");
  const TransformSite* s = site(res, "v:e>y");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason, "cheap to recompute: 2 FLOPs x 1 per element");
}

TEST(Vertical, ForbidKeepsTheProducerForThatConsumer) {
  TransformOptions o;
  o.forbid = {"v:e>y"};
  TransformResult res = vertical(softmax_program(), o);
  ASSERT_EQ(res.program.ops.size(), 4u);  // e stays: y still reads it
  EXPECT_EQ(te::print(*res.program.ops[3]), "y[i0 < 4, i1 < 8] = (e[i0, i1] / s[i0])");
  EXPECT_EQ(site(res, "v:e>y")->reason, "forbidden by a decision");
  EXPECT_TRUE(site(res, "v:e>s")->applied);
}

TEST(Vertical, ExpensiveSharedProducerIsKeptUnlessForced) {
  auto x = te::make_input("x", {16}, DType::Float32);
  auto g = te::compute("g", {16}, DType::Float32, [&](const Idx& i) {
    Expr v = te::read(x, i);
    return v * 0.5 * (1.0 + te::erf(v * 0.7071067811865476));
  });
  auto a = te::compute("a", {16}, DType::Float32,
                       [&](const Idx& i) { return te::read(g->output, i) + 1.0; });
  auto b = te::compute("b", {16}, DType::Float32,
                       [&](const Idx& i) { return te::read(g->output, i) * 3.0; });
  auto p = program({x}, {g, a, b}, {a->output, b->output});
  TransformResult res = vertical(p);
  EXPECT_EQ(res.program.ops.size(), 3u);
  EXPECT_EQ(site(res, "v:g>a")->reason, "would recompute 5 FLOPs x 1 per element");
  TransformOptions o;
  o.force = {"v:g>a"};
  res = vertical(p, o);
  ASSERT_EQ(res.program.ops.size(), 3u);  // g kept for b
  EXPECT_TRUE(site(res, "v:g>a")->applied);
  EXPECT_EQ(te::print(*res.program.ops[1]),
            "a[i0 < 16] = (((x[i0] * 0.5f) * (1f + erf((x[i0] * 0.7071067811865476f)))) + 1f)");
}

TEST(Vertical, ProgramOutputsAreKept) {
  auto x = te::make_input("x", {16}, DType::Float32);
  auto r = relu("r", x);
  auto s = te::compute("s", {16}, DType::Float32,
                       [&](const Idx& i) { return te::read(r->output, i) + 1.0; });
  TransformResult res = vertical(program({x}, {r, s}, {r->output, s->output}));
  EXPECT_EQ(res.program.ops.size(), 2u);
  EXPECT_EQ(site(res, "v:r>s")->reason, "producer is a program output");
}

TEST(Vertical, SimplifierFoldsIndexArithmetic) {
  auto x = te::make_input("x", {4, 6}, DType::Float32);
  auto op = te::compute("y", {4, 6}, DType::Float32, [&](const Idx& i) {
    Expr lin = (i[0] * ci(6) + i[1]) * ci(1) + ci(0);
    Expr r = te::read(x, {te::floordiv(lin, ci(6)), te::floormod(lin, ci(6))});
    return te::select(te::ge(i[1], ci(0)), r, te::float_imm(0));
  });
  EXPECT_EQ(te::print(*simplify_index_math(op)), "y[i0 < 4, i1 < 6] = x[i0, i1]");
  te::Op same = simplify_index_math(simplify_index_math(op));
  EXPECT_EQ(simplify_index_math(same).get(), same.get());
}

// ---------------------------------------------------------------- sample models

TEST(Vertical, EverySampleModelKeepsItsOutputs) {
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
    analysis::Analysis an = analysis::analyze(m.program);
    TransformResult res = vertical_transform(m.program, an);
    te::verify(res.program);
    int applied = 0;
    for (const TransformSite& s : res.sites) applied += s.applied;
    interp::InterpOptions f64;
    f64.f64 = true;
    auto before = interp::run(m.program, sets[0].inputs, f64);
    auto after = interp::run(res.program, sets[0].inputs, f64);
    double vs_original = worst_rel_l2(before, after);
    EXPECT_LE(vs_original, 1e-6);
    auto after32 = interp::run(res.program, sets[0].inputs);
    double vs_reference = worst_rel_l2(sets[0].outputs, after32);
    EXPECT_LE(vs_reference, 1e-4);
    std::cout << "[vertical] " << name << ": " << m.program.ops.size() << " TEs -> "
              << res.program.ops.size() << ", sites " << res.sites.size() << ", applied " << applied
              << ", rel L2 vs original " << vs_original << ", vs reference " << vs_reference
              << "\n";
  }
  EXPECT_GT(models, 0);
}

}  // namespace
}  // namespace souffle::plan
