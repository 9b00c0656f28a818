#!/usr/bin/python3
"""Generate the seed page's example test_cc_identity_opt and its sibling
test_cc_identity_sequence (identity.md, "The seed's example").

Usage: gen_seed_examples.py OUTDIR

Identity sits inside a wrapper graph; the graph's input/output shapes are
what the seed page prints ((5,) in, (1, 5) out), Identity itself maps its
value unchanged. Expected outputs follow ConcatFromSequence(axis=0,
new_axis=1), i.e. numpy.stack(..., axis=0).
"""
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_cases import (CODE, make_model, make_tensor, node, opt_type, seq_type,  # noqa: E402
                       tensor_type, vi, write_case)

F = CODE["float"]


def f32(name, array):
    a = np.ascontiguousarray(array, dtype="<f4")
    return make_tensor(name, F, list(a.shape), a.tobytes(), "raw")


def gen_opt(out):
    x = np.array([1, 2, 3, 4, 5], dtype=np.float32)
    seq_t = seq_type(tensor_type(F, [5]))
    nodes = [
        node("SequenceConstruct", ["x"], ["seq"], "seq_construct"),
        node("Optional", ["seq"], ["opt"], "make_optional"),
        node("Identity", ["opt"], ["opt_out"], "identity"),
        node("OptionalGetElement", ["opt_out"], ["seq_out"], "get_element"),
        node("ConcatFromSequence", ["seq_out"], ["res"], "concat", axis=0, new_axis=1),
    ]
    model = make_model(nodes, [vi("x", tensor_type(F, [5]))], [vi("res", tensor_type(F, [1, 5]))],
                       opset=16, ir=9, name="test_cc_identity_opt")
    # Intermediate types, so a reader sees what Identity maps.
    model.graph.value_info.extend([vi("seq", seq_t), vi("opt", opt_type(seq_t)),
                                   vi("opt_out", opt_type(seq_t)), vi("seq_out", seq_t)])
    write_case(out, "test_cc_identity_opt", model, [([f32("x", x)], [f32("res", np.stack([x], axis=0))])])


def gen_sequence(out):
    a = np.array([[[1.5, -2.0], [0.25, 3.0]]], dtype=np.float32)
    b = np.array([[[-0.5, 4.0], [7.0, -8.125]]], dtype=np.float32)
    seq_t = seq_type(tensor_type(F, [1, 2, 2]))
    nodes = [
        node("SequenceConstruct", ["a", "b"], ["seq"], "seq_construct"),
        node("Identity", ["seq"], ["seq_out"], "identity"),
        node("ConcatFromSequence", ["seq_out"], ["res"], "concat", axis=0, new_axis=1),
    ]
    model = make_model(nodes, [vi("a", tensor_type(F, [1, 2, 2])), vi("b", tensor_type(F, [1, 2, 2]))],
                       [vi("res", tensor_type(F, [2, 1, 2, 2]))], opset=14, name="test_cc_identity_sequence")
    model.graph.value_info.extend([vi("seq", seq_t), vi("seq_out", seq_t)])
    write_case(out, "test_cc_identity_sequence", model,
               [([f32("a", a), f32("b", b)], [f32("res", np.stack([a, b], axis=0))])])


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: gen_seed_examples.py OUTDIR")
    os.makedirs(argv[1], exist_ok=True)
    gen_opt(argv[1])
    gen_sequence(argv[1])


if __name__ == "__main__":
    main(sys.argv)
