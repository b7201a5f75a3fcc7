#!/usr/bin/env bash
# Configures and builds a sanitizer tree with clang: AddressSanitizer + UndefinedBehaviorSanitizer
# over the core libraries, the CLI, the runner, the non-GUI tests and the libFuzzer targets.
#   scripts/sanitize_build.sh [TARGET...]          build-san: what scripts/sanitize.sh tests
#   FUZZ=1 scripts/sanitize_build.sh [TARGET...]   build-fuzz: the libraries also instrumented for
#                                                  the fuzzers' coverage (scripts/fuzz.sh)
# The tree can be moved with SAN_BUILD_DIR; JOBS sets the parallel jobs (default: every core).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${FUZZ:-0}" = 1 ]; then
  build=${SAN_BUILD_DIR:-$root/build-fuzz}
  coverage=ON
else
  build=${SAN_BUILD_DIR:-$root/build-san}
  coverage=OFF
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DSOUFFLE_SANITIZE=address,undefined \
    -DSOUFFLE_BUILD_GUI=OFF -DSOUFFLE_BUILD_FUZZERS=ON -DSOUFFLE_FUZZ_COVERAGE=$coverage \
    "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j"${JOBS:-$(nproc)}" ${1:+--target "$@"}
