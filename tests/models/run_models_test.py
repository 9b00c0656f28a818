#!/usr/bin/python3
"""Checks the real-model runner itself (tests/models/run_models.py) without the models or ONNX
Runtime: its tolerance rule, the verdict that keeps tests/models/expected_match.txt true, and a
model idem runs today compared against a stand-in reference that is right, then wrong.
Needs the idem Python package (PYTHONPATH=build/python)."""
import os
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_models  # noqa: E402


class FakeOrt:
    """The Ort interface over numpy: y = x + x, optionally perturbed."""

    def __init__(self, perturb=0.0):
        self.perturb = perturb
        self.runs = 0

    def load(self, path):
        return {"inputs": ["x"], "outputs": ["y"]}

    def run(self, path, feeds):
        self.runs += 1
        y = (feeds["x"] + feeds["x"]).astype(np.float32)
        return {"y": (y + np.float32(self.perturb)).astype(np.float32)}


def add_model(folder, op="Add"):
    info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [3])  # noqa: E731
    graph = helper.make_graph([helper.make_node(op, ["x", "x"], ["y"])], "g", [info("x")],
                              [info("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 7
    path = os.path.join(folder, f"{op}.onnx")
    onnx.save(model, path)
    return path


class CompareTest(unittest.TestCase):
    def test_rule(self):
        e = {"y": np.array([1.0, 100.0, np.nan, np.inf], np.float32)}
        within = {"y": np.array([1.0002, 100.09, np.nan, np.inf], np.float32)}
        self.assertIsNone(run_models.compare(e, within)[0])
        for bad, index in (([1.002, 100, np.nan, np.inf], 0),
                           ([1, 100.2, np.nan, np.inf], 1),
                           ([1, 100, 0, np.inf], 2),
                           ([1, 100, np.nan, -np.inf], 3)):
            why, _ = run_models.compare(e, {"y": np.array(bad, np.float32)})
            self.assertIn(f"output 'y' element {index} (1 of 4 differ)", why)
        why, _ = run_models.compare(e, {"y": np.zeros(3, np.float32)})
        self.assertIn("shape", why)
        why, _ = run_models.compare(e, {"y": np.zeros(4, np.float64)})
        self.assertIn("element type", why)
        why, _ = run_models.compare({"n": np.array([1, 2], np.int64)},
                                    {"n": np.array([1, 3], np.int64)})
        self.assertIn("output 'n' element 1: expected 2, got 3", why)


class CheckedTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_match_mismatch_and_unsupported(self):
        path = add_model(self.tmp.name)
        x = {"x": np.array([1, 2, 3], np.float32)}
        c = run_models.Checked("good", path, FakeOrt())
        c.run(x, "run 0")
        c.run(x, "run 1")
        self.assertTrue(c.matched, c.status)
        self.assertIn("match (2 runs", c.line())
        c = run_models.Checked("off", path, FakeOrt(perturb=0.01))
        c.run(x, "run 0")
        c.run(x, "run 1")
        self.assertFalse(c.matched)
        # The worst element: the largest excess over what is allowed (the smallest expected).
        self.assertIn("mismatch at run 0: output 'y' element 0 (3 of 3 differ): expected 2.01, "
                      "got 2, |error| 0.01 > allowed 0.00211", c.status)
        self.assertEqual(c.runs, 1)  # idem is not run again after the first failure
        # An operator idem lacks (a stand-in for one that has not landed yet).
        c = run_models.Checked("missing", add_model(self.tmp.name, "Xor"), FakeOrt())
        self.assertFalse(c.matched)
        self.assertTrue(c.status.startswith("unsupported op Xor-"), c.status)

    def test_verdict_keeps_the_list_true(self):
        path = add_model(self.tmp.name)
        x = {"x": np.array([1, 2, 3], np.float32)}
        good = run_models.Checked("good", path, FakeOrt())
        good.run(x, "run 0")
        bad = run_models.Checked("bad", path, FakeOrt(perturb=1))
        bad.run(x, "run 0")
        self.assertEqual(run_models.verdict([good, bad], {"good"}), [])
        failures = run_models.verdict([good, bad], {"bad"})
        self.assertEqual(len(failures), 2)
        self.assertIn("good now matches: add it to", failures[0])
        self.assertIn("bad is expected to match", failures[1])

    def test_manifest_and_list(self):
        models = run_models.read_manifest()
        self.assertEqual(len(models), 20)
        self.assertEqual({m["family"] for m in models.values()}, set(run_models.FAMILIES))
        self.assertTrue(set(run_models.SILERO) <= set(models))
        expected = run_models.read_expected(os.path.join(run_models.HERE, "expected_match.txt"))
        self.assertTrue(expected <= set(models), expected - set(models))


if __name__ == "__main__":
    unittest.main()
