#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer: builds the sanitizer tree
# (scripts/sanitize_build.sh: clang, ASan + UBSan) and runs CTest there. Any sanitizer report
# aborts its process, so it fails its test.
#
# By default (what scripts/test.sh runs) a subset that fits the suite's time budget: the tests of
# everything that reads a file or a message — the ONNX importer, projects, GPU specs,
# calibration files, the runner protocol, reports — the hostile corpus through the CLI, the
# fuzzers' regression corpora, the front half (lowering, interpreter, analysis, loop IR, the
# emulator) and one sample model (MMoE) verified, compiled and profiled through the runner.
# The tests that take minutes in a Release build take tens of minutes here; `--all` runs them
# too (every test the tree holds).
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
quick_tests=(test_support test_graph test_importer test_te_passes test_lower_matmul
  test_lower_conv_pool test_lower_norm test_lower_elementwise test_lower_shape_index
  test_lower_reduce test_lower_recurrent test_interp test_loop test_schedule test_ownership
  test_price test_emulate test_analysis test_gpu_spec test_device test_calibration test_cupti
  test_project test_runner test_report)
fuzzers=(import model decisions project gpu_spec calibration manifest runner measurements
  external_profile)
if [ $all -eq 1 ]; then
  "$root/scripts/sanitize_build.sh"
else
  "$root/scripts/sanitize_build.sh" souffle-cli souffle-runner "${quick_tests[@]}" \
    "${fuzzers[@]/#/fuzz_}"
fi
# Leaks are not errors here: the thread pool and a few caches live as long as the process.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ $all -eq 1 ]; then
  exec ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
fi
pattern="^($(
  IFS='|'
  echo "${quick_tests[*]}"
)|hostile_inputs|fuzz_.*_corpus|model_mmoe_(verify_te_souffle|verify_kernels_souffle|compile_souffle|profile_emulator|inspect))$"
exec ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -R "$pattern" "$@"
