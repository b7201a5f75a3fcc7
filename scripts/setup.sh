#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need (only those missing), then configures
# and builds into ./build. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential dpkg-dev cmake ninja-build clang clang-format clang-tidy
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6svg6 libqt6opengl6-dev libgl-dev
  libgraphviz-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libbenchmark-dev
  xvfb xauth
  chromium python3 python3-jsonschema zlib1g-dev
  # The souffle Python module (python/, docs/python.md) for Debian's python3, and its tests:
  # pytest, NumPy, Dask distributed (sweeps), nbconvert + ipykernel (the sample notebook).
  python3-dev pybind11-dev python3-numpy python3-pytest python3-dask python3-distributed
  python3-nbclient python3-nbformat python3-nbconvert python3-ipykernel
  # PyTorch for souffle.from_torch's test (torch.onnx.export; 1.13, CPU): about 570 MB installed
  # with its dependencies (146 packages beyond the rest of this list, 132 MB to download).
  python3-torch
  # pip install ./python (python/pyproject.toml) and its test; a venv to install it into.
  python3-pip python3-venv
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}

# nvdisasm (SASS of the compiled kernels: compile --sass, the explorer's SASS tab, test_sass):
# the CUDA toolkit's when it has one, else NVIDIA's nvidia-cuda-nvdisasm wheel unpacked into
# $BUILD_DIR/tools/nvdisasm (the earliest 13.x on the index: NVRTC here is 13.0).
NVDISASM_WHEEL=${NVDISASM_WHEEL:-nvidia-cuda-nvdisasm==13.2.51}
if ! command -v nvdisasm >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvdisasm ] &&
   [ ! -x "$BUILD_DIR/tools/nvdisasm/nvidia/cu13/bin/nvdisasm" ]; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-pip
  fi
  echo "setup: installing $NVDISASM_WHEEL into $BUILD_DIR/tools/nvdisasm"
  mkdir -p "$BUILD_DIR/tools"
  python3 -m pip install -q --no-deps --target "$BUILD_DIR/tools/nvdisasm" "$NVDISASM_WHEEL"
fi
# scikit-build-core, the build backend of `pip install ./python` (Debian 12 does not package it),
# into $BUILD_DIR/tools/python for the python_pip_install test, which builds without isolation.
SKBUILD_CORE=${SKBUILD_CORE:-scikit-build-core==1.1.2}
if [ ! -d "$BUILD_DIR/tools/python/scikit_build_core" ]; then
  echo "setup: installing $SKBUILD_CORE into $BUILD_DIR/tools/python"
  mkdir -p "$BUILD_DIR/tools"
  python3 -m pip install -q --target "$BUILD_DIR/tools/python" "$SKBUILD_CORE"
fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
