// libFuzzer entry point: a kernel bundle's bundle.json, as the runner reads it before anything
// is loaded onto a device.
#include "core/session/bundle_manifest.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  try {
    (void)parse_manifest(fuzz::text_of(data, size), "fuzz-input/bundle.json");
  } catch (const UserError&) {
  }
  return 0;
}
