#!/usr/bin/env bash
# usage: check_format.sh SOURCE_DIR [CLANG_FORMAT]
# Every C/C++ file of the project (tracked by git, or found under SOURCE_DIR when it is not a git
# checkout) must be as clang-format (.clang-format at the root) writes it. Fails naming each file
# that differs, with the first lines of what clang-format would change. Fix: clang-format -i FILE.
set -euo pipefail
src=$1
clang_format=${2:-clang-format}
cd "$src"
command -v "$clang_format" >/dev/null || { echo "style: $clang_format not found"; exit 1; }
pattern='\.(c|cc|cpp|cxx|h|hh|hpp)$'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files plus new ones not yet added (but not ignored ones: build trees).
  mapfile -t files < <({ git ls-files; git ls-files --others --exclude-standard; } |
                       grep -E "$pattern" | sort -u)
else
  mapfile -t files < <(find . -path './build*' -prune -o -type f -print | sed 's|^\./||' |
                       grep -E "$pattern" | sort)
fi
((${#files[@]})) || { echo "style: no C/C++ files found under $src"; exit 1; }
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done  # not deleted in the work tree
files=("${existing[@]}")
# One clang-format run over all files; each difference is reported as "FILE:LINE:COL: error: ...".
rc=0
out=$("$clang_format" --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$out" | sort -u)
if ((rc != 0 && ${#bad[@]} == 0)); then
  echo "style: $clang_format failed (exit $rc):"; echo "$out" | head -20; exit 1
fi
if ((${#bad[@]})); then
  echo "style: ${#bad[@]} of ${#files[@]} C/C++ files differ from .clang-format:"
  for f in "${bad[@]}"; do
    echo "  $f"
    { diff -u "$f" <("$clang_format" "$f") || true; } | sed -n '3,12p' | sed 's/^/      /'
  done
  echo "fix: clang-format -i ${bad[*]}"
  exit 1
fi
echo "style: ${#files[@]} C/C++ files match .clang-format"
