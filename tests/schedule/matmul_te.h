/// \file The GEMM the tensor-core template tests build on: C[m, n] = sum over k of A[m, k] ·
/// B[k, n], operands of type `t` read and accumulated in f32.
#pragma once
#include <cstdint>
#include <vector>

#include "core/te/builder.h"

namespace souffle::test_te {

inline te::Op matmul(int64_t m, int64_t n, int64_t k, DType t) {
  te::Tensor a = te::make_input("A", {m, k}, t);
  te::Tensor b = te::make_input("B", {k, n}, t);
  return te::reduce("C", {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<te::Expr>& i, const std::vector<te::Expr>& r) {
                      te::Expr x = te::cast(DType::Float32, te::read(a, {i[0], r[0]}));
                      te::Expr y = te::cast(DType::Float32, te::read(b, {r[0], i[1]}));
                      return x * y;
                    });
}

}  // namespace souffle::test_te
