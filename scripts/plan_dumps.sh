#!/usr/bin/env bash
# Dumps `souffle-cli plan --json` of models under every strategy, without the timing fields
# (load_ms, each pass's ms), so that the plans of two builds can be compared byte for byte:
#
#   scripts/plan_dumps.sh OLD/souffle-cli before/
#   scripts/plan_dumps.sh NEW/souffle-cli after/
#   diff -r before after && echo identical
#
# With --cuda, also the CUDA C of every kernel (the .cu files of `compile --out`, one folder per
# model and strategy; NVRTC runs, from the compile cache where the code is unchanged).
#
# Usage: scripts/plan_dumps.sh [--cuda] CLI OUT_DIR [MODEL.onnx...]   (default: every sample model)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=0
if [ "${1:-}" = --cuda ]; then
  cuda=1
  shift
fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--cuda] CLI OUT_DIR [MODEL.onnx...]" >&2
  exit 2
fi
cli=$1
out=$2
shift 2
models=("$@")
if [ ${#models[@]} -eq 0 ]; then models=("$root"/sample_models/*/model.onnx); fi
mkdir -p "$out"
for m in "${models[@]}"; do
  # sample_models/bert/model.onnx is "bert"; big.onnx is "big"
  name=$(basename "$m" .onnx)
  if [ "$name" = model ]; then name=$(basename "$(dirname "$m")"); fi
  for s in unfused rules souffle-paper souffle; do
    "$cli" plan "$m" --strategy "$s" --json |
      jq 'del(.load_ms) | walk(if type == "object" then del(.ms) else . end)' \
        >"$out/$name.$s.json"
    if [ $cuda = 1 ]; then
      bundle=$(mktemp -d)
      "$cli" compile "$m" --strategy "$s" --out "$bundle" -q >/dev/null
      mkdir -p "$out/$name.$s"
      cp "$bundle"/*.cu "$out/$name.$s/"
      rm -rf "$bundle"
    fi
  done
done
