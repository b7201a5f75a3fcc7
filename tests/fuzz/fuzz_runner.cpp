// libFuzzer entry point: the runner protocol — request lines as a hostile or broken caller would
// send them, answered by souffle-runner's request loop over the emulator backend. Every answer
// must be one JSON object per line; nothing may crash the runner or escape as an exception, and
// a bad request is answered as one ("bad_request"), never as an internal error.
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/session/runner.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  // Requests name files (read writes one): keep whatever they create in a scratch folder.
  static const bool in_scratch = [] {
    char dir[] = "/tmp/fuzz-runner-XXXXXX";
    return mkdtemp(dir) && chdir(dir) == 0;
  }();
  if (!in_scratch) std::abort();
  std::istringstream in(fuzz::text_of(data, size));
  std::ostringstream out;
  auto backend = runner::make_emulator_backend();
  const int rc = runner::serve(in, out, *backend);
  if (rc != 0 && rc != 3) __builtin_trap();
  std::istringstream answers(out.str());
  for (std::string line; std::getline(answers, line);) {
    if (!nlohmann::json::accept(line)) __builtin_trap();
    if (nlohmann::json::parse(line).value("code", "") == "internal") __builtin_trap();
  }
  return 0;
}
