#!/bin/sh
# Exports a model's kernel bundle with `souffle-cli compile` and builds its host harness with
# nvcc through the bundle's own CMakeLists.txt (building is the check; running needs a GPU).
# usage: build_bundle.sh SOUFFLE_CLI MODEL STRATEGY OUT_DIR [SYNC [EXPECT...]]
# EXPECT: texts bundle.json must hold (what the bundle is meant to exercise).
# exit 77 (skipped) when no nvcc is found.
set -eu
cli=$1 model=$2 strategy=$3 out=$4 sync=${5:-grid}
shift 4
if [ $# -gt 0 ]; then shift; fi
nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
if [ -z "$nvcc" ]; then
  echo "[SKIP] no nvcc found"
  exit 77
fi
rm -rf "$out"
"$cli" compile "$model" --strategy "$strategy" --sync "$sync" --out "$out"
test -f "$out/main.cu"
for expect in "$@"; do
  if ! grep -qF "$expect" "$out/bundle.json"; then
    echo "bundle.json does not hold $expect"
    exit 1
  fi
done
cmake -S "$out" -B "$out/build" -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_BUILD_TYPE=Release
cmake --build "$out/build" -j 2
test -x "$out/build/harness"
echo "built $out/build/harness"
