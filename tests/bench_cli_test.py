#!/usr/bin/python3
"""End-to-end tests of `idem bench`: the JSON report's fields and their consistency, text output,
inputs from files, data sets and generated ones (--dim, --shape), and every refused argument or
failed run.
No assertion on speed. Usage: bench_cli_test.py IDEM_EXE"""
import json
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
SEED = os.path.join(HERE, "data", "seed", "test_cc_identity_opt")
SEQUENCE = os.path.join(HERE, "data", "onnx-node-tests", "test_identity_sequence")
SEQUENCE_MODEL = os.path.join(SEQUENCE, "model.onnx")
OPTIONAL = os.path.join(HERE, "data", "onnx-node-tests",
                        "test_optional_get_element_optional_sequence", "model.onnx")
LATENCY_KEYS = ["min", "mean", "median", "p90", "p99", "max"]


def idem(*args):
    return subprocess.run([IDEM, "bench", *args], capture_output=True, text=True, timeout=120)


def save(folder, name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(folder, name)
    onnx.save(model, path)
    return path


class BenchCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        # y = x + 1 with x float[N, 3] (N symbolic).
        one = numpy_helper.from_array(np.ones((1, 3), np.float32), "one")
        self.symbolic = save(
            self.dir, "symbolic.onnx", [helper.make_node("Add", ["x", "one"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], [one])
        # y = x + w, w an initializer that may be fed (an overridable input).
        w = numpy_helper.from_array(np.zeros((2,), np.float32), "w")
        self.overridable = save(
            self.dir, "overridable.onnx", [helper.make_node("Add", ["x", "w"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
             helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])

        # Silero VAD's inputs: input float[?, ?] and state float[2, ?, 128] (unnamed dims, which
        # --dim cannot size) and sr an int64 scalar.
        self.silero = save(
            self.dir, "silero_like.onnx",
            [helper.make_node("Identity", ["input"], ["output"]),
             helper.make_node("Add", ["state", "state"], ["stateN"]),
             helper.make_node("Identity", ["sr"], ["sr_out"])],
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, None]),
             helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, None, 128]),
             helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, [None, None]),
             helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, None, 128]),
             helper.make_tensor_value_info("sr_out", TensorProto.INT64, [])])

    def tearDown(self):
        self.tmp.cleanup()

    def npy(self, name, array):
        path = os.path.join(self.dir, name)
        np.save(path, array)
        return path

    def bench_json(self, *args):
        r = idem(*args, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")  # not a terminal: no progress line
        self.assertEqual(r.stdout.count("\n"), 1)
        return json.loads(r.stdout)

    def assert_consistent(self, report):
        lat = report["latency_ms"]
        self.assertEqual(sorted(lat), sorted(LATENCY_KEYS))
        self.assertTrue(all(isinstance(lat[k], (int, float)) for k in LATENCY_KEYS), lat)
        self.assertGreaterEqual(lat["min"], 0)
        self.assertLessEqual(lat["min"], lat["median"])
        self.assertLessEqual(lat["median"], lat["p90"])
        self.assertLessEqual(lat["p90"], lat["p99"])
        self.assertLessEqual(lat["p99"], lat["max"])
        self.assertLessEqual(lat["min"], lat["mean"])
        self.assertLessEqual(lat["mean"], lat["max"])
        self.assertGreater(report["runs_per_second"], 0)
        self.assertGreaterEqual(report["session_creation_ms"], 0)
        self.assertGreater(report["measured_seconds"], 0)
        self.assertIsInstance(report["peak_rss_bytes"], int)
        self.assertGreater(report["peak_rss_bytes"], 1 << 20)
        self.assertFalse(report["interrupted"])

    def test_runs_json_on_the_seed_example(self):
        report = self.bench_json(SEED, "--runs", "20")
        self.assert_consistent(report)
        self.assertEqual(report["runs"], 20)
        self.assertEqual(report["samples"], 20)
        self.assertEqual(report["warmup_runs"], 5)
        self.assertEqual(report["model"], os.path.join(SEED, "model.onnx"))
        self.assertEqual(report["intra_op_threads"], 1)
        self.assertFalse(report["reference_kernels"])
        self.assertEqual([i["source"] for i in report["inputs"]], ["data set"])
        self.assertEqual(report["inputs"][0]["name"], "x")

    def test_text_output(self):
        r = idem(SEED, "--runs", "20", "--warmup", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertNotIn("\r", r.stdout)
        for label in ["model", "input             'x' float[5] (data set)", "session creation",
                      "warm-up           0 runs", "runs              20 in", "runs/s (1 intra-op thread, fast kernels)",
                      "latency", "median", "p90", "p99", "peak RSS"]:
            self.assertIn(label, r.stdout)

    def test_duration_and_runs_whichever_ends_first(self):
        report = self.bench_json(SEED, "--duration", "0.2", "--warmup", "1")
        self.assert_consistent(report)
        self.assertGreaterEqual(report["runs"], 1)
        self.assertGreaterEqual(report["measured_seconds"], 0.2)
        self.assertEqual(report["samples"], min(report["runs"], 1 << 20))
        report = self.bench_json(SEED, "--duration", "100", "--runs", "3")
        self.assertEqual(report["runs"], 3)

    def test_many_runs_keep_a_bounded_sample(self):
        # More runs than the 2^20 timings kept: the percentiles come from an even sample.
        report = self.bench_json(SEED, "--runs", "1500000", "--warmup", "0")
        self.assert_consistent(report)
        self.assertEqual(report["runs"], 1500000)
        self.assertLessEqual(report["samples"], 1 << 20)
        self.assertGreater(report["samples"], 1 << 18)

    def test_options_are_reported(self):
        report = self.bench_json(SEED, "--runs", "2", "--threads", "2", "--reference")
        self.assertEqual(report["intra_op_threads"], 2)
        self.assertTrue(report["reference_kernels"])
        report = self.bench_json(SEQUENCE, "--runs", "2", "--warmup", "0")
        self.assertEqual(report["warmup_runs"], 0)
        self.assertEqual(report["inputs"][0]["type"], "seq(float[?]) with 2 tensors")
        report = self.bench_json(OPTIONAL, "--runs", "2")
        self.assertEqual(report["inputs"][0]["source"], "generated")
        self.assertTrue(report["inputs"][0]["type"].startswith("optional(seq("), report)

    def test_generated_inputs_and_symbolic_dims(self):
        report = self.bench_json(self.symbolic, "--runs", "3")
        self.assertEqual(report["inputs"], [{"name": "x", "type": "float[1,3]",
                                             "source": "generated"}])
        report = self.bench_json(self.symbolic, "--runs", "3", "--dim", "N=4")
        self.assertEqual(report["inputs"][0]["type"], "float[4,3]")
        for bad, why in [("M=2", "no input has a symbolic dim 'M'"),
                         ("N=0", "an integer in [1, 2147483647]"),
                         ("N=x", "an integer in [1, 2147483647]"),
                         ("N=99999999999", "an integer in [1, 2147483647]"),
                         ("N", "expected NAME=VALUE")]:
            r = idem(self.symbolic, "--runs", "3", "--dim", bad)
            self.assertEqual(r.returncode, 1, bad)
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            self.assertIn(why, r.stderr)
            self.assertEqual(r.stdout, "")
        r = idem(self.symbolic, "--runs", "3", "--dim", "N=2", "--dim", "N=3")
        self.assertEqual(r.returncode, 1)
        self.assertIn("given twice", r.stderr)
        # Too large to generate: refused, naming the input, before any run.
        r = idem(self.symbolic, "--runs", "3", "--dim", "N=2000000000")
        self.assertEqual(r.returncode, 1)
        self.assertIn("input 'x'", r.stderr)
        self.assertIn("--input x=FILE", r.stderr)

    def test_shape_sizes_unnamed_dims(self):
        report = self.bench_json(self.silero, "--runs", "3")
        self.assertEqual([i["type"] for i in report["inputs"]],
                         ["float[1,1]", "float[2,1,128]", "int64[]"])
        report = self.bench_json(self.silero, "--runs", "3", "--shape", "input=1x512",
                                 "--shape", "state=2x1x128", "--shape", "sr=scalar")
        self.assert_consistent(report)
        self.assertEqual(report["runs"], 3)
        self.assertEqual(report["inputs"], [
            {"name": "input", "type": "float[1,512]", "source": "generated"},
            {"name": "state", "type": "float[2,1,128]", "source": "generated"},
            {"name": "sr", "type": "int64[]", "source": "generated"}])
        # The documented Silero command: sr from a file, the others shaped.
        sr = self.npy("sr.npy", np.array(16000, np.int64))
        r = idem(self.silero, "--runs", "3", "--shape", "input=1x512", "--shape",
                 "state=2x4x128", "--input", f"sr={sr}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("input             'input' float[1,512] (generated)\n", r.stdout)
        self.assertIn("input             'state' float[2,4,128] (generated)\n", r.stdout)
        self.assertIn("input             'sr' int64[] (file)\n", r.stdout)
        self.assertIn("runs              3 in", r.stdout)
        # Zero-size dims are valid ONNX.
        report = self.bench_json(self.silero, "--runs", "2", "--shape", "input=0x512")
        self.assertEqual(report["inputs"][0]["type"], "float[0,512]")
        # --shape wins over --dim for its input; --dim still sizes the others.
        report = self.bench_json(self.symbolic, "--runs", "2", "--dim", "N=4", "--shape", "x=2x3")
        self.assertEqual(report["inputs"][0]["type"], "float[2,3]")
        # An overridable initializer is generated with its shape, and fed by name.
        report = self.bench_json(self.overridable, "--runs", "2", "--shape", "w=2")
        self.assertEqual([(i["name"], i["type"], i["source"]) for i in report["inputs"]],
                         [("x", "float[2]", "generated"), ("w", "float[2]", "generated")])

    def many_weights(self):
        # y = x + w0 + ... + w16: more overridable initializers than an error lists by name.
        weights = [numpy_helper.from_array(np.zeros((2,), np.float32), f"w{k}") for k in range(17)]
        sums = ["x"] + [f"s{k}" for k in range(16)] + ["y"]
        return save(
            self.dir, "many_weights.onnx",
            [helper.make_node("Add", [sums[k], w.name], [sums[k + 1]])
             for k, w in enumerate(weights)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])] +
            [helper.make_tensor_value_info(w.name, TensorProto.FLOAT, [2]) for w in weights],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], weights)

    def test_bad_shapes_are_errors(self):
        x = self.npy("input.npy", np.zeros((1, 512), np.float32))
        cases = [
            (["--shape", "nope=1x2"],
             ["--shape nope=1x2", "the model has no input 'nope'", "'input', 'state', 'sr'"]),
            (["--shape", "input=512"],
             ["input 'input' float[?,?]", "invalid rank: got 1 (512), expected 2"]),
            (["--shape", "input=1x2x3"], ["input 'input'", "invalid rank: got 3"]),
            (["--shape", "sr=1"], ["input 'sr' int64[]", "invalid rank: got 1 (1), expected 0"]),
            (["--shape", "state=3x1x128"],
             ["input 'state' float[2,?,128]", "dim 0: got 3, expected 2"]),
            (["--shape", "state=2x1x64"], ["input 'state'", "dim 2: got 64, expected 128"]),
            (["--shape", "input=1x-5"], ["--shape 'input=1x-5'", "[0, 2147483647]"]),
            (["--shape", "input=1x2147483648"], ["'input=1x2147483648'", "[0, 2147483647]"]),
            (["--shape", "input=1xabc"], ["'input=1xabc'", "dim 1", "'abc'"]),
            (["--shape", "input=1,512"], ["'input=1,512'", "D0xD1x..."]),
            (["--shape", "sr="], ["--shape 'sr='", "write scalar for a 0-d tensor"]),
            (["--shape", "input"], ["--shape 'input': expected NAME=D0xD1x..."]),
            # Refused before anything is allocated (40 GB; 2 TiB).
            (["--shape", "input=100000x100000"],
             ["input 'input'", "10000000000 elements, over the 16777216",
              "use --input input=FILE"]),
            (["--shape", "state=2x2147483647x128"], ["input 'state'", "549755813632 elements"]),
            (["--shape", "input=1x2", "--shape", "input=1x3"], ["input 'input' is given twice"]),
            (["--shape", "input=1x512", "--input", f"input={x}"],
             ["input 'input' is also given by --input"]),
        ]
        for args, whys in cases:
            r = idem(self.silero, "--runs", "3", *args)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            for why in whys:
                self.assertIn(why, r.stderr, args)
            self.assertEqual(r.stdout, "")
        # Sequences and optionals have no shape to give; a data set feeds every input.
        for model, args, whys in [
                (SEQUENCE_MODEL, ["--shape", "x=2"], ["input 'x' seq(float[?])", "not a tensor",
                                                      "use --input x=FILE"]),
                (OPTIONAL, ["--shape", "optional_input=4"],
                 ["input 'optional_input' optional(", "not a tensor"]),
                (self.overridable, ["--shape", "w=3"], ["input 'w' float[2]",
                                                        "dim 0: got 3, expected 2"]),
                (SEED, ["--shape", "x=5"], ["input 'x' is fed from the folder's test_data_set_0"]),
                (self.overridable, ["--shape", "nope=2"],
                 ["no input 'nope' (inputs: 'x'; overridable initializers: 'w')"]),
                (self.many_weights(), ["--shape", "nope=2"],
                 ["no input 'nope' (inputs: 'x'; 17 overridable initializers)"]),
        ]:
            r = idem(model, "--runs", "3", *args)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            for why in whys:
                self.assertIn(why, r.stderr, args)
            self.assertEqual(r.stdout, "")

    def test_inputs_from_files(self):
        x = self.npy("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
        report = self.bench_json(self.symbolic, "--runs", "3", "--input", f"x={x}")
        self.assertEqual(report["inputs"], [{"name": "x", "type": "float[2,3]", "source": "file"}])
        # An overridable input fed by name; the other input generated.
        w = self.npy("w.npy", np.ones(2, np.float32))
        report = self.bench_json(self.overridable, "--runs", "3", "--input", f"w={w}")
        self.assertEqual([(i["name"], i["source"]) for i in report["inputs"]],
                         [("x", "generated"), ("w", "file")])

    def test_bad_inputs_are_errors(self):
        x = self.npy("x.npy", np.zeros((2, 3), np.float32))
        cases = [
            (["--input", "x=" + os.path.join(self.dir, "missing.npy")], "missing.npy"),
            (["--input", f"nope={x}"], "the model has no input 'nope'"),
            (["--input", "x"], "expected NAME=FILE"),
            (["--input", f"x={x}", "--input", f"x={x}"], "given twice"),
        ]
        for args, why in cases:
            r = idem(self.symbolic, "--runs", "3", *args)
            self.assertEqual(r.returncode, 1, args)
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            self.assertIn(why, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertEqual(r.stdout, "")
        r = idem(os.path.join(self.dir, "absent.onnx"), "--runs", "3")
        self.assertEqual(r.returncode, 1)
        self.assertIn("absent.onnx", r.stderr)

    def test_a_failing_run_stops_at_once(self):
        # x must be [N, 3]; a [2, 4] tensor fails the first run. --duration 1000 would take
        # longer than the subprocess timeout if the failure looped.
        bad = self.npy("bad.npy", np.zeros((2, 4), np.float32))
        for warmup, phase in [("2", "warm-up run 1"), ("0", "measured run 1")]:
            r = idem(self.symbolic, "--duration", "1000", "--warmup", warmup, "--input",
                     f"x={bad}")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            self.assertIn(phase, r.stderr)
            self.assertIn("symbolic.onnx", r.stderr)
            self.assertEqual(r.stdout, "")

    def test_bad_arguments_are_usage_errors(self):
        for args in [["--runs", "0"], ["--runs", "-1"], ["--runs", "abc"], ["--runs", "1.5"],
                     ["--duration", "0"], ["--duration", "-1"], ["--duration", "nan"],
                     ["--duration", "inf"], ["--duration", "1e9"], ["--duration", "86401"],
                     ["--duration", "10s"], ["--warmup", "-1"], ["--threads", "0"],
                     ["--threads", "100000"], ["--timeout", "0"], ["--timeout", "nan"]]:
            r = idem(SEED, *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            self.assertIn(args[0], r.stderr)
            self.assertEqual(r.stdout, "")
        r = subprocess.run([IDEM, "bench"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)

    def test_names_are_escaped_in_json(self):
        name = 'a"b\nc\\'
        path = save(self.dir, "names.onnx", [helper.make_node("Identity", [name], ["y"])],
                    [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        report = self.bench_json(path, "--runs", "2")
        self.assertEqual(len(report["inputs"]), 1)
        self.assertNotIn("\n", report["inputs"][0]["name"])


if __name__ == "__main__":
    IDEM = sys.argv.pop(1)
    unittest.main()
