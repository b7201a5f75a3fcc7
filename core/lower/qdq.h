/// \file Quantized (QDQ) models keep their integer types: a MatMul, Gemm or Conv whose operands
/// are both dequantized int8/uint8 tensors becomes the integer op on the quantized tensors
/// (MatMulInteger / ConvInteger: int8 operands, int32 accumulation), a cast and one multiply by
/// the product of the scales (and the bias added), instead of a float product of dequantized
/// copies. Applied while types are inferred (interp::infer_and_fold), like control_flow.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/lower/control_flow.h"

namespace souffle::lower {

/// A DequantizeLinear seen so far (folded or not): its output is (x - zero_point) * scale.
struct Dequantized {
  std::string x, scale, zero_point;  ///< value names; zero_point "" when absent
  int64_t axis = 1;                  ///< the node's axis attribute (per-axis scales)
};

/// The integer form of `node` when it is a MatMul, Gemm or Conv reading two dequantized
/// operands whose scales are constants, per tensor (the activation) and per tensor or per output
/// channel (the weight); nullopt otherwise (the node stays a float op).
std::optional<Expansion> fuse_dequantized(const graph::Node& node,
                                          const std::map<std::string, Dequantized>& dequantized,
                                          ExpandScope& scope);

}  // namespace souffle::lower
