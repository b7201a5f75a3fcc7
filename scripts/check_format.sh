#!/usr/bin/env bash
# Fails when clang-format (the committed .clang-format) would change any C++ file git tracks,
# listing each such file and the first lines it would change. scripts/test.sh runs it, so CI
# keeps formatting instead of catch-up commits. Fix with: scripts/check_format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = "--fix" ] && fix=1
# resources/ holds text that is data (the bundle's host program), kept as it is emitted.
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' ':!:resources/*')
if [ $fix -eq 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 clang-format -i
  exit 0
fi
mapfile -t bad < <(printf '%s\0' "${files[@]}" |
  xargs -0 -n 50 clang-format --dry-run --Werror 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "format: clang-format would change ${#bad[@]} file(s):"
  for f in "${bad[@]}"; do
    echo "  $f"
    diff -u "$f" <(clang-format "$f") | sed -n '3,12p' | sed 's/^/    /'
  done
  echo "format: run scripts/check_format.sh --fix"
  exit 1
fi
echo "format: ${#files[@]} files clean"
