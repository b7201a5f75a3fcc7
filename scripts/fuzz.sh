#!/usr/bin/env bash
# Builds the libFuzzer targets in the fuzzing tree (FUZZ=1 scripts/sanitize_build.sh: clang, ASan +
# UBSan, every library instrumented for coverage) and runs each for SECONDS (default 60), one after the other, printing a line per target:
# runs, executions per second, corpus size, crashes, slow units. Corpora grow in BUILD/fuzz/corpus/NAME,
# seeded from tests/fuzz/corpus/NAME (and, for ONNX, the ONNX backend-test models); reproducers
# land in BUILD/fuzz/artifacts/NAME. A found crash should become a file in tests/fuzz/corpus/NAME
# (the regression corpus each target runs as a CTest test in the sanitizer tree).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: import model decisions project gpu_spec
#        calibration manifest runner measurements external_profile; default all)
set -euo pipefail
seconds=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SAN_BUILD_DIR:-$root/build-fuzz}
export SAN_BUILD_DIR=$build FUZZ=1
all=(import model decisions project gpu_spec calibration manifest runner measurements
  external_profile)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
"$root/scripts/sanitize_build.sh" "${targets[@]/#/fuzz_}" >/dev/null

testdata=/usr/share/libonnx-testdata/data
onnx_seeds=(node/test_add node/test_conv_with_strides_padding node/test_matmul_2d node/test_gemm_default_matrix_bias
  node/test_softmax_axis_1 node/test_layer_normalization_2d_axis0 node/test_reduce_sum_keepdims_example
  node/test_transpose_default node/test_reshape_reordered_all_dims node/test_concat_2d_axis_0
  node/test_if node/test_loop11 node/test_constant node/test_scan9_sum node/test_gru_defaults
  node/test_resize_downsample_scales_linear simple/test_expand_shape_model1 pytorch-converted/test_Conv2d
  pytorch-operator/test_operator_add_broadcast)
status=0
printf '%-17s %10s %8s %8s %8s %5s %s\n' target runs exec/s corpus crashes slow seconds
for t in "${targets[@]}"; do
  corpus=$build/fuzz/corpus/$t
  artifacts=$build/fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  cp -n "$root/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  if [ "$t" = import ] || [ "$t" = model ]; then
    [ "$t" = model ] && cp -n "$root/sample_models/mmoe/model.onnx" "$corpus/mmoe.onnx"
    for s in "${onnx_seeds[@]}"; do
      f=$testdata/$s/model.onnx
      [ -f "$f" ] && cp -n "$f" "$corpus/$(echo "$s" | tr / _).onnx"
    done
  fi
  log=$build/fuzz/$t.log
  # -timeout: one input taking longer is a hang (a bug); -rss_limit_mb: so is a runaway allocation.
  set +e
  "$build/tests/fuzz/fuzz_$t" "$corpus" -artifact_prefix="$artifacts/" -max_total_time="$seconds" \
    -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 -max_len=131072 >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo ?)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo ?)
  size=$(find "$corpus" -type f | wc -l)
  # crash-, timeout-, oom- and leak- files are failures; slow-unit- files are inputs that took
  # longer than any before (libFuzzer keeps them for inspection), not failures.
  crashes=$(find "$artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  slow=$(find "$artifacts" -type f -name 'slow-unit-*' | wc -l)
  printf '%-17s %10s %8s %8s %8s %5s %s\n' "$t" "$runs" "$speed" "$size" "$crashes" "$slow" "$seconds"
  if [ $rc -ne 0 ]; then
    status=1
    echo "fuzz_$t stopped with $rc: $log" >&2
    grep -m3 -E 'ERROR|runtime error|deadly signal|timeout' "$log" >&2 || true
  fi
done
exit $status
