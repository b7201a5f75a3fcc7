#include "core/session/compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace souffle {

Tolerance default_tolerance(gpu::Precision compute, DType output, bool quantized) {
  Tolerance t{1e-4, 1e-5};  // fp32: reassociated sums and libm differences
  auto loosen = [&t](double rtol, double atol) {
    t.rtol = std::max(t.rtol, rtol);
    t.atol = std::max(t.atol, atol);
  };
  // TF32 rounds GEMM operands to a 10-bit mantissa (2^-11 relative each).
  if (compute == gpu::Precision::TF32) loosen(5e-3, 5e-4);
  // fp16 holds 11 significant bits, bf16 8: the rounding of operands or of stored outputs.
  if (compute == gpu::Precision::FP16 || output == DType::Float16) loosen(1e-2, 1e-3);
  if (compute == gpu::Precision::BF16 || output == DType::BFloat16) loosen(5e-2, 5e-3);
  // A QDQ model's float outputs are dequantized integers: a value rounded the other way at one
  // requantization moves an output by a quantization step.
  if (quantized) loosen(1e-2, 1e-2);
  return t;
}

std::string Comparison::describe() const {
  if (!shape_ok) return "shape differs";
  if (!dtype_ok) return "dtype differs";
  const std::string errors =
      fmt::format("max abs error {:.3g}, max rel error {:.3g}, relative L2 {:.3g}", max_abs_error,
                  max_rel_error, rel_l2_error);
  const std::string within = fmt::format("rtol {:g} + atol {:g}", rtol, atol);
  if (mismatches == 0) return fmt::format("all {} elements within {} ({})", numel, within, errors);
  return fmt::format("{} of {} elements outside {} (worst [{}]: got {:.6g}, want {:.6g}; {})",
                     mismatches, numel, within, worst_index, worst_got, worst_want, errors);
}

Comparison compare_tensors(const TensorData& expected, const TensorData& actual,
                           const Tolerance& tol) {
  Comparison c;
  c.rtol = tol.rtol;
  c.atol = tol.atol;
  if (expected.shape() != actual.shape()) {
    c.shape_ok = false;
    return c;
  }
  const bool exact = !is_float(expected.dtype());
  if (exact != !is_float(actual.dtype())) {
    c.dtype_ok = false;
    return c;
  }
  c.numel = expected.numel();
  double err2 = 0, ref2 = 0;
  double worst = -1;  // largest |got - want| / (atol + rtol |want|), infinity for a misplaced NaN
  auto note = [&](int64_t i, double excess, double e, double a) {
    if (excess > worst) {
      worst = excess;
      c.worst_index = i;
      c.worst_want = e;
      c.worst_got = a;
    }
  };
  for (int64_t i = 0; i < c.numel; ++i) {
    if (exact) {
      const int64_t e = expected.get_i64(i), a = actual.get_i64(i);
      if (e != a) ++c.mismatches;
      note(i, e == a ? 0 : INFINITY, static_cast<double>(e), static_cast<double>(a));
      continue;
    }
    const double e = expected.get_f64(i), a = actual.get_f64(i);
    if (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a)) {
      // Non-finite values must sit where the reference has them (NaN == NaN here).
      const bool same = (std::isnan(e) && std::isnan(a)) || e == a;
      if (!same) ++c.mismatches;
      note(i, same ? 0 : INFINITY, e, a);
      continue;
    }
    const double d = std::fabs(a - e);
    err2 += d * d;
    ref2 += e * e;
    c.max_abs_error = std::max(c.max_abs_error, d);
    if (e != 0) c.max_rel_error = std::max(c.max_rel_error, d / std::fabs(e));
    const double limit = tol.atol + tol.rtol * std::fabs(e);
    if (d > limit) ++c.mismatches;
    note(i, limit > 0 ? d / limit : (d > 0 ? INFINITY : 0), e, a);
  }
  c.rel_l2_error = std::sqrt(err2) / std::max(std::sqrt(ref2), 1e-30);
  return c;
}

Comparison compare_bytes(const std::string& expected, const std::string& actual, DType dtype,
                         const Tolerance& tol) {
  const int64_t size = dtype_size(dtype);
  if (expected.size() != actual.size() || expected.size() % static_cast<size_t>(size) != 0) {
    Comparison c;
    c.rtol = tol.rtol;
    c.atol = tol.atol;
    c.shape_ok = false;
    return c;
  }
  const Shape shape = {static_cast<int64_t>(expected.size()) / size};
  return compare_tensors(TensorData(dtype, shape, std::string(expected)),
                         TensorData(dtype, shape, std::string(actual)), tol);
}

}  // namespace souffle
