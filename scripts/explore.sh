#!/usr/bin/env bash
# Sets up, builds and opens the explorer on a sample model (default: the small BERT).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=${1:-sample_models/bert/model.onnx}
shift || true
exec "${BUILD_DIR:-build}/app/explorer/souffle-explorer" "$model" "$@"
