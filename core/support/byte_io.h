/// \file Bytes in and out of a cache entry's payload: fixed-size numbers in the machine's byte
/// order (a cache folder belongs to one machine) and strings with their length before them.
/// A Reader never reads past its bytes: each read says whether it could.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace souffle {

class ByteWriter {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void boolean(bool v) { u32(v ? 1 : 0); }
  void str(const void* p, size_t n) {
    u64(n);
    raw(p, n);
  }
  void str(const std::string& s) { str(s.data(), s.size()); }
  std::string& bytes() { return m_bytes; }

 private:
  void raw(const void* p, size_t n) { m_bytes.append(static_cast<const char*>(p), n); }
  std::string m_bytes;
};

class ByteReader {
 public:
  ByteReader(const char* p, size_t n) : m_p(p), m_n(n) {}
  explicit ByteReader(const std::string& s) : ByteReader(s.data(), s.size()) {}
  bool u32(uint32_t& v) { return raw(&v, 4); }
  bool u64(uint64_t& v) { return raw(&v, 8); }
  bool i64(int64_t& v) { return raw(&v, 8); }
  bool f64(double& v) { return raw(&v, 8); }
  /// An int written as i64 that fits an int.
  bool i32(int& v) {
    int64_t x = 0;
    if (!i64(x) || x < INT32_MIN || x > INT32_MAX) return false;
    v = static_cast<int>(x);
    return true;
  }
  bool boolean(bool& v) {
    uint32_t x = 0;
    if (!u32(x) || x > 1) return false;
    v = x == 1;
    return true;
  }
  bool str(std::string& s) {
    uint64_t n = 0;
    if (!u64(n) || n > m_n - m_at) return false;
    s.assign(m_p + m_at, static_cast<size_t>(n));
    m_at += static_cast<size_t>(n);
    return true;
  }
  /// A count of things each at least `min_bytes` long: no more than the bytes left can hold
  /// (a corrupt count never allocates past the entry's size).
  bool count(uint64_t& n, size_t min_bytes) {
    return u64(n) && n <= (m_n - m_at) / (min_bytes == 0 ? 1 : min_bytes);
  }
  bool done() const { return m_at == m_n; }

 private:
  bool raw(void* v, size_t n) {
    if (n > m_n - m_at) return false;
    std::memcpy(v, m_p + m_at, n);
    m_at += n;
    return true;
  }
  const char* m_p;
  size_t m_n, m_at = 0;
};

}  // namespace souffle
