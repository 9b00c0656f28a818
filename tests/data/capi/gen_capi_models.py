#!/usr/bin/env python3
"""Writes the model tests/capi_test.c runs (checked in; rerun with /usr/bin/python3 to refresh).

kinds.onnx (opset 16): four graph inputs, one per value kind the C API builds, each passed through
Identity to an output: x float[N,3], s seq(tensor(float)), o optional(tensor(int64)),
t string[N] -> y, s_out, o_out, t_out.
"""
import os

import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))
tensor_float = helper.make_tensor_type_proto(TensorProto.FLOAT, ["N", 3])
seq_float = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
opt_int64 = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, None))
tensor_string = helper.make_tensor_type_proto(TensorProto.STRING, ["N"])
pairs = [("x", "y", tensor_float), ("s", "s_out", seq_float), ("o", "o_out", opt_int64),
         ("t", "t_out", tensor_string)]
graph = helper.make_graph(
    [helper.make_node("Identity", [i], [o], name=f"id_{i}") for i, o, _ in pairs], "kinds",
    [helper.make_value_info(i, t) for i, _, t in pairs],
    [helper.make_value_info(o, t) for _, o, t in pairs])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8,
                          producer_name="idem tests/data/capi/gen_capi_models.py")
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "kinds.onnx"))

# loop.onnx (opset 16): a Loop without trip count whose body passes its condition through, so it
# stops only when the condition input is false (zero iterations) or the run is cancelled or passes
# its deadline. Inputs cover the shape queries: cond bool[] (rank 0), v float[N,?,3] (symbolic,
# unknown, fixed), w float (no shape: rank undeclared). Outputs: v_out float[N,?,3], w_out float.
body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
     helper.make_node("Identity", ["v_in"], ["v_body"], name="body_v")],
    "body",
    [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None)],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_body", TensorProto.FLOAT, None)])
v_shape = ["N", None, 3]
loop_graph = helper.make_graph(
    [helper.make_node("Loop", ["", "cond", "v"], ["v_out"], name="forever", body=body),
     helper.make_node("Identity", ["w"], ["w_out"], name="id_w")],
    "loop",
    [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v", TensorProto.FLOAT, v_shape),
     helper.make_tensor_value_info("w", TensorProto.FLOAT, None)],
    [helper.make_tensor_value_info("v_out", TensorProto.FLOAT, v_shape),
     helper.make_tensor_value_info("w_out", TensorProto.FLOAT, None)])
loop_model = helper.make_model(loop_graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8,
                               producer_name="idem tests/data/capi/gen_capi_models.py")
# Not onnx.checker.check_model: onnx 1.12's checker insists on a shape for top-level inputs and
# outputs, which the IR spec makes optional (w, w_out are the case under test).
onnx.save(loop_model, os.path.join(here, "loop.onnx"))
