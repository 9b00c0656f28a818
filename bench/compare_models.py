#!/usr/bin/python3
"""The real-model table of docs/performance.md: idem_model_bench's JSON (Google Benchmark,
--benchmark_format=json, medians when repeated) against bench/ort/ort_models.js's JSON.

usage: compare_models.py IDEM.json ORT.json [--reference IDEM_REFERENCE.json]
       compare_models.py I1.json,I2.json,I3.json O1.json,O2.json,O3.json

With comma-separated lists (rounds of each runtime, run alternately), each row is the smallest of
the rounds' medians for each runtime, and Node's call cost the smallest of the rounds' too: this
VM's speed drifts in bursts, and the best of alternating rounds compares both at their quietest.

Columns: idem (median real time per Run), ONNX Runtime through onnxruntime-node, the same less
Node's own cost per call (node_tiny: a 5-float Identity model, paid once per Run by every ORT
figure), and the ratio idem / ONNX Runtime against both, with issue 18's target.
"""
import json
import sys

TARGETS = {
    "silero": 0.5,
    "oww_frame": 0.5,
    "ppocr": 1.0,
    "create/": 0.5,
}


def load_idem(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"]).replace("/real_time", "")
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        rows[name] = b["real_time"] * unit
    return rows


def best_of(paths, load):
    """Per row, the smallest value over the rounds' files (a row missing from a round is skipped
    there); the rows in the first file's order."""
    best = {}
    for path in paths.split(","):
        for row, value in load(path).items():
            if isinstance(value, (int, float)):
                best[row] = min(best.get(row, value), value)
            else:
                best.setdefault(row, value)
    return best


def load_json(path):
    with open(path) as f:
        return json.load(f)


def target(row):
    for prefix, t in TARGETS.items():
        if row.startswith(prefix):
            return t
    return None


def fmt(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


def main():
    args = sys.argv[1:]
    reference = None
    if "--reference" in args:
        i = args.index("--reference")
        reference = load_idem(args[i + 1])
        del args[i:i + 2]
    idem = best_of(args[0], load_idem)
    ort = best_of(args[1], load_json)
    tiny = ort.get("node_tiny", 0.0)
    header = "| row | idem | ONNX Runtime (Node) | ORT - Node call | idem / ORT | idem / (ORT - call) | target |"
    if reference:
        header = header[:-1] + " idem reference kernels |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row, ns in idem.items():
        o = ort.get(row)
        bare = o - tiny if o is not None and not row.startswith("create/") else o
        t = target(row)
        cells = [row, fmt(ns), fmt(o), fmt(bare),
                 f"{ns / o:.2f}x" if o else "-",
                 f"{ns / bare:.2f}x" if bare else "-",
                 f"<= {t}x" if t else ""]
        if reference:
            cells.append(fmt(reference.get(row)))
        print("| " + " | ".join(cells) + " |")
    print(f"\nNode's own cost per call (node_tiny): {fmt(tiny)}; onnxruntime-node "
          f"{ort.get('_version', '?')}.")


if __name__ == "__main__":
    main()
