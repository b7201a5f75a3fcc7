#!/usr/bin/env bash
# Compiles every kernel of the full-size paper models with NVRTC and prints one table row per
# model, strategy and arch: kernels, NVRTC errors, max registers, spill bytes, max shared memory
# per block, stages of the largest kernel, wall and CPU time of the whole command (import, plan,
# kernel build, emission, NVRTC) and the machine's load.
#
#   scripts/full_size_compile.sh FOLDER [MODEL...]
#
# FOLDER holds MODEL/model.onnx for each model (default: bert resnext lstm efficientnet swin
# mmoe). One compile runs at a time, with one NVRTC thread (-j1), so the check takes at most two
# cores with the CLI's own thread. Environment:
#   SOUFFLE_CLI   the souffle-cli to run (default build/app/cli/souffle-cli)
#   STRATEGIES    default "unfused rules souffle"
#   ARCHS         default "sm_80 sm_90"
#   BATCH         kernels per NVRTC unit for unfused/rules (default 64; souffle kernels alone)
#   TIMEOUT       seconds one compile may take (default 3600)
#   JSON_DIR      where each run's --json output is kept (default: a temporary folder)
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 FOLDER [MODEL...]" >&2
  exit 2
fi
folder=$1
shift
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(bert resnext lstm efficientnet swin mmoe)
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${SOUFFLE_CLI:-$root/build/app/cli/souffle-cli}
strategies=${STRATEGIES:-unfused rules souffle}
archs=${ARCHS:-sm_80 sm_90}
batch=${BATCH:-64}
limit=${TIMEOUT:-3600}
json_dir=${JSON_DIR:-$(mktemp -d)}
mkdir -p "$json_dir"
[[ -x $cli ]] || { echo "no souffle-cli at $cli (set SOUFFLE_CLI)" >&2; exit 2; }

load() { cut -d' ' -f1 /proc/loadavg; }

printf '%-13s %-8s %-6s %7s %6s %5s %7s %9s %7s %9s %9s %11s\n' model strategy arch kernels errors \
  regs spills smem_B stages wall_s cpu_s load
failed=0
for m in "${models[@]}"; do
  onnx=$folder/$m/model.onnx
  if [[ ! -f $onnx ]]; then
    echo "$m: no $onnx" >&2
    continue
  fi
  for s in $strategies; do
    b=$batch
    [[ $s == souffle ]] && b=1
    for a in $archs; do
      out=$json_dir/$m.$s.$a.json
      load0=$(load)
      t0=$(date +%s.%N)
      rc=0
      /usr/bin/time -f '%U %S' -o "$out.time" timeout "$limit" "$cli" compile "$onnx" \
        --strategy "$s" --arch "$a" -j1 --batch "$b" --json >"$out" 2>"$out.err" || rc=$?
      t1=$(date +%s.%N)
      load1=$(load)
      wall=$(echo "$t1 - $t0" | bc)
      cpu=$(awk 'END { print $1 + $2 }' "$out.time" 2>/dev/null || echo 0)
      if [[ $rc -ne 0 && $rc -ne 1 ]] || ! jq -e . "$out" >/dev/null 2>&1; then
        why="exit $rc"
        [[ $rc -eq 124 ]] && why="timeout after ${limit}s"
        printf '%-13s %-8s %-6s %s (%s)\n' "$m" "$s" "$a" "did not finish" "$why"
        failed=1
        continue
      fi
      # Largest register count, spills and shared memory (dynamic arena + static) over kernels.
      read -r kernels errors regs spills smem stages < <(jq -r '
        [ (.kernels | length), .errors,
          ([.kernels[].per_arch[].registers // 0] | max // 0),
          ([.kernels[].per_arch[].spills // 0] | max // 0),
          ([.kernels[] | .smem_bytes + ([.per_arch[].smem // 0] | max // 0)] | max // 0),
          ([.kernels[].stages] | max // 0) ] | @tsv' "$out")
      [[ $errors -eq 0 ]] || failed=1
      printf '%-13s %-8s %-6s %7s %6s %5s %7s %9s %7s %9.1f %9.1f %5s-%-5s\n' "$m" "$s" "$a" \
        "$kernels" "$errors" "$regs" "$spills" "$smem" "$stages" "$wall" "$cpu" "$load0" "$load1"
    done
  done
done
echo "(json in $json_dir; load: 1-minute load average before-after each compile, $(nproc) cores)"
exit $failed
