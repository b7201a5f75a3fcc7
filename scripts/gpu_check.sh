#!/usr/bin/env bash
# The project's device check. Two halves:
#
#   scripts/gpu_check.sh --prepare            here: builds souffle-cli and souffle-runner and
#                                             collects them, with the shared libraries a GPU
#                                             machine without Qt/libonnx/protobuf lacks, into
#                                             .gpu_check/ (ignored by git; at most ~20 MB)
#   scripts/gpu_check.sh [--quick] --out DIR  on the GPU machine, in the repository's root:
#                                             exports the paper-size models with PyTorch,
#                                             compiles every strategy for the device's arch,
#                                             runs, verifies and profiles them through
#                                             souffle-runner, calibrates the device, times the
#                                             same PyTorch modules eager and under torch.compile,
#                                             and writes DIR/results.md and DIR/results.json
#   scripts/gpu_check.sh --dry-run --out DIR  everything but the launches, here (a CTest test)
#
# The GPU machine has the CUDA 13 toolkit (NVRTC), PyTorch, onnx and onnxruntime, but no Qt,
# libonnx or protobuf development packages and no network. The whole check keeps within
# --budget seconds (default 480); steps that would not fit are recorded as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PACK=${GPU_CHECK_PACK:-$ROOT/.gpu_check}

prepare() {
  local build=${BUILD_DIR:-build}
  if [ ! -f "$build/build.ninja" ]; then
    scripts/setup.sh >/dev/null  # packages and a configured build
  fi
  cmake --build "$build" --target souffle-cli souffle-runner >/dev/null
  rm -rf "$PACK"
  mkdir -p "$PACK/bin" "$PACK/lib" "$PACK/share/souffle"
  cp "$build/app/cli/souffle-cli" "$build/app/runner/souffle-runner" "$PACK/bin/"
  cp resources/* "$PACK/share/souffle/"
  # Every shared library the two need except the C library's own, the driver and NVRTC (the
  # GPU machine's CUDA toolkit has those).
  for exe in "$PACK/bin/"*; do
    ldd "$exe" | awk '/=>/ {print $3}'
  done | sort -u | while read -r lib; do
    [ -n "$lib" ] && [ -f "$lib" ] || continue
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*|libnvrtc*) ;;
      *) cp -L "$lib" "$PACK/lib/" ;;
    esac
  done
  strip --strip-unneeded "$PACK/bin/"* "$PACK/lib/"* 2>/dev/null || true
  du -sh "$PACK" | awk '{print "gpu_check: packed " $1 " into '"$PACK"'"}'
}

mode=run
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) mode=prepare ;;
    --dry-run) mode=dry; args+=("$1") ;;
    *) args+=("$1") ;;
  esac
  shift
done

if [ "$mode" = prepare ]; then
  prepare
  exit 0
fi
if [ "$mode" = dry ]; then
  # The dry run packs from this machine's build, as --prepare does, then runs the check on the
  # pack with every launch replaced (emulator backend, NVRTC compile only).
  PACK=${GPU_CHECK_PACK:-$(mktemp -d)/pack}
  GPU_CHECK_PACK=$PACK prepare >/dev/null
fi
[ -x "$PACK/bin/souffle-cli" ] || { echo "gpu_check: no pack at $PACK (run scripts/gpu_check.sh --prepare here first)" >&2; exit 2; }

export LD_LIBRARY_PATH="$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# NVRTC and CUPTI of the machine's CUDA toolkit.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64 \
         /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
[ -d /usr/local/cuda/include ] && export SOUFFLE_CUDA_INCLUDE=${SOUFFLE_CUDA_INCLUDE:-/usr/local/cuda/include}
exec python3 scripts/gpu_check.py --pack "$PACK" "${args[@]}"
