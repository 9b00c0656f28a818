#!/usr/bin/env bash
# Quick start, part 1: set up, build, and run the seed's example models through `idem`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
IDEM=build/idem
for case in tests/data/seed/test_cc_identity_opt tests/data/seed/test_cc_identity_sequence; do
  echo "== idem info $case"
  "$IDEM" info "$case"
  echo "== idem run $case   (inputs from test_data_set_0)"
  "$IDEM" run "$case"
done
echo "== idem test tests/data/seed tests/data/debian-node"
"$IDEM" test tests/data/seed tests/data/debian-node
