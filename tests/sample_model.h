/// \file Tests: the sample models of the repository, each loaded once per test binary.
#pragma once

#include <map>
#include <string>

#include "core/session/load.h"

namespace souffle::test {

inline std::string sample_model_path(const std::string& name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + name + "/model.onnx";
}

/// sample_models/<name>/model.onnx, loaded on first use and kept for the whole binary.
inline const LoadedModel& sample_model(const std::string& name) {
  static std::map<std::string, LoadedModel> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_model(sample_model_path(name))).first;
  return it->second;
}

}  // namespace souffle::test
