#!/usr/bin/env bash
# Fails when clang-tidy (the committed .clang-tidy, over build/compile_commands.json) finds
# anything in the project's C++ sources that scripts/tidy_baseline.json does not already hold,
# printing each new finding. Lints only files changed since the baseline was written; see
# docs/lint.md. scripts/test.sh runs it.
#   scripts/check_tidy.sh                 check (what changed since the baseline)
#   scripts/check_tidy.sh --all           check every translation unit (20-30 minutes of one core)
#   scripts/check_tidy.sh --update [PATH] write the findings of what changed (under PATH) into
#                                         the baseline; with --all, relint everything first
#   CLANG_TIDY="clang-tidy-16" ...        another clang-tidy (its version is recorded)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/check_tidy.py "$@"
