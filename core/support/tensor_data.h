/// \file TensorData: an immutable-by-convention dense tensor value (dtype, shape, bytes).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/support/dtype.h"

namespace souffle {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar). Throws UserError past 2^62 elements.
int64_t shape_numel(const Shape& shape);
/// "[2, 3, 4]"
std::string shape_str(const Shape& shape);

/// Where a deferred tensor's bytes are read from on first use (a model file read on demand).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Reads `size` bytes at `offset` into `out`. Throws UserError (naming the source) when it
  /// can no longer give the bytes it held when the tensor was made (a file changed since).
  virtual void read(uint64_t offset, size_t size, char* out) const = 0;
};

/// A dense row-major tensor. Shared between IR levels through std::shared_ptr<const TensorData>.
class TensorData {
 public:
  TensorData() = default;
  /// Zero-filled tensor.
  TensorData(DType dtype, Shape shape);
  /// Takes `bytes` (row-major, exactly numel x element size) without copying them.
  TensorData(DType dtype, Shape shape, std::string&& bytes);
  /// Bytes read where they lie only when first used: `source` (exactly numel x element size
  /// bytes, any alignment) is copied into the tensor's own buffer the first time anything reads
  /// or writes the data (from any thread, once); until then `keep` holds what `source` points
  /// into. Dtype, shape and byte_size() never read the bytes, so a tensor nobody reads never
  /// costs its copy (a model's weights, when only the plan is wanted).
  TensorData(DType dtype, Shape shape, std::shared_ptr<const void> keep, std::string_view source);
  /// Bytes read from `source` at `offset` (exactly numel x element size of them) only when first
  /// used, as above. A read that fails (the source throws) leaves the tensor unread and
  /// propagates to the reader; the next use tries again.
  TensorData(DType dtype, Shape shape, std::shared_ptr<const ByteSource> source, uint64_t offset);
  /// A copy owns its bytes (a deferred source is read first).
  TensorData(const TensorData& o);
  TensorData& operator=(const TensorData& o);
  TensorData(TensorData&&) noexcept = default;
  TensorData& operator=(TensorData&&) noexcept = default;
  ~TensorData() = default;

  DType dtype() const { return m_dtype; }
  const Shape& shape() const { return m_shape; }
  int64_t numel() const { return m_numel; }
  int64_t byte_size() const {
    return static_cast<int64_t>(m_deferred ? m_deferred->size : m_bytes.size());
  }
  /// False while the bytes of a deferred source have not been read yet.
  bool loaded() const { return !m_deferred || m_deferred->loaded.load(std::memory_order_acquire); }
  const uint8_t* raw() const { return reinterpret_cast<const uint8_t*>(bytes().data()); }
  uint8_t* raw() { return reinterpret_cast<uint8_t*>(bytes().data()); }

  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes().data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes().data());
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
    return m_dtype == o.m_dtype && m_shape == o.m_shape && bytes() == o.bytes();
  }

 private:
  struct Deferred {
    std::shared_ptr<const void> keep;
    std::string_view source;
    std::shared_ptr<const ByteSource> reader;  ///< instead of keep and source
    uint64_t offset = 0;                       ///< of the bytes in `reader`
    size_t size = 0;                           ///< bytes to read
    std::atomic<bool> loaded{false};
    std::mutex mutex;
  };
  const std::string& bytes() const {
    if (m_deferred && !m_deferred->loaded.load(std::memory_order_acquire)) load();
    return m_bytes;
  }
  std::string& bytes() {
    if (m_deferred && !m_deferred->loaded.load(std::memory_order_acquire)) load();
    return m_bytes;
  }
  void load() const;

  DType m_dtype = DType::Float32;
  Shape m_shape;
  int64_t m_numel = 1;
  // A string as the byte buffer so that protobuf's raw_data can be moved in without a copy
  // (heap buffers are 16-byte aligned; small ones sit inside the object, 8-byte aligned).
  // Mutable: a deferred source fills it on first use, under the Deferred's mutex.
  mutable std::string m_bytes;
  std::unique_ptr<Deferred> m_deferred;  ///< set only by the deferred constructor
};

using ConstTensorPtr = std::shared_ptr<const TensorData>;

}  // namespace souffle
