// libFuzzer entry point: a `.souffle` project from someone else, with the profile runs it keeps.
// Parsed or refused with a UserError; what parses writes back to the same value.
#include <nlohmann/json.hpp>

#include "core/session/profile.h"
#include "core/session/project.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  const std::string path = "/fuzz/projects/p.souffle";
  Project p;
  try {
    p = parse_project(fuzz::text_of(data, size), path);
  } catch (const UserError&) {
    return 0;
  }
  if (!(parse_project(project_to_json(p, path), path) == p)) __builtin_trap();
  // The explorer reads each kept profile run back when the project opens.
  for (const std::string& m : p.measurements) {
    try {
      (void)profile_report_from_json(nlohmann::json::parse(m));
    } catch (const UserError&) {
    }
  }
  return 0;
}
