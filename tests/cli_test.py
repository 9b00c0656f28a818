#!/usr/bin/python3
"""End-to-end tests of the `idem` CLI: run (.pb and .npy inputs, --output-dir), test, check, info,
usage errors and the no-partial-output guarantee. Usage: cli_test.py IDEM_EXE"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IDEM = None
HERE = os.path.dirname(os.path.abspath(__file__))


def idem(*args):
    return subprocess.run([IDEM, *args], capture_output=True, text=True, timeout=60)


def write_identity_model(folder, elem=TensorProto.FLOAT, shape=(2, 3), opset=16, outputs=1):
    x = helper.make_tensor_value_info("x", elem, list(shape))
    ys = [helper.make_tensor_value_info(f"y{k}", elem, list(shape)) for k in range(outputs)]
    nodes = [helper.make_node("Identity", ["x"], [f"y{k}"], name=f"id{k}") for k in range(outputs)]
    graph = helper.make_graph(nodes, "g", [x], ys)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    return path


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_run_with_npy_and_pb_inputs_prints_and_writes_outputs(self):
        model = write_identity_model(self.dir, outputs=2)
        x = np.array([[1.5, -0.0, np.nan], [1e-45, np.inf, 7]], dtype=np.float32)
        np.save(os.path.join(self.dir, "x.npy"), x)
        out_dir = os.path.join(self.dir, "out")
        r = idem("run", model, "--input", f"x={self.dir}/x.npy", "--output-dir", out_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("y0 float[2,3] = [[1.5, -0, nan], [1e-45, inf, 7]]", r.stdout)
        for k in range(2):
            t = TensorProto()
            with open(os.path.join(out_dir, f"output_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            got = numpy_helper.to_array(t)
            self.assertEqual(got.tobytes(), x.tobytes())
        # The written output feeds back in as a .pb input.
        r2 = idem("run", model, "--input", f"x={out_dir}/output_0.pb")
        self.assertEqual(r2.returncode, 0, r2.stderr)
        self.assertEqual(r.stdout, r2.stdout)
        self.assertEqual([f for f in os.listdir(out_dir) if f.startswith(".")], [])

    def test_npy_feeds_an_optional_tensor_input(self):
        opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, [3]))
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id0")], "g",
                                  [helper.make_value_info("x", opt)],
                                  [helper.make_value_info("y", opt)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
        model.ir_version = 8
        path = os.path.join(self.dir, "model.onnx")
        onnx.save(model, path)
        np.save(os.path.join(self.dir, "x.npy"), np.array([7, -1, 2**40], dtype=np.int64))
        r = idem("run", path, "--input", f"x={self.dir}/x.npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("y optional(int64[3]) = optional{[7, -1, 1099511627776]}", r.stdout)

    def test_error_leaves_existing_outputs_untouched(self):
        model = write_identity_model(self.dir)
        out_dir = os.path.join(self.dir, "out")
        os.makedirs(out_dir)
        existing = os.path.join(out_dir, "output_0.pb")
        with open(existing, "wb") as f:
            f.write(b"precious")
        np.save(os.path.join(self.dir, "bad.npy"), np.zeros((3, 2), dtype=np.float32))
        r = idem("run", model, "--input", f"x={self.dir}/bad.npy", "--output-dir", out_dir)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith("error:"), r.stderr)
        self.assertIn("input 'x'", r.stderr)
        self.assertIn("float[2,3]", r.stderr)
        with open(existing, "rb") as f:
            self.assertEqual(f.read(), b"precious")
        self.assertEqual(sorted(os.listdir(out_dir)), ["output_0.pb"])

    def test_missing_feed_and_unknown_input_name(self):
        model = write_identity_model(self.dir)
        r = idem("run", model)
        self.assertEqual(r.returncode, 1)
        self.assertIn("input 'x' (float[2,3]) is not fed", r.stderr)
        r = idem("run", model, "--input", "nope=whatever.pb")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no input 'nope'", r.stderr)

    def test_usage_errors_exit_2(self):
        self.assertEqual(idem().returncode, 2)
        r = idem("run")
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith("error:"))
        self.assertEqual(idem("frobnicate").returncode, 2)

    def test_check_and_info(self):
        model = write_identity_model(self.dir, opset=18)
        r = idem("check", model)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OK", r.stdout)
        r = idem("info", model)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("node 'id0' (Identity-16)", r.stdout)
        self.assertIn("input  x float[2,3]", r.stdout)
        r = idem("check", os.path.join(self.dir, "missing.onnx"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing.onnx", r.stderr)

    def test_test_command_summarises_and_fails(self):
        good = os.path.join(self.dir, "cases", "good")
        os.makedirs(os.path.join(good, "test_data_set_0"))
        write_identity_model(good)
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        for name in ("input_0.pb", "output_0.pb"):
            with open(os.path.join(good, "test_data_set_0", name), "wb") as f:
                f.write(numpy_helper.from_array(x).SerializeToString())
        r = idem("test", os.path.join(self.dir, "cases"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("PASS good", r.stdout)
        self.assertTrue(r.stdout.endswith("1 passed, 0 failed\n"), r.stdout)
        bad = os.path.join(self.dir, "cases", "bad")
        os.makedirs(os.path.join(bad, "test_data_set_0"))
        write_identity_model(bad)
        with open(os.path.join(bad, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x).SerializeToString())
        with open(os.path.join(bad, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x + 1).SerializeToString())
        r = idem("test", os.path.join(self.dir, "cases"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL bad: test_data_set_0: output 'y0': element 0", r.stdout)
        self.assertTrue(r.stdout.endswith("1 passed, 1 failed\n"), r.stdout)

    def test_skip_unsupported(self):
        case = os.path.join(self.dir, "unsupported")
        os.makedirs(os.path.join(case, "test_data_set_0"))
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 7
        onnx.save(model, os.path.join(case, "model.onnx"))
        r = idem("test", "--skip-unsupported", case)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("SKIP unsupported: unsupported Relu-14", r.stdout)
        self.assertTrue(r.stdout.endswith("0 passed, 0 failed, 1 skipped\n"), r.stdout)
        r = idem("test", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL unsupported", r.stdout)


if __name__ == "__main__":
    IDEM = sys.argv.pop(1)
    unittest.main()
