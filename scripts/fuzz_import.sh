#!/usr/bin/env bash
# Builds the ONNX-import fuzzer with clang (libFuzzer + AddressSanitizer) and runs it.
# Usage: scripts/fuzz_import.sh [SECONDS] [BUILD_DIR]
# The corpus grows in BUILD_DIR/fuzz-corpus (seeded from the ONNX backend test models); crash
# reproducers land in BUILD_DIR/fuzz-artifacts.
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build-fuzz}
jobs=${JOBS:-2}

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSOUFFLE_BUILD_GUI=OFF -DSOUFFLE_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer" >/dev/null
ninja -C "$build" -j"$jobs" fuzz_import

corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts"
testdata=/usr/share/libonnx-testdata/data
if [ -z "$(ls -A "$corpus")" ] && [ -d "$testdata" ]; then
  for t in node/test_add node/test_conv_with_strides_padding node/test_if node/test_loop11 \
           node/test_constant node/test_scan9_sum node/test_resize_downsample_scales_linear \
           node/test_gru_defaults simple/test_expand_shape_model1 pytorch-converted/test_Conv2d \
           pytorch-operator/test_operator_add_broadcast; do
    f=$testdata/$t/model.onnx
    [ -f "$f" ] && cp "$f" "$corpus/$(echo "$t" | tr / _).onnx"
  done
fi
"$build/tests/fuzz/fuzz_import" "$corpus" -artifact_prefix="$artifacts/" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
