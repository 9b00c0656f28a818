"""Tests of idem.optimize: results validated with onnx.checker (Debian's onnx 1.12, IR <= 8) and
run through idem next to the original where idem can run them (outputs compared bit for bit).
Run with /usr/bin/python3 -m unittest discover -s python/tests (PYTHONPATH = build/python)."""
import os
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

import idem


def f(name, shape=(3,)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def model(nodes, inputs, outputs, opset=16, ir=8, **kw):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, **kw),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def feeds_for(session):
    rng = np.random.default_rng(7)
    feeds = {}
    for info in session.inputs:
        shape = [d if isinstance(d, int) else 2 for d in (info.shape or [2])]
        feeds[info.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


class OptimizeTest(unittest.TestCase):
    def optimize_checked(self, m, runnable):
        data = m.SerializeToString()
        out, report = idem.optimize(data)
        result = onnx.load_from_string(out)
        onnx.checker.check_model(result)
        again, report2 = idem.optimize(out)
        self.assertEqual(again, out)
        self.assertEqual(report2["removed"], 0)
        if runnable:
            a, b = idem.Session(data), idem.Session(out)
            feeds = feeds_for(a)
            for x, y in zip(a.run(feeds), b.run(feeds)):
                self.assertEqual(np.asarray(x).tobytes(), np.asarray(y).tobytes())
        return result, report

    def test_chain_runs_identically(self):
        nodes = [helper.make_node("Identity", ["x"], ["t0"], name="i0")]
        nodes += [helper.make_node("Identity", [f"t{k}"], [f"t{k + 1}"], name=f"i{k + 1}")
                  for k in range(20)]
        nodes += [helper.make_node("Identity", ["t20"], ["y"], name="last")]
        result, report = self.optimize_checked(model(nodes, [f("x")], [f("y")]), runnable=True)
        self.assertEqual(report["removed"], 21)
        self.assertEqual(report["kept"], 1)
        self.assertEqual(report["kept_nodes"][0]["rule"], "graph-input")
        self.assertEqual(report["kept_nodes"][0]["node"], "last")
        self.assertEqual(list(result.graph.node[0].input), ["x"])

    def test_unsupported_operators_and_if_branches(self):
        # A model idem cannot run: checked with onnx.checker only.
        then_g = helper.make_graph([helper.make_node("Identity", ["r"], ["then_out"], name="pt")],
                                   "then", [], [f("then_out")])
        else_g = helper.make_graph([helper.make_node("Neg", ["r2"], ["n"]),
                                    helper.make_node("Identity", ["n"], ["else_out"], name="loc")],
                                   "else", [], [f("else_out")])
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Identity", ["r"], ["r2"], name="alias"),
                 helper.make_node("ReduceSum", ["r2"], ["s"], keepdims=0),
                 helper.make_node("Greater", ["s", "zero"], ["c"]),
                 helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
                 helper.make_node("Identity", ["y"], ["out"], name="to_out")]
        zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
        m = model(nodes, [f("x")], [f("out")], opset=13, initializer=[zero])
        m.doc_string = "keep me"
        helper.set_model_props(m, {"author": "idem"})
        result, report = self.optimize_checked(m, runnable=False)
        self.assertEqual(report["removed"], 3)  # alias, loc, to_out
        self.assertEqual([k["rule"] for k in report["kept_nodes"]], ["outer-scope"])
        self.assertEqual(report["kept_nodes"][0]["graph"], "graph/#4.then_branch")
        self.assertEqual(result.doc_string, "keep me")
        self.assertEqual(result.metadata_props[0].key, "author")
        self.assertEqual(list(result.graph.node[1].input), ["r"])  # r2 -> r
        self.assertEqual(list(result.graph.node[3].output), ["out"])  # If now produces out
        branches = {a.name: a.g for a in result.graph.node[3].attribute}
        else_nodes = branches["else_branch"].node
        self.assertEqual([list(n.input) for n in else_nodes], [["r"]])
        self.assertEqual(list(else_nodes[0].output), ["else_out"])
        self.assertEqual(result.graph.input[0].SerializeToString(),
                         m.graph.input[0].SerializeToString())

    def test_sequence_and_optional(self):
        seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
        opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
        nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
                 helper.make_node("Identity", ["s"], ["s_out"], name="a"),
                 helper.make_node("Optional", ["x"], ["o"]),
                 helper.make_node("Identity", ["o"], ["o2"], name="b"),
                 helper.make_node("OptionalGetElement", ["o2"], ["e"]),
                 helper.make_node("Identity", ["e"], ["y"], name="c")]
        m = model(nodes, [f("x")], [helper.make_value_info("s_out", seq), f("y")], opset=18)
        m.graph.value_info.append(helper.make_value_info("o2", opt))
        result, report = self.optimize_checked(m, runnable=True)
        self.assertEqual(report["removed"], 3)
        self.assertEqual(len(result.graph.value_info), 0)  # o2 no longer exists

    def test_nothing_removable_is_byte_identical_and_paths(self):
        m = model([helper.make_node("Identity", ["x"], ["y"], name="only")], [f("x")], [f("y")])
        data = m.SerializeToString()
        out, report = idem.optimize(data)
        self.assertIs(type(out), bytes)
        self.assertEqual(out, data)
        self.assertEqual(report["kept"], 1)
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
            with open(src, "wb") as fh:
                fh.write(data)
            self.assertEqual(idem.optimize(src)[0], data)
            none, report = idem.optimize(src, dst)
            self.assertIsNone(none)
            with open(dst, "rb") as fh:
                self.assertEqual(fh.read(), data)
            with self.assertRaises(idem.Error) as e:
                idem.optimize(src, src)
            self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
            self.assertIn("--in-place", str(e.exception))
            idem.optimize(src, src, in_place=True)
        with self.assertRaises(ValueError):
            idem.optimize(data, "x.onnx")
        with self.assertRaises(idem.Error) as e:
            idem.optimize(b"\xff\xff")
        self.assertEqual(e.exception.code, "INVALID_MODEL")

    def test_model_proto_input(self):
        nodes = [helper.make_node("Identity", ["x"], ["t"]),
                 helper.make_node("Identity", ["t"], ["y"])]
        out, report = idem.optimize(model(nodes, [f("x")], [f("y")]))
        self.assertEqual(report["removed"], 1)
        self.assertEqual(len(onnx.load_from_string(out).graph.node), 1)


if __name__ == "__main__":
    unittest.main()
