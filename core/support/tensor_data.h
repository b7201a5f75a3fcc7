/// \file TensorData: an immutable-by-convention dense tensor value (dtype, shape, bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/support/dtype.h"

namespace souffle {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar). Throws UserError past 2^62 elements.
int64_t shape_numel(const Shape& shape);
/// "[2, 3, 4]"
std::string shape_str(const Shape& shape);

/// A dense row-major tensor. Shared between IR levels through std::shared_ptr<const TensorData>.
class TensorData {
 public:
  TensorData() = default;
  /// Zero-filled tensor.
  TensorData(DType dtype, Shape shape);
  /// Takes `bytes` (row-major, exactly numel x element size) without copying them.
  TensorData(DType dtype, Shape shape, std::string&& bytes);

  DType dtype() const { return m_dtype; }
  const Shape& shape() const { return m_shape; }
  int64_t numel() const { return m_numel; }
  int64_t byte_size() const { return static_cast<int64_t>(m_bytes.size()); }
  const uint8_t* raw() const { return reinterpret_cast<const uint8_t*>(m_bytes.data()); }
  uint8_t* raw() { return reinterpret_cast<uint8_t*>(m_bytes.data()); }

  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(m_bytes.data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(m_bytes.data());
  }

  /// Element i converted to double / int64 (bool -> 0/1, f16/bf16 decoded).
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  /// Stores v converted to the tensor's dtype (integers truncate toward zero, as a C cast does).
  void set_f64(int64_t i, double v);
  void set_i64(int64_t i, int64_t v);

  /// Whole tensor as int64 / double values.
  std::vector<int64_t> to_i64() const;
  std::vector<double> to_f64() const;

  static std::shared_ptr<TensorData> from_i64(DType dtype, Shape shape,
                                              const std::vector<int64_t>& values);
  static std::shared_ptr<TensorData> from_f64(DType dtype, Shape shape,
                                              const std::vector<double>& values);
  /// A reshaped copy sharing nothing.
  TensorData reshaped(Shape shape) const;

  bool operator==(const TensorData& o) const {
    return m_dtype == o.m_dtype && m_shape == o.m_shape && m_bytes == o.m_bytes;
  }

 private:
  DType m_dtype = DType::Float32;
  Shape m_shape;
  int64_t m_numel = 1;
  // A string as the byte buffer so that protobuf's raw_data can be moved in without a copy
  // (heap buffers are 16-byte aligned; small ones sit inside the object, 8-byte aligned).
  std::string m_bytes;
};

using ConstTensorPtr = std::shared_ptr<const TensorData>;

}  // namespace souffle
