/// \file How outputs are judged against reference data: element by element, like numpy.allclose
/// and the ONNX backend tests (|got - want| <= atol + rtol * |want|), with relative L2 and the
/// largest absolute and relative errors reported beside. Every verification (verify at TE and
/// kernel level, conformance, souffle-runner's verify) judges with this one function.
#pragma once

#include <cstdint>
#include <string>

#include "core/gpu/cost.h"
#include "core/support/tensor_data.h"

namespace souffle {

/// Element-wise tolerance: an element passes when |got - want| <= atol + rtol * |want|.
struct Tolerance {
  double rtol = 1e-4, atol = 1e-5;
};

/// The default tolerance for outputs of type `output` computed at `compute` precision
/// (docs/verification.md): fp32 rtol 1e-4 atol 1e-5; tf32 rtol 5e-3 atol 5e-4; fp16 (compute or
/// output) rtol 1e-2 atol 1e-3; bf16 rtol 5e-2 atol 5e-3; outputs of an int8 QDQ model
/// (`quantized`) at least rtol 1e-2 atol 1e-2. The loosest that applies wins. Integer and bool
/// outputs always match exactly.
Tolerance default_tolerance(gpu::Precision compute, DType output, bool quantized = false);

struct Comparison {
  bool shape_ok = true;
  bool dtype_ok = true;
  double rtol = 0, atol = 0;  ///< the tolerance judged with
  int64_t numel = 0;
  int64_t mismatches = 0;  ///< elements outside atol + rtol * |want| (NaN == NaN; inf == inf)
  /// The element furthest outside the tolerance (largest |got - want| / (atol + rtol |want|));
  /// -1 when no element is compared. Its values are kept for the message.
  int64_t worst_index = -1;
  double worst_want = 0, worst_got = 0;
  double max_abs_error = 0;  ///< max |got - want|
  /// max |got - want| / |want| over elements with want != 0 (numpy's "max relative difference",
  /// which alone would fail every output holding a near-zero value).
  double max_rel_error = 0;
  double rel_l2_error = 0;  ///< ||got - want||_2 / max(||want||_2, tiny), finite elements
  /// The verdict: same shape and kind of type, every element within the tolerance.
  bool ok() const { return shape_ok && dtype_ok && mismatches == 0; }
  /// "all 1200 elements within rtol 0.0001 + atol 1e-05 (max abs error 1.2e-07, max rel error
  /// 0.03, relative L2 0.00094)" or "37 of 1200 elements outside ... (worst [17]: got 0.52, want
  /// 0.5; ...)".
  std::string describe() const;
};

/// Compares `actual` with `expected` element by element under `tol`; integer and bool tensors
/// must match exactly.
Comparison compare_tensors(const TensorData& expected, const TensorData& actual,
                           const Tolerance& tol);

/// The same over raw row-major bytes of `dtype` (souffle-runner's read-back buffers); a size
/// that differs is a shape mismatch.
Comparison compare_bytes(const std::string& expected, const std::string& actual, DType dtype,
                         const Tolerance& tol);

}  // namespace souffle
