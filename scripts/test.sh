#!/usr/bin/env bash
# Sets up (scripts/setup.sh), builds and runs every test with CTest, then builds the sanitizer tree
# (clang, AddressSanitizer + UndefinedBehaviorSanitizer) and runs its subset of the suite there
# (scripts/sanitize.sh), checks that clang-format would change no tracked C++ file
# (scripts/check_format.sh) and that clang-tidy finds nothing new against its baseline
# (scripts/check_tidy.sh, docs/lint.md). Every step always runs; the command fails if any fails.
#   SANITIZE=0 scripts/test.sh   skips the sanitizer step (the Release suite only)
#   LINT_ONLY=1 scripts/test.sh  sets up and builds, then runs only the two lint steps
# Extra arguments go to the Release CTest run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# setup installed PyTorch and scikit-build-core: the tests that need them fail, rather than
# skip, when they do not import.
export SOUFFLE_SETUP_RAN=1
BUILD_DIR=${BUILD_DIR:-build}
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
status=0
lint() {
  local fmt=0 tidy=0 start
  scripts/check_format.sh || fmt=$?
  start=$(date +%s)
  scripts/check_tidy.sh --build "$BUILD_DIR" || tidy=$?
  echo "test: clang-tidy step finished in $(($(date +%s) - start)) s (exit $tidy)"
  [ $fmt -eq 0 ] || status=$fmt
  [ $tidy -eq 0 ] || status=$tidy
}
if [ "${LINT_ONLY:-0}" != 0 ]; then
  lint
  exit $status
fi
start=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@" || status=$?
echo "test: Release suite finished in $(($(date +%s) - start)) s (exit $status)"
# Each test's output ends with its peak resident size (tests/harness/memory_ceiling); the largest.
# awk reads the whole sorted list (no head): under pipefail a reader that stops early would
# fail the whole command with SIGPIPE (exit 141) once the list outgrows the pipe's buffer.
log="$BUILD_DIR/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  echo "test: largest peak resident sizes (whole process tree):"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
       match($0, /peak RSS [0-9]+ MB/) { split(substr($0, RSTART), f, " "); print f[3], name }' "$log" |
    sort -rn | awk 'NR <= 5 { printf "  %6d MB  %s\n", $1, $2 }'
fi
lint
if [ "${SANITIZE:-1}" != 0 ]; then
  start=$(date +%s)
  san=0
  scripts/sanitize.sh || san=$?
  echo "test: sanitizer subset finished in $(($(date +%s) - start)) s (exit $san)"
  [ $san -eq 0 ] || status=$san
fi
exit $status
