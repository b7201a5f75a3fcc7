// Plans never worse than the simple strategies: on every sample model and on zoo models (a
// MobileNet, two transformers), on the A100, H100 and H200 specs and on a GPU whose grid barrier
// costs 1,000 us (a spec that says so, and a calibration that measured it), the souffle plan is
// never estimated above the rules plan of the same model, nor rules above unfused. Plans only:
// kernels are built to be priced, never emulated.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu/calibration.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/load.h"
#include "core/te/builder.h"
#include "tests/sample_model.h"

namespace souffle::plan {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

/// A GPU to plan for: a spec, and the calibration its pricer reads (none: the spec's figures).
struct Gpu {
  std::string label;
  gpu::GpuSpec spec;
  std::optional<gpu::Calibration> calibration;
};

gpu::GpuSpec slow_barrier_spec() {
  gpu::GpuSpec slow = gpu::gpu_spec("a100");
  slow.name = "A100 with a 1,000 us grid barrier";
  slow.grid_sync_overhead_us = 1000;
  return slow;
}

const std::vector<Gpu>& gpus() {
  static const std::vector<Gpu> all = [] {
    std::vector<Gpu> out;
    for (const char* name : {"a100", "h100", "h200"})
      out.push_back({name, gpu::gpu_spec(name), {}});
    out.push_back({"a100 with a 1,000 us grid barrier", slow_barrier_spec(), {}});
    // A calibration of a slow (or virtualised) device measured its barrier at 1,000 us.
    gpu::Calibration c;
    c.device = "a device with a slow grid barrier";
    c.compute_capability = "9.0";
    c.sm_count = 132;
    c.grid_barrier = {{132, 1, 256, 1000.0}, {264, 2, 256, 1000.0}, {528, 4, 256, 1000.0}};
    c.grid_barrier_fit = gpu::fit_barrier_cost(c.grid_barrier);
    out.push_back({"h100 calibrated with a 1,000 us grid barrier", gpu::gpu_spec("h100"), c});
    return out;
  }();
  return all;
}

FusionPlan planned(const te::TeProgram& program, Strategy s, const Gpu& g) {
  PlanOptions o;
  o.strategy = s;
  o.gpu = g.spec;
  o.pricer = std::make_shared<schedule::PlanPricer>(g.spec, o.precision, g.calibration);
  FusionPlan p = plan(program, o);
  verify(p);
  return p;
}

/// Souffle <= rules <= unfused on every GPU; a failure names the model, the GPU and both figures.
void expect_never_worse(const std::string& model, const te::TeProgram& program) {
  for (const Gpu& g : gpus()) {
    const double unfused = planned(program, Strategy::Unfused, g).est_time_us;
    const double rules = planned(program, Strategy::Rules, g).est_time_us;
    const FusionPlan souffle = planned(program, Strategy::Souffle, g);
    EXPECT_LE(souffle.est_time_us, rules + 1e-6)
        << fmt::format("{} on {}: souffle estimated {:.2f} us, above rules' {:.2f} us", model,
                       g.label, souffle.est_time_us, rules);
    EXPECT_LE(rules, unfused + 1e-6)
        << fmt::format("{} on {}: rules estimated {:.2f} us, above unfused's {:.2f} us", model,
                       g.label, rules, unfused);
    // Every rules' cut kept says which prices it compared, the kept one the lower.
    for (const Partition& k : souffle.partitions)
      for (const Decision& d : k.decisions) {
        if (d.kind != DecisionKind::RulesCut) continue;
        EXPECT_NE(d.reason.find("rules' cut is"), std::string::npos) << d.reason;
        if (d.merged_us > 0) {
          EXPECT_LT(d.split_us, d.merged_us) << model << " on " << g.label;
        }
      }
  }
}

class SampleModel : public testing::TestWithParam<std::string> {};

TEST_P(SampleModel, SouffleNeverAboveRulesNorRulesAboveUnfused) {
  expect_never_worse(GetParam(), test::sample_model(GetParam()).program);
}

INSTANTIATE_TEST_SUITE_P(All, SampleModel,
                         testing::Values("bert", "resnext", "lstm", "efficientnet", "swin",
                                         "mmoe"));

class ZooModel : public testing::TestWithParam<std::string> {};

TEST_P(ZooModel, SouffleNeverAboveRulesNorRulesAboveUnfused) {
  const std::string path =
      std::string(SOUFFLE_SOURCE_DIR) + "/tests/zoo/models/" + GetParam() + "/ts/model.onnx";
  expect_never_worse(GetParam(), load_model(path).program);
}

// A MobileNet (depthwise-separable convolutions, squeeze-excitation), an encoder and a causal
// decoder.
INSTANTIATE_TEST_SUITE_P(Some, ZooModel, testing::Values("mobilenet_v3_small", "vit", "gpt2"));

/// G1 = A x W1 (m x n, k deep), R1 = relu(G1) in its epilogue, G2 = R1 x W2 (m x n, n deep):
/// G2 reads R1 across blocks.
te::TeProgram gemm_relu_gemm(int64_t m, int64_t k, int64_t n) {
  auto a = te::make_input("A", {m, k}, DType::Float32);
  auto w1 = te::make_input("W1", {k, n}, DType::Float32);
  auto w2 = te::make_input("W2", {n, n}, DType::Float32);
  auto gemm = [&](const std::string& name, const te::Tensor& x, const te::Tensor& w) {
    const int64_t depth = x->shape[1];
    return te::reduce(name, {m, n}, DType::Float32, te::ReduceKind::Sum, {depth},
                      [&](const Idx& i, const Idx& r) {
                        return te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]});
                      });
  };
  auto g1 = gemm("G1", a, w1);
  auto r1 = te::compute("R1", {m, n}, DType::Float32, [&](const Idx& i) {
    return te::max(te::read(g1->output, i), te::float_imm(0));
  });
  auto g2 = gemm("G2", r1->output, w2);
  te::TeProgram p;
  p.name = "gemm_relu_gemm";
  p.inputs = {a, w1, w2};
  p.ops = {g1, r1, g2};
  p.outputs = {g2->output};
  return p;
}

// The GEMMs' tiles are co-resident, but the epilogue has more elements than blocks fit: the
// partitioner's estimate once counted those as the stage's blocks, left the pair unpriced and
// joined it across a 1,000 us grid barrier. Priced, it is cut: two launches, as rules has them.
TEST(NeverWorse, AWideEpilogueDoesNotLeaveAPairUnpriced) {
  const te::TeProgram p = gemm_relu_gemm(512, 256, 1024);
  const Gpu slow{"a100 with a 1,000 us grid barrier", slow_barrier_spec(), {}};
  const FusionPlan souffle = planned(p, Strategy::Souffle, slow);
  const FusionPlan rules = planned(p, Strategy::Rules, slow);
  EXPECT_EQ(souffle.grid_syncs, 0);
  EXPECT_LE(souffle.est_time_us, rules.est_time_us + 1e-6);
  for (const Partition& k : souffle.partitions)
    for (const Decision& d : k.decisions) {
      SCOPED_TRACE(d.reason);
      EXPECT_EQ(d.reason.find("not priced"), std::string::npos);
      if (d.kind == DecisionKind::Join || d.kind == DecisionKind::CutCheaper) {
        EXPECT_GT(d.merged_us, 0);
        EXPECT_GT(d.split_us, 0);
      }
    }
}

/// G1 = A x W1, G2 = G1 x W2 (n x n), then E1 = relu(G1): in program order E1 follows G2, so
/// the souffle walk's segments (contiguous) cannot put it with G1 (it rides with G2 and reads G1
/// again); rules' kernels can (G1's epilogue).
te::TeProgram gemm_gemm_and_relu(int64_t n) {
  auto a = te::make_input("A", {n, n}, DType::Float32);
  auto w1 = te::make_input("W1", {n, n}, DType::Float32);
  auto w2 = te::make_input("W2", {n, n}, DType::Float32);
  auto gemm = [&](const std::string& name, const te::Tensor& x, const te::Tensor& w) {
    return te::reduce(name, {n, n}, DType::Float32, te::ReduceKind::Sum, {n},
                      [&](const Idx& i, const Idx& r) {
                        return te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]});
                      });
  };
  auto g1 = gemm("G1", a, w1);
  auto g2 = gemm("G2", g1->output, w2);
  auto e1 = te::compute("E1", {n, n}, DType::Float32, [&](const Idx& i) {
    return te::max(te::read(g1->output, i), te::float_imm(0));
  });
  te::TeProgram p;
  p.name = "gemm_gemm_and_relu";
  p.inputs = {a, w1, w2};
  p.ops = {g1, g2, e1};
  p.outputs = {e1->output, g2->output};
  return p;
}

// Where rules' kernels of a group price below the cuts the walk chose, they are kept, and each
// says so with both prices.
TEST(NeverWorse, RulesCutIsKeptWhereItIsCheaper) {
  const te::TeProgram p = gemm_gemm_and_relu(256);
  const Gpu slow{"a100 with a 1,000 us grid barrier", slow_barrier_spec(), {}};
  const FusionPlan souffle = planned(p, Strategy::Souffle, slow);
  const FusionPlan rules = planned(p, Strategy::Rules, slow);
  EXPECT_LE(souffle.est_time_us, rules.est_time_us + 1e-6);
  int kept = 0;
  for (const Partition& k : souffle.partitions)
    for (const Decision& d : k.decisions)
      if (d.kind == DecisionKind::RulesCut) {
        ++kept;
        SCOPED_TRACE(d.reason);
        EXPECT_EQ(d.te, k.tes.front());
        EXPECT_LT(d.split_us, d.merged_us);
        EXPECT_NE(d.reason.find(fmt::format("rules' cut is cheaper here: {:.2f} us as 2 launches "
                                            "without grid synchronization < {:.2f} us",
                                            d.split_us, d.merged_us)),
                  std::string::npos);
        EXPECT_STREQ(decision_kind_name(d.kind), "rules-cut");
      }
  EXPECT_EQ(kept, 2);  // each kernel of the cut
  EXPECT_EQ(souffle.kernels(), 2u);
}

}  // namespace
}  // namespace souffle::plan
