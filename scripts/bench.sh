#!/usr/bin/env bash
# Issue 5 benchmarks: builds idem_bench (Release), runs every case with repetitions (medians),
# writes the Google Benchmark JSON to bench/results/latest.json, measures the peak RSS of a process
# that loads + runs the external-data 256 MiB model, and prints a Markdown table of the figures
# against their targets (also saved as bench/results/latest.md).
#
#   bash scripts/bench.sh                       # everything, 5 repetitions
#   REPS=9 bash scripts/bench.sh                # more repetitions
#   bash scripts/bench.sh --benchmark_filter=tiny   # extra args go to idem_bench
#
# Also times the Python package on the tiny model (bench/python_bench.py: python_tiny_run), shown
# next to the C++ tiny row.
# Env: BUILD_DIR (default build-bench), REPS (default 5), CMAKE_ARGS.
# Timings are noisy when other work shares the machine: the load average is printed and saved.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-bench}
REPS=${REPS:-5}
OUT=bench/results

if ! dpkg-query -W -f='${Status}' libbenchmark-dev 2>/dev/null | grep -q "install ok installed" ||
   ! command -v ninja >/dev/null || [ ! -x /usr/bin/time ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq build-essential cmake ninja-build \
    libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev libfmt-dev libgtest-dev \
    libgmock-dev libbenchmark-dev time python3 >/dev/null
fi

echo "== build ($BUILD_DIR, Release)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEM_BUILD_PYTHON=ON \
  ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" --target idem_bench _idem -j"$(nproc)"
BENCH="$BUILD_DIR/bench/idem_bench"

mkdir -p "$OUT"
echo "== load before measuring: $(uptime)"
"$BENCH" --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT/latest.json" --benchmark_out_format=json "$@"

echo "== peak RSS: load + run the external 256 MiB model without reading the output"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BENCH" --make_external_model "$tmp/model" >/dev/null
/usr/bin/time -v "$BENCH" --rss_check "$tmp/model/model.onnx" 2>"$tmp/time.txt"
rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")
echo "peak RSS (/usr/bin/time -v): ${rss_kib} KiB"

peak_kib() {  # peak RSS of one command, in KiB
  /usr/bin/time -v "$@" >/dev/null 2>"$tmp/time.txt"
  awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt"
}
echo "== peak RSS: load + run the inline 256 MiB model (raw_data in the .onnx)"
"$BENCH" --make_inline_model "$tmp/inline_256MiB.onnx"
inline_kib=$(peak_kib "$BENCH" --rss_check "$tmp/inline_256MiB.onnx")
echo "peak RSS: ${inline_kib} KiB"
echo "== peak RSS: load the 1,000,000-node chain (the loader alone, then Session::Create)"
"$BENCH" --make_chain_model "$tmp/chain_1M.onnx"
chain_kib=$(peak_kib env IDEM_BENCH_GRAPH_ONLY=1 "$BENCH" --load_only "$tmp/chain_1M.onnx")
create_kib=$(peak_kib "$BENCH" --load_only "$tmp/chain_1M.onnx")
chain_bytes=$(stat -c %s "$tmp/chain_1M.onnx")
echo "peak RSS: loader ${chain_kib} KiB, Session::Create ${create_kib} KiB; file ${chain_bytes} bytes"

# Optional side-by-side column: ONNX Runtime through its Node.js package, installed OUTSIDE the
# repository, e.g. mkdir -p /tmp/ort && (cd /tmp/ort && npm install --ignore-scripts onnxruntime-node)
# then ORT_NODE_MODULES=/tmp/ort/node_modules bash scripts/bench.sh
ort_args=()
if [ -n "${ORT_NODE_MODULES:-}" ]; then
  echo "== ONNX Runtime (Node.js) on the same models"
  "$BENCH" --write_models "$tmp/models"
  NODE_PATH="$ORT_NODE_MODULES" REPS="$REPS" node bench/ort/ort_bench.js "$tmp/models" \
    >"$OUT/latest_ort.json"
  ort_args=(--ort "$OUT/latest_ort.json")
fi

echo "== Python: InferenceSession.run on the tiny model (bench/python_bench.py)"
PYTHONPATH="$BUILD_DIR/python" /usr/bin/python3 bench/python_bench.py --reps "$REPS" \
  >"$OUT/latest_python.json"
cat "$OUT/latest_python.json"

echo "== summary (medians of $REPS repetitions, real time)"
python3 bench/summarize.py "$OUT/latest.json" --rss-kib "$rss_kib" --inline-rss-kib "$inline_kib" \
  --chain-rss-kib "$chain_kib" --create-rss-kib "$create_kib" --chain-bytes "$chain_bytes" \
  "${ort_args[@]}" --python "$OUT/latest_python.json" |
  tee "$OUT/latest.md"
