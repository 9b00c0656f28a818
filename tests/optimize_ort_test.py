#!/usr/bin/python3
"""Optional stage: original and `idem optimize`d models run in ONNX Runtime (onnxruntime-node)
must give bit-identical outputs. Usage: optimize_ort_test.py IDEM_EXE NODE_MODULES_DIR

Install ONNX Runtime with `IDEM_ORT=1 bash scripts/setup.sh` (npm, into build/ort). Without it
this exits 77, which ctest reports as "Skipped" (never as a pass)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def f(name, shape=(2, 3)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def model(nodes, inputs, outputs, opset=15, **kw):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, **kw),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def cases():
    I = lambda x, y, name=None: helper.make_node("Identity", [x], [y], name=name or y)
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [0.5, -0.0, 1e-40, 3, 4, 5])
    yield "chain_fanout_initializer", model(
        [helper.make_node("Relu", ["x"], ["r"]), I("r", "r2"), I("r2", "r3"),
         helper.make_node("Add", ["r3", "w"], ["s"]), I("s", "out"), I("x", "x_copy"),
         I("w", "w_copy"), I("s", "also_out")],
        [f("x")], [f("out"), f("x_copy"), f("w_copy"), f("also_out")], initializer=[w]), 3
    yield "split_slot", model(
        [helper.make_node("Split", ["x", "sizes"], ["p0", "p1"], axis=1),
         I("p1", "y"), helper.make_node("Neg", ["p0"], ["n"]), I("n", "m")],
        [f("x")], [f("y", (2, 2)), f("m", (2, 1))],
        initializer=[helper.make_tensor("sizes", TensorProto.INT64, [2], [1, 2])]), 2
    then_g = helper.make_graph([I("r", "then_out")], "then", [], [f("then_out")])
    else_g = helper.make_graph([helper.make_node("Neg", ["r2"], ["n"]), I("n", "n2"),
                                I("n2", "else_out")], "else", [], [f("else_out")])
    yield "if_branches", model(
        [helper.make_node("Relu", ["x"], ["r"]), I("r", "r2"),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
         I("y", "out")],
        [f("x"), helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [f("out")]), 4
    body = helper.make_graph(
        [I("cond_in", "cond_out"), helper.make_node("Add", ["v", "x"], ["a"]), I("a", "a2"),
         I("a2", "v_out"), helper.make_node("Relu", ["a2"], ["scan_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), f("v")],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), f("v_out"),
         f("scan_out")])
    yield "loop_body", model(
        [helper.make_node("Loop", ["n", "", "x"], ["final", "stacked"], body=body),
         I("final", "out"), I("stacked", "out2")],
        [f("x"), helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [f("out"), f("out2", ("N", 2, 3))]), 4
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["acc", "e"], ["s"]), I("s", "acc_out"), I("s", "t"),
         I("t", "e_out")],
        "sb", [f("acc", (3,)), f("e", (3,))], [f("acc_out", (3,)), f("e_out", (3,))])
    yield "scan_body", model(
        [helper.make_node("Scan", ["init", "x"], ["last", "ys"], body=scan_body,
                          num_scan_inputs=1), I("ys", "out")],
        [f("x"), f("init", (3,))], [f("last", (3,)), f("out")]), 3
    yield "sequence", model(
        [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]), I("s", "s2"),
         helper.make_node("SequenceAt", ["s2", "k"], ["e"]), I("e", "out")],
        [f("x")], [f("out")],
        initializer=[helper.make_tensor("k", TensorProto.INT64, [], [1])]), 2


def write_inputs(folder, m, variant):
    rng = np.random.default_rng(variant)
    spec = []
    for i, vi in enumerate(m.graph.input):
        if any(init.name == vi.name for init in m.graph.initializer):
            continue
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else 2 for d in t.shape.dim]
        if t.elem_type == TensorProto.BOOL:
            arr, kind = np.array(variant % 2 == 0), "bool"
        elif t.elem_type == TensorProto.INT64:
            arr, kind = np.array(3, dtype=np.int64), "int64"
        else:
            arr, kind = rng.standard_normal(dims).astype(np.float32), "float32"
        path = os.path.join(folder, f"in{i}_{variant}.bin")
        arr.tofile(path)
        spec.append({"name": vi.name, "type": kind, "dims": list(arr.shape), "file": path})
    path = os.path.join(folder, f"inputs_{variant}.json")
    with open(path, "w") as fh:
        json.dump(spec, fh)
    return path


def main():
    idem_exe, node_modules = sys.argv[1], sys.argv[2]
    node = shutil.which("node")
    if node is None or not os.path.isdir(os.path.join(node_modules, "onnxruntime-node")):
        print(f"SKIP: ONNX Runtime not installed ({node_modules}/onnxruntime-node; "
              "run IDEM_ORT=1 bash scripts/setup.sh)")
        return 77
    env = dict(os.environ, NODE_PATH=node_modules)
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, m, removed in cases():
            onnx.checker.check_model(m)
            src, dst = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".opt.onnx")
            onnx.save(m, src)
            r = subprocess.run([idem_exe, "optimize", src, "-o", dst, "--check"],
                               capture_output=True, text=True, timeout=60)
            ok = r.returncode == 0 and f"removed {removed} Identity" in r.stdout
            if ok:
                onnx.checker.check_model(onnx.load(dst))
                for variant in (0, 1):
                    c = subprocess.run([node, os.path.join(HERE, "ort", "compare_outputs.js"),
                                        src, dst, write_inputs(d, m, variant)],
                                       capture_output=True, text=True, timeout=120, env=env)
                    if c.returncode != 0:
                        ok = False
                        print(f"FAIL {name}: {c.stdout.strip()} {c.stderr.strip()}")
                        break
            else:
                print(f"FAIL {name}: expected 'removed {removed}': {r.stdout} {r.stderr}")
            if ok:
                print(f"PASS {name}: {r.stdout.splitlines()[-1]}")
            failures += not ok
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
