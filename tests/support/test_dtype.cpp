#include <gtest/gtest.h>

#include <cmath>

#include "core/support/dtype.h"
#include "core/support/error.h"
#include "core/support/tensor_data.h"

namespace souffle {

TEST(DType, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
  }
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(DType, BFloat16RoundTrip) {
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(-3.0f)), -3.0f);
  EXPECT_NEAR(bfloat16_to_float(float_to_bfloat16(3.14159f)), 3.14159f, 0.02f);
}

TEST(DType, OnnxCodes) {
  for (int code : {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16}) {
    auto t = dtype_from_onnx(code);
    ASSERT_TRUE(t.has_value()) << code;
    EXPECT_EQ(dtype_to_onnx(*t), code);
  }
  EXPECT_FALSE(dtype_from_onnx(8).has_value());  // string
}

TEST(TensorData, Conversions) {
  auto t = TensorData::from_f64(DType::Int32, {2, 2}, {1.9, -1.9, 3, 4});
  EXPECT_EQ(t->to_i64(), (std::vector<int64_t>{1, -1, 3, 4}));
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_THROW(shape_numel({int64_t{1} << 40, int64_t{1} << 40}), UserError);
}

}  // namespace souffle
