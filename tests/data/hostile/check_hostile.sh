#!/usr/bin/env bash
# Runs every case of cases.txt (the hostile corpus) and checks each fails cleanly: souffle-cli
# and the explorer (--screenshot) exit 2, the message names the file and holds the expected
# words, no internal error, no crash, no hang, and nothing appears in the (empty) folder an --out
# names.
# Usage: check_hostile.sh SOUFFLE_CLI [SOUFFLE_EXPLORER]   (no explorer: its cases are skipped)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=$1
explorer=${2:-}
model=$here/../../../sample_models/mmoe/model.onnx
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
export XDG_DATA_HOME=$scratch/data XDG_CONFIG_HOME=$scratch/config XDG_RUNTIME_DIR=$scratch/run
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
failures=0 cases=0
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
while IFS='|' read -r file command expected; do
  file=$(trim "$file") command=$(trim "$command") expected=$(trim "$expected")
  [ -z "$file" ] || [ "${file:0:1}" = "#" ] && continue
  cases=$((cases + 1))
  path=$here/$file
  # An empty folder for whatever --out names: it must still be empty afterwards.
  out=$scratch/out$cases
  mkdir -p "$out"
  if [ "$command" = explorer ]; then
    [ -n "$explorer" ] || continue
    want=2
    log=$(timeout 60 "$explorer" "$path" --screenshot "$scratch/shot$cases.png" --timeout 50 2>&1)
    code=$?
  else
    want=2
    args=${command//\{\}/$path}
    args=${args//MODEL/$model}
    args=${args//OUT/$out}
    # shellcheck disable=SC2086
    log=$(timeout 120 "$cli" $args 2>&1)
    code=$?
  fi
  problem=""
  [ "$code" -eq "$want" ] || problem="exit $code, wanted $want"
  grep -qF -- "$file" <<<"$log" || problem="${problem:+$problem; }the message does not name $file"
  grep -qF -- "$expected" <<<"$log" || problem="${problem:+$problem; }no \"$expected\" in the message"
  grep -qiE 'internal error|terminate called|Sanitizer|runtime error' <<<"$log" &&
    problem="${problem:+$problem; }an internal error or a crash"
  [ -z "$(ls -A "$out")" ] || problem="${problem:+$problem; }it wrote into $out: $(ls -A "$out" | head -3 | xargs)"
  if [ -n "$problem" ]; then
    failures=$((failures + 1))
    echo "FAIL $file ($command): $problem"
    echo "$log" | head -5 | sed 's/^/    /'
  else
    echo "ok   $file ($command): $(echo "$log" | grep -vE '^QStandardPaths|propagateSizeHints' | head -1 | cut -c1-150)"
  fi
done <"$here/cases.txt"
echo "$cases cases, $failures failed"
[ "$failures" -eq 0 ]
