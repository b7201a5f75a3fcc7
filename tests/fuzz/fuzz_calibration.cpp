// libFuzzer entry point: a calibration file (measured by the runner on someone's GPU): read, the
// barrier cost asked at many grid sizes, written back and read again.
#include <cmath>

#include "core/gpu/calibration.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  gpu::Calibration c;
  try {
    c = gpu::parse_calibration(fuzz::text_of(data, size), "fuzz-input/calibration.json");
  } catch (const UserError&) {
    return 0;
  }
  for (int blocks : {0, 1, 7, 108, 132, 1000, 1 << 20})
    if (double us = gpu::grid_barrier_us(c, blocks); !std::isfinite(us) || us < 0) __builtin_trap();
  try {
    (void)gpu::parse_calibration(gpu::calibration_json(c), "round-trip");
  } catch (const UserError&) {
    __builtin_trap();  // what was accepted must write back readable
  }
  return 0;
}
