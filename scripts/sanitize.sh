#!/usr/bin/env bash
# Builds idem with sanitizers (clang) and runs the tests under them.
#
# usage: scripts/sanitize.sh [address|thread]
#   address (default): build-asan/, -DIDEM_SANITIZE=address,undefined, the whole ctest suite
#   thread:            build-tsan/, -DIDEM_SANITIZE=thread, the concurrency tests (ctest -R
#                      Concurrency)
# env: SANITIZE_BUILD_DIR overrides the build folder, CTEST_ARGS adds ctest arguments,
#      CC/CXX pick the compiler (default clang/clang++; gcc works for address too).
# Sanitizer reports abort the test (-fno-sanitize-recover=all, halt_on_error), so a clean run
# means no report.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-address}
case "$MODE" in
  address) SAN=address,undefined; DIR=${SANITIZE_BUILD_DIR:-build-asan}; FILTER=() ;;
  thread) SAN=thread; DIR=${SANITIZE_BUILD_DIR:-build-tsan}; FILTER=(-R Concurrency) ;;
  *) echo "usage: $0 [address|thread]" >&2; exit 2 ;;
esac
export CC=${CC:-clang} CXX=${CXX:-clang++}

echo "== configure + build $DIR ($CXX, -fsanitize=$SAN)"
# -O1 keeps the suite fast enough; asserts stay on (no NDEBUG).
cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DIDEM_SANITIZE="$SAN" -DIDEM_BUILD_TESTS=ON \
  -DIDEM_BUILD_BENCH=OFF -DIDEM_BUILD_PYTHON=OFF -DIDEM_BUILD_FUZZ=OFF \
  -DIDEM_WERROR="$([ "${CI:-}" = true ] && echo ON || echo OFF)" >/dev/null
# The build log is kept; on failure its errors are shown (not only the last line).
if ! cmake --build "$DIR" -j"$(nproc)" >"$DIR/build.log" 2>&1; then
  grep -E -A8 'error|FAILED' "$DIR/build.log" | head -80
  echo "sanitize: build failed (full log: $DIR/build.log)" >&2
  exit 1
fi
tail -1 "$DIR/build.log"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
echo "== ctest ${FILTER[*]:-(all)} under -fsanitize=$SAN"
ctest --test-dir "$DIR" --output-on-failure --no-tests=error -j"$(nproc)" --timeout 1800 \
  "${FILTER[@]}" ${CTEST_ARGS:-}
