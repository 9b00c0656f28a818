"""Writes the small models the Node.js package's tests run (node/test/models/*.onnx).

    /usr/bin/python3 node/test/gen_models.py [OUT_DIR]

Each model uses only operators idem implements; the tests run them on idem and, when it is
installed, on ONNX Runtime 1.30 (onnxruntime-node), and compare. Deterministic: running it again
writes the same bytes, so the committed files can be checked against it (test/models.test.js).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "models")

T = TensorProto


def save(name, nodes, inputs, outputs, initializers=(), opset=17, value_info=(), check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers),
                              value_info=list(value_info))
    model = helper.make_model(graph, producer_name="idem-node-tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if check:  # the checker wants every input to declare a shape
        onnx.checker.check_model(model)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# a: float[3,4] + b: float[3,4] -> c (the onnxruntime-node quick-start's shape).
save("add", [helper.make_node("Add", ["a", "b"], ["c"])],
     [vi("a", T.FLOAT, [3, 4]), vi("b", T.FLOAT, [3, 4])], [vi("c", T.FLOAT, [3, 4])])

# Fixed window as the real VAD models have: x float[1,16] + 1 (a constant) -> y; state passes
# through an Add so it can be fed back.
save("window", [helper.make_node("Add", ["x", "one"], ["y"]),
                helper.make_node("Add", ["state", "one"], ["state_out"])],
     [vi("x", T.FLOAT, [1, 16]), vi("state", T.FLOAT, [2, 1, 4])],
     [vi("y", T.FLOAT, [1, 16]), vi("state_out", T.FLOAT, [2, 1, 4])],
     [helper.make_tensor("one", T.FLOAT, [], [1.0])])

# Identity on every type onnxruntime-node carries, symbolic and unknown dims.
TYPES = [("f32", T.FLOAT), ("f64", T.DOUBLE), ("i8", T.INT8), ("i16", T.INT16),
         ("i32", T.INT32), ("i64", T.INT64), ("u8", T.UINT8), ("u16", T.UINT16),
         ("u32", T.UINT32), ("u64", T.UINT64), ("b", T.BOOL), ("s", T.STRING),
         ("f16", T.FLOAT16)]
save("identity_types",
     [helper.make_node("Identity", ["in_" + n], ["out_" + n]) for n, _ in TYPES],
     [vi("in_" + n, e, ["N", None]) for n, e in TYPES],
     [vi("out_" + n, e, ["N", None]) for n, e in TYPES])

# Add on integer types (wrapping) and broadcasting; bool Not.
save("int_ops", [helper.make_node("Add", ["i64", "k64"], ["sum64"]),
                 helper.make_node("Add", ["u8", "u8"], ["twice_u8"]),
                 helper.make_node("Not", ["flags"], ["not_flags"])],
     [vi("i64", T.INT64, [2, 3]), vi("u8", T.UINT8, [4]), vi("flags", T.BOOL, [3])],
     [vi("sum64", T.INT64, [2, 3]), vi("twice_u8", T.UINT8, [4]), vi("not_flags", T.BOOL, [3])],
     [helper.make_tensor("k64", T.INT64, [3], [1, -2, 2**40])])

# Outputs that alias the input: Identity (same bytes), Unsqueeze (same bytes, new dims), Slice
# of contiguous rows (a view at an offset), plus a computed output and Shape.
save("alias", [helper.make_node("Identity", ["x"], ["same"]),
               helper.make_node("Unsqueeze", ["x", "axes"], ["unsq"]),
               helper.make_node("Slice", ["x", "starts", "ends", "sl_axes"], ["rows"]),
               helper.make_node("Add", ["x", "x"], ["doubled"]),
               helper.make_node("Shape", ["x"], ["shape"])],
     [vi("x", T.FLOAT, [4, 3])],
     [vi("same", T.FLOAT, [4, 3]), vi("unsq", T.FLOAT, [1, 4, 3]), vi("rows", T.FLOAT, [2, 3]),
      vi("doubled", T.FLOAT, [4, 3]), vi("shape", T.INT64, [2])],
     [helper.make_tensor("axes", T.INT64, [1], [0]),
      helper.make_tensor("starts", T.INT64, [1], [1]),
      helper.make_tensor("ends", T.INT64, [1], [3]),
      helper.make_tensor("sl_axes", T.INT64, [1], [0])])

# An initializer that is also a graph input (overridable): bias defaults to 10.
save("overridable", [helper.make_node("Add", ["x", "bias"], ["y"])],
     [vi("x", T.FLOAT, [2]), vi("bias", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])],
     [helper.make_tensor("bias", T.FLOAT, [2], [10.0, 20.0])])

# Outputs without declared shapes (rank from inference) and a scalar int64 input (sr: [16000n]).
save("scalar", [helper.make_node("Add", ["sr", "sr"], ["sr2"]),
                helper.make_node("Identity", ["v"], ["v_out"])],
     [vi("sr", T.INT64, []), vi("v", T.FLOAT, None)],
     [helper.make_tensor_value_info("sr2", T.INT64, None), vi("v_out", T.FLOAT, None)],
     check=False)

# A sequence output (onnxruntime-node carries tensors only).
save("sequence", [helper.make_node("SequenceConstruct", ["x", "x"], ["seq"])],
     [vi("x", T.FLOAT, [2])],
     [helper.make_tensor_sequence_value_info("seq", T.FLOAT, None)])

# A Loop that never ends unless cancelled or past a deadline (for run options).
body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                          helper.make_node("Add", ["v_in", "one_b"], ["v_out"])], "body",
                         [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, [1])],
                         [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, [1])],
                         [helper.make_tensor("one_b", T.FLOAT, [1], [1.0])])
save("count", [helper.make_node("Loop", ["n", "", "v0"], ["v"], body=body)],
     [vi("n", T.INT64, []), vi("v0", T.FLOAT, [1])], [vi("v", T.FLOAT, [1])])
