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
ASAN = False  # set in __main__: the binary is built with AddressSanitizer
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


# Runs idem from a fresh, small interpreter (a child forked from this large process would inherit
# its peak RSS across exec) under an optional address-space limit, and prints the child's own
# peak RSS (wait4) and exit status. argv: LIMIT OUT_FILE ERR_FILE IDEM ARGS...
MEASURE = """
import os, resource, sys
limit, out, err = int(sys.argv[1]), sys.argv[2], sys.argv[3]
pid = os.fork()
if pid == 0:
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.execv(sys.argv[4], sys.argv[4:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status))
"""


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

    def test_packed_and_unpacked_repeated_fields_both_read(self):
        # protobuf parsers must accept both encodings of a repeated scalar (dims, float_data,
        # int32_data); a strict reader must not take either for an unknown field.
        def varint(n):
            out = b""
            while True:
                b, n = n & 0x7F, n >> 7
                if not n:
                    return out + bytes([b])
                out += bytes([b | 0x80])

        def key(field, wire):
            return varint(field << 3 | wire)

        def ld(field, payload):
            return key(field, 2) + varint(len(payload)) + payload

        dims_u = key(1, 0) + varint(2) + key(1, 0) + varint(3)
        dims_p = ld(1, varint(2) + varint(3))
        vals = np.arange(6, dtype=np.float32) - 2.5
        floats_u = b"".join(key(4, 5) + v.tobytes() for v in vals)
        floats_p = ld(4, vals.tobytes())
        mixed = key(4, 5) + vals[0].tobytes() + ld(4, vals[1:].tobytes())
        model = write_identity_model(self.dir)
        expected = None
        for name, body in [("pp", dims_p + floats_p), ("uu", dims_u + floats_u),
                           ("pu", dims_p + floats_u), ("mixed", dims_u + mixed)]:
            path = os.path.join(self.dir, name + ".pb")
            with open(path, "wb") as f:
                f.write(key(2, 0) + varint(TensorProto.FLOAT) + body)
            r = idem("run", model, "--input", f"x={path}")
            self.assertEqual(r.returncode, 0, name + r.stderr)
            expected = expected or r.stdout
            self.assertEqual(r.stdout, expected, name)
        self.assertIn("[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]", expected)
        bool_model = write_identity_model(self.dir, elem=TensorProto.BOOL, shape=(2,))
        for name, ints in [("bu", key(5, 0) + varint(1) + key(5, 0) + varint(0)),
                           ("bp", ld(5, varint(1) + varint(0)))]:
            path = os.path.join(self.dir, name + ".pb")
            with open(path, "wb") as f:
                f.write(key(1, 0) + varint(2) + key(2, 0) + varint(TensorProto.BOOL) + ints)
            r = idem("run", bool_model, "--input", f"x={path}")
            self.assertEqual(r.returncode, 0, name + r.stderr)
            self.assertIn("bool[2] = [true, false]", r.stdout)

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

    # ---- issue 17: idem test --rtol/--atol

    def write_tolerance_case(self, name, inputs, expected, elem=TensorProto.FLOAT):
        """An Identity case whose expected output is `expected` (TensorProto or array) while the
        input is `inputs`: the difference is what the comparison sees."""
        case = os.path.join(self.dir, "tol", name)
        os.makedirs(os.path.join(case, "test_data_set_0"))
        shape = inputs.dims if isinstance(inputs, TensorProto) else inputs.shape
        write_identity_model(case, elem=elem, shape=shape)
        for file, value in (("input_0.pb", inputs), ("output_0.pb", expected)):
            if not isinstance(value, TensorProto):
                value = numpy_helper.from_array(value)
            with open(os.path.join(case, "test_data_set_0", file), "wb") as f:
                f.write(value.SerializeToString())
        return case

    def test_tolerance_float_rule_and_the_worst_element_reported(self):
        x = np.array([[1.0, -2.0, 100.0], [0.0, 3.0, 1e-7]], dtype=np.float32)
        # Expected values: element 1 off by 0.9e-3 x 2 (within rtol 1e-3), element 2 off by 0.05
        # (beyond: allowed 0.10001), element 3 off by 8e-6 (within atol 1e-5).
        e = x.copy()
        e[0, 1] = -2.0018
        e[0, 2] = 100.05
        e[1, 0] = 8e-6
        case = self.write_tolerance_case("float", x, e)
        r = idem("test", case)  # default: bit-exact
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("output 'y0': element 1: expected bits", r.stdout)
        r = idem("test", "--rtol", "1e-3", "--atol", "1e-5", case)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertTrue(r.stdout.endswith("1 passed, 0 failed\n"), r.stdout)
        # Tighter: three elements differ; the worst (largest excess over what is allowed) is the
        # flat index 2, with both values and the error.
        r = idem("test", "--rtol", "1e-4", "--atol", "1e-6", case)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("FAIL float: test_data_set_0: output 'y0': 3 of 6 elements differ beyond "
                      "atol 1e-06 + rtol 0.0001 x |expected|; worst: element 2: expected 100.05, "
                      "got 100, |error| 0.0500031 > allowed 0.010006", r.stdout)
        self.assertTrue(r.stdout.endswith("0 passed, 1 failed\n"), r.stdout)
        # Only --atol (rtol 0) or only --rtol (atol 0): the other term is absent.
        self.assertEqual(idem("test", "--atol", "0.06", case).returncode, 0)
        r = idem("test", "--rtol", "1e-3", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("1 of 6 elements differ beyond atol 0 + rtol 0.001", r.stdout)
        self.assertIn("worst: element 3: expected 8e-06, got 0,", r.stdout)

    def test_tolerance_nan_and_infinities(self):
        quiet = np.array([np.nan], dtype=np.float32)
        payload = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)
        # A NaN matches any NaN under a tolerance (bit-exact needs the same payload).
        case = self.write_tolerance_case("nan", payload, quiet)
        self.assertEqual(idem("test", case).returncode, 1)
        self.assertEqual(idem("test", "--rtol", "0", case).returncode, 0)
        # -0.0 and 0.0 are equal numbers.
        case = self.write_tolerance_case("zero", np.array([-0.0], np.float32),
                                         np.array([0.0], np.float32))
        self.assertEqual(idem("test", case).returncode, 1)
        self.assertEqual(idem("test", "--atol", "0", case).returncode, 0)
        # An infinity matches only itself, whatever the tolerance; NaN never matches a number.
        big = np.finfo(np.float32).max
        for name, got, want in (("inf_vs_max", big, np.inf), ("max_vs_inf", np.inf, big),
                                ("neg_inf", -np.inf, np.inf), ("nan_vs_1", np.nan, 1.0),
                                ("1_vs_nan", 1.0, np.nan)):
            case = self.write_tolerance_case(name, np.array([got], np.float32),
                                             np.array([want], np.float32))
            r = idem("test", "--rtol", "1", "--atol", "1e30", case)
            self.assertEqual(r.returncode, 1, (name, r.stdout))
            self.assertIn(f"1 of 1 elements differ beyond atol 1e+30 + rtol 1 x |expected|; "
                          f"worst: element 0: expected {want:g}".replace("3.40282e+38",
                                                                      "3.4028235e+38"),
                          r.stdout)
        case = self.write_tolerance_case("inf_same", np.array([np.inf, -np.inf], np.float32),
                                         np.array([np.inf, -np.inf], np.float32))
        self.assertEqual(idem("test", "--rtol", "1e-3", case).returncode, 0)

    def test_tolerance_applies_to_double_float16_and_bfloat16(self):
        # float16's next value above 2 is 2 + 2^-9; each type prints at its own precision.
        for dtype, elem, shown in ((np.float64, TensorProto.DOUBLE, "2.001953125"),
                                   (np.float16, TensorProto.FLOAT16, "2.0019531")):
            x = np.array([1.0, 2.0], dtype=dtype)
            e = np.array([1.0, 2.001953125], dtype=dtype)
            case = self.write_tolerance_case(f"t{elem}", x, e, elem=elem)
            self.assertEqual(idem("test", case).returncode, 1)
            self.assertEqual(idem("test", "--rtol", "1e-3", case).returncode, 0)
            r = idem("test", "--rtol", "1e-4", case)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"worst: element 1: expected {shown}, got 2, |error| 0.00195312 > "
                          "allowed 0.000200195", r.stdout)

        def bf16(values):  # bfloat16 bits: the high halves of the floats
            bits = (np.array(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
            t = TensorProto(data_type=TensorProto.BFLOAT16, dims=[len(values)])
            t.raw_data = bits.tobytes()
            return t
        # 2.0 and the next bfloat16 above it, 2.015625: 0.78% apart.
        case = self.write_tolerance_case("bf16", bf16([1.0, 2.0]), bf16([1.0, 2.015625]),
                                         elem=TensorProto.BFLOAT16)
        self.assertEqual(idem("test", case).returncode, 1)
        self.assertEqual(idem("test", "--rtol", "1e-2", case).returncode, 0)
        r = idem("test", "--rtol", "1e-3", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("worst: element 1: expected 2.015625, got 2, |error| 0.015625", r.stdout)

    def test_tolerance_leaves_integers_bools_and_shapes_exact(self):
        case = self.write_tolerance_case("int", np.array([1, 2], np.int32),
                                         np.array([1, 3], np.int32), elem=TensorProto.INT32)
        r = idem("test", "--rtol", "1", "--atol", "100", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("output 'y0': element 1: expected bits 0x00000003, got 0x00000002",
                      r.stdout)
        case = self.write_tolerance_case("bool", np.array([True], bool),
                                         np.array([False], bool), elem=TensorProto.BOOL)
        self.assertEqual(idem("test", "--atol", "1", case).returncode, 1)
        # The shape is exact even when every value would be within tolerance.
        case = os.path.join(self.dir, "tol", "shape")
        os.makedirs(os.path.join(case, "test_data_set_0"))
        write_identity_model(case, shape=("n",))
        for file, value in (("input_0.pb", np.zeros(2, np.float32)),
                            ("output_0.pb", np.zeros(3, np.float32))):
            with open(os.path.join(case, "test_data_set_0", file), "wb") as f:
                f.write(numpy_helper.from_array(value).SerializeToString())
        r = idem("test", "--atol", "1", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("output 'y0': shape: expected [3], got [2]", r.stdout)

    def test_tolerance_reaches_into_sequences(self):
        case = os.path.join(self.dir, "seq")
        os.makedirs(os.path.join(case, "test_data_set_0"))
        seq = helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, None))
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                                  [helper.make_value_info("x", seq)],
                                  [helper.make_value_info("y", seq)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
        model.ir_version = 8
        onnx.save(model, os.path.join(case, "model.onnx"))

        def sequence(*arrays):
            s = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR)
            s.tensor_values.extend(numpy_helper.from_array(np.array(a, np.float32))
                                   for a in arrays)
            return s.SerializeToString()
        with open(os.path.join(case, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(sequence([1.0], [5.0, 6.0]))
        with open(os.path.join(case, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(sequence([1.0], [5.0, 6.003]))
        self.assertEqual(idem("test", "--rtol", "1e-3", case).returncode, 0)
        r = idem("test", "--rtol", "1e-4", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("output 'y': sequence item 1: 1 of 2 elements differ", r.stdout)

    def test_tolerance_flags_must_be_non_negative_numbers(self):
        case = self.write_tolerance_case("ok", np.zeros(1, np.float32), np.zeros(1, np.float32))
        for args in (("--rtol", "-1"), ("--atol", "-0.5"), ("--rtol", "nan"), ("--atol", "x")):
            r = idem("test", *args, case)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("error: ", r.stderr)
        self.assertEqual(idem("test", "--rtol", "0", "--atol", "0", case).returncode, 0)

    def test_skip_unsupported(self):
        # Softsign: an operator idem does not implement.
        case = os.path.join(self.dir, "unsupported")
        os.makedirs(os.path.join(case, "test_data_set_0"))
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
        graph = helper.make_graph([helper.make_node("Softsign", ["x"], ["y"])], "g", [x], [y])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 7
        onnx.save(model, os.path.join(case, "model.onnx"))
        r = idem("test", "--skip-unsupported", case)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("SKIP unsupported: unsupported Softsign-14", r.stdout)
        self.assertTrue(r.stdout.endswith("0 passed, 0 failed, 1 skipped\n"), r.stdout)
        r = idem("test", case)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL unsupported", r.stdout)
        # info still describes a model idem cannot run (most third-party models), and says why.
        r = idem("info", case)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("input  x float[1]", r.stdout)
        self.assertIn("node #0 (Softsign): x -> y", r.stdout)
        self.assertIn("runnable: no: ", r.stdout)
        self.assertIn("unsupported operators: Softsign-14", r.stdout)
        # check still fails: it answers "can idem run this?".
        r = idem("check", case)
        self.assertEqual(r.returncode, 1)

    # ---- issue 12: crashes, misreads and integrity (each fails on the code before the fix)

    def write_unshaped_model(self, elem=TensorProto.FLOAT, initializer=None):
        x = helper.make_tensor_value_info("x", elem, None)
        y = helper.make_tensor_value_info("y", elem, None)
        inits = [initializer] if initializer is not None else []
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id0")], "g",
                                  [] if initializer is not None else [x], [y], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        path = os.path.join(self.dir, "model.onnx")
        onnx.save(model, path)
        return path

    def test_very_high_rank_values_print_without_recursion(self):
        rank = 60000
        # From an initializer...
        init = numpy_helper.from_array(np.full((1,) * 32, 5, dtype=np.float32), "x")
        del init.dims[:]
        init.dims.extend([1] * rank)
        model = self.write_unshaped_model(initializer=init)
        r = idem("run", model)
        self.assertEqual(r.returncode, 0, r.stderr[:300])
        self.assertIn("y float[" + ",".join(["1"] * rank) + "] = " + "[" * rank + "5" + "]" * rank,
                      r.stdout)
        # ... and from a fed .pb and a fed .npy (whose header is then ~120 KB long).
        model = self.write_unshaped_model()
        t = numpy_helper.from_array(np.array([7], dtype=np.float32), "x")
        del t.dims[:]
        t.dims.extend([1] * rank)
        with open(os.path.join(self.dir, "x.pb"), "wb") as f:
            f.write(t.SerializeToString())
        r = idem("run", model, "--input", f"x={self.dir}/x.pb")
        self.assertEqual(r.returncode, 0, r.stderr[:300])
        self.assertIn("[" * rank + "7" + "]" * rank, r.stdout)
        np.save(os.path.join(self.dir, "x.npy"), np.full((1,) * 32, 9, dtype=np.float32))
        with open(os.path.join(self.dir, "x.npy"), "rb") as f:
            data = f.read()
        header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * rank + "), }")
        header = header.encode() + b" " * ((64 - (12 + len(header) + 1) % 64) % 64) + b"\n"
        with open(os.path.join(self.dir, "big.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header + data[-4:])
        r = idem("run", model, "--input", f"x={self.dir}/big.npy")
        self.assertEqual(r.returncode, 0, r.stderr[:300])
        self.assertIn("[" * rank + "9" + "]" * rank, r.stdout)

    def test_fortran_order_npy_is_read_in_c_order(self):
        model = self.write_unshaped_model(elem=TensorProto.INT32)
        x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
        np.save(os.path.join(self.dir, "f.npy"), np.asfortranarray(x))
        with open(os.path.join(self.dir, "f.npy"), "rb") as f:
            self.assertIn(b"'fortran_order': True", f.read(128))
        r = idem("run", model, "--input", f"x={self.dir}/f.npy", "--output-dir", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        t = TensorProto()
        with open(os.path.join(self.dir, "output_0.pb"), "rb") as f:
            t.ParseFromString(f.read())
        self.assertEqual(numpy_helper.to_array(t).tobytes(), x.tobytes())
        # The same header in double quotes (valid Python, written by other tools) means the same.
        with open(os.path.join(self.dir, "f.npy"), "rb") as f:
            data = f.read()
        data = data.replace(b"'descr'", b'"descr"').replace(b"'fortran_order'", b'"fortran_order"')
        data = data.replace(b"'shape'", b'"shape"')
        with open(os.path.join(self.dir, "dq.npy"), "wb") as f:
            f.write(data)
        r2 = idem("run", model, "--input", f"x={self.dir}/dq.npy")
        self.assertEqual(r2.returncode, 0, r2.stderr)
        self.assertIn("y int32[2,3,4] = [[[0, 1, 2, 3], [4, 5, 6, 7]", r2.stdout)
        self.assertEqual(r.stdout, r2.stdout)
        # Fortran-order byte strings too.
        model = self.write_unshaped_model(elem=TensorProto.STRING)
        s = np.array([[b"a", b"bb", b"ccc"], [b"d", b"", b"f"]], dtype="S3")
        np.save(os.path.join(self.dir, "s.npy"), np.asfortranarray(s))
        r = idem("run", model, "--input", f"x={self.dir}/s.npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('[["a", "bb", "ccc"], ["d", "", "f"]]', r.stdout)

    def test_output_dir_writes_all_or_nothing_and_keeps_modes(self):
        model = write_identity_model(self.dir, outputs=2)
        np.save(os.path.join(self.dir, "x.npy"), np.ones((2, 3), dtype=np.float32))
        out_dir = os.path.join(self.dir, "out")
        os.makedirs(out_dir)
        first = os.path.join(out_dir, "output_0.pb")
        with open(first, "wb") as f:
            f.write(b"precious")
        os.chmod(first, 0o640)
        os.makedirs(os.path.join(out_dir, "output_1.pb"))  # the second target cannot be written
        r = idem("run", model, "--input", f"x={self.dir}/x.npy", "--output-dir", out_dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("output_1.pb", r.stderr)
        with open(first, "rb") as f:
            self.assertEqual(f.read(), b"precious")
        self.assertEqual(sorted(os.listdir(out_dir)), ["output_0.pb", "output_1.pb"])
        os.rmdir(os.path.join(out_dir, "output_1.pb"))
        old_umask = os.umask(0o022)
        try:
            r = idem("run", model, "--input", f"x={self.dir}/x.npy", "--output-dir", out_dir)
        finally:
            os.umask(old_umask)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.stat(first).st_mode & 0o777, 0o640)  # an existing file keeps its mode
        self.assertEqual(os.stat(os.path.join(out_dir, "output_1.pb")).st_mode & 0o777, 0o644)
        self.assertEqual(sorted(os.listdir(out_dir)), ["output_0.pb", "output_1.pb"])

    def test_names_are_escaped_in_output(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
        y = helper.make_tensor_value_info("y\nerror: forged\x1b[2J", TensorProto.FLOAT, [1])
        graph = helper.make_graph([helper.make_node("Identity", ["x"], [y.name], name="id0")], "g",
                                  [x], [y])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        path = os.path.join(self.dir, "model.onnx")
        onnx.save(model, path)
        np.save(os.path.join(self.dir, "x.npy"), np.ones((1,), dtype=np.float32))
        r = idem("run", path, "--input", f"x={self.dir}/x.npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("\n"), 1, r.stdout)
        self.assertNotIn("\x1b", r.stdout)
        self.assertIn("y\\nerror: forged\\x1b[2J float[1]", r.stdout)
        r = idem("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("\x1b", r.stdout)
        self.assertNotIn("\nerror:", r.stdout)
        # `idem test` prints case folder names and reasons: escaped too.
        case = os.path.join(self.dir, "cases", "c\nPASS forged\x1b[2J")
        os.makedirs(os.path.join(case, "test_data_set_0"))
        onnx.save(model, os.path.join(case, "model.onnx"))
        for name, value in (("input_0.pb", 1), ("output_0.pb", 2)):
            with open(os.path.join(case, "test_data_set_0", name), "wb") as f:
                f.write(numpy_helper.from_array(np.full((1,), value, np.float32)).SerializeToString())
        r = idem("test", os.path.join(self.dir, "cases"))
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertNotIn("\nPASS forged", r.stdout)
        self.assertNotIn("\x1b", r.stdout)
        self.assertIn("FAIL c\\nPASS forged\\x1b[2J: ", r.stdout)
        self.assertIn("output 'y\\nerror: forged\\x1b[2J'", r.stdout)
        r = idem("run", path, "--input", "x\x1b[2J=nope.pb")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertNotIn("\x1b", r.stderr)

    def test_external_data_modes_and_hard_links(self):
        folder = os.path.join(self.dir, "m")
        os.makedirs(folder)
        w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
        w.ClearField("raw_data")
        w.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "24")):
            e = w.external_data.add()
            e.key, e.value = k, v
        with open(os.path.join(self.dir, "outside.bin"), "wb") as f:
            f.write(np.arange(6, dtype=np.float32).tobytes())
        os.link(os.path.join(self.dir, "outside.bin"), os.path.join(folder, "w.bin"))
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"], name="id0")], "g",
                                  [], [y], initializer=[w])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        path = os.path.join(folder, "model.onnx")
        onnx.save(model, path)
        for command in ("run", "check", "info"):
            r = idem(command, path)
            self.assertEqual(r.returncode, 1, command)
            self.assertIn("hard link", r.stderr)
        for mode in ("map", "copy"):
            r = idem("run", path, f"--external-data={mode}", "--allow-hard-links")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("y float[2,3] = [[0, 1, 2], [3, 4, 5]]", r.stdout)
        r = idem("check", path, "--external-data=copy", "--allow-hard-links")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = idem("run", path, "--external-data=both")
        self.assertEqual(r.returncode, 2)

    # ---- run time: --timeout bounds a Loop whose trip count the model controls

    def write_endless_loop(self, folder, stationary=False):
        """x: float[1] -> Loop(no trip count, no condition; body: x + 1, or x unchanged)."""
        body_nodes = [helper.make_node("Identity", ["c_in"], ["c_out"])]
        if stationary:
            body_nodes.append(helper.make_node("Identity", ["x_in"], ["x_out"]))
        else:
            body_nodes += [
                helper.make_node("Constant", [], ["one"],
                                 value=numpy_helper.from_array(np.ones(1, np.float32))),
                helper.make_node("Add", ["x_in", "one"], ["x_out"]),
            ]
        body = helper.make_graph(
            body_nodes, "body",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
             helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [1])])
        loop = helper.make_node("Loop", ["", "", "x"], ["y"], name="endless", body=body)
        graph = helper.make_graph([loop], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
        model.ir_version = 8
        os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
        path = os.path.join(folder, "model.onnx")
        onnx.save(model, path)
        x = numpy_helper.from_array(np.zeros(1, np.float32))
        for name in ("input_0.pb", "output_0.pb"):
            with open(os.path.join(folder, "test_data_set_0", name), "wb") as f:
                f.write(x.SerializeToString())
        return path

    def test_timeout_stops_an_endless_loop(self):
        case = os.path.join(self.dir, "cases", "endless")
        model = self.write_endless_loop(case)
        x = os.path.join(case, "test_data_set_0", "input_0.pb")
        r = idem("run", model, "--input", f"x={x}", "--timeout", "0.2")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("node 'endless' (Loop-16)", r.stderr)
        self.assertIn("deadline", r.stderr)
        r = idem("test", "--timeout", "0.2", os.path.join(self.dir, "cases"))
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("FAIL endless: test_data_set_0:", r.stdout)
        self.assertIn("deadline", r.stdout)
        self.assertTrue(r.stdout.endswith("0 passed, 1 failed\n"), r.stdout)
        # optimize --check: a run stopped by the timeout compares nothing; the write goes ahead.
        out = os.path.join(self.dir, "opt.onnx")
        r = idem("optimize", model, "-o", out, "--check", "--timeout", "0.2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("outputs not compared: a run passed --timeout", r.stdout)
        for bad in ("0", "-1", "soon", "nan", "-nan"):  # NaN used to mean "no limit"
            r = idem("run", model, "--timeout", bad)
            self.assertEqual(r.returncode, 2, bad)

    def test_a_loop_that_provably_never_ends_is_refused_without_a_timeout(self):
        model = self.write_endless_loop(os.path.join(self.dir, "stationary"), stationary=True)
        x = os.path.join(self.dir, "stationary", "test_data_set_0", "input_0.pb")
        r = idem("run", model, "--input", f"x={x}")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("never ends", r.stderr)
        r = idem("run", model, "--input", f"x={x}", "--timeout", "0.1")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("deadline", r.stderr)

    def run_measured(self, args, address_space=0):
        """Runs idem; returns (exit status, stdout, stderr, its own peak RSS in bytes)."""
        out_path, err_path = os.path.join(self.dir, "out.txt"), os.path.join(self.dir, "err.txt")
        r = subprocess.run([sys.executable, "-c", MEASURE, str(address_space), out_path, err_path,
                            IDEM, *args], capture_output=True, text=True, timeout=120)
        rss, code = r.stdout.split()
        with open(out_path) as out, open(err_path) as err:
            return int(code), out.read(), err.read(), int(rss)

    def test_allocation_failure_is_an_error_line_not_an_abort(self):
        if ASAN:
            self.skipTest("an address-space limit leaves the sanitizer no room")
        # A Loop stacking one 1 MiB string 2000 times: within the default run budget (2 GB), but
        # not within a 1 GiB address space. std::bad_alloc used to abort the process.
        s = helper.make_tensor("s", TensorProto.STRING, [], [b"x" * (1 << 20)])
        m = helper.make_tensor("M", TensorProto.INT64, [], [2000])
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Identity", ["s"], ["y"])],
            "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                     helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
            [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("y", TensorProto.STRING, [])])
        g = helper.make_graph([helper.make_node("Loop", ["M", ""], ["ys"], body=body)], "g", [],
                              [helper.make_tensor_value_info("ys", TensorProto.STRING, None)],
                              initializer=[m, s])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
        model.ir_version = 8
        path = os.path.join(self.dir, "strings.onnx")
        onnx.save(model, path)
        code, out, err, _ = self.run_measured(["run", path], address_space=1 << 30)
        self.assertEqual(code, 1, err)
        self.assertTrue(err.startswith("error: out of memory"), err)
        self.assertEqual(err.count("\n"), 1, err)

    def test_optimize_check_bounds_the_inputs_it_generates_in_total(self):
        if ASAN:
            self.skipTest("RSS figures would measure the sanitizer")
        # 40 inputs of 16 MiB each (a 2 KB model): --check used to generate all 640 MiB.
        xs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [2048, 2048])
              for k in range(40)]
        ys = [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [2048, 2048])
              for k in range(40)]
        nodes = [helper.make_node("Identity", [f"x{k}"], [f"t{k}"]) for k in range(40)]
        nodes += [helper.make_node("Identity", [f"t{k}"], [f"y{k}"]) for k in range(40)]
        model = helper.make_model(helper.make_graph(nodes, "g", xs, ys),
                                  opset_imports=[helper.make_opsetid("", 16)])
        model.ir_version = 8
        path = os.path.join(self.dir, "wide.onnx")
        onnx.save(model, path)
        code, out, err, rss = self.run_measured(
            ["optimize", path, "-o", os.path.join(self.dir, "wide.opt.onnx"), "--check"])
        self.assertEqual(code, 0, err)
        self.assertIn("removed 40 Identity nodes", out)
        self.assertIn("outputs not compared: generated inputs would exceed 64 MiB", out)
        self.assertLess(rss, 200 << 20)


if __name__ == "__main__":
    IDEM = sys.argv.pop(1)
    with open(IDEM, "rb") as exe:
        ASAN = b"__asan_init" in exe.read()
    unittest.main()
