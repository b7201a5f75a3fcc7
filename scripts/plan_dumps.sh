#!/usr/bin/env bash
# Dumps `souffle-cli plan --json` of models under every strategy, without the timing fields
# (load_ms, each pass's ms), so that the plans of two builds can be compared byte for byte:
#
#   scripts/plan_dumps.sh OLD/souffle-cli before/
#   scripts/plan_dumps.sh NEW/souffle-cli after/
#   diff -r before after && echo identical
#
# Usage: scripts/plan_dumps.sh CLI OUT_DIR [MODEL.onnx...]   (default: every sample model)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 2 ]; then
  echo "usage: $0 CLI OUT_DIR [MODEL.onnx...]" >&2
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
  done
done
