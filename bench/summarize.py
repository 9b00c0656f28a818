#!/usr/bin/env python3
"""Turns idem_bench's JSON (Google Benchmark, with repetitions) into a Markdown table of medians
and the issue-5 ratios against their targets.

usage: summarize.py latest.json [--rss-kib N] [--ort ort.json] [--python python.json]
Times are medians of real (wall) time over the repetitions; throughput is runs/s of the whole
process. Exit status 0 when every target holds, 1 otherwise.
"""
import argparse
import json
import re
import sys


def load_medians(path):
    with open(path) as f:
        data = json.load(f)
    medians = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        # Cases with a fixed iteration count carry "/iterations:N" in their names.
        name = re.sub(r"/iterations:\d+$", "", b.get("run_name", b["name"]))
        if b.get("error_occurred"):
            medians[name] = {"error": b.get("error_message", "error")}
            continue
        unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        entry = {"ns": b["real_time"] * unit, "cpu_ns": b["cpu_time"] * unit}
        if "items_per_second" in b:
            entry["items_per_second"] = b["items_per_second"]
        # Without repetitions the single run stands in for the median.
        if b.get("run_type") == "aggregate" or name not in medians:
            medians[name] = entry
    return data.get("context", {}), medians


def fmt_time(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.1f} ns"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--rss-kib", type=int)
    ap.add_argument("--inline-rss-kib", type=int)
    ap.add_argument("--chain-rss-kib", type=int)
    ap.add_argument("--create-rss-kib", type=int)
    ap.add_argument("--chain-bytes", type=int)
    ap.add_argument("--ort", help="optional JSON {case: ns} from bench/ort/ort_bench.js")
    ap.add_argument("--python", help="optional JSON {case: ns} from bench/python_bench.py")
    args = ap.parse_args()
    context, m = load_medians(args.json)
    ort = {}
    if args.ort:
        with open(args.ort) as f:
            ort = json.load(f)

    def ns(name):
        e = m.get(name)
        return None if e is None or "error" in e else e["ns"]

    tiny = ns("tiny")
    memcpy = ns("memcpy_256MiB")
    big = 256 << 20
    rows = []
    failures = 0

    def row(case, value_ns, ratio_text, target, ok, note=""):
        nonlocal failures
        if ok is False:
            failures += 1
        e = m.get(case)
        shown = fmt_time(value_ns) if value_ns is not None else (
            "error: " + e["error"] if e and "error" in e else "missing")
        verdict = "" if ok is None else ("yes" if ok else "**NO**")
        ort_ns = ort.get(case)
        rows.append((case, shown, ratio_text, target, verdict,
                     fmt_time(ort_ns) if ort_ns else "", note))

    row("tiny", tiny, "", "<= 150 ns", tiny is not None and tiny <= 150)
    if args.python:
        # The same tiny model through the Python package: what a Python caller pays per run
        # (feed dict -> zero-copy Value -> Run -> read-only numpy view). Informative.
        with open(args.python) as f:
            py = json.load(f)
        for case, note in (("python_tiny_run", "idem.InferenceSession.run(None, {'x': x})"),
                           ("python_tiny_run_session", "idem.Session.run([x])")):
            t = py.get(case)
            rows.append((case, fmt_time(t) if t else "missing",
                         f"{t / tiny:.1f}x tiny" if t and tiny else "", "(informative)", "", "",
                         note))
    for case, limit in [("f32_16MiB", None), ("f32_256MiB", 2), ("seq_1000x1024", 2),
                        ("seq_1000x1024_declared", None), ("string_10000", 2),
                        ("chain100", 2), ("chain100_noelim", 30), ("seed_example", 10),
                        ("external_256MiB_run", 2)]:
        t = ns(case)
        r = t / tiny if t is not None and tiny else None
        row(case, t, f"{r:.2f}x tiny" if r is not None else "",
            f"<= {limit}x tiny" if limit else "(informative)",
            None if limit is None else (r is not None and r <= limit))
    # Control flow (issue 11).
    for case, limit in [("if_outer_identity", 5), ("loop_carried_256MiB", 10)]:
        t = ns(case)
        r = t / tiny if t is not None and tiny else None
        row(case, t, f"{r:.2f}x tiny" if r is not None else "", f"<= {limit}x tiny",
            r is not None and r <= limit)
    s10, s100 = ns("loop_seq_insert_10k"), ns("loop_seq_insert_100k")
    row("loop_seq_insert_10k", s10, "", "(reference)", None)
    r = s100 / s10 if s10 and s100 else None
    row("loop_seq_insert_100k", s100, f"{r:.2f}x 10k" if r is not None else "",
        "<= 12x loop_seq_insert_10k", r is not None and r <= 12)
    load = ns("external_256MiB_load")
    r = load / memcpy if load and memcpy else None
    row("external_256MiB_load", load, f"{r:.4f}x memcpy" if r is not None else "",
        "<= 0.05x memcpy_256MiB", r is not None and r <= 0.05)
    load = ns("inline_256MiB_load")
    r = load / memcpy if load and memcpy else None
    row("inline_256MiB_load", load, f"{r:.4f}x memcpy" if r is not None else "",
        "<= 0.05x memcpy_256MiB", r is not None and r <= 0.05, "raw_data in the .onnx, mapped")
    load = ns("inline_2_5GiB_load")
    r = load / memcpy if load and memcpy else None
    row("inline_2_5GiB_load", load, f"{r:.4f}x memcpy" if r is not None else "", "(reported)",
        None, "one file over 2 GiB")
    parse = ns("protobuf_parse_1M_node_chain")
    chain = ns("load_1M_node_chain")
    r = chain / parse if chain and parse else None
    row("load_1M_node_chain", chain, f"{r:.2f}x protobuf parse" if r is not None else "",
        "<= 1.5x protobuf_parse", r is not None and r <= 1.5,
        "file -> GraphDef: map, wire walk, parse, convert")
    row("protobuf_parse_1M_node_chain", parse, "", "(reference)", None,
        "ModelProto::ParseFromArray, bytes in memory")
    create = ns("create_1M_node_chain")
    r = create / parse if create and parse else None
    row("create_1M_node_chain", create, f"{r:.2f}x protobuf parse" if r is not None else "",
        "(informative)", None, "loader + planner")
    row("memcpy_256MiB", memcpy, f"{big / memcpy:.2f} GB/s" if memcpy else "", "(reference)",
        None, "src/dst page-aligned, same offset")
    copy = ns("copy_out_256MiB")
    r = memcpy / copy if copy and memcpy else None
    row("copy_out_256MiB", copy,
        f"{big / copy:.2f} GB/s = {r:.2f}x memcpy" if r is not None else "",
        ">= 0.9x memcpy bandwidth", r is not None and r >= 0.9,
        "src/dst page-aligned, same offset")
    opt = ns("optimize_100k_chain")
    row("optimize_100k_chain", opt, "", "<= 500 ms", opt is not None and opt <= 500e6,
        "OptimizeModelBytes, 100,000-node Identity chain (issue 9)")
    t1 = m.get("tiny_throughput/threads/1/manual_time", {}).get("items_per_second")
    t2 = m.get("tiny_throughput/threads/2/manual_time", {}).get("items_per_second")
    r = t2 / t1 if t1 and t2 else None
    rows.append(("tiny_throughput/threads:1", f"{t1 / 1e6:.2f} M runs/s" if t1 else "missing",
                 "", "(reference)", "", "", "one Session, 1 thread"))
    ok = r is not None and r >= 1.6
    failures += 0 if ok else 1
    rows.append(("tiny_throughput/threads:2", f"{t2 / 1e6:.2f} M runs/s" if t2 else "missing",
                 f"{r:.2f}x 1 thread" if r else "", ">= 1.6x 1 thread",
                 "yes" if ok else "**NO**", "", "one Session shared by 2 threads"))
    if args.rss_kib is not None:
        mib = args.rss_kib / 1024
        ok = mib < 64
        failures += 0 if ok else 1
        rows.append(("rss: load + run external_256MiB", f"{mib:.1f} MiB peak RSS", "",
                     "< 64 MiB", "yes" if ok else "**NO**", "", "/usr/bin/time -v"))

    if args.inline_rss_kib is not None:
        mib = args.inline_rss_kib / 1024
        ok = mib < 64
        failures += 0 if ok else 1
        rows.append(("rss: load + run inline_256MiB", f"{mib:.1f} MiB peak RSS", "",
                     "< 64 MiB", "yes" if ok else "**NO**", "", "/usr/bin/time -v"))
    if args.chain_rss_kib is not None and args.chain_bytes:
        ratio = args.chain_rss_kib * 1024 / args.chain_bytes
        ok = ratio < 10
        failures += 0 if ok else 1
        rows.append(("rss: load 1M_node_chain", f"{args.chain_rss_kib / 1024:.1f} MiB peak RSS",
                     f"{ratio:.1f}x the file ({args.chain_bytes / 2**20:.1f} MiB)",
                     "< 10x file size", "yes" if ok else "**NO**", "",
                     "/usr/bin/time -v, the loader (file -> GraphDef)"))
    if args.create_rss_kib is not None and args.chain_bytes:
        ratio = args.create_rss_kib * 1024 / args.chain_bytes
        rows.append(("rss: create 1M_node_chain", f"{args.create_rss_kib / 1024:.1f} MiB peak RSS",
                     f"{ratio:.1f}x the file", "(informative)", "", "",
                     "/usr/bin/time -v, Session::Create (loader + planner)"))

    header = ["case", "median", "ratio", "target", "met"]
    if ort:
        header.append(f"ONNX Runtime {ort.get('_version', '')} via Node.js")
    header.append("note")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        cells = list(r[:5]) + ([r[5]] if ort else []) + [r[6]]
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"host: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
          f"load average at start {context.get('load_avg', '?')}, "
          f"idem built Release (the 'library build' Google Benchmark reports is Debian's "
          f"libbenchmark: {context.get('library_build_type', '?')})")
    print(f"targets met: {'all' if failures == 0 else f'{failures} missed'}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
