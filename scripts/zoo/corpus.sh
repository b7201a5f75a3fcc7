#!/bin/sh
# Re-creates the corpus and runs it: fetches the shipped files, exports ours with each exporter's
# own interpreter, writes ONNX Runtime's references, runs every step and writes docs/corpus.md.
#
#   TF_PY=... PD_PY=... PT_PY=... ORT_PY=... scripts/zoo/corpus.sh OUT_DIR [run.py options]
#
# TF_PY: a Python with tensorflow-cpu and tf2onnx; PD_PY: paddlepaddle and paddle2onnx;
# PT_PY: torch (2.0.1 for the exports as committed); ORT_PY: onnx, onnxruntime, sympy and spox.
# A step whose interpreter is not given is skipped (OUT_DIR keeps what it has). OUT_DIR
# defaults to tests/corpus/models; the files the corpus does not commit are fetched with
# CORPUS_ALL=1. BUILD_DIR names the build folder with souffle-cli (default build).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/tests/corpus/models}
[ $# -gt 0 ] && shift
py=${PYTHON:-python3}
all=""
[ "${CORPUS_ALL:-0}" = 1 ] && all="--all"
"$py" "$here/corpus.py" fetch --out "$out" $all
[ -n "${TF_PY:-}" ] && "$TF_PY" "$here/corpus.py" export --exporter tf2onnx --out "$out"
[ -n "${PD_PY:-}" ] && "$PD_PY" "$here/corpus.py" export --exporter paddle2onnx --out "$out"
[ -n "${PT_PY:-}" ] && "$PT_PY" "$here/corpus.py" export --exporter torch --out "$out"
if [ -n "${ORT_PY:-}" ]; then
  "$ORT_PY" "$here/corpus.py" export --exporter spox --out "$out"
  "$ORT_PY" "$here/corpus.py" export --exporter ort --out "$out"
  "$ORT_PY" "$here/corpus.py" reference --out "$out"
fi
json=$(mktemp)
"$py" "$here/run.py" --zoo "$out" --cli "${BUILD_DIR:-$root/build}/app/cli/souffle-cli" --archs sm_90 \
  --json "$json" "$@"
"$py" "$here/corpus.py" table --out "$out" --json "$json" --md "$root/docs/corpus.md"
