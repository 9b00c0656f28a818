#!/usr/bin/env bash
# The Node.js package (node/, docs/node.md) from the test suite:
#   1. `npm install --ignore-scripts` in node/ when its dependencies are missing (scripts/setup.sh
#      normally fetched them before configuring, so the build tree already has the addon);
#   2. the package's install step (node/scripts/build.js) against this build tree: it builds the
#      `idem_node` target here (nothing when it is up to date) and puts the addon in node/build/;
#   3. `node --test` on node/test/*.test.js, comparing with onnxruntime-node 1.30 from
#      ORT_NODE_MODULES.
# Exit 77 (ctest: skipped) when node or npm is missing or the npm registry cannot be reached,
# except with CI=true, where that is a failure.
#
# usage: tests/node_package_test.sh BUILD_DIR SOURCE_DIR ORT_NODE_MODULES
set -euo pipefail
build=$1 src=$2 ort=$3
skip() {
  if [ "${CI:-}" = true ]; then
    echo "node_package: $1 (required with CI=true)" >&2
    exit 1
  fi
  echo "node_package: skipped: $1"
  exit 77
}
command -v node >/dev/null || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"
cd "$src/node"
if [ ! -f node_modules/node-addon-api/napi.h ] || [ ! -f node_modules/node-api-headers/include/node_api.h ] ||
   [ ! -f node_modules/onnxruntime-common/package.json ]; then
  npm install --ignore-scripts --no-audit --no-fund || skip "npm install in node/ failed"
fi
IDEM_CMAKE_BUILD_DIR="$build" node scripts/build.js
export IDEM_ORT_NODE_MODULES="$ort"
exec node --test test/*.test.js
