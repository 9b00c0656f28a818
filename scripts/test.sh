#!/usr/bin/env bash
# Quick start, part 2: set up, build and run every test suite:
#   1. the normal suite (Release): unit tests, conformance, bad inputs, CLI, Python, regressions,
#      clang-format over every C/C++ file and clang-tidy over src/ (tests style_clang_format and
#      clang_tidy);
#   2. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang);
#   3. the concurrency tests under ThreadSanitizer;
#   4. a fuzz smoke run (FUZZ_SECONDS per target, default 20).
# Set QUICK=1 to run only step 1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== 1/4 unit + conformance tests (Release), style (clang-format) and clang-tidy"
IDEM_CLANG_TIDY=1 ctest --test-dir build --output-on-failure -j"$(nproc)"
[ "${QUICK:-0}" = 1 ] && exit 0
echo "== 2/4 ASan + UBSan"
bash scripts/sanitize.sh address
echo "== 3/4 TSan (concurrency)"
bash scripts/sanitize.sh thread
echo "== 4/4 fuzz smoke run"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
