#include "core/support/tensor_data.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/support/error.h"

namespace souffle {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw UserError("negative dimension in shape " + shape_str(shape));
    if (d != 0 && n > (int64_t{1} << 62) / d)
      throw UserError("tensor of shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

TensorData::TensorData(DType dtype, Shape shape)
    : m_dtype(dtype), m_shape(std::move(shape)), m_numel(shape_numel(m_shape)) {
  m_bytes.assign(static_cast<size_t>(m_numel) * static_cast<size_t>(dtype_size(dtype)), '\0');
}

TensorData::TensorData(DType dtype, Shape shape, std::string&& bytes)
    : m_dtype(dtype), m_shape(std::move(shape)), m_numel(shape_numel(m_shape)) {
  SOUFFLE_CHECK(
      bytes.size() == static_cast<size_t>(m_numel) * static_cast<size_t>(dtype_size(dtype)),
      "TensorData: byte count does not match the shape");
  m_bytes = std::move(bytes);
}

TensorData::TensorData(DType dtype, Shape shape, std::shared_ptr<const void> keep,
                       std::string_view source)
    : m_dtype(dtype), m_shape(std::move(shape)), m_numel(shape_numel(m_shape)) {
  SOUFFLE_CHECK(
      source.size() == static_cast<size_t>(m_numel) * static_cast<size_t>(dtype_size(dtype)),
      "TensorData: byte count does not match the shape");
  m_deferred = std::make_unique<Deferred>();
  m_deferred->keep = std::move(keep);
  m_deferred->source = source;
  m_deferred->size = source.size();
}

TensorData::TensorData(DType dtype, Shape shape, std::shared_ptr<const ByteSource> source,
                       uint64_t offset)
    : m_dtype(dtype), m_shape(std::move(shape)), m_numel(shape_numel(m_shape)) {
  SOUFFLE_CHECK(source != nullptr, "TensorData: no source to read from");
  m_deferred = std::make_unique<Deferred>();
  m_deferred->reader = std::move(source);
  m_deferred->offset = offset;
  m_deferred->size = static_cast<size_t>(m_numel) * static_cast<size_t>(dtype_size(dtype));
}

TensorData::TensorData(const TensorData& o)
    : m_dtype(o.m_dtype), m_shape(o.m_shape), m_numel(o.m_numel), m_bytes(o.bytes()) {}

TensorData& TensorData::operator=(const TensorData& o) {
  if (this != &o) {
    m_bytes = o.bytes();
    m_dtype = o.m_dtype;
    m_shape = o.m_shape;
    m_numel = o.m_numel;
    m_deferred.reset();
  }
  return *this;
}

void TensorData::load() const {
  std::lock_guard<std::mutex> lock(m_deferred->mutex);
  if (m_deferred->loaded.load(std::memory_order_relaxed)) return;
  if (m_deferred->reader) {
    std::string bytes(m_deferred->size, '\0');
    m_deferred->reader->read(m_deferred->offset, bytes.size(), bytes.data());  // may throw
    m_bytes = std::move(bytes);
    m_deferred->reader.reset();  // a file read on demand is closed once every tensor is read
  } else {
    m_bytes.assign(m_deferred->source.data(), m_deferred->source.size());
    m_deferred->keep.reset();  // the source may go once every tensor in it is read
  }
  m_deferred->loaded.store(true, std::memory_order_release);
}

double TensorData::get_f64(int64_t i) const {
  switch (m_dtype) {
    case DType::Float32:
      return as<float>()[i];
    case DType::Float64:
      return as<double>()[i];
    case DType::Float16:
      return half_to_float(as<uint16_t>()[i]);
    case DType::BFloat16:
      return bfloat16_to_float(as<uint16_t>()[i]);
    case DType::UInt64:
      return static_cast<double>(as<uint64_t>()[i]);
    default:
      return static_cast<double>(get_i64(i));
  }
}

int64_t TensorData::get_i64(int64_t i) const {
  switch (m_dtype) {
    case DType::Int8:
      return as<int8_t>()[i];
    case DType::Int16:
      return as<int16_t>()[i];
    case DType::Int32:
      return as<int32_t>()[i];
    case DType::Int64:
      return as<int64_t>()[i];
    case DType::UInt8:
      return as<uint8_t>()[i];
    case DType::UInt16:
      return as<uint16_t>()[i];
    case DType::UInt32:
      return as<uint32_t>()[i];
    case DType::UInt64:
      return static_cast<int64_t>(as<uint64_t>()[i]);
    case DType::Bool:
      return as<uint8_t>()[i] != 0;
    default:
      return static_cast<int64_t>(get_f64(i));
  }
}

void TensorData::set_f64(int64_t i, double v) {
  switch (m_dtype) {
    case DType::Float32:
      as<float>()[i] = static_cast<float>(v);
      return;
    case DType::Float64:
      as<double>()[i] = v;
      return;
    case DType::Float16:
      as<uint16_t>()[i] = float_to_half(static_cast<float>(v));
      return;
    case DType::BFloat16:
      as<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
      return;
    case DType::Bool:
      as<uint8_t>()[i] = v != 0.0;
      return;
    case DType::UInt64:
      as<uint64_t>()[i] = static_cast<uint64_t>(v);
      return;
    default:
      set_i64(i, static_cast<int64_t>(v));
      return;
  }
}

void TensorData::set_i64(int64_t i, int64_t v) {
  switch (m_dtype) {
    case DType::Int8:
      as<int8_t>()[i] = static_cast<int8_t>(v);
      return;
    case DType::Int16:
      as<int16_t>()[i] = static_cast<int16_t>(v);
      return;
    case DType::Int32:
      as<int32_t>()[i] = static_cast<int32_t>(v);
      return;
    case DType::Int64:
      as<int64_t>()[i] = v;
      return;
    case DType::UInt8:
      as<uint8_t>()[i] = static_cast<uint8_t>(v);
      return;
    case DType::UInt16:
      as<uint16_t>()[i] = static_cast<uint16_t>(v);
      return;
    case DType::UInt32:
      as<uint32_t>()[i] = static_cast<uint32_t>(v);
      return;
    case DType::UInt64:
      as<uint64_t>()[i] = static_cast<uint64_t>(v);
      return;
    case DType::Bool:
      as<uint8_t>()[i] = v != 0;
      return;
    default:
      set_f64(i, static_cast<double>(v));
      return;
  }
}

std::vector<int64_t> TensorData::to_i64() const {
  std::vector<int64_t> v(static_cast<size_t>(m_numel));
  for (int64_t i = 0; i < m_numel; ++i) v[static_cast<size_t>(i)] = get_i64(i);
  return v;
}

std::vector<double> TensorData::to_f64() const {
  std::vector<double> v(static_cast<size_t>(m_numel));
  for (int64_t i = 0; i < m_numel; ++i) v[static_cast<size_t>(i)] = get_f64(i);
  return v;
}

std::shared_ptr<TensorData> TensorData::from_i64(DType dtype, Shape shape,
                                                 const std::vector<int64_t>& values) {
  auto t = std::make_shared<TensorData>(dtype, std::move(shape));
  SOUFFLE_CHECK(static_cast<int64_t>(values.size()) == t->numel(), "from_i64: size mismatch");
  for (int64_t i = 0; i < t->numel(); ++i) t->set_i64(i, values[static_cast<size_t>(i)]);
  return t;
}

std::shared_ptr<TensorData> TensorData::from_f64(DType dtype, Shape shape,
                                                 const std::vector<double>& values) {
  auto t = std::make_shared<TensorData>(dtype, std::move(shape));
  SOUFFLE_CHECK(static_cast<int64_t>(values.size()) == t->numel(), "from_f64: size mismatch");
  for (int64_t i = 0; i < t->numel(); ++i) t->set_f64(i, values[static_cast<size_t>(i)]);
  return t;
}

TensorData TensorData::reshaped(Shape shape) const {
  TensorData t = *this;
  SOUFFLE_CHECK(shape_numel(shape) == m_numel, "reshaped: element count differs");
  t.m_shape = std::move(shape);
  return t;
}

}  // namespace souffle
