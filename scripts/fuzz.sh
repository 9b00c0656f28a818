#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz/, builds their seed corpora from
# the test data, runs each target for N seconds and prints the executions per target and in total.
# Exits nonzero when a target crashes (the input is kept in fuzz/corpus-work/artifacts/<target>/;
# copy it to tests/regressions/<target>-<bug> once fixed).
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 20)] [TARGET...]
#   targets: fuzz_model fuzz_value fuzz_backend_case (default: these three, one after another),
#            fuzz_graph (recipes only: models built over the operators of the real models; the
#            default fuzz_model run covers recipes too, through its corpus, see fuzz/harness.h)
# env: FUZZ_BUILD_DIR (build-fuzz), FUZZ_WORK (fuzz/corpus-work), FUZZ_PARALLEL=2 to run two
#      targets at a time, FUZZ_ARGS extra libFuzzer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-20}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(fuzz_model fuzz_value fuzz_backend_case)
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
WORK=${FUZZ_WORK:-fuzz/corpus-work}
PARALLEL=${FUZZ_PARALLEL:-1}

echo "== configure + build $BUILD_DIR (clang, libFuzzer + ASan + UBSan)"
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" -DIDEM_BUILD_FUZZ=ON -DIDEM_BUILD_TESTS=OFF \
  -DIDEM_BUILD_BENCH=OFF -DIDEM_BUILD_PYTHON=OFF \
  -DIDEM_WERROR="$([ "${CI:-}" = true ] && echo ON || echo OFF)" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${TARGETS[@]}" | tail -1

echo "== seed corpora -> $WORK/seeds"
/usr/bin/python3 fuzz/build_corpus.py "$WORK/seeds"

run_target() {
  local t=$1 sub=${1#fuzz_}
  mkdir -p "$WORK/$sub" "$WORK/artifacts/$t" "$WORK/logs"
  local log="$WORK/logs/$t.log"
  local rc=0
  # -workers/-jobs stay 1: the machine's 2 cores are shared. -timeout: one input may not take
  # longer than this (a hang is a bug too).
  "$BUILD_DIR/fuzz/$t" -max_len=65536 -rss_limit_mb=2048 -timeout=60 \
    -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
    -artifact_prefix="$WORK/artifacts/$t/" ${FUZZ_ARGS:-} \
    "$WORK/$sub" "$WORK/seeds/$sub" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$WORK/logs/$t.rc"
}

report_target() {
  local t=$1 log="$WORK/logs/$1.log"
  local rc execs
  rc=$(cat "$WORK/logs/$t.rc")
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  [ -n "$execs" ] || execs=0
  TOTAL=$((TOTAL + execs))
  if [ "$rc" -eq 0 ]; then
    printf '%-18s %12s executions in %ss, no crash (%s)\n' "$t" "$execs" "$SECONDS_PER_TARGET" \
      "$(grep -E '#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | sed -E 's/ +/ /g')"
  else
    FAILED+=("$t")
    printf '%-18s %12s executions, CRASH (exit %s); log %s, input in %s\n' "$t" "$execs" "$rc" \
      "$log" "$WORK/artifacts/$t/"
    grep -E 'ERROR|SUMMARY|invariant|Test unit written' "$log" | head -5 | sed 's/^/    /'
  fi
}

echo "== fuzzing ${TARGETS[*]} for ${SECONDS_PER_TARGET}s each (parallel: $PARALLEL)"
TOTAL=0
FAILED=()
if [ "$PARALLEL" -gt 1 ]; then
  pids=()
  for t in "${TARGETS[@]}"; do
    run_target "$t" &
    pids+=($!)
    if ((${#pids[@]} >= PARALLEL)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  wait
else
  for t in "${TARGETS[@]}"; do run_target "$t"; done
fi
for t in "${TARGETS[@]}"; do report_target "$t"; done
echo "total: $TOTAL executions"
if ((${#FAILED[@]})); then
  echo "crashed: ${FAILED[*]}"
  exit 1
fi
