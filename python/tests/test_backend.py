"""onnx's own backend test suite (Debian's python3-onnx) run through idem.backend.

Every `node` and `simple` test whose operators idem implements at the test model's opset is
included; the others are excluded by operator: the decision comes from each model's nodes and
idem.supported_operators(), never from a list of test names. When idem gains operators, their
tests join automatically. Run with:

    PYTHONPATH=build/python /usr/bin/python3 -m unittest discover -s python/tests -p test_backend.py
"""
import os
import re
import unittest

import numpy as np
import onnx
import onnx.backend.test
from onnx.backend.test.loader import load_model_tests

import idem.backend

KINDS = ("node", "simple")


class IdemBackendTest(onnx.backend.test.BackendTest):
    """onnx 1.12's comparison helper tests `dtype == np.object`, an alias numpy 1.24 removed;
    compare object arrays with `object` instead, as onnxruntime's own test series does. Also
    compares empty optionals (None), which the original indexes into."""

    @classmethod
    def assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol):
        np.testing.assert_equal(len(outputs), len(ref_outputs))
        for ref, out in zip(ref_outputs, outputs):
            if ref is None or out is None:
                assert ref is None and out is None, (ref, out)
            elif isinstance(ref, (list, tuple)):
                assert isinstance(out, (list, tuple)), type(out)
                cls.assert_similar_outputs(ref, out, rtol, atol)
            else:
                np.testing.assert_equal(out.dtype, ref.dtype)
                if ref.dtype == object:
                    np.testing.assert_array_equal(out, ref)
                else:
                    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


# onnx 1.12's data for these cases is wrong for what idem (and ONNX Runtime) rightly do: bfloat16
# written as uint16 bit patterns (numpy has no bfloat16), truncation instead of rounding, and a
# 'like' input whose data contradicts its declared shape (tests/node_stale_cases.txt, where
# `idem test` holds each to its failure).
STALE = {"test_cast_BFLOAT16_to_FLOAT", "test_cast_FLOAT_to_BFLOAT16",
         "test_castlike_BFLOAT16_to_FLOAT", "test_castlike_BFLOAT16_to_FLOAT_expanded",
         "test_castlike_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16_expanded"}


def select_cases():
    """(included names, {excluded name: reason}) over the node and simple tests."""
    included, excluded = [], {}
    for kind in KINDS:
        for case in load_model_tests(kind=kind):
            if case.model_dir is None:  # would need a download
                excluded[case.name] = "needs a download"
                continue
            if case.name in STALE:
                excluded[case.name] = "stale onnx 1.12 data (bfloat16 as uint16)"
                continue
            model = onnx.load(os.path.join(case.model_dir, "model.onnx"))
            missing = idem.backend.unsupported_operators(model)
            if missing:
                excluded[case.name] = ", ".join(
                    "%s%s (opset %s)" % (d + "." if d else "", op, v) for d, op, v in missing)
            else:
                included.append(case.name)
    return included, excluded


INCLUDED, EXCLUDED = select_cases()

backend_test = IdemBackendTest(idem.backend.IdemBackend, __name__)
# Only the selected node/simple tests: "real" and "pytorch-*" cases are not included at all.
for name in INCLUDED:
    backend_test.include("^%s_cpu$" % re.escape(name))
if not INCLUDED:  # include() with no pattern would mean "everything"
    backend_test.include("^$")
globals().update(backend_test.test_cases)


class SelectionTest(unittest.TestCase):
    """The selection itself: by operator, and it grows with idem's registry."""

    def test_selection_follows_supported_operators(self):
        supported = {(d, op) for d, op, _ in idem.supported_operators()}
        self.assertIn(("", "Identity"), supported)
        self.assertIn("test_identity", INCLUDED)
        self.assertIn("test_sequence_insert_at_back", INCLUDED)
        # An operator idem lacks keeps its tests out, and the reason names it (Exp: not an
        # operator idem implements); one it gained brings its tests in (Conv).
        self.assertNotIn(("", "Exp"), supported)
        self.assertIn("test_exp", EXCLUDED)
        self.assertIn("Exp", EXCLUDED["test_exp"])
        self.assertIn(("", "Conv"), supported)
        self.assertIn("test_basic_conv_with_padding", INCLUDED)
        # No included test uses an operator outside the registry.
        for kind in KINDS:
            for case in load_model_tests(kind=kind):
                if case.name in INCLUDED:
                    model = onnx.load(os.path.join(case.model_dir, "model.onnx"))
                    for node in model.graph.node:
                        self.assertIn((node.domain, node.op_type), supported, case.name)

    def test_enough_cases_run(self):
        # Guards against an empty selection passing vacuously.
        self.assertGreaterEqual(len(INCLUDED), 15, INCLUDED)

    def test_run_node(self):
        node = onnx.helper.make_node("Identity", ["x"], ["y"])
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        (y,) = idem.backend.run_node(node, [x])
        np.testing.assert_array_equal(y, x)
        out = idem.backend.run_node(node, [x])
        np.testing.assert_array_equal(out["y"], x)
        seq = [np.array([1, 2], np.int64), np.array([3], np.int64)]
        node = onnx.helper.make_node("SequenceLength", ["s"], ["n"])
        (n,) = idem.backend.run_node(node, [seq])
        self.assertEqual(int(n), 2)
        with self.assertRaises(idem.NotImplemented):
            idem.backend.run_node(onnx.helper.make_node("Softsign", ["a"], ["c"]), [x])

    def test_backend_interface(self):
        self.assertTrue(idem.backend.supports_device("CPU"))
        self.assertFalse(idem.backend.supports_device("CUDA"))
        model = onnx.helper.make_model(
            onnx.helper.make_graph(
                [onnx.helper.make_node("Identity", ["x"], ["y"])], "g",
                [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])]),
            opset_imports=[onnx.helper.make_opsetid("", 16)])
        x = np.array([1.5, -0.0], np.float32)
        (y,) = idem.backend.run_model(model, [x])
        np.testing.assert_array_equal(y, x)
        rep = idem.backend.prepare(model, graph_optimization_level=0)
        (y,) = rep.run({"x": x})
        np.testing.assert_array_equal(y, x)
        with self.assertRaises(idem.InvalidArgument):
            rep.run([x, x])
        with self.assertRaises(idem.InvalidArgument):
            idem.backend.prepare(model, "CUDA")
        with self.assertRaises(idem.InvalidArgument):
            idem.backend.prepare(model, no_such_option=1)
        self.assertTrue(idem.backend.is_compatible(model))


if __name__ == "__main__":
    unittest.main()
