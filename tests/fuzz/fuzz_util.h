/// \file What the fuzz targets share: the bytes as text, and a small real model planned once.
/// A UserError is the expected answer to garbage; anything else that escapes (an InternalError, a
/// JSON library exception, a crash, a sanitizer report, a hang) is a bug for the target to find.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/session/load.h"

namespace souffle::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// The MMoE sample model (60 ONNX nodes, 61 TEs), loaded on first use: the plan the decisions
/// and GPU-spec targets exercise.
inline const LoadedModel& sample_model() {
  static const LoadedModel m = load_model(SOUFFLE_SOURCE_DIR "/sample_models/mmoe/model.onnx");
  return m;
}

}  // namespace souffle::fuzz
