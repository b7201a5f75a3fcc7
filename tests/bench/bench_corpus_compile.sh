#!/usr/bin/env bash
# Cold-cache compile time of each corpus or zoo model, per arch, each a fresh souffle-cli process
# with --no-cache: whole-program NVRTC (the default) and, with --lto, separate compilation beside
# it. A model is a folder holding model.onnx and, where the model needs them, its zoo.json's
# "args" (--dim, --shape), as scripts/zoo/corpus.py writes them. Prints per model and arch the
# median (min-max) wall time of N runs, the launches and distinct programs, the most registers
# of one kernel and the spill bytes of all, and the machine's cores and load before and after.
#   bench_corpus_compile.sh CLI [--runs N] [--arch sm_80,sm_90] [--lto] MODEL_DIR...
#   bench_corpus_compile.sh build/app/cli/souffle-cli tests/corpus/models/*/
set -euo pipefail
[[ $# -ge 2 ]] || {
  echo "usage: $0 CLI [--runs N] [--arch sm_80,sm_90] [--lto] MODEL_DIR..." >&2
  exit 2
}
cli=$1
shift
runs=1
archs=sm_80,sm_90
modes=("")
dirs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --arch) archs=$2; shift 2 ;;
    --lto) modes=("" "--lto"); shift ;;
    *) dirs+=("$1"); shift ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ); souffle, --no-cache, $runs run(s) each"
printf '%-26s %-6s %-6s %24s %s\n' model arch mode "wall s: median (min-max)" "launches programs max_regs spill_bytes"
for d in "${dirs[@]}"; do
  d=${d%/}
  model=$d/model.onnx
  [[ -f $model ]] || { echo "$d: no model.onnx" >&2; exit 2; }
  args=()
  if [[ -f $d/zoo.json ]]; then
    mapfile -t args < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1])).get("args", [])))' "$d/zoo.json")
  fi
  for arch in ${archs//,/ }; do
    for mode in "${modes[@]}"; do
      times=()
      for ((i = 0; i < runs; ++i)); do
        rm -rf "$work/out"
        t0=$(date +%s.%N)
        if ! "$cli" compile "$model" "${args[@]}" --arch "$arch" --strategy souffle --no-cache $mode \
          --out "$work/out" --json >"$work/json" 2>"$work/err"; then
          echo "$d $arch $mode: compile failed:" >&2
          tail -5 "$work/err" >&2
          exit 1
        fi
        t1=$(date +%s.%N)
        times+=("$(echo "$t1 - $t0" | bc)")
      done
      shape=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
per = [a for k in j["kernels"] for a in k["per_arch"]]
print(j["launches"], j["programs"], max((a["registers"] for a in per), default=0), sum(a["spills"] for a in per))
' "$work/json")
      stats=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ t[NR] = $1 } END { printf "%.2f (%.2f-%.2f)", t[int((NR + 1) / 2)], t[1], t[NR] }')
      printf '%-26s %-6s %-6s %24s %s\n' "$(basename "$d")" "$arch" "${mode:-whole}" "$stats" "$shape"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
