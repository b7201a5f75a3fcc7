// How outputs are judged (core/session/compare.h): element by element, like numpy.allclose and
// the ONNX backend tests, with relative L2 and the largest errors reported beside. A near-zero
// output that a whole-tensor relative L2 failed passes; a real mismatch still fails.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/session/compare.h"
#include "core/session/load.h"
#include "core/session/profile.h"
#include "core/session/verify.h"
#include "core/session/verify_kernels.h"

namespace souffle {
namespace {

TensorData floats(const std::vector<float>& v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return TensorData(DType::Float32, shape, std::move(bytes));
}

/// A text detector's score map where nearly every pixel is confident background: sigmoid of
/// large negative logits, so the map is near zero almost everywhere.
std::vector<float> background_logits(int n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -14.0f - 3.0f * ((i * 37) % 101) / 101.0f;
  return x;
}

/// What a runtime that evaluates sigmoid as 0.5 + 0.5 tanh(x / 2) gives in fp32: correct to
/// fp32's absolute rounding near 0.5, so near zero only to about 3e-8 absolute.
float sigmoid_through_tanh(float x) {
  return 0.5f + 0.5f * std::tanh(0.5f * x);
}

/// The Sigmoid model the reference comes from: one node over a 1 x 1 x 32 x 32 map.
LoadedModel sigmoid_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("score_map");
  for (auto* list : {g->mutable_input(), g->mutable_output()}) {
    auto* vi = list->Add();
    vi->set_name(list == g->mutable_input() ? "logits" : "scores");
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 1, 32, 32}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  auto* n = g->add_node();
  n->set_op_type("Sigmoid");
  n->set_name("sigmoid");
  n->add_input("logits");
  n->add_output("scores");
  return load_model_bytes(m.SerializeAsString(), "score_map.onnx");
}

/// The map's data set: logits in, the tanh-form sigmoid of them as the reference output.
TestDataSet score_map_data(const std::vector<float>& logits) {
  std::vector<float> want;
  for (float x : logits) want.push_back(sigmoid_through_tanh(x));
  TestDataSet ds;
  ds.dir = "test_data_set_0";
  ds.inputs = {std::make_shared<TensorData>(floats(logits, {1, 1, 32, 32}))};
  ds.outputs = {std::make_shared<TensorData>(floats(want, {1, 1, 32, 32}))};
  return ds;
}

TEST(Compare, NearZeroOutputPassesElementWiseWhereRelativeL2Failed) {
  const std::vector<float> x = background_logits(1024);
  std::vector<float> exact, runtime;
  for (float v : x) {
    exact.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v)))));
    runtime.push_back(sigmoid_through_tanh(v));
  }
  const Comparison c = compare_tensors(floats(runtime), floats(exact), Tolerance{1e-4, 1e-5});
  // The old rule (relative L2 <= 1e-4) failed this: every value is near zero, so rounding of
  // 1e-8 is most of the norm.
  EXPECT_GT(c.rel_l2_error, 1e-4);
  EXPECT_LT(c.max_abs_error, 1e-7);
  EXPECT_TRUE(c.ok()) << c.describe();
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.numel, 1024);
  EXPECT_NE(c.describe().find("all 1024 elements within rtol 0.0001 + atol 1e-05"),
            std::string::npos)
      << c.describe();
}

TEST(Compare, ARealMismatchStillFailsAndIsNamed) {
  std::vector<float> want = {0.0f, 1e-7f, 0.5f, 0.9f, -3.0f};
  std::vector<float> got = want;
  got[3] = 0.91f;  // one score off by 0.01: far outside 1e-5 + 1e-4 * 0.9
  const Comparison c = compare_tensors(floats(want), floats(got), Tolerance{1e-4, 1e-5});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 3);
  EXPECT_NEAR(c.worst_got, 0.91, 1e-6);
  EXPECT_NEAR(c.max_abs_error, 0.01, 1e-6);
  EXPECT_NEAR(c.max_rel_error, 0.01 / 0.9, 1e-5);
  EXPECT_NE(c.describe().find("1 of 5 elements outside rtol 0.0001 + atol 1e-05 (worst [3]"),
            std::string::npos)
      << c.describe();
  // The same output within a looser tolerance (as for bf16) passes.
  EXPECT_TRUE(compare_tensors(floats(want), floats(got), Tolerance{5e-2, 5e-3}).ok());
}

TEST(Compare, NonFiniteValuesMustSitWhereTheReferenceHasThem) {
  const float nan = std::nanf(""), inf = INFINITY;
  EXPECT_TRUE(compare_tensors(floats({nan, inf, 1}), floats({nan, inf, 1}), Tolerance{}).ok());
  const Comparison c = compare_tensors(floats({nan, inf, 1}), floats({1, inf, nan}), Tolerance{});
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_FALSE(compare_tensors(floats({inf}), floats({-inf}), Tolerance{}).ok());
}

TEST(Compare, IntegersMatchExactlyAndShapesMustAgree) {
  TensorData a(DType::Int64, {3}), b(DType::Int64, {3});
  a.as<int64_t>()[1] = 5;
  b.as<int64_t>()[1] = 6;
  const Comparison c = compare_tensors(a, b, Tolerance{1, 1});  // no tolerance for integers
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_FALSE(compare_tensors(floats({1, 2}), floats({1, 2, 3}), Tolerance{}).shape_ok);
  EXPECT_EQ(compare_tensors(floats({1, 2}), floats({1, 2, 3}), Tolerance{}).describe(),
            "shape differs");
}

TEST(Compare, DefaultTolerancePerPrecision) {
  using gpu::Precision;
  auto is = [](Tolerance t, double rtol, double atol) { return t.rtol == rtol && t.atol == atol; };
  EXPECT_TRUE(is(default_tolerance(Precision::FP32, DType::Float32), 1e-4, 1e-5));
  EXPECT_TRUE(is(default_tolerance(Precision::TF32, DType::Float32), 5e-3, 5e-4));
  EXPECT_TRUE(is(default_tolerance(Precision::FP16, DType::Float32), 1e-2, 1e-3));
  EXPECT_TRUE(is(default_tolerance(Precision::FP32, DType::Float16), 1e-2, 1e-3));
  EXPECT_TRUE(is(default_tolerance(Precision::BF16, DType::Float32), 5e-2, 5e-3));
  EXPECT_TRUE(is(default_tolerance(Precision::FP32, DType::BFloat16), 5e-2, 5e-3));
  EXPECT_TRUE(is(default_tolerance(Precision::FP32, DType::Float32, true), 1e-2, 1e-2));
  // The loosest that applies: bf16 compute of a quantized model keeps bf16's rtol.
  EXPECT_TRUE(is(default_tolerance(Precision::BF16, DType::Float32, true), 5e-2, 1e-2));
  // Options override each part alone.
  VerifyOptions o;
  o.atol = 0;
  EXPECT_TRUE(is(output_tolerance(o, Precision::FP16, DType::Float32, false), 1e-2, 0));
}

TEST(Verify, NearZeroScoreMapVerifiesAtTeAndKernelLevel) {
  const LoadedModel m = sigmoid_model();
  const std::vector<TestDataSet> sets = {score_map_data(background_logits(1024))};
  const VerifyReport te = verify_program(m, sets, VerifyOptions{});
  ASSERT_EQ(te.checks.size(), 1u);
  EXPECT_TRUE(te.ok) << te.checks[0].cmp.describe();
  EXPECT_GT(te.max_rel_l2, 1e-4);  // what the old rule judged, and failed
  EXPECT_LT(te.max_abs_error, 1e-7);
  EXPECT_EQ(te.checks[0].cmp.rtol, 1e-4);  // fp32's default
  PipelineOptions po;
  po.gpu = gpu::gpu_spec("a100");
  po.strategy = plan::Strategy::Souffle;
  const KernelVerifyReport k = verify_kernels(m, sets, po, VerifyOptions{});
  EXPECT_TRUE(k.ok()) << k.error
                      << (k.outputs.checks.empty() ? "" : k.outputs.checks[0].cmp.describe());
}

TEST(Verify, AWrongScoreFailsAtTeAndKernelLevel) {
  const LoadedModel m = sigmoid_model();
  std::vector<float> x = background_logits(1024);
  x[100] = 2.0f;  // a text pixel
  TestDataSet ds = score_map_data(x);
  auto wrong = std::make_shared<TensorData>(*ds.outputs[0]);
  wrong->as<float>()[100] += 0.002f;  // the reference's text score differs by 2e-3
  ds.outputs = {wrong};
  const VerifyReport te = verify_program(m, {ds}, VerifyOptions{});
  ASSERT_EQ(te.checks.size(), 1u);
  EXPECT_FALSE(te.ok);
  EXPECT_EQ(te.mismatches, 1);
  EXPECT_EQ(te.checks[0].cmp.worst_index, 100);
  // The whole-tensor relative L2 is small (one element in a norm of 0.88): the old rule with a
  // 1e-2 limit would have let it through.
  EXPECT_LT(te.max_rel_l2, 1e-2);
  PipelineOptions po;
  po.gpu = gpu::gpu_spec("a100");
  po.strategy = plan::Strategy::Rules;
  const KernelVerifyReport k = verify_kernels(m, {ds}, po, VerifyOptions{});
  EXPECT_TRUE(k.error.empty()) << k.error;
  EXPECT_FALSE(k.ok());
  EXPECT_EQ(k.outputs.mismatches, 1);
}

TEST(Compare, AProfileRunSaysHowItsOutputsCompared) {
  ProfileReport r;
  EXPECT_EQ(verification_summary(r), "");
  r.verify_note = "the bundle has no expected outputs";
  EXPECT_EQ(verification_summary(r), "not verified: the bundle has no expected outputs");
  OutputMeasurement a;
  a.name = "scores";
  a.ok = true;
  a.rtol = 1e-4;
  a.atol = 1e-5;
  a.max_abs = 1.2e-7;
  a.rel_l2 = 9.4e-4;
  r.outputs = {a};
  EXPECT_EQ(verification_summary(r),
            "outputs verified: every element within rtol 0.0001 + atol 1e-05 (max abs error "
            "1.2e-07, max relative L2 0.00094)");
  OutputMeasurement b = a;
  b.name = "boxes";
  b.ok = false;
  b.detail = "3 of 40 elements outside rtol 0.0001 + atol 1e-05";
  r.outputs.push_back(b);
  EXPECT_EQ(verification_summary(r),
            "outputs differ: boxes: 3 of 40 elements outside rtol 0.0001 + atol 1e-05");
  // Saved and read back, a run keeps its figures.
  const ProfileReport back = profile_report_from_json(profile_report_json(r));
  ASSERT_EQ(back.outputs.size(), 2u);
  EXPECT_EQ(back.outputs[1].detail, b.detail);
  EXPECT_EQ(back.outputs[0].max_abs, a.max_abs);
  EXPECT_EQ(back.outputs[0].rtol, a.rtol);
}

}  // namespace
}  // namespace souffle
