// A plan's JSON as `plan --json` prints it, without the wall times of its passes (they differ
// run to run): what tests compare to say two plans are the same.
#pragma once

#include <functional>
#include <string>

#include "core/session/plan_json.h"

namespace souffle::test {

inline std::string plan_dump(const std::string& model, const plan::FusionPlan& p) {
  nlohmann::json j = plan_json(model, p);
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& x) {
    if (x.is_object()) {
      x.erase("ms");
      x.erase("load_ms");
      for (auto& [k, v] : x.items()) strip(v);
    } else if (x.is_array()) {
      for (auto& v : x) strip(v);
    }
  };
  strip(j);
  return j.dump(1);
}

}  // namespace souffle::test
