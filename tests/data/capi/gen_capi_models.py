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
