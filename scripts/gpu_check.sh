#!/usr/bin/env bash
# The project's device check. Two halves:
#
#   scripts/gpu_check.sh --prepare [--pack DIR] [--no-build]
#       here: builds souffle-cli and souffle-runner (not with --no-build) and packs them into
#       DIR (default .gpu_check/, ignored by git) with the shared libraries a GPU machine lacks
#       (libonnx, protobuf, ...), never the C library or the C++ runtime (the GPU machine's own
#       serve, as they serve its PyTorch). The packed binaries find the packed libraries through
#       their own run paths ($ORIGIN), so no library path is exported to anything: PyTorch, the
#       exporters and every other process of the check load what they always load.
#       DIR/pack.json lists what was packed and the newest glibc and C++ runtime symbol
#       versions the pack needs; --prepare fails if anything packed needs a glibc newer than
#       this machine's. The pack is also written as DIR.tar.xz (about 5 MB), the form that
#       travels; --prepare prints what a copy of the checkout with it weighs and fails over
#       the 64 MiB such a copy may hold.
#
#   scripts/gpu_check.sh [--quick] [--pack DIR|DIR.tar.xz] --out DIR
#       on the GPU machine, in the repository's root (an archive is unpacked to a temporary
#       folder first). --quick (under two minutes) proves that
#       the runner loads, runs, verifies and times one small bundle (and its timeline) and that
#       PyTorch imports; without it the check also calibrates the device, times the tuner's
#       GEMM tiles, exports the paper-size models with PyTorch, profiles every strategy and
#       souffle's plans with --timeline (per-stage tables, grid-barrier waits, overhead under
#       DIR/timeline/), and times PyTorch eager and under torch.compile. Each step is isolated (a failure is a row of the results);
#       DIR/results.md and DIR/results.json are rewritten after every step, and every answer
#       of the device is kept under DIR/answers/ (replayable with --replay).
#
#   scripts/gpu_check.sh --dry-run [--pack DIR] --out DIR
#       the same Python here, without a device: the device's answers are replayed from
#       tests/gpu_check/answers/ (or --replay DIR), NVRTC compiles and the emulator run for
#       real. Without --pack it packs into a temporary folder first (a CTest test).
#
# The whole check keeps within --budget seconds (default 480, --quick 110).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# The libraries a pack never carries: the C library's own (the device's loader must match
# them); the C++ runtime, zlib and expat (every machine with Python has them, a second copy in
# a process that loads the first is what breaks, and this machine's expat needs glibc 2.36);
# and CUDA (the device's driver and toolkit).
NEVER_PACK='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libmvec|libnsl|ld-linux.*|libstdc\+\+|libgcc_s|libatomic|libz|libexpat|libcuda|libnvrtc.*|libcupti|libnvidia-.*)\.so'

# The newest version of symbol set $2 (GLIBC, GLIBCXX, CXXABI) that ELF file $1 needs.
newest_needed() {
  readelf -V --wide "$1" 2>/dev/null | grep -o "Name: $2_[0-9.]*" | sed "s/Name: $2_//" |
    sort -V | tail -1
}

ensure_patchelf() {
  command -v patchelf >/dev/null && return 0
  echo "gpu_check: installing patchelf (the packed binaries' run paths)" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y patchelf >/dev/null 2>&1 ||
    { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y patchelf >/dev/null 2>&1; } ||
    { echo "gpu_check: patchelf is missing and could not be installed" >&2; exit 2; }
}

prepare() {
  local pack=$1 build_it=$2
  local build=${BUILD_DIR:-build}
  if [ "$build_it" = 1 ]; then
    if [ ! -f "$build/build.ninja" ]; then
      scripts/setup.sh >/dev/null  # packages and a configured build
    fi
    cmake --build "$build" --target souffle-cli souffle-runner >/dev/null
  fi
  for exe in "$build/app/cli/souffle-cli" "$build/app/runner/souffle-runner"; do
    [ -x "$exe" ] || { echo "gpu_check: $exe is not built" >&2; exit 2; }
  done
  ensure_patchelf
  rm -rf "$pack"
  mkdir -p "$pack/bin" "$pack/lib" "$pack/share/souffle"
  cp "$build/app/cli/souffle-cli" "$build/app/runner/souffle-runner" "$pack/bin/"
  cp -r resources/. "$pack/share/souffle/"
  local packed=() kept=()
  while read -r lib; do
    [ -n "$lib" ] && [ -f "$lib" ] || continue
    if basename "$lib" | grep -Eq "$NEVER_PACK"; then
      kept+=("$(basename "$lib")")
    else
      cp -L "$lib" "$pack/lib/"
      packed+=("$(basename "$lib")")
    fi
  done < <(for exe in "$pack/bin/"*; do ldd "$exe" | awk '/=>/ {print $3}'; done | sort -u)
  strip --strip-unneeded "$pack/bin/"* "$pack/lib/"* 2>/dev/null || true
  # Each binary looks in ../lib beside itself, each packed library beside itself (a run path
  # is not inherited by a library's own needs).
  for f in "$pack/bin/"*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
  for f in "$pack/lib/"*; do [ -f "$f" ] && patchelf --set-rpath '$ORIGIN' "$f"; done
  local here glibc=0 glibcxx=0 cxxabi=0 v
  here=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
  for f in "$pack/bin/"* "$pack/lib/"*; do
    [ -f "$f" ] || continue
    v=$(newest_needed "$f" GLIBC)
    if [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$v" "$here" | sort -V | tail -1)" != "$here" ]; then
      echo "gpu_check: $(basename "$f") needs glibc $v, newer than this machine's $here" >&2
      exit 2
    fi
    glibc=$(printf '%s\n%s\n' "$glibc" "${v:-0}" | sort -V | tail -1)
    glibcxx=$(printf '%s\n%s\n' "$glibcxx" "$(newest_needed "$f" GLIBCXX)" | sort -V | tail -1)
    cxxabi=$(printf '%s\n%s\n' "$cxxabi" "$(newest_needed "$f" CXXABI)" | sort -V | tail -1)
  done
  python3 - "$pack/pack.json" "$glibc" "$glibcxx" "$cxxabi" "$here" "${packed[*]:-}" "${kept[*]:-}" <<'EOF'
import json, sys
out, glibc, glibcxx, cxxabi, here, packed, kept = sys.argv[1:8]
json.dump({"glibc_needed": glibc, "glibcxx_needed": glibcxx, "cxxabi_needed": cxxabi,
           "packed_on_glibc": here, "packed": packed.split(), "left_to_the_device": kept.split()},
          open(out, "w"), indent=1)
EOF
  du -sh "$pack" | awk -v p="$pack" -v g="$glibc" -v x="$glibcxx" \
    '{print "gpu_check: packed " $1 " into " p " (needs glibc " g ", GLIBCXX " x ")"}'
  # The pack travels as one xz archive beside the folder (a third of its size): what goes to
  # the GPU machine is the checkout and this archive, 64 MiB at most together.
  tar -C "$pack" -cf - . | xz -6 -T0 >"$pack.tar.xz"
  travel_size "$pack.tar.xz"
}

# What a copy of the checkout to a GPU machine weighs with the archive $1: tracked files,
# untracked files git does not ignore, and the archive. Fails over 64 MiB, the limit of such a
# copy; warns over 60 MiB.
travel_size() {
  local archive=$1 tree extra arch total
  tree=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  extra=$(git ls-files -z -o --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null |
    awk '{ s += $1 } END { print s + 0 }')
  arch=$(stat -c %s "$archive")
  total=$((tree + extra + arch))
  awk -v t="$tree" -v e="$extra" -v a="$arch" -v s="$total" -v f="$archive" 'BEGIN {
    m = 1048576
    printf "gpu_check: a copy to the GPU machine: tracked %.1f MiB + untracked %.1f MiB + %s %.1f MiB = %.1f MiB of 64\n",
      t / m, e / m, f, a / m, s / m }'
  if [ "$total" -gt $((64 * 1048576)) ]; then
    echo "gpu_check: that is over the 64 MiB a copy to the GPU machine may hold: commit less, ignore untracked files" >&2
    exit 2
  elif [ "$total" -gt $((60 * 1048576)) ]; then
    echo "gpu_check: warning: within 4 MiB of the 64 MiB a copy to the GPU machine may hold" >&2
  fi
}

mode=run
pack=""
build_it=1
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) mode=prepare ;;
    --no-build) build_it=0 ;;
    --pack) pack=$2; shift ;;
    --pack=*) pack=${1#--pack=} ;;
    --dry-run) mode=dry; args+=("$1") ;;
    *) args+=("$1") ;;
  esac
  shift
done

if [ "$mode" = prepare ]; then
  prepare "${pack:-${GPU_CHECK_PACK:-$ROOT/.gpu_check}}" "$build_it"
  exit 0
fi
if [ "$mode" = dry ] && [ -z "$pack" ] && [ -z "${GPU_CHECK_PACK:-}" ]; then
  # Packs from this machine's build, as --prepare does, then runs the check on the pack.
  pack=$(mktemp -d)/pack
  prepare "$pack" "$build_it" >/dev/null
fi
pack=${pack:-${GPU_CHECK_PACK:-$ROOT/.gpu_check}}
if [ -f "$pack" ] && [ "${pack%.tar.xz}" != "$pack" ]; then
  # The archive --prepare writes beside the pack: unpacked into a temporary folder.
  unpacked=$(mktemp -d)/pack
  mkdir -p "$unpacked"
  tar -C "$unpacked" -xJf "$pack"
  pack=$unpacked
fi
[ -x "$pack/bin/souffle-cli" ] || { echo "gpu_check: no pack at $pack (run scripts/gpu_check.sh --prepare here first)" >&2; exit 2; }
# No library path is exported here: the check gives the CUDA toolkit's folders to the
# project's binaries alone (gpu_check.py), never to PyTorch.
exec python3 scripts/gpu_check.py --pack "$pack" "${args[@]}"
