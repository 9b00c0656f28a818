#!/usr/bin/env bash
# Runs `idem check` and `idem run` on every fuzz_model-* regression input: each must exit 0 or 1
# (never a signal, a sanitizer report (exit 2+ ... via abort) or a hang).
# usage: check_cli.sh IDEM_EXE REGRESSION_DIR
set -u
exe=$1 dir=$2 bad=0 n=0
for f in "$dir"/fuzz_model-*; do
  [ -f "$f" ] || continue
  for cmd in check run; do
    # run: a model may loop for as long as it likes; --timeout ends it with exit 1.
    extra=(); [ "$cmd" = run ] && extra=(--timeout 5)
    timeout 60 "$exe" "$cmd" "$f" "${extra[@]}" >/dev/null 2>"${TMPDIR:-/tmp}/idem-cli-regression.err"
    rc=$?
    n=$((n + 1))
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
      bad=$((bad + 1))
      echo "FAIL idem $cmd $(basename "$f"): exit $rc"
      head -c 2000 "${TMPDIR:-/tmp}/idem-cli-regression.err"
    fi
  done
done
rm -f "${TMPDIR:-/tmp}/idem-cli-regression.err"
echo "$n CLI runs on fuzz_model regressions, $bad failures"
[ "$bad" -eq 0 ]
