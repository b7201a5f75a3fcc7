#!/usr/bin/env bash
# From process start to the planned picture: `souffle-explorer MODEL --screenshot FILE --timings`
# (it exits once the plan is on the final layout and the picture is written), each run a fresh
# process with an empty cache folder (no cached layout), offscreen. Prints per model the median,
# min and max wall time of N runs (process start to exit, the picture written), the median of
# when the window was painted with the plan (the explorer's own --timings, counted from the
# process's start), and the machine. --strategy plans with another strategy than souffle (the
# explorer's default). --trace prints every run's --timings lines.
#   bench_explorer_start.sh EXPLORER [--runs N] [--size WxH] [--strategy S] MODEL.onnx...
set -euo pipefail
[[ $# -ge 2 ]] || {
  echo "usage: $0 EXPLORER [--runs N] [--size WxH] [--strategy S] MODEL.onnx..." >&2
  exit 2
}
explorer=$1
shift
runs=3
trace=0
size=1600x1000
strategy=souffle
models=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --strategy) strategy=$2; shift 2 ;;
    --trace) trace=1; shift ;;
    *) models+=("$1"); shift ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ); strategy $strategy"
printf '%-40s %8s %8s %8s %10s %5s\n' model median_s min_s max_s painted_s runs
for m in "${models[@]}"; do
  times=()
  painted=()
  for ((i = 0; i < runs; ++i)); do
    cache="$work/cache$i"
    mkdir -p "$cache"
    t0=$(date +%s.%N)
    XDG_CACHE_HOME="$cache" QT_QPA_PLATFORM=offscreen "$explorer" "$m" --size "$size" \
      --strategy "$strategy" --restore skip --screenshot "$work/shot.png" --timings \
      > "$work/log" 2>&1 ||
      { cat "$work/log" >&2; echo "failed: $m" >&2; exit 1; }
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc -l)")
    painted+=("$(awk '/timings:.*window painted/ { print $2 / 1000 }' "$work/log")")
    if [[ $trace == 1 ]]; then grep '^timings:' "$work/log" >&2; fi
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  median=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
  painted_median=$(printf '%s\n' "${painted[@]}" | sort -g | sed -n "$(((runs + 1) / 2))p")
  printf '%-40s %8.2f %8.2f %8.2f %10.2f %5d\n' "$(basename "$(dirname "$m")")/$(basename "$m")" \
    "$median" "$(echo "$sorted" | head -1)" "$(echo "$sorted" | tail -1)" "$painted_median" "$runs"
done
