#!/usr/bin/env bash
# Quick start, part 2: set up, build and run every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== unit + conformance tests (Release)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
