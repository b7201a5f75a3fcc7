// Characterization, dependency graph and reuse on small hand-built TE programs, and on one model.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/analysis/analysis.h"
#include "core/session/load.h"
#include "core/te/builder.h"

namespace souffle::analysis {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

te::Op gemm(const std::string& name, const te::Tensor& a, const te::Tensor& b) {
  int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  return te::reduce(name, {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const Idx& i, const Idx& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

te::TeProgram program(std::vector<te::Tensor> inputs, std::vector<te::Op> ops) {
  te::TeProgram p;
  p.name = "p";
  p.inputs = std::move(inputs);
  p.outputs = {ops.back()->output};
  p.ops = std::move(ops);
  return p;
}

TEST(Analysis, GemmIsOneReliesOnManyAndComputeIntensive) {
  auto a = te::make_input("A", {64, 64}, DType::Float32);
  auto b = te::make_input("B", {64, 64}, DType::Float32);
  Analysis an = analyze(program({a, b}, {gemm("C", a, b)}));
  ASSERT_EQ(an.tes.size(), 1u);
  const TeInfo& t = an.tes[0];
  EXPECT_EQ(t.kind, Intensity::Compute);
  EXPECT_TRUE(t.is_reduction);
  EXPECT_TRUE(t.is_contraction);
  EXPECT_FALSE(t.is_pure_view);
  EXPECT_EQ(t.iterations, 64 * 64 * 64);
  EXPECT_EQ(t.flops_per_point, 2);  // the multiply and the fold
  EXPECT_EQ(t.flops, 2 * 64 * 64 * 64);
  EXPECT_EQ(t.bytes_read, 2 * 64 * 64 * 4);
  EXPECT_EQ(t.bytes_written, 64 * 64 * 4);
  EXPECT_NEAR(t.arithmetic_intensity, 2.0 * 64 * 64 * 64 / (3 * 64 * 64), 1e-9);
  ASSERT_EQ(t.inputs.size(), 2u);
  for (const InputAccess& in : t.inputs) {
    EXPECT_EQ(in.kind, AccessKind::OneReliesOnMany);
    EXPECT_FALSE(in.injective);
    EXPECT_TRUE(in.quasi_affine);
    ASSERT_EQ(in.reads.size(), 1u);
    EXPECT_TRUE(in.reads[0].uses_reduce_axes);
  }
  EXPECT_EQ(t.inputs[0].reads[0].indices, "[i0, k0]");
  EXPECT_EQ(t.inputs[1].reads[0].indices, "[k0, i1]");
}

TEST(Analysis, MatrixVectorIsAComputeIntensiveContraction) {
  auto x = te::make_input("x", {1, 64}, DType::Float32);
  auto w = te::make_input("W", {64, 256}, DType::Float32);
  const TeInfo t = analyze(program({x, w}, {gemm("y", x, w)})).tes[0];
  EXPECT_LT(t.arithmetic_intensity, kComputeIntensityThreshold);
  EXPECT_TRUE(t.is_contraction);
  EXPECT_EQ(t.kind, Intensity::Compute);
  EXPECT_EQ(t.kind_reason, "contraction (intensity 1.96 < 8)");
  // A sum of squares reads one tensor: a reduction, not a contraction.
  auto ss = te::reduce("ss", {1}, DType::Float32, te::ReduceKind::Sum, {64},
                       [&](const Idx& i, const Idx& k) {
                         return te::read(x, {i[0], k[0]}) * te::read(x, {i[0], k[0]});
                       });
  const TeInfo s = analyze_op(*ss);
  EXPECT_FALSE(s.is_contraction);
  EXPECT_EQ(s.kind, Intensity::Memory);
  // A mean over a residual add reads two tensors along k but multiplies neither by the other,
  // and a variance squares one expression over both: neither is a contraction.
  auto r = te::make_input("r", {1, 64}, DType::Float32);
  auto mean = te::reduce("mean", {1}, DType::Float32, te::ReduceKind::Sum, {64},
                         [&](const Idx& i, const Idx& k) {
                           return (te::read(x, {i[0], k[0]}) + te::read(r, {i[0], k[0]})) * 0.5;
                         });
  EXPECT_FALSE(analyze_op(*mean).is_contraction);
  auto var = te::reduce("var", {1}, DType::Float32, te::ReduceKind::Sum, {64},
                        [&](const Idx& i, const Idx& k) {
                          te::Expr d = te::read(x, {i[0], k[0]}) + te::read(r, {i[0], k[0]});
                          return d * d;
                        });
  EXPECT_FALSE(analyze_op(*var).is_contraction);
}

TEST(Analysis, TransposeIsInjectivePureView) {
  auto x = te::make_input("x", {4, 8}, DType::Float32);
  auto op = te::compute("y", {8, 4}, DType::Float32, [&](const Idx& i) {
    return te::read(x, {i[1], i[0]});
  });
  Analysis an = analyze(program({x}, {op}));
  const TeInfo& t = an.tes[0];
  EXPECT_EQ(t.kind, Intensity::Memory);
  EXPECT_TRUE(t.is_pure_view);
  EXPECT_EQ(t.flops, 0);
  ASSERT_EQ(t.inputs.size(), 1u);
  EXPECT_EQ(t.inputs[0].kind, AccessKind::OneReliesOnOne);
  EXPECT_TRUE(t.inputs[0].injective);
  EXPECT_TRUE(t.inputs[0].quasi_affine);
  EXPECT_EQ(an.pure_views, 1);
}

TEST(Analysis, BroadcastIsOneReliesOnOneButNotInjective) {
  auto x = te::make_input("x", {4, 8}, DType::Float32);
  auto b = te::make_input("b", {8}, DType::Float32);
  auto op = te::compute("y", {4, 8}, DType::Float32,
                        [&](const Idx& i) { return te::read(x, i) + te::read(b, {i[1]}); });
  const TeInfo t = analyze(program({x, b}, {op})).tes[0];
  ASSERT_EQ(t.inputs.size(), 2u);
  EXPECT_TRUE(t.inputs[0].injective);
  EXPECT_EQ(t.inputs[1].kind, AccessKind::OneReliesOnOne);
  EXPECT_FALSE(t.inputs[1].injective);
  EXPECT_EQ(t.inputs[1].reads[0].broadcast_axes, std::vector<int>{0});
  EXPECT_EQ(t.flops, 32);
  EXPECT_EQ(t.bytes_read, (32 + 8) * 4);
  EXPECT_FALSE(t.is_pure_view);
}

TEST(Analysis, QuasiAffineMapsAndInjectivity) {
  auto x = te::make_input("x", {6}, DType::Float32);
  auto y = te::make_input("y", {2, 3}, DType::Float32);
  auto one = [&](const te::Tensor& src, const Shape& shape, const te::IndexFn& fn) {
    return analyze_op(*te::compute("o", shape, DType::Float32, fn)).inputs.at(0);
  };
  // Reshape [6] -> [2, 3]: affine, proven by coefficient dominance.
  InputAccess r1 = one(x, {2, 3}, [&](const Idx& i) { return te::read(x, {i[0] * 3 + i[1]}); });
  EXPECT_TRUE(r1.injective);
  EXPECT_TRUE(r1.quasi_affine);
  // Reshape [2, 3] -> [6]: floordiv/floormod, proven by enumeration.
  InputAccess r2 = one(y, {6}, [&](const Idx& i) {
    return te::read(y, {te::floordiv(i[0], te::int_imm(3)), te::floormod(i[0], te::int_imm(3))});
  });
  EXPECT_TRUE(r2.injective);
  EXPECT_TRUE(r2.quasi_affine);
  // A strided slice.
  InputAccess r3 = one(x, {3}, [&](const Idx& i) { return te::read(x, {i[0] * 2 + 1}); });
  EXPECT_TRUE(r3.injective);
  // Tiling (floormod) and a sliding window (i0 + i1) both reuse elements.
  InputAccess r4 =
      one(x, {6}, [&](const Idx& i) { return te::read(x, {te::floormod(i[0], te::int_imm(3))}); });
  EXPECT_FALSE(r4.injective);
  EXPECT_TRUE(r4.quasi_affine);
  EXPECT_EQ(r4.kind, AccessKind::OneReliesOnOne);
  InputAccess r5 = one(x, {3, 3}, [&](const Idx& i) { return te::read(x, {i[0] + i[1]}); });
  EXPECT_FALSE(r5.injective);
  // Min clamps are not quasi-affine.
  InputAccess r6 =
      one(x, {6}, [&](const Idx& i) { return te::read(x, {te::min(i[0], te::int_imm(4))}); });
  EXPECT_FALSE(r6.quasi_affine);
  EXPECT_FALSE(r6.injective);
  // Two reads at different places: one output relies on several elements.
  InputAccess r7 =
      one(x, {5}, [&](const Idx& i) { return te::read(x, {i[0]}) + te::read(x, {i[0] + 1}); });
  EXPECT_EQ(r7.kind, AccessKind::OneReliesOnMany);
  EXPECT_EQ(r7.reads.size(), 2u);
}

TEST(Analysis, GatherIsDataDependent) {
  auto x = te::make_input("x", {10, 4}, DType::Float32);
  auto idx = te::make_input("idx", {3}, DType::Int64);
  auto op = te::compute("g", {3, 4}, DType::Float32, [&](const Idx& i) {
    return te::read(x, {te::read(idx, {i[0]}), i[1]});
  });
  TeInfo t = analyze_op(*op);
  ASSERT_EQ(t.inputs.size(), 2u);
  EXPECT_EQ(t.inputs[0].name, "x");
  EXPECT_TRUE(t.inputs[0].reads[0].data_dependent);
  EXPECT_FALSE(t.inputs[0].quasi_affine);
  EXPECT_FALSE(t.inputs[0].injective);
  EXPECT_EQ(t.inputs[1].name, "idx");
  EXPECT_FALSE(t.inputs[1].injective);  // broadcast over axis 1
  EXPECT_EQ(t.flops, 0);
  EXPECT_FALSE(t.is_pure_view);
}

te::TeProgram softmax_program() {
  auto x = te::make_input("x", {4, 8}, DType::Float32);
  auto mx = te::reduce("max", {4, 1}, DType::Float32, te::ReduceKind::Max, {8},
                       [&](const Idx& i, const Idx& k) {
                         return te::read(x, {i[0], k[0]});
                       });
  auto e = te::compute("exp", {4, 8}, DType::Float32, [&](const Idx& i) {
    return te::exp(te::read(x, i) - te::read(mx->output, {i[0], te::int_imm(0)}));
  });
  auto s = te::reduce("sum", {4, 1}, DType::Float32, te::ReduceKind::Sum, {8},
                      [&](const Idx& i, const Idx& k) {
                        return te::read(e->output, {i[0], k[0]});
                      });
  auto d = te::compute("div", {4, 8}, DType::Float32, [&](const Idx& i) {
    return te::read(e->output, i) / te::read(s->output, {i[0], te::int_imm(0)});
  });
  return program({x}, {mx, e, s, d});
}

TEST(Analysis, SoftmaxHasTemporalReuse) {
  Analysis an = analyze(softmax_program());
  ASSERT_EQ(an.tes.size(), 4u);
  EXPECT_EQ(an.compute_intensive, 0);
  EXPECT_EQ(an.tes[0].flops, 32);      // one max per element
  EXPECT_EQ(an.tes[1].flops, 2 * 32);  // subtract and exp
  EXPECT_EQ(an.tes[3].flops, 32);
  ASSERT_EQ(an.reuse.size(), 2u);
  EXPECT_EQ(an.reuse[0].kind, ReuseKind::Temporal);
  EXPECT_EQ(an.reuse[0].name, "x");
  EXPECT_EQ(an.reuse[0].readers, (std::vector<int>{0, 1}));
  EXPECT_EQ(an.reuse[0].bytes, 128);
  EXPECT_EQ(an.reuse[1].kind, ReuseKind::Temporal);
  EXPECT_EQ(an.reuse[1].name, "exp");
  EXPECT_EQ(an.reuse[1].readers, (std::vector<int>{2, 3}));
  EXPECT_EQ(an.reuse[1].elements, 32);

  const TensorInfo& e = an.tensors[static_cast<size_t>(an.tensor_index("exp"))];
  EXPECT_EQ(e.producer, 1);
  EXPECT_EQ(e.consumers, (std::vector<int>{2, 3}));
  EXPECT_EQ(e.first_op, 1);
  EXPECT_EQ(e.last_op, 3);
  const TensorInfo& out = an.tensors[static_cast<size_t>(an.tensor_index("div"))];
  EXPECT_TRUE(out.is_output);
  EXPECT_EQ(out.last_op, 4);
  EXPECT_EQ(an.bfs_order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(an.tes[3].level, 3);
  // The max is read through a broadcast of its kept axis.
  EXPECT_EQ(an.tes[1].inputs[1].reads[0].broadcast_axes, std::vector<int>{1});
  EXPECT_EQ(an.tes[2].inputs[0].kind, AccessKind::OneReliesOnMany);
}

TEST(Analysis, QkvHasSpatialReuse) {
  auto x = te::make_input("X", {16, 32}, DType::Float32);
  auto wq = te::make_input("Wq", {32, 32}, DType::Float32);
  auto wk = te::make_input("Wk", {32, 32}, DType::Float32);
  auto wv = te::make_input("Wv", {32, 32}, DType::Float32);
  auto q = gemm("Q", x, wq), k = gemm("K", x, wk), v = gemm("V", x, wv);
  auto qk = te::compute("QK", {16, 32}, DType::Float32, [&](const Idx& i) {
    return te::read(q->output, i) + te::read(k->output, i) * te::read(v->output, i);
  });
  Analysis an = analyze(program({x, wq, wk, wv}, {q, k, v, qk}));
  ASSERT_EQ(an.reuse.size(), 1u);
  EXPECT_EQ(an.reuse[0].kind, ReuseKind::Spatial);
  EXPECT_EQ(an.reuse[0].name, "X");
  EXPECT_EQ(an.reuse[0].readers, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(an.reuse[0].bytes, 16 * 32 * 4);
  EXPECT_EQ(an.compute_intensive, 3);  // 2*16*32*32 / (512 + 1024 + 512) = 16
  EXPECT_EQ(an.tes[3].kind, Intensity::Memory);
  EXPECT_EQ(an.tes[3].level, 1);
  EXPECT_EQ(an.bfs_order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(an.total_flops, 3 * 2 * 16 * 32 * 32 + 2 * 16 * 32);
}

// A horizontally fused GEMM picks one operand pair per point by an index predicate: it does one
// GEMM's work per output element, not the sum of its branches'; a select on data computes both.
TEST(Analysis, SelectOnAnIndexCountsOneBranch) {
  auto x = te::make_input("X", {16, 32}, DType::Float32);
  auto wq = te::make_input("Wq", {32, 32}, DType::Float32);
  auto wk = te::make_input("Wk", {32, 32}, DType::Float32);
  auto wv = te::make_input("Wv", {32, 32}, DType::Float32);
  auto qkv = te::reduce(
      "QKV", {3, 16, 32}, DType::Float32, te::ReduceKind::Sum, {32},
      [&](const Idx& i, const Idx& r) {
        auto a = te::read(x, {i[1], r[0]});
        auto pick = [&](const te::Tensor& w) { return a * te::read(w, {r[0], i[2]}); };
        return te::select(te::eq(i[0], te::imm(DType::Int64, 0)), pick(wq),
                          te::select(te::eq(i[0], te::imm(DType::Int64, 1)), pick(wk), pick(wv)));
      });
  auto relu = te::compute("R", {16, 32}, DType::Float32, [&](const Idx& i) {
    auto v = te::read(x, i);
    return te::select(te::gt(v, te::float_imm(0)), v * 2.0, v * 0.5);
  });
  Analysis an = analyze(program({x, wq, wk, wv}, {qkv, relu}));
  EXPECT_EQ(an.tes[0].flops_per_point, 2);  // one multiply and the fold, as one GEMM
  EXPECT_EQ(an.tes[0].flops, 2 * 3 * 16 * 32 * 32);
  EXPECT_EQ(an.tes[0].kind, Intensity::Compute);
  EXPECT_EQ(an.tes[1].flops_per_point, 4);  // the comparison, the select and both products
}

TEST(Analysis, PrintedText) {
  auto x = te::make_input("x", {2, 3}, DType::Float32);
  auto t = te::compute("t", {3, 2}, DType::Float32, [&](const Idx& i) {
    return te::read(x, {i[1], i[0]});
  });
  auto r = te::compute("r", {3, 2}, DType::Float32, [&](const Idx& i) {
    return te::max(te::read(t->output, i), te::float_imm(0.0));
  });
  std::string text = print(analyze(program({x}, {t, r})));
  EXPECT_EQ(text,
            "analysis p: 2 TEs (0 compute-intensive, 2 memory-intensive, 1 pure views), 6 FLOPs, "
            "96 bytes\n"
            "threshold: compute-intensive at >= 8 FLOPs per element accessed, or a contraction\n"
            "te 0 t [3, 2]: memory-intensive (intensity 0.00 < 8), pure view, level 0\n"
            "  flops 0 (0 x 6), read 24 B, written 24 B\n"
            "  reads x: one-relies-on-one, injective, quasi-affine, 6 elements\n"
            "    [i1, i0]\n"
            "te 1 r [3, 2]: memory-intensive (intensity 0.50 < 8), level 1\n"
            "  flops 6 (1 x 6), read 24 B, written 24 B\n"
            "  reads t: one-relies-on-one, injective, quasi-affine, 6 elements\n"
            "    [i0, i1]\n"
            "tensors:\n"
            "  x f32[2, 3] input, 24 B, producer -, consumers 0, live [0, 0]\n"
            "  t f32[3, 2] compute, 24 B, producer 0, consumers 1, live [0, 1]\n"
            "  r f32[3, 2] compute output, 24 B, producer 1, consumers -, live [1, 2]\n"
            "bfs: 0,1\n"
            "reuse:\n");
}

TEST(Analysis, SampleBert) {
  std::string path = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no sample model at " << path;
  LoadedModel m;
  try {
    m = load_model(path);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the model does not load yet: " << e.what();
  }
  Analysis an = analyze(m.program);
  EXPECT_EQ(an.tes.size(), m.program.ops.size());
  // 2 layers x (Q, K, V, QK^T, AV, output, FFN x 2) GEMMs, at least.
  EXPECT_GE(an.compute_intensive, 16);
  EXPECT_GT(an.memory_intensive, an.compute_intensive);
  bool spatial = false, temporal = false;
  for (const ReuseSite& s : an.reuse) {
    if (s.kind == ReuseKind::Spatial && s.readers.size() >= 3) spatial = true;
    if (s.kind == ReuseKind::Temporal) temporal = true;
  }
  EXPECT_TRUE(spatial) << "Q/K/V read one input";
  EXPECT_TRUE(temporal) << "softmax and LayerNorm re-read tensors";
  EXPECT_GT(an.total_flops, 2 * 64 * 128 * 128 * 6);
  for (const TensorInfo& t : an.tensors) {
    EXPECT_LE(t.first_op, t.last_op) << t.name;
  }
  EXPECT_EQ(an.bfs_order.size(), an.tes.size());
}

}  // namespace
}  // namespace souffle::analysis

namespace souffle::analysis {
namespace {

class SampleModels : public ::testing::TestWithParam<const char*> {};

TEST_P(SampleModels, AnalysisIsConsistent) {
  std::string path =
      std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + GetParam() + "/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no sample model at " << path;
  LoadedModel m;
  try {
    m = load_model(path);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the model does not load yet: " << e.what();
  }
  auto start = std::chrono::steady_clock::now();
  Analysis an = analyze(m.program);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(an.tes.size(), m.program.ops.size());
  EXPECT_GT(an.compute_intensive, 0);
  int64_t flops = 0;
  for (const TeInfo& t : an.tes) {
    flops += t.flops;
    EXPECT_EQ(t.kind == Intensity::Compute,
              t.arithmetic_intensity >= kComputeIntensityThreshold || t.is_contraction)
        << t.name;
    for (const InputAccess& in : t.inputs) {
      const TensorInfo& ti = an.tensors[static_cast<size_t>(in.tensor)];
      EXPECT_LE(ti.first_op, t.op) << in.name;
      EXPECT_GE(ti.last_op, t.op) << in.name;
      if (ti.producer >= 0) {
        EXPECT_LT(an.tes[static_cast<size_t>(ti.producer)].level, t.level);
      }
    }
  }
  EXPECT_EQ(flops, an.total_flops);
  std::string text = print(an);
  EXPECT_NE(text.find("reuse:"), std::string::npos);
  std::cout << GetParam() << ": " << an.tes.size() << " TEs, " << an.compute_intensive
            << " compute-intensive, " << an.pure_views << " pure views, " << an.reuse.size()
            << " reuse sites, analyzed in " << ms << " ms\n";
  if (std::getenv("SOUFFLE_PRINT_ANALYSIS")) std::cout << text;
}

INSTANTIATE_TEST_SUITE_P(All, SampleModels,
                         ::testing::Values("bert", "resnext", "lstm", "efficientnet", "swin",
                                           "mmoe"));

}  // namespace
}  // namespace souffle::analysis
