#!/usr/bin/env bash
# usage: check_tidy.sh SOURCE_DIR BUILD_DIR [CLANG_TIDY]
# clang-tidy with the project's .clang-tidy over every source file under src/ (tracked by git, or
# found when SOURCE_DIR is not a git checkout), with BUILD_DIR/compile_commands.json for the flags.
# Headers under include/idem and src/ are checked through the files that include them
# (HeaderFilterRegex). Any finding fails the test, listed as FILE:LINE: warning ... [check].
# Fix the code, or disable the check in .clang-tidy with a one-line reason.
# Runs only when IDEM_CLANG_TIDY=1 (scripts/test.sh, and so CI, sets it); otherwise exits 77, which
# ctest reports as skipped. Two files at a time (IDEM_TIDY_JOBS), about 2-3 minutes on 2 cores.
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
clang_tidy=${3:-clang-tidy}
if [ "${IDEM_CLANG_TIDY:-0}" != 1 ]; then
  echo "clang_tidy: skipped (set IDEM_CLANG_TIDY=1 to run it; scripts/test.sh does)"
  exit 77
fi
command -v "$clang_tidy" >/dev/null || { echo "clang_tidy: $clang_tidy not found"; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "clang_tidy: no $build/compile_commands.json"; exit 1; }
cd "$src"
pattern='^src/.*\.(c|cc|cpp)$'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <({ git ls-files src; git ls-files --others --exclude-standard src; } |
                       grep -E "$pattern" | sort -u)
else
  mapfile -t files < <(find src -type f | grep -E "$pattern" | sort)
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
((${#existing[@]})) || { echo "clang_tidy: no source files under $src/src"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
# --quiet drops the "N warnings generated" summaries; findings and compiler errors remain.
# The flags are GCC's (compile_commands.json of the main build): GCC-only warning options such as
# -Wno-error=restrict (CMakeLists.txt, IDEM_WERROR) are unknown to clang and not findings.
printf '%s\n' "${existing[@]}" |
  xargs -P "${IDEM_TIDY_JOBS:-2}" -n 1 "$clang_tidy" -p "$build" --quiet \
    --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1 || true
mapfile -t findings < <(grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' "$log" | sort -u)
if ((${#findings[@]})); then
  echo "clang_tidy: ${#findings[@]} findings in ${#existing[@]} files ($((SECONDS - start)) s):"
  printf '  %s\n' "${findings[@]}"
  echo "(full output: rerun with IDEM_CLANG_TIDY=1; each finding's context follows)"
  head -200 "$log"
  exit 1
fi
# A clang-tidy that crashed or could not run prints no finding but something else: fail on it.
if grep -qE 'Error while processing|Segmentation fault|error: unable to|command not found' "$log"; then
  echo "clang_tidy: clang-tidy failed:"; head -50 "$log"; exit 1
fi
echo "clang_tidy: ${#existing[@]} files under src/, no findings ($((SECONDS - start)) s)"
