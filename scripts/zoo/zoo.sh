#!/bin/sh
# Builds the model zoo and runs every model through souffle-cli; writes docs/zoo.md.
#   PYTHON=VENV/bin/python scripts/zoo/zoo.sh OUT_DIR [run.py arguments...]
# PYTHON: the interpreter with torch, torchvision, transformers, onnx, onnxruntime, onnxscript
# (default python3). BUILD_DIR: the build folder holding app/cli/souffle-cli (default build).
# ONLY=a,b: those models only (build and run).
set -eu
if [ $# -lt 1 ]; then
  echo "usage: PYTHON=... $0 OUT_DIR [run.py arguments...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$1
shift
python=${PYTHON:-python3}
cli=${BUILD_DIR:-$root/build}/app/cli/souffle-cli
if [ ! -x "$cli" ]; then
  echo "error: $cli not found: build the project first (or set BUILD_DIR)" >&2
  exit 2
fi
mkdir -p "$out"
only=${ONLY:+--only $ONLY}
"$python" "$here/build.py" --out "$out/models" $only
python3 "$here/run.py" --zoo "$out/models" --cli "$cli" --md "$root/docs/zoo.md" \
  --json "$out/results.json" $only "$@"
