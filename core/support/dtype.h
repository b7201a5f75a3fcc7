/// \file Element types shared by every IR level.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace souffle {

enum class DType : uint8_t {
  Float32,
  Float64,
  Float16,
  BFloat16,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Bool,
};

/// Short lower-case name: "f32", "i64", "bool", ...
const char* dtype_name(DType t);
/// Storage size of one element in bytes.
int dtype_size(DType t);
bool is_float(DType t);
bool is_int(DType t);  ///< signed or unsigned integer (not bool)
bool is_signed_int(DType t);
/// ONNX TensorProto.DataType code <-> DType; nullopt for types we do not take (string, complex).
std::optional<DType> dtype_from_onnx(int32_t code);
int32_t dtype_to_onnx(DType t);

/// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace souffle
