#!/usr/bin/env bash
# scripts/check_format.sh must fail on a file clang-format would change and name it, and pass
# on a clean tree: run against a scratch git repository holding the project's .clang-format.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/core"
cp "$src/scripts/check_format.sh" "$tmp/scripts/"
cp "$src/.clang-format" "$tmp/"
cd "$tmp"
git init -q .
printf 'int f(int x) {\n  return x + 1;\n}\n' >core/good.cpp
git add . >/dev/null
if ! out=$(scripts/check_format.sh 2>&1); then
  echo "FAIL: a clean tree was refused: $out"
  exit 1
fi
printf 'int   g( int x ){return x*2;}\n' >core/bad.cpp
git add core/bad.cpp
if out=$(scripts/check_format.sh 2>&1); then
  echo "FAIL: a badly formatted file passed: $out"
  exit 1
fi
case "$out" in
  *core/bad.cpp*) ;;
  *) echo "FAIL: the refusal does not name core/bad.cpp: $out"; exit 1 ;;
esac
case "$out" in
  *core/good.cpp*) echo "FAIL: a clean file was named: $out"; exit 1 ;;
esac
echo "check_format: refuses core/bad.cpp, passes a clean tree"
