#!/usr/bin/env python3
"""Generates backend-test cases for control flow (If, Loop, Scan, SequenceMap) and the operators
their bodies use. Debian's onnx 1.12 has no onnx.reference, so expected outputs are computed
here with numpy, independently of idem.

usage: gen_control_flow_cases.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_cases import make_model, make_optional, make_sequence, seq_type, opt_type, \
    tensor_type, vi, write_case  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def t(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def untyped(name):
    v = onnx.ValueInfoProto()
    v.name = name
    return v


def graph(name, nodes, inputs, outputs):
    g = onnx.GraphProto()
    g.name = name
    g.node.extend(nodes)
    g.input.extend(inputs)
    g.output.extend(outputs)
    return g


def const(out, array):
    return helper.make_node("Constant", [], [out], value=t(out, array))


def gen_if(out):
    # Untyped branch outputs with different shapes per branch (real exporters write these).
    then_g = graph("then", [const("a", np.array([1, 2], np.float32))], [], [untyped("a")])
    else_g = graph("else", [const("b", np.array([7, 8, 9], np.float32))], [], [untyped("b")])
    m = make_model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                   [vi("c", tensor_type(B, []))], [vi("y", tensor_type(F))], 11)
    write_case(out, "cf_if_untyped_outputs_different_shapes", m, [
        ([t("c", np.array(True))], [t("y", np.array([1, 2], np.float32))]),
        ([t("c", np.array(False))], [t("y", np.array([7, 8, 9], np.float32))])])

    # Branches returning outer values through Identity, for every kind Identity carries.
    for opset, kind in [(11, "tensor"), (14, "seq"), (16, "optional")]:
        x = np.arange(4, dtype=np.float32)
        z = -np.arange(3, dtype=np.float32)
        if kind == "tensor":
            tp, xv, zv = tensor_type(F, None), t("x", x), t("z", z)
        elif kind == "seq":
            tp = seq_type(tensor_type(F))
            xv = make_sequence("x", [t("", x), t("", z)])
            zv = make_sequence("z", [])
        else:
            tp = opt_type(tensor_type(F))
            xv = make_optional("x", t("", x))
            zv = make_optional("z", None, onnx.OptionalProto.TENSOR)
        then_g = graph("then", [helper.make_node("Identity", ["x"], ["o1"])], [], [untyped("o1")])
        else_g = graph("else", [helper.make_node("Identity", ["z"], ["o2"])], [], [untyped("o2")])
        m = make_model([helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                                         else_branch=else_g)],
                       [vi("c", tensor_type(B, [])), vi("x", tp), vi("z", tp)], [vi("y", tp)],
                       opset)

        def renamed(v, name):
            c = type(v)()
            c.CopyFrom(v)
            c.name = name
            return c
        write_case(out, "cf_if_outer_identity_%s" % kind, m, [
            ([t("c", np.array(True)), xv, zv], [renamed(xv, "y")]),
            ([t("c", np.array(False)), xv, zv], [renamed(zv, "y")])])

    # Three nested Ifs; the innermost adds a value from every level.
    l3 = graph("l3", [const("b3", np.array([1000], np.float32)),
                      helper.make_node("Add", ["a", "b1"], ["s1"]),
                      helper.make_node("Add", ["s1", "b2"], ["s2"]),
                      helper.make_node("Add", ["s2", "b3"], ["r3"])], [], [untyped("r3")])
    l2 = graph("l2", [const("b2", np.array([100], np.float32)),
                      helper.make_node("If", ["c"], ["r2"], then_branch=l3, else_branch=l3)],
               [], [untyped("r2")])
    l1_else = graph("l1e", [helper.make_node("Identity", ["a"], ["e1"])], [], [untyped("e1")])
    l1 = graph("l1", [const("b1", np.array([10], np.float32)),
                      helper.make_node("If", ["c"], ["r1"], then_branch=l2, else_branch=l2)],
               [], [untyped("r1")])
    m = make_model([helper.make_node("If", ["c"], ["y"], then_branch=l1, else_branch=l1_else)],
                   [vi("c", tensor_type(B, [])), vi("a", tensor_type(F, [1]))],
                   [vi("y", tensor_type(F, [1]))], 16)
    write_case(out, "cf_if_nested_three_deep", m, [
        ([t("c", np.array(True)), t("a", np.array([1], np.float32))],
         [t("y", np.array([1111], np.float32))]),
        ([t("c", np.array(False)), t("a", np.array([1], np.float32))],
         [t("y", np.array([1], np.float32))])])


def loop_body(stop_after=None):
    """Body: x_out = x_in + 1, scan output = iteration number; the condition passes through, or
    (stop_after) turns false once the iteration number reaches stop_after."""
    nodes = [const("one", np.array([1], np.float32)),
             helper.make_node("Add", ["x_in", "one"], ["x_out"]),
             helper.make_node("Identity", ["i"], ["i_out"])]
    if stop_after is None:
        nodes.append(helper.make_node("Identity", ["c"], ["c_out"]))
    else:
        # c_out = not (i >= stop_after) written with the operators idem has: a Loop-free trick,
        # Shape/Slice would be overkill; use a constant table indexed by Slice.
        table = np.array([True] * stop_after + [False] * 64, dtype=bool)
        nodes += [const("table", table),
                  const("one_i", np.array([1], np.int64)),
                  helper.make_node("Unsqueeze", ["i", "axes0"], ["i1"]),
                  const("axes0", np.array([0], np.int64)),
                  helper.make_node("Add", ["i1", "one_i"], ["i2"]),
                  helper.make_node("Slice", ["table", "i1", "i2"], ["c1"]),
                  ]
        # c1 has shape [1]; the body's condition may be [1] (ONNX Runtime accepts it too).
        nodes.append(helper.make_node("Identity", ["c1"], ["c_out"]))
    # Nodes must be topologically sorted: move the axes constant before its use.
    order = sorted(nodes, key=lambda n: 0 if n.op_type == "Constant" else 1)
    return graph("body", order,
                 [vi("i", tensor_type(I64, [])), vi("c", tensor_type(B, [])),
                  vi("x_in", tensor_type(F, [1]))],
                 [untyped("c_out"), untyped("x_out"), untyped("i_out")])


def gen_loop(out):
    x0 = np.array([0.5], np.float32)
    cases = [
        # name, M given, cond given, body stop, feeds, iterations
        ("cf_loop_trip_count_only", True, False, None, 4),
        ("cf_loop_condition_only", False, True, 2, 3),
        ("cf_loop_trip_count_and_condition", True, True, 5, 2),
        ("cf_loop_zero_iterations", True, True, None, 0),
    ]
    for name, has_m, has_c, stop, iterations in cases:
        inputs, feeds = [], []
        if has_m:
            inputs.append(vi("M", tensor_type(I64, [])))
            feeds.append(t("M", np.array(2 if name.endswith("condition") else iterations,
                                         np.int64)))
        if has_c:
            inputs.append(vi("cond", tensor_type(B, [])))
            feeds.append(t("cond", np.array(True)))
        inputs.append(vi("x", tensor_type(F, [1])))
        feeds.append(t("x", x0))
        m = make_model([helper.make_node("Loop", ["M" if has_m else "", "cond" if has_c else "",
                                                  "x"], ["x_final", "iters"],
                                         body=loop_body(stop))],
                       inputs, [vi("x_final", tensor_type(F)), vi("iters", tensor_type(I64))], 13)
        expected = [t("x_final", x0 + iterations),
                    t("iters", np.arange(iterations, dtype=np.int64))]
        write_case(out, name, m, [(feeds, expected)])

    # A sequence carried through a Loop: SequenceInsert of x each iteration.
    body = graph("body", [helper.make_node("Identity", ["c"], ["c_out"]),
                          helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])],
                 [vi("i", tensor_type(I64, [])), vi("c", tensor_type(B, [])),
                  vi("s_in", seq_type(tensor_type(F)))], [untyped("c_out"), untyped("s_out")])
    m = make_model([helper.make_node("SequenceEmpty", [], ["empty"]),
                    helper.make_node("Loop", ["M", "", "empty"], ["seq"], body=body)],
                   [vi("M", tensor_type(I64, [])), vi("x", tensor_type(F, [2]))],
                   [vi("seq", seq_type(tensor_type(F)))], 13)
    x = np.array([1, 2], np.float32)
    write_case(out, "cf_loop_sequence_insert", m, [
        ([t("M", np.array(5, np.int64)), t("x", x)], [make_sequence("seq", [t("", x)] * 5)]),
        ([t("M", np.array(0, np.int64)), t("x", x)], [make_sequence("seq", [])])])


def gen_scan(out):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    body = graph("body", [helper.make_node("Add", ["s_in", "e"], ["s_out"]),
                          helper.make_node("Identity", ["s_out"], ["p"])],
                 [vi("s_in", tensor_type(F, [3])), vi("e", tensor_type(F, [3]))],
                 [untyped("s_out"), untyped("p")])
    # Scan-9: scan axis 1 reversed, outputs stacked along axis 1.
    m = make_model([helper.make_node("Scan", ["init", "x"], ["sum", "partial"], body=body,
                                     num_scan_inputs=1, scan_input_axes=[1],
                                     scan_input_directions=[1], scan_output_axes=[1])],
                   [vi("init", tensor_type(F, [3])), vi("x", tensor_type(F, [3, 4]))],
                   [vi("sum", tensor_type(F)), vi("partial", tensor_type(F))], 11)
    cols = x[:, ::-1]
    partial = np.cumsum(cols, axis=1)
    write_case(out, "cf_scan9_axis1_reverse", m, [
        ([t("init", np.zeros(3, np.float32)), t("x", x)],
         [t("sum", x.sum(axis=1)), t("partial", partial.astype(np.float32))])])
    # Scan-8 with a batch axis: x [2, 4, 3], state [2, 3].
    xb = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    m = make_model([helper.make_node("Scan", ["", "init", "x"], ["sum", "partial"], body=body,
                                     num_scan_inputs=1, directions=[0])],
                   [vi("init", tensor_type(F, [2, 3])), vi("x", tensor_type(F, [2, 4, 3]))],
                   [vi("sum", tensor_type(F)), vi("partial", tensor_type(F))], 8)
    write_case(out, "cf_scan8_batch", m, [
        ([t("init", np.zeros((2, 3), np.float32)), t("x", xb)],
         [t("sum", xb.sum(axis=1)), t("partial", np.cumsum(xb, axis=1))])])


def gen_sequence_map(out):
    body = graph("body", [helper.make_node("Add", ["e", "kk"], ["sum"]),
                          helper.make_node("Shape", ["e"], ["shape"])],
                 [vi("e", tensor_type(F)), vi("kk", tensor_type(F, [1]))],
                 [untyped("sum"), untyped("shape")])
    m = make_model([helper.make_node("SequenceMap", ["s", "k"], ["sums", "shapes"], body=body)],
                   [vi("s", seq_type(tensor_type(F))), vi("k", tensor_type(F, [1]))],
                   [vi("sums", seq_type(tensor_type(F))), vi("shapes", seq_type(tensor_type(I64)))],
                   17)
    a = np.array([1, 2], np.float32)
    b = np.arange(6, dtype=np.float32).reshape(2, 3)
    k = np.array([10], np.float32)
    write_case(out, "cf_sequence_map_extra_input_two_outputs", m, [
        ([make_sequence("s", [t("", a), t("", b)]), t("k", k)],
         [make_sequence("sums", [t("", a + k), t("", b + k)]),
          make_sequence("shapes", [t("", np.array(a.shape, np.int64)),
                                   t("", np.array(b.shape, np.int64))])])])


def gen_add(out):
    # numpy broadcasting; integers wrap; float16 rounds to nearest even (numpy computes it so).
    for dtype, code in [(np.int32, TensorProto.INT32), (np.uint8, TensorProto.UINT8),
                        (np.float16, TensorProto.FLOAT16), (np.float64, TensorProto.DOUBLE)]:
        rng = np.random.default_rng(7)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, size=(2, 1, 3), dtype=dtype, endpoint=True)
            b = rng.integers(info.min, info.max, size=(4, 1), dtype=dtype, endpoint=True)
            with np.errstate(over="ignore"):
                c = a + b
        else:
            a = rng.standard_normal((2, 1, 3)).astype(dtype)
            b = (rng.standard_normal((4, 1)) * 1e-3).astype(dtype)
            c = a + b
        m = make_model([helper.make_node("Add", ["a", "b"], ["c"])],
                       [vi("a", tensor_type(code, [2, 1, 3])), vi("b", tensor_type(code, [4, 1]))],
                       [vi("c", tensor_type(code, [2, 4, 3]))], 14)
        write_case(out, "cf_add_broadcast_%s" % np.dtype(dtype).name, m,
                   [([t("a", a), t("b", b)], [t("c", c)])])


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: gen_control_flow_cases.py OUTDIR")
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    gen_if(out)
    gen_loop(out)
    gen_scan(out)
    gen_sequence_map(out)
    gen_add(out)


if __name__ == "__main__":
    main(sys.argv)
