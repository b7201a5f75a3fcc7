#!/usr/bin/env bash
# Configures and builds the sanitizer tree: clang, AddressSanitizer + UndefinedBehaviorSanitizer
# over the core libraries, the CLI, the runner, the non-GUI tests and the libFuzzer targets
# (libraries instrumented for fuzzing coverage too), into ${SAN_BUILD_DIR:-build-san}.
# Usage: scripts/sanitize_build.sh [TARGET...]   (default: everything in the tree)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SAN_BUILD_DIR:-$root/build-san}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DSOUFFLE_SANITIZE=address,undefined \
    -DSOUFFLE_BUILD_GUI=OFF -DSOUFFLE_BUILD_FUZZERS=ON "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j"${JOBS:-$(nproc)}" ${1:+--target "$@"}
