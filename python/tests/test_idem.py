"""Tests of the idem Python package (run with /usr/bin/python3 -m unittest discover -s python/tests).

Needs PYTHONPATH to hold the build's python/ folder (ctest sets it). Models are built with
onnx.helper; element types onnx 1.12 does not know (17..26) are set by their integer code.
"""
import gc
import os
import sys
import tempfile
import threading
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

import idem

SOURCE_DIR = os.environ.get(
    "IDEM_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)))

BFLOAT16 = 16
INT4 = 22
UINT4 = 21
FLOAT8E4M3FN = 17


def tensor_type(elem, shape=None):
    return helper.make_tensor_type_proto(elem, shape)


def seq_type(elem, shape=None):
    return helper.make_sequence_type_proto(tensor_type(elem, shape))


def opt_type(inner):
    return helper.make_optional_type_proto(inner)


def make_model(nodes, inputs, outputs, opset=21, ir_version=10, initializers=()):
    """inputs/outputs: lists of (name, TypeProto). Returns serialized bytes."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_value_info(n, t) for n, t in inputs],
        [helper.make_value_info(n, t) for n, t in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model.SerializeToString()


def identity_model(type_proto, opset=21, ir_version=10, eliminate_identity=True):
    model = make_model([helper.make_node("Identity", ["x"], ["y"], name="id0")],
                       [("x", type_proto)], [("y", type_proto)], opset, ir_version)
    return idem.Session(model, eliminate_identity=eliminate_identity)


def bits(array):
    """Raw bytes plus dtype and shape: equality is bit-exactness."""
    return (array.dtype.str, array.shape, array.tobytes())


FLOAT_BITS = np.array([0x7FC00001, 0x80000000, 0x00000001, 0x7F800000, 0x7F800001,
                       0xFFBFFFFF, 0x007FFFFF, 0xFF800000], dtype="<u4")
DOUBLE_BITS = np.array([0x7FF8000000000001, 0x8000000000000000, 0x0000000000000001,
                        0x7FF0000000000000, 0x7FF0000000000001, 0xFFF7FFFFFFFFFFFF,
                        0x000FFFFFFFFFFFFF, 0xFFF0000000000000], dtype="<u8")
HALF_BITS = np.array([0x7E01, 0x8000, 0x0001, 0x7C00, 0x7C01, 0xFDFF, 0x3C00, 0xFC00], dtype="<u2")

NUMERIC = [
    (TensorProto.FLOAT, FLOAT_BITS.view(np.float32)),
    (TensorProto.DOUBLE, DOUBLE_BITS.view(np.float64)),
    (TensorProto.FLOAT16, HALF_BITS.view(np.float16)),
    (TensorProto.COMPLEX64, FLOAT_BITS.view(np.complex64)),
    (TensorProto.COMPLEX128, DOUBLE_BITS.view(np.complex128)),
    (TensorProto.UINT8, np.array([0, 255, 1, 128, 127, 42, 7, 9], np.uint8)),
    (TensorProto.INT8, np.array([-128, 127, -1, 0, 1, 42, 7, 9], np.int8)),
    (TensorProto.UINT16, np.array([0, 0xFFFF, 0x8000, 1, 0x1234, 0x7FFF, 7, 9], np.uint16)),
    (TensorProto.INT16, np.array([-0x8000, 0x7FFF, -1, 0, 1, 0x1234, 7, 9], np.int16)),
    (TensorProto.INT32, np.array([-2**31, 2**31 - 1, -1, 0, 1, 0x12345678, 7, 9], np.int32)),
    (TensorProto.INT64, np.array([-2**63, 2**63 - 1, -1, 0, 1, 0x0123456789ABCDEF, 7, 9],
                                 np.int64)),
    (TensorProto.UINT32, np.array([0, 2**32 - 1, 2**31, 1, 0x12345678, 2**31 - 1, 7, 9],
                                  np.uint32)),
    (TensorProto.UINT64, np.array([0, 2**64 - 1, 2**63, 1, 0x0123456789ABCDEF, 2**63 - 1, 7, 9],
                                  np.uint64)),
    (TensorProto.BOOL, np.array([True, False, True, True, False, False, True, False])),
]


class TensorTest(unittest.TestCase):
    def test_numeric_types_bit_exact(self):
        for elem, flat in NUMERIC:
            with self.subTest(elem=TensorProto.DataType.Name(elem)):
                x = flat.reshape(2, -1)
                (y,) = identity_model(tensor_type(elem)).run([x])
                self.assertIsInstance(y, np.ndarray)
                self.assertEqual(bits(y), bits(x))

    def test_nan_payload_and_negative_zero(self):
        x = np.array([0x7FC00001, 0x80000000, 0xFFBFFFFF, 0x7F800001], dtype=np.uint32)
        (y,) = identity_model(tensor_type(TensorProto.FLOAT)).run([x.view(np.float32)])
        np.testing.assert_array_equal(y.view(np.uint32), x)
        self.assertTrue(np.signbit(y[1]) and y[1] == 0.0)

    def test_identity_without_elimination_is_exact_too(self):
        for elem, flat in NUMERIC:
            with self.subTest(elem=TensorProto.DataType.Name(elem)):
                session = identity_model(tensor_type(elem), eliminate_identity=False)
                (y,) = session.run([flat])
                self.assertEqual(bits(y), bits(flat))

    def test_scalar_and_empty_shapes(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        for shape in [(), (0,), (2, 0, 3), (1,), (1, 1, 1, 1)]:
            with self.subTest(shape=shape):
                x = np.full(shape, -0.0, dtype=np.float32)
                (y,) = session.run([x])
                self.assertEqual(y.shape, shape)
                self.assertEqual(bits(y), bits(x))

    def test_numpy_scalar_and_python_values(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        (y,) = session.run([np.float32(2.5)])
        self.assertEqual((y.shape, y.dtype, float(y)), ((), np.float32, 2.5))
        (y,) = session.run([[1, 2, 3]])  # plain list: converted to the declared dtype
        self.assertEqual(bits(y), bits(np.array([1, 2, 3], np.float32)))
        (y,) = session.run([3.0])
        self.assertEqual(bits(y), bits(np.array(3.0, np.float32)))
        ints = identity_model(tensor_type(TensorProto.INT64))
        with self.assertRaises(idem.Error) as cm:
            ints.run([[1.5, 2.0]])  # floats to ints would lose data
        self.assertIn("input 'x'", str(cm.exception))

    def test_byte_swapped_and_non_contiguous_inputs_are_copied(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        big = np.array([1.5, -0.0, np.inf], dtype=">f4")
        (y,) = session.run([big])
        self.assertEqual(y.dtype, np.dtype("float32"))
        self.assertEqual(y.tobytes(), big.astype("<f4").tobytes())
        base = np.arange(12, dtype=np.float32).reshape(3, 4)
        x = base[:, ::2]
        (y,) = session.run([x])
        np.testing.assert_array_equal(y, x)
        self.assertTrue(y.flags.c_contiguous)
        self.assertFalse(np.shares_memory(y, base))
        x = base.T  # Fortran order
        (y,) = session.run([x])
        np.testing.assert_array_equal(y, x)

    def test_strings(self):
        session = identity_model(tensor_type(TensorProto.STRING))
        x = np.array([b"", b"a\x00b", b"\xff\xfe\x80", "h\u00e9llo".encode(), b"\x00", b"\xc3("],
                     dtype=object).reshape(2, 3)
        (y,) = session.run([x])
        self.assertEqual(y.dtype, np.dtype(object))
        self.assertEqual(y.shape, (2, 3))
        self.assertEqual(y.ravel().tolist(), x.ravel().tolist())
        self.assertTrue(all(type(v) is bytes for v in y.ravel()))

    def test_string_inputs_accept_str_and_fixed_width(self):
        session = identity_model(tensor_type(TensorProto.STRING))
        (y,) = session.run([np.array(["h\u00e9llo", b"raw"], dtype=object)])
        self.assertEqual(y.tolist(), ["h\u00e9llo".encode("utf-8"), b"raw"])
        (y,) = session.run([np.array(["ab", "\u20ac"])])  # 'U' dtype
        self.assertEqual(y.tolist(), [b"ab", "\u20ac".encode("utf-8")])
        (y,) = session.run([np.array([b"ab", b"c"])])  # 'S' dtype
        self.assertEqual(y.tolist(), [b"ab", b"c"])
        (y,) = session.run([["x", b"y"]])  # plain list
        self.assertEqual(y.tolist(), [b"x", b"y"])
        (y,) = session.run([np.array(b"scalar", dtype=object)])
        self.assertEqual((y.shape, y[()]), ((), b"scalar"))
        (y,) = session.run([np.empty((0, 2), dtype=object)])
        self.assertEqual(y.shape, (0, 2))
        with self.assertRaises(idem.Error) as cm:
            session.run([np.array([1, 2], dtype=object)])
        self.assertIn("bytes or str", str(cm.exception))


class RawTensorTest(unittest.TestCase):
    def test_bfloat16_round_trip(self):
        data = np.array([0x7FC1, 0x8000, 0x0001, 0x7F80, 0x7F81, 0xFFBF], "<u2").tobytes()
        x = idem.RawTensor("bfloat16", (2, 3), data)
        session = identity_model(tensor_type(BFLOAT16))
        self.assertEqual(session.inputs[0].type, "tensor(bfloat16)")
        (y,) = session.run([x])
        self.assertIsInstance(y, idem.RawTensor)
        self.assertEqual(y, x)
        self.assertEqual((y.element_type, y.shape, y.data), ("bfloat16", (2, 3), data))

    def test_int4_packed_round_trip(self):
        # Three int4 elements 8, 7, 15 -> bytes 0x78, 0x0F (low nibble first).
        x = idem.RawTensor("int4", [3], bytes([0x78, 0x0F]))
        (y,) = identity_model(tensor_type(INT4)).run([x])
        self.assertEqual((y.element_type, y.shape), ("int4", (3,)))
        self.assertEqual(y.data[0], 0x78)
        self.assertEqual(y.data[1] & 0x0F, 0x0F)
        (y,) = identity_model(tensor_type(UINT4)).run([idem.RawTensor("uint4", (), b"\x05")])
        self.assertEqual((y.shape, y.data), ((), b"\x05"))

    def test_float8_and_wrong_sizes(self):
        session = identity_model(tensor_type(FLOAT8E4M3FN))
        x = idem.RawTensor("float8e4m3fn", (4,), b"\x7f\x80\x01\xff")
        self.assertEqual(session.run([x])[0], x)
        with self.assertRaises(idem.Error) as cm:
            session.run([idem.RawTensor("float8e4m3fn", (4,), b"\x00")])
        self.assertIn("input 'x'", str(cm.exception))
        with self.assertRaises(idem.Error) as cm:
            session.run([np.zeros(4, np.uint8)])
        self.assertIn("input 'x'", str(cm.exception))
        with self.assertRaises(idem.Error):
            session.run([idem.RawTensor("nosuchtype", (1,), b"\x00")])

    def test_raw_tensor_may_carry_numpy_types(self):
        x = idem.RawTensor("float", (2,), np.array([1.0, -0.0], np.float32).tobytes())
        (y,) = identity_model(tensor_type(TensorProto.FLOAT)).run([x])
        self.assertEqual(y.tobytes(), x.data)


class SequenceOptionalTest(unittest.TestCase):
    def test_sequences(self):
        session = identity_model(seq_type(TensorProto.FLOAT))
        xs = [np.array([1.0, -0.0], np.float32), np.zeros((0, 3), np.float32),
              np.array(np.nan, np.float32)]
        (ys,) = session.run([xs])
        self.assertIsInstance(ys, list)
        self.assertEqual([bits(y) for y in ys], [bits(x) for x in xs])
        (ys,) = session.run([tuple(xs)])
        self.assertEqual(len(ys), 3)
        (ys,) = session.run([[]])
        self.assertEqual(ys, [])

    def test_string_sequence(self):
        session = identity_model(seq_type(TensorProto.STRING))
        (ys,) = session.run([[np.array([b"a", b"\x00"], dtype=object), ["z"]]])
        self.assertEqual([y.tolist() for y in ys], [[b"a", b"\x00"], [b"z"]])

    def test_sequence_element_type_mismatch(self):
        session = identity_model(seq_type(TensorProto.FLOAT))
        with self.assertRaises(idem.Error) as cm:
            session.run([[np.zeros(2, np.float32), np.zeros(2, np.float64)]])
        self.assertIn("input 'x'", str(cm.exception))
        with self.assertRaises(idem.Error) as cm:
            session.run([np.zeros(2, np.float32)])  # a tensor is not a sequence
        self.assertIn("seq(tensor(float))", str(cm.exception))

    def test_optional_tensor(self):
        session = identity_model(opt_type(tensor_type(TensorProto.FLOAT, [2])))
        self.assertEqual(session.inputs[0].type, "optional(tensor(float))")
        self.assertEqual(session.inputs[0].shape, [2])
        x = np.array([np.nan, -0.0], np.float32)
        (y,) = session.run([x])
        self.assertEqual(bits(y), bits(x))
        (y,) = session.run([None])
        self.assertIsNone(y)
        (y,) = session.run({"x": None})
        self.assertIsNone(y)

    def test_optional_sequence(self):
        session = identity_model(opt_type(seq_type(TensorProto.INT64)))
        self.assertEqual(session.outputs[0].type, "optional(seq(tensor(int64)))")
        (y,) = session.run([None])
        self.assertIsNone(y)
        (y,) = session.run([[]])
        self.assertEqual(y, [])
        xs = [np.array([1, 2], np.int64), np.array([-1], np.int64)]
        (ys,) = session.run([xs])
        self.assertEqual([bits(y) for y in ys], [bits(x) for x in xs])

    def test_optional_operators(self):
        opt = opt_type(tensor_type(TensorProto.FLOAT))
        model = make_model(
            [helper.make_node("OptionalHasElement", ["x"], ["has"], name="has0")],
            [("x", opt)], [("has", tensor_type(TensorProto.BOOL, []))], opset=18, ir_version=8)
        session = idem.Session(model)
        self.assertFalse(session.run([None])[0])
        self.assertTrue(session.run([np.zeros(1, np.float32)])[0])

    def test_none_refused_for_non_optional_input(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        with self.assertRaises(idem.Error) as cm:
            session.run([None])
        self.assertIn("input 'x'", str(cm.exception))
        self.assertIn("optional", str(cm.exception))


class ZeroCopyTest(unittest.TestCase):
    def test_identity_output_shares_memory(self):
        for eliminate in (True, False):
            with self.subTest(eliminate_identity=eliminate):
                session = identity_model(tensor_type(TensorProto.FLOAT), eliminate_identity=eliminate)
                x = np.arange(1000, dtype=np.float32).reshape(10, 100)
                (y,) = session.run([x])
                self.assertTrue(np.shares_memory(y, x))
                self.assertEqual(y.ctypes.data, x.ctypes.data)
                self.assertFalse(y.flags.writeable)
                with self.assertRaises(ValueError):
                    y[0, 0] = 1.0

    def test_chained_identities_and_sequences_share_memory(self):
        t = tensor_type(TensorProto.INT32)
        model = make_model([helper.make_node("Identity", ["x"], ["a"], name="id0"),
                            helper.make_node("Identity", ["a"], ["y"], name="id1")],
                           [("x", t)], [("y", t)])
        x = np.arange(10, dtype=np.int32)
        (y,) = idem.Session(model).run({"x": x})
        self.assertTrue(np.shares_memory(y, x))
        xs = [np.arange(4, dtype=np.float32), np.arange(3, dtype=np.float32)]
        (ys,) = identity_model(seq_type(TensorProto.FLOAT)).run([xs])
        self.assertTrue(all(np.shares_memory(a, b) for a, b in zip(ys, xs)))
        (y,) = identity_model(opt_type(tensor_type(TensorProto.FLOAT))).run([xs[0]])
        self.assertTrue(np.shares_memory(y, xs[0]))

    def test_outputs_outlive_session_and_inputs(self):
        session = identity_model(tensor_type(TensorProto.DOUBLE))
        x = np.arange(100000, dtype=np.float64)
        expected = x.copy()
        (y,) = session.run([x])
        del x, session
        gc.collect()
        np.testing.assert_array_equal(y, expected)

    def test_input_kept_alive_only_while_needed(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        x = np.ones(10, np.float32)
        before = sys.getrefcount(x)
        (y,) = session.run([x])
        self.assertGreater(sys.getrefcount(x), before)  # y's Value holds x
        del y
        gc.collect()
        self.assertEqual(sys.getrefcount(x), before)
        session.run([x])
        self.assertEqual(sys.getrefcount(x), before)  # nothing leaked


class SessionTest(unittest.TestCase):
    def test_inputs_outputs_info(self):
        model = make_model([helper.make_node("Identity", ["x"], ["y"], name="id0")],
                           [("x", tensor_type(TensorProto.FLOAT, ["N", 3]))],
                           [("y", tensor_type(TensorProto.FLOAT, None))])
        session = idem.Session(model)
        (info,) = session.inputs
        name, type_, shape = info
        self.assertEqual((name, type_, shape), ("x", "tensor(float)", ["N", 3]))
        self.assertEqual(info.name, "x")
        self.assertEqual(session.outputs[0].shape, None)
        self.assertIn("Identity", session.describe())
        self.assertIn("tensor(float)", repr(session))

    def test_feeds_by_dict_and_list(self):
        t = tensor_type(TensorProto.FLOAT)
        model = make_model([helper.make_node("Identity", ["a"], ["p"], name="i0"),
                            helper.make_node("Identity", ["b"], ["q"], name="i1")],
                           [("a", t), ("b", t)], [("p", t), ("q", t)])
        session = idem.Session(model)
        a = np.array([1.0], np.float32)
        b = np.array([2.0], np.float32)
        p, q = session.run({"b": b, "a": a})
        self.assertEqual((p[0], q[0]), (1.0, 2.0))
        p, q = session.run([a, b])
        self.assertEqual((p[0], q[0]), (1.0, 2.0))
        p, q = session.run((b, a))
        self.assertEqual((p[0], q[0]), (2.0, 1.0))
        out = session.run_dict({"a": a, "b": b})
        self.assertEqual(list(out), ["p", "q"])
        self.assertEqual(out["q"][0], 2.0)

    def test_overridable_initializer(self):
        t = tensor_type(TensorProto.FLOAT)
        init = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
        model = make_model([helper.make_node("Identity", ["w"], ["y"], name="id0")],
                           [("w", t)], [("y", t)], initializers=[init])
        session = idem.Session(model)
        self.assertEqual(session.inputs, [])
        self.assertEqual([i.name for i in session.overridable_inputs], ["w"])
        (y,) = session.run({})
        np.testing.assert_array_equal(y, [1.0, 2.0])
        (y,) = session.run({"w": np.array([5.0], np.float32)})
        np.testing.assert_array_equal(y, [5.0])

    def test_model_sources(self):
        path = os.path.join(SOURCE_DIR, "tests/data/debian-node/test_identity/model.onnx")
        with open(path, "rb") as f:
            data = f.read()
        import pathlib
        for source in (path, pathlib.Path(path), data, bytearray(data), memoryview(data),
                       onnx.load_from_string(data)):
            with self.subTest(source=type(source).__name__):
                session = idem.Session(source)
                self.assertEqual(len(session.outputs), 1)

    def test_threads(self):
        session = identity_model(tensor_type(TensorProto.INT64))
        errors = []

        def work(seed):
            try:
                for i in range(200):
                    x = np.full(64, seed * 1000 + i, np.int64)
                    (y,) = session.run([x])
                    if not np.array_equal(y, x):
                        errors.append((seed, i))
            except Exception as e:  # pragma: no cover
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class ErrorTest(unittest.TestCase):
    def test_error_class(self):
        self.assertTrue(issubclass(idem.Error, RuntimeError))
        self.assertTrue(issubclass(idem.Error, ValueError))

    def test_wrong_dtype_names_input(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        with self.assertRaises(idem.Error) as cm:
            session.run({"x": np.zeros(3, np.float64)})
        message = str(cm.exception)
        self.assertIn("input 'x'", message)
        self.assertIn("double", message)
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")

    def test_feed_problems(self):
        session = identity_model(tensor_type(TensorProto.FLOAT))
        with self.assertRaises(idem.Error) as cm:
            session.run({"nope": np.zeros(1, np.float32)})
        self.assertIn("'nope'", str(cm.exception))
        self.assertEqual(cm.exception.code, "NOT_FOUND")
        with self.assertRaises(idem.Error) as cm:
            session.run({})
        self.assertIn("'x'", str(cm.exception))
        with self.assertRaises(idem.Error) as cm:
            session.run([])
        self.assertIn("expected 1 feeds", str(cm.exception))
        with self.assertRaises(idem.Error):
            session.run(np.zeros(1, np.float32))  # neither dict nor list
        with self.assertRaises(idem.Error):
            session.run([np.zeros(2, np.longdouble)])

    def test_invalid_model_message_names_node_and_rule(self):
        # Identity-13 accepts tensors only: a sequence input breaks its type constraint.
        seq = seq_type(TensorProto.FLOAT)
        model = make_model([helper.make_node("Identity", ["x"], ["y"], name="bad_node")],
                           [("x", seq)], [("y", seq)], opset=13, ir_version=7)
        with self.assertRaises(idem.Error) as cm:
            idem.Session(model)
        message = str(cm.exception)
        self.assertIn("bad_node", message)
        self.assertIn("Identity", message)
        self.assertIn("seq(tensor(float))", message)
        self.assertIsInstance(cm.exception, RuntimeError)

    def test_unreadable_models(self):
        with self.assertRaises(idem.Error):
            idem.Session(b"\xff\xff\xff garbage")
        with self.assertRaises(idem.Error) as cm:
            idem.Session("/nonexistent/model.onnx")
        self.assertIn("/nonexistent/model.onnx", str(cm.exception))


class BackendTest(unittest.TestCase):
    def test_identity_opt_passes(self):
        folder = os.path.join(SOURCE_DIR, "tests/data/debian-node/test_identity_opt")
        self.assertEqual(idem.run_backend_test(folder), ("PASS", ""))
        outcome, _ = idem.run_backend_test(folder, skip_unsupported=True)
        self.assertEqual(outcome, "PASS")

    def test_tolerance_as_idem_test_rtol_atol(self):
        from onnx import numpy_helper
        with tempfile.TemporaryDirectory() as folder:
            os.makedirs(os.path.join(folder, "test_data_set_0"))
            info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2])
            graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                                      [info("x")], [info("y")])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
            model.ir_version = 8
            onnx.save(model, os.path.join(folder, "model.onnx"))
            for name, v in (("input_0.pb", [1.0, 2.0]), ("output_0.pb", [1.0, 2.002])):
                with open(os.path.join(folder, "test_data_set_0", name), "wb") as f:
                    f.write(numpy_helper.from_array(np.array(v, np.float32)).SerializeToString())
            outcome, reason = idem.run_backend_test(folder)
            self.assertEqual(outcome, "FAIL")
            self.assertIn("element 1: expected bits", reason)
            self.assertEqual(idem.run_backend_test(folder, rtol=1e-3, atol=1e-5), ("PASS", ""))
            outcome, reason = idem.run_backend_test(folder, atol=1e-3)
            self.assertEqual(outcome, "FAIL")
            self.assertIn("output 'y': 1 of 2 elements differ beyond atol 0.001 + rtol 0", reason)
            with self.assertRaises(idem.InvalidArgument):
                idem.run_backend_test(folder, rtol=-1.0)
            with self.assertRaises(idem.InvalidArgument):
                idem.run_backend_test(folder, atol=float("nan"))

    def test_missing_folder_fails(self):
        outcome, reason = idem.run_backend_test("/nonexistent/case")
        self.assertEqual(outcome, "FAIL")
        self.assertTrue(reason)


if __name__ == "__main__":
    unittest.main()
