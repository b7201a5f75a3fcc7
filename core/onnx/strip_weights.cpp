#include "core/onnx/strip_weights.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace souffle::onnx_import {
namespace {

// Field numbers of onnx.proto.
constexpr uint64_t kModelGraph = 7;        // ModelProto.graph
constexpr uint64_t kGraphInitializer = 5;  // GraphProto.initializer
constexpr uint64_t kTensorRawData = 9;     // TensorProto.raw_data
constexpr int kLengthDelimited = 2;

/// The bytes walked: in memory.
class MemorySource {
 public:
  explicit MemorySource(std::string_view bytes) : m_bytes(bytes) {}
  bool byte(size_t at, uint8_t& b) {
    b = static_cast<uint8_t>(m_bytes[at]);
    return true;
  }
  bool append(size_t at, size_t n, std::string& out) {
    out.append(m_bytes.data() + at, n);
    return true;
  }

 private:
  std::string_view m_bytes;
};

/// Reads up to `n` bytes at `offset`, past interruptions; how many it got.
size_t pread_all(int fd, char* out, size_t n, uint64_t offset) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

/// The bytes walked: in a file, through a window read with pread (the walk goes forward, and
/// skips the raw_data it removes without reading them).
class FileSource {
 public:
  FileSource(int fd, uint64_t size) : m_fd(fd), m_size(size) {}
  bool byte(size_t at, uint8_t& b) {
    if (at < m_base || at >= m_base + m_window.size()) {
      m_window.resize(static_cast<size_t>(std::min<uint64_t>(kWindow, m_size - at)));
      m_base = at;
      const size_t got = pread_all(m_fd, m_window.data(), m_window.size(), at);
      if (got < m_window.size()) {
        m_window.clear();
        return false;
      }
    }
    b = static_cast<uint8_t>(m_window[at - m_base]);
    return true;
  }
  bool append(size_t at, size_t n, std::string& out) {
    if (at >= m_base && at + n <= m_base + m_window.size()) {
      out.append(m_window, at - m_base, n);
      return true;
    }
    const size_t old = out.size();
    out.resize(old + n);
    if (pread_all(m_fd, out.data() + old, n, at) == n) return true;
    out.resize(old);
    return false;
  }

 private:
  static constexpr uint64_t kWindow = 64 * 1024;
  int m_fd;
  uint64_t m_size;
  std::string m_window;
  size_t m_base = 0;
};

template <class Source>
bool read_varint(Source& s, size_t& p, size_t end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    uint8_t b = 0;
    if (!s.byte(p++, b)) return false;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void write_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

/// One field of a message: its number, wire type, and where the field and its payload lie.
struct Field {
  uint64_t number = 0;
  int type = 0;
  size_t begin = 0;
  size_t payload = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
  size_t data_size() const { return end - payload; }
};

template <class Source>
bool next_field(Source& s, size_t& p, size_t end, Field& f) {
  f.begin = p;
  uint64_t tag = 0;
  if (!read_varint(s, p, end, tag)) return false;
  f.number = tag >> 3;
  f.type = static_cast<int>(tag & 7);
  if (f.number == 0) return false;
  switch (f.type) {
    case 0: {
      uint64_t v = 0;
      f.payload = p;
      if (!read_varint(s, p, end, v)) return false;
      break;
    }
    case 1:
      if (end - p < 8) return false;
      f.payload = p;
      p += 8;
      break;
    case 5:
      if (end - p < 4) return false;
      f.payload = p;
      p += 4;
      break;
    case kLengthDelimited: {
      uint64_t n = 0;
      if (!read_varint(s, p, end, n) || n > static_cast<uint64_t>(end - p)) return false;
      f.payload = p;
      p += static_cast<size_t>(n);
      break;
    }
    default:  // groups (3, 4) and invalid types: left to the full parser
      return false;
  }
  f.end = p;
  return true;
}

void append_message(std::string& out, uint64_t number, const std::string& body) {
  write_varint(out, (number << 3) | kLengthDelimited);
  write_varint(out, body.size());
  out += body;
}

/// What a walk gives: the bytes kept, and per top-level initializer where its removed raw_data
/// lies (removed false: nothing removed).
struct Walk {
  std::string bytes;
  std::vector<RawRange> raw;
  size_t removed = 0;
};

template <class Source>
bool strip_tensor(Source& s, size_t p, size_t end, size_t min_bytes, std::string& out,
                  RawRange& raw, size_t& removed) {
  bool seen = false;
  while (p < end) {
    Field f;
    if (!next_field(s, p, end, f)) return false;
    if (f.number == kTensorRawData && f.type == kLengthDelimited) {
      if (seen) return false;  // the last one would win; not worth following
      seen = true;
      if (f.data_size() >= min_bytes) {
        raw = {f.payload, f.data_size(), true};
        removed += f.data_size();
        continue;
      }
    }
    if (!s.append(f.begin, f.size(), out)) return false;
  }
  return true;
}

template <class Source>
bool strip_graph(Source& s, size_t p, size_t end, size_t min_bytes, Walk& w, std::string& out) {
  std::string tensor;
  while (p < end) {
    Field f;
    if (!next_field(s, p, end, f)) return false;
    if (f.number == kGraphInitializer && f.type == kLengthDelimited) {
      tensor.clear();
      RawRange raw;
      if (!strip_tensor(s, f.payload, f.end, min_bytes, tensor, raw, w.removed)) return false;
      w.raw.push_back(raw);
      if (!raw.removed) {
        if (!s.append(f.begin, f.size(), out)) return false;
      } else {
        append_message(out, kGraphInitializer, tensor);
      }
      continue;
    }
    if (!s.append(f.begin, f.size(), out)) return false;
  }
  return true;
}

template <class Source>
std::optional<Walk> strip(Source& s, size_t size, size_t min_bytes) {
  Walk w;
  size_t p = 0;
  bool seen_graph = false;
  std::string graph;
  while (p < size) {
    Field f;
    if (!next_field(s, p, size, f)) return std::nullopt;
    if (f.number == kModelGraph && f.type == kLengthDelimited) {
      if (seen_graph) return std::nullopt;  // two graph fields merge; left to the full parser
      seen_graph = true;
      graph.reserve(std::min(f.data_size(), size_t{1} << 20));
      if (!strip_graph(s, f.payload, f.end, min_bytes, w, graph)) return std::nullopt;
      append_message(w.bytes, kModelGraph, graph);
      continue;
    }
    if (!s.append(f.begin, f.size(), w.bytes)) return std::nullopt;
  }
  if (w.removed == 0) return std::nullopt;
  return w;
}

}  // namespace

std::optional<StrippedModel> strip_initializer_data(std::string_view model, size_t min_bytes) {
  MemorySource source(model);
  std::optional<Walk> w = strip(source, model.size(), min_bytes);
  if (!w) return std::nullopt;
  StrippedModel m;
  m.bytes = std::move(w->bytes);
  m.removed = w->removed;
  m.raw.reserve(w->raw.size());
  for (const RawRange& r : w->raw)
    m.raw.push_back(r.removed
                        ? model.substr(static_cast<size_t>(r.offset), static_cast<size_t>(r.size))
                        : std::string_view());
  return m;
}

std::optional<StrippedFile> strip_initializer_data_from_file(int fd, uint64_t size,
                                                             size_t min_bytes) {
  if (size > SIZE_MAX) return std::nullopt;
  FileSource source(fd, size);
  std::optional<Walk> w = strip(source, static_cast<size_t>(size), min_bytes);
  if (!w) return std::nullopt;
  return StrippedFile{std::move(w->bytes), std::move(w->raw), w->removed};
}

}  // namespace souffle::onnx_import
