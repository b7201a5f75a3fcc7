#include "tests/lower/lower_test_util.h"

namespace souffle::lower::testing {
namespace {

std::map<std::string, graph::Attribute> align(int64_t v) {
  return {{"align_corners", int_attr(v)}};
}

ConstTensorPtr sizes(std::vector<int64_t> v) {
  return TensorData::from_i64(DType::Int64, {static_cast<int64_t>(v.size())}, v);
}

const std::vector<double> kTheta2d = {1.5, -0.5, 0.25, 0.3, 0.8, -0.1};

// Expected values: torch.nn.functional.affine_grid on the same theta and size.
TEST(AffineGridLower, TwoDimensionsCellCentersAndCorners) {
  auto theta = values({1, 2, 3}, kTheta2d);
  auto centers =
      run(make_node("AffineGrid", 2, align(0)), {theta, sizes({1, 1, 2, 3})}, 20, {false, true});
  expect_values(centers, {1, 2, 3, 2}, DType::Float32,
                {-0.5, -0.7, 0.5, -0.5, 1.5, -0.3, -1.0, 0.1, 0.0, 0.3, 1.0, 0.5});
  auto corners =
      run(make_node("AffineGrid", 2, align(1)), {theta, sizes({1, 1, 2, 3})}, 20, {false, true});
  expect_values(corners, {1, 2, 3, 2}, DType::Float32,
                {-0.75, -1.2, 0.75, -0.9, 2.25, -0.6, -1.75, 0.4, -0.25, 0.7, 1.25, 1.0});
}

// D, H, W = 2, 1, 3 with align_corners: the one-point H axis sits at 0, as in PyTorch.
TEST(AffineGridLower, ThreeDimensionsWithAUnitAxis) {
  auto theta = values({1, 3, 4}, {1.0, 0.5, -0.5, 0.1, 0.2, 1.0, 0.3, -0.2, -0.4, 0.1, 0.9, 0.05});
  auto g =
      run(make_node("AffineGrid", 2, align(1)), {theta, sizes({1, 1, 2, 1, 3})}, 20, {false, true});
  expect_values(g, {1, 2, 1, 3, 3}, DType::Float32,
                {-0.4, -0.7, -0.45, 0.6, -0.5, -0.85, 1.6, -0.3, -1.25, -1.4, -0.1, 1.35, -0.4, 0.1,
                 0.95, 0.6, 0.3, 0.55});
}

TEST(AffineGridLower, ThetaThatDoesNotMatchTheSizeIsAUserError) {
  auto theta = values({1, 2, 3}, kTheta2d);
  try {
    lower(make_node("AffineGrid", 2), {theta, sizes({1, 1, 2, 2, 2})}, 20, {false, true});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("expected [1, 3, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lower(make_node("AffineGrid", 2), {theta, {}}, 20, {false, true}), UserError);
}

}  // namespace
}  // namespace souffle::lower::testing
