#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer: builds the sanitizer tree
# (scripts/sanitize_build.sh: clang, core, CLI, runner, the non-GUI tests and the fuzz targets)
# and runs CTest there. Any sanitizer report aborts its process, so it fails its test.
#
# By default the tests that take minutes in a Release build (the sample models under every
# strategy, conformance, NVRTC batches, benchmarks) are left to the Release suite and a smaller
# subset of them runs here: every unit test, the hostile corpus, the fuzzers' regression corpora,
# and two sample models (MMoE and LSTM) through verify, compile and the runner. `--all` runs
# everything the tree holds.
# Usage: scripts/sanitize.sh [--all] [CTEST ARGS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SAN_BUILD_DIR:-$root/build-san}
export SAN_BUILD_DIR=$build
all=0
if [ "${1:-}" = "--all" ]; then
  all=1
  shift
fi
"$root/scripts/sanitize_build.sh"
# Leaks are not errors here: the thread pool and a few caches live for the whole process.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
jobs=$(nproc)
if [ $all -eq 1 ]; then
  exec ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@"
fi
# The sample-model tests of two small models stay in; the rest of the heavy labels go.
exec ctest --test-dir "$build" --output-on-failure -j"$jobs" \
  -E '^(model_(bert|resnext|efficientnet|swin)_|conformance_|bench_|gpu_check_dry_run$|test_plan_pricing)' \
  "$@"
