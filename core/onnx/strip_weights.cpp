#include "core/onnx/strip_weights.h"

#include <cstdint>

namespace souffle::onnx_import {
namespace {

// Field numbers of onnx.proto.
constexpr uint64_t kModelGraph = 7;        // ModelProto.graph
constexpr uint64_t kGraphInitializer = 5;  // GraphProto.initializer
constexpr uint64_t kTensorRawData = 9;     // TensorProto.raw_data
constexpr int kLengthDelimited = 2;

bool read_varint(const char*& p, const char* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const auto b = static_cast<uint8_t>(*p++);
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

/// One field of a message: its number, wire type, the whole field and its payload.
struct Field {
  uint64_t number = 0;
  int type = 0;
  const char* begin = nullptr;
  const char* payload = nullptr;
  const char* end = nullptr;
  std::string_view whole() const { return {begin, static_cast<size_t>(end - begin)}; }
  std::string_view data() const { return {payload, static_cast<size_t>(end - payload)}; }
};

bool next_field(const char*& p, const char* end, Field& f) {
  f.begin = p;
  uint64_t tag = 0;
  if (!read_varint(p, end, tag)) return false;
  f.number = tag >> 3;
  f.type = static_cast<int>(tag & 7);
  if (f.number == 0) return false;
  switch (f.type) {
    case 0: {
      uint64_t v = 0;
      f.payload = p;
      if (!read_varint(p, end, v)) return false;
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
      if (!read_varint(p, end, n) || n > static_cast<uint64_t>(end - p)) return false;
      f.payload = p;
      p += n;
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

bool strip_tensor(std::string_view t, size_t min_bytes, std::string& out, std::string_view& raw,
                  size_t& removed) {
  const char* p = t.data();
  const char* end = p + t.size();
  bool seen = false;
  while (p < end) {
    Field f;
    if (!next_field(p, end, f)) return false;
    if (f.number == kTensorRawData && f.type == kLengthDelimited) {
      if (seen) return false;  // the last one would win; not worth following
      seen = true;
      if (f.data().size() >= min_bytes) {
        raw = f.data();
        removed += raw.size();
        continue;
      }
    }
    out += f.whole();
  }
  return true;
}

bool strip_graph(std::string_view g, size_t min_bytes, StrippedModel& m, std::string& out) {
  const char* p = g.data();
  const char* end = p + g.size();
  std::string tensor;
  while (p < end) {
    Field f;
    if (!next_field(p, end, f)) return false;
    if (f.number == kGraphInitializer && f.type == kLengthDelimited) {
      tensor.clear();
      std::string_view raw;
      if (!strip_tensor(f.data(), min_bytes, tensor, raw, m.removed)) return false;
      m.raw.push_back(raw);
      if (raw.data() == nullptr)
        out += f.whole();
      else
        append_message(out, kGraphInitializer, tensor);
      continue;
    }
    out += f.whole();
  }
  return true;
}

}  // namespace

std::optional<StrippedModel> strip_initializer_data(std::string_view model, size_t min_bytes) {
  StrippedModel m;
  const char* p = model.data();
  const char* end = p + model.size();
  bool seen_graph = false;
  std::string graph;
  while (p < end) {
    Field f;
    if (!next_field(p, end, f)) return std::nullopt;
    if (f.number == kModelGraph && f.type == kLengthDelimited) {
      if (seen_graph) return std::nullopt;  // two graph fields merge; left to the full parser
      seen_graph = true;
      graph.reserve(f.data().size() < (size_t{1} << 20) ? f.data().size() : (size_t{1} << 20));
      if (!strip_graph(f.data(), min_bytes, m, graph)) return std::nullopt;
      append_message(m.bytes, kModelGraph, graph);
      continue;
    }
    m.bytes += f.whole();
  }
  if (m.removed == 0) return std::nullopt;
  return m;
}

}  // namespace souffle::onnx_import
