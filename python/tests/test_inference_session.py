"""idem.InferenceSession: onnxruntime's API (run, get_inputs/outputs, metadata, options, errors),
and the Python items of the safety issue (buffers, NUL paths, every failure an idem.Error)."""
import os
import pathlib
import tempfile
import threading
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

import idem

from test_idem import make_model, opt_type, seq_type, tensor_type


def identity_bytes(type_proto, name_in="x", name_out="y", **kw):
    return make_model([helper.make_node("Identity", [name_in], [name_out], name="id0")],
                      [(name_in, type_proto)], [(name_out, type_proto)], **kw)


def two_output_model():
    t = tensor_type(TensorProto.FLOAT, ["N"])
    return make_model([helper.make_node("Identity", ["a"], ["p"], name="i0"),
                       helper.make_node("Identity", ["b"], ["q"], name="i1")],
                      [("a", t), ("b", t)], [("p", t), ("q", t)])


class InferenceSessionRunTest(unittest.TestCase):
    def test_onnxruntime_style_run(self):
        sess = idem.InferenceSession(two_output_model())
        a = np.array([1.0, 2.0], np.float32)
        b = np.array([3.0], np.float32)
        p, q = sess.run(None, {"a": a, "b": b})
        np.testing.assert_array_equal(p, a)
        np.testing.assert_array_equal(q, b)
        self.assertTrue(np.shares_memory(p, a))  # zero copy by default
        (q2,) = sess.run(["q"], {"a": a, "b": b})
        np.testing.assert_array_equal(q2, b)
        q3, p3 = sess.run(["q", "p"], {"a": a, "b": b})
        np.testing.assert_array_equal(p3, a)
        np.testing.assert_array_equal(q3, b)
        p4, p5 = sess.run(["p", "p"], {"a": a, "b": b})
        np.testing.assert_array_equal(p5, a)
        self.assertEqual(len(sess.run([], {"a": a, "b": b})), 2)  # onnxruntime: [] means all

    def test_unknown_output_name_is_an_error(self):
        sess = idem.InferenceSession(two_output_model())
        feeds = {"a": np.zeros(1, np.float32), "b": np.zeros(1, np.float32)}
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(["nope"], feeds)
        self.assertIn("'nope' is not an output", str(cm.exception))
        with self.assertRaises(idem.InvalidArgument):
            sess.run("p", feeds)  # a bare string is not a list of names
        with self.assertRaises(idem.InvalidArgument):
            sess.run([1], feeds)
        with self.assertRaises(idem.InvalidArgument):
            sess.run(None, {1: np.zeros(1, np.float32)})

    def test_feed_errors(self):
        sess = idem.InferenceSession(two_output_model())
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(None, {"a": np.zeros(1, np.float32), "zz": np.zeros(1, np.float32)})
        self.assertIn("'zz'", str(cm.exception))
        with self.assertRaises(idem.InvalidArgument):
            sess.run(None, [np.zeros(1, np.float32)] * 2)  # onnxruntime takes a dict
        with self.assertRaises(idem.Error) as cm:
            sess.run(None, {"a": np.zeros(1, np.float32)})
        self.assertIn("'b'", str(cm.exception))
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(None, {"a": np.zeros(1, np.float64), "b": np.zeros(1, np.float32)})
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")

    def test_strings_come_back_as_str_and_round_trip_bytes(self):
        sess = idem.InferenceSession(identity_bytes(tensor_type(TensorProto.STRING, [4])))
        raw = [b"plain", "h\u00e9llo".encode(), b"\xff\xfe bad utf-8", b""]
        (y,) = sess.run(None, {"x": np.array(raw, dtype=object)})
        self.assertEqual(y.dtype, object)
        self.assertTrue(all(isinstance(s, str) for s in y))
        self.assertEqual(y[1], "h\u00e9llo")
        # surrogateescape: every byte survives str and comes back exactly.
        self.assertEqual([s.encode("utf-8", "surrogateescape") for s in y], raw)
        (z,) = sess.run(None, {"x": y})
        self.assertEqual(list(z), list(y))
        # The lower-level Session still returns bytes.
        (b,) = idem.Session(identity_bytes(tensor_type(TensorProto.STRING, [4]))).run([y])
        self.assertEqual(list(b), raw)

    def test_string_sequence_and_optional(self):
        seq = seq_type(TensorProto.STRING)
        sess = idem.InferenceSession(identity_bytes(seq))
        (y,) = sess.run(None, {"x": [np.array(["a", "b"], dtype=object)]})
        self.assertEqual(list(y[0]), ["a", "b"])
        opt = opt_type(tensor_type(TensorProto.FLOAT, [2]))
        sess = idem.InferenceSession(identity_bytes(opt))
        self.assertEqual(sess.run(None, {"x": None}), [None])

    def test_overridable_initializers(self):
        t = tensor_type(TensorProto.FLOAT, [2])
        init = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
        model = make_model([helper.make_node("Identity", ["w"], ["y"], name="id0")],
                           [("w", t)], [("y", t)], initializers=[init])
        sess = idem.InferenceSession(model)
        self.assertEqual(sess.get_inputs(), [])
        (w,) = sess.get_overridable_initializers()
        self.assertEqual((w.name, w.type, w.shape), ("w", "tensor(float)", [2]))
        np.testing.assert_array_equal(sess.run(None, {})[0], [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(None, {"w": np.array([5, 6], np.float32)})[0],
                                      [5.0, 6.0])

    def test_dict_feeds_mixing_inputs_and_overrides(self):
        t = tensor_type(TensorProto.FLOAT, [1])
        init = helper.make_tensor("w", TensorProto.FLOAT, [1], [7.0])
        model = make_model([helper.make_node("Identity", ["x"], ["p"], name="i0"),
                            helper.make_node("Identity", ["w"], ["q"], name="i1")],
                           [("x", t), ("w", t)], [("p", t), ("q", t)], initializers=[init])
        sess = idem.InferenceSession(model)
        one = np.ones(1, np.float32)
        p, q = sess.run(None, {"x": one})
        self.assertEqual((p[0], q[0]), (1.0, 7.0))
        p, q = sess.run(None, {"x": one, "w": np.full(1, 3, np.float32)})
        self.assertEqual((p[0], q[0]), (1.0, 3.0))
        # The same input named twice (as str and as bytes) is an error, not a silent pick.
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(None, {"x": one, b"x": one})
        self.assertIn("fed twice", str(cm.exception))

    def test_many_inputs_by_name(self):
        # 20,000 inputs passed straight to outputs, fed and selected by name (name lookups are
        # hashed; messages list a bounded number of names).
        n = 20000
        t = tensor_type(TensorProto.INT64, [1])
        names = ["in%d" % i for i in range(n)]
        sess = idem.InferenceSession(make_model([], [(k, t) for k in names],
                                                [(k, t) for k in names]))
        feeds = {k: np.array([i], np.int64) for i, k in enumerate(names)}
        outputs = sess.run(None, feeds)
        self.assertEqual([int(o[0]) for o in outputs], list(range(n)))
        (last,) = sess.run([names[-1]], feeds)
        self.assertEqual(int(last[0]), n - 1)
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(["nope"], feeds)
        self.assertIn("and %d more" % (n - 8), str(cm.exception))
        self.assertLess(len(str(cm.exception)), 500)
        del feeds[names[0]]
        feeds["bogus"] = np.array([0], np.int64)
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(None, feeds)
        self.assertLess(len(str(cm.exception)), 500)

    def test_threads(self):
        sess = idem.InferenceSession(identity_bytes(tensor_type(TensorProto.INT64, [64])))
        errors = []

        def work(seed):
            for i in range(100):
                x = np.full(64, seed * 1000 + i, np.int64)
                if not np.array_equal(sess.run(None, {"x": x})[0], x):
                    errors.append((seed, i))

        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class InferenceSessionDescribeTest(unittest.TestCase):
    def test_node_args_as_onnxruntime_reports_them(self):
        dims_unknown = helper.make_tensor_type_proto(TensorProto.FLOAT, None)  # rank unknown
        one_unknown = helper.make_tensor_type_proto(TensorProto.INT64, [None, 3])
        model = make_model(
            [helper.make_node("Identity", ["t"], ["t_out"], name="i0"),
             helper.make_node("Identity", ["s"], ["s_out"], name="i1"),
             helper.make_node("Identity", ["o"], ["o_out"], name="i2"),
             helper.make_node("Identity", ["r"], ["r_out"], name="i3"),
             helper.make_node("Identity", ["u"], ["u_out"], name="i4"),
             helper.make_node("Identity", ["c"], ["c_out"], name="i5"),
             helper.make_node("Identity", ["os"], ["os_out"], name="i6")],
            [("t", tensor_type(TensorProto.FLOAT, ["batch", 5])),
             ("s", seq_type(TensorProto.INT64, [2])),
             ("o", opt_type(tensor_type(TensorProto.FLOAT, [2]))),
             ("r", dims_unknown), ("u", one_unknown),
             ("c", tensor_type(TensorProto.DOUBLE, [])),
             ("os", opt_type(seq_type(TensorProto.FLOAT, [3])))],
            [("t_out", tensor_type(TensorProto.FLOAT, ["batch", 5])),
             ("s_out", seq_type(TensorProto.INT64, [2])),
             ("o_out", opt_type(tensor_type(TensorProto.FLOAT, [2]))),
             ("r_out", dims_unknown), ("u_out", one_unknown),
             ("c_out", tensor_type(TensorProto.DOUBLE, [])),
             ("os_out", opt_type(seq_type(TensorProto.FLOAT, [3])))])
        sess = idem.InferenceSession(model)
        got = [(i.name, i.type, i.shape) for i in sess.get_inputs()]
        self.assertEqual(got, [
            ("t", "tensor(float)", ["batch", 5]),
            ("s", "seq(tensor(int64))", []),          # onnxruntime: no shape for sequences
            ("o", "optional(tensor(float))", [2]),    # an optional tensor's shape is reported
            ("r", "tensor(float)", []),               # rank unknown
            ("u", "tensor(int64)", [None, 3]),        # unknown dim
            ("c", "tensor(double)", []),              # scalar
            ("os", "optional(seq(tensor(float)))", []),
        ])
        self.assertEqual([o.name for o in sess.get_outputs()],
                         ["t_out", "s_out", "o_out", "r_out", "u_out", "c_out", "os_out"])
        self.assertEqual(repr(sess.get_inputs()[0]),
                         "NodeArg(name='t', type='tensor(float)', shape=['batch', 5])")

    def test_model_metadata(self):
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "my_graph",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                                  doc_string="graph doc")
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)],
                                  producer_name="maker", producer_version="9.1",
                                  domain="org.example", model_version=42,
                                  doc_string="model doc")
        model.ir_version = 10
        helper.set_model_props(model, {"author": "me", "license": "MIT"})
        meta = idem.InferenceSession(model.SerializeToString()).get_modelmeta()
        self.assertEqual(meta.producer_name, "maker")
        self.assertEqual(meta.producer_version, "9.1")
        self.assertEqual(meta.graph_name, "my_graph")
        self.assertEqual(meta.domain, "org.example")
        self.assertEqual(meta.description, "model doc")
        self.assertEqual(meta.graph_description, "graph doc")
        self.assertEqual(meta.version, 42)
        self.assertEqual(meta.custom_metadata_map, {"author": "me", "license": "MIT"})

    def test_providers(self):
        model = identity_bytes(tensor_type(TensorProto.FLOAT, [1]))
        for providers in (None, ["CPUExecutionProvider"],
                          [("CPUExecutionProvider", {})]):
            sess = idem.InferenceSession(model, providers=providers)
            self.assertEqual(sess.get_providers(), ["CPUExecutionProvider"])
        # As a CPU-only onnxruntime: a provider it lacks is dropped with its warning.
        for providers in (["CUDAExecutionProvider"],
                          ["CUDAExecutionProvider", "CPUExecutionProvider"]):
            with self.subTest(providers=providers):
                with self.assertWarnsRegex(UserWarning, "'CUDAExecutionProvider' is not in "
                                           "available provider names"):
                    sess = idem.InferenceSession(model, providers=providers)
                self.assertEqual(sess.get_providers(), ["CPUExecutionProvider"])
        for providers in ("CPUExecutionProvider", [("CPUExecutionProvider", {"arena": "1"})],
                          [7]):
            with self.subTest(providers=providers):
                with self.assertRaises(idem.InvalidArgument) as cm:
                    idem.InferenceSession(model, providers=providers)
                self.assertIn("provider", str(cm.exception))
        self.assertEqual(idem.get_available_providers(), ["CPUExecutionProvider"])
        self.assertEqual(idem.get_device(), "CPU")
        sess = idem.InferenceSession(model)
        self.assertEqual(sess.get_provider_options(), {"CPUExecutionProvider": {}})
        sess.set_providers(["CPUExecutionProvider"])
        with self.assertWarns(UserWarning):
            sess.set_providers(["CUDAExecutionProvider"])
        self.assertEqual(sess.get_providers(), ["CPUExecutionProvider"])
        with self.assertRaises(idem.NotImplemented):
            sess.end_profiling()

    def test_sources(self):
        path = os.path.join(os.environ.get("IDEM_SOURCE_DIR", "."),
                            "tests/data/debian-node/test_identity/model.onnx")
        with open(path, "rb") as f:
            data = f.read()
        for source in (path, pathlib.Path(path), data, bytearray(data), memoryview(data),
                       onnx.load_from_string(data)):
            with self.subTest(source=type(source).__name__):
                self.assertEqual(len(idem.InferenceSession(source).get_outputs()), 1)


class OptionsTest(unittest.TestCase):
    def test_graph_optimization_level_controls_identity_elimination(self):
        model = identity_bytes(tensor_type(TensorProto.FLOAT, [3]))
        x = np.arange(3, dtype=np.float32)
        (y,) = idem.InferenceSession(model).run(None, {"x": x})
        self.assertTrue(np.shares_memory(x, y))
        so = idem.SessionOptions()
        so.graph_optimization_level = idem.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = idem.InferenceSession(model, sess_options=so)
        self.assertIs(sess.get_session_options(), so)
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(x, y)
        # Identity kept as a step: it still returns the same Value (idem never copies Identity's
        # data), so the difference is the plan's.
        self.assertTrue(np.shares_memory(x, y))
        self.assertFalse(sess._session.eliminate_identity)
        self.assertFalse(sess._session.fold_constants)
        for level in (idem.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                      idem.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                      idem.GraphOptimizationLevel.ORT_ENABLE_LAYOUT,
                      idem.GraphOptimizationLevel.ORT_ENABLE_ALL):
            so.graph_optimization_level = level
            self.assertTrue(idem.InferenceSession(model, so)._session.eliminate_identity)
            self.assertTrue(idem.InferenceSession(model, so)._session.fold_constants)

    def test_limits_and_external_data_options(self):
        model = identity_bytes(tensor_type(TensorProto.FLOAT, [3]))
        so = idem.SessionOptions()
        so.limits = {"max_model_bytes": 10}
        with self.assertRaises(idem.Fail) as cm:
            idem.InferenceSession(model, sess_options=so)
        self.assertIn("max_model_bytes", str(cm.exception))
        self.assertEqual(cm.exception.code, "RESOURCE_EXHAUSTED")
        for bad in ({"no_such_limit": 1}, {"max_nodes": -1}, {"max_nodes": "many"},
                    {"max_type_depth": 2**40}):
            so.limits = bad
            with self.subTest(limits=bad):
                with self.assertRaises(idem.InvalidArgument):
                    idem.InferenceSession(model, sess_options=so)
        so.limits = {}
        so.external_data = "stream"
        with self.assertRaises(idem.InvalidArgument) as cm:
            idem.InferenceSession(model, sess_options=so)
        self.assertIn("'map' or 'copy'", str(cm.exception))
        so.external_data = "copy"
        so.allow_external_hard_links = True
        idem.InferenceSession(model, sess_options=so)
        self.assertEqual(idem.Session(model, limits={"max_nodes": 7}).limits["max_nodes"], 7)
        self.assertEqual(set(idem.default_limits()), set(idem.Session(model).limits))

    def test_onnxruntime_options_idem_ignores_are_accepted(self):
        so = idem.SessionOptions()
        so.intra_op_num_threads = 4
        so.inter_op_num_threads = 2
        so.execution_mode = idem.ExecutionMode.ORT_PARALLEL
        so.log_severity_level = 3
        so.add_session_config_entry("session.load_model_format", "ONNX")
        self.assertEqual(so.get_session_config_entry("session.load_model_format"), "ONNX")
        sess = idem.InferenceSession(identity_bytes(tensor_type(TensorProto.FLOAT, [1])), so)
        ro = idem.RunOptions()
        ro.log_severity_level = 3
        ro.add_run_config_entry("k", "v")
        self.assertEqual(ro.get_run_config_entry("k"), "v")
        self.assertEqual(sess.run(None, {"x": np.ones(1, np.float32)}, ro)[0][0], 1.0)

    def test_external_data_copy_mode_and_hard_links(self):
        # A model whose initializer lives in weights.bin next to it, passed through Identity.
        with tempfile.TemporaryDirectory() as d:
            values = np.arange(4, dtype=np.float32)
            with open(os.path.join(d, "weights.bin"), "wb") as f:
                f.write(values.tobytes())
            init = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.0] * 4)
            init.ClearField("float_data")
            init.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
                entry = init.external_data.add()
                entry.key, entry.value = k, v
            t = tensor_type(TensorProto.FLOAT, [4])
            model = make_model([helper.make_node("Identity", ["w"], ["y"], name="id0")],
                               [], [("y", t)], initializers=[init])
            path = os.path.join(d, "model.onnx")
            with open(path, "wb") as f:
                f.write(model)
            so = idem.SessionOptions()
            so.external_data = "copy"
            copied = idem.InferenceSession(path, so)
            mapped = idem.InferenceSession(path)
            np.testing.assert_array_equal(copied.run(None, {})[0], values)
            np.testing.assert_array_equal(mapped.run(None, {})[0], values)
            # Rewritten in place: the copy keeps the values it loaded.
            with open(os.path.join(d, "weights.bin"), "r+b") as f:
                f.write(np.full(4, 9, np.float32).tobytes())
            np.testing.assert_array_equal(copied.run(None, {})[0], values)
            # A second hard link to the data file: refused unless allowed.
            os.link(os.path.join(d, "weights.bin"), os.path.join(d, "alias.bin"))
            with self.assertRaises(idem.Error) as cm:
                idem.InferenceSession(path)
            self.assertIn("hard link", str(cm.exception))
            so = idem.SessionOptions()
            so.allow_external_hard_links = True
            np.testing.assert_array_equal(idem.InferenceSession(path, so).run(None, {})[0],
                                          np.full(4, 9, np.float32))

    def test_unsupported_session_options_are_refused(self):
        model = identity_bytes(tensor_type(TensorProto.FLOAT, [3]))
        so = idem.SessionOptions()
        so.enable_profiling = True
        with self.assertRaises(idem.NotImplemented):
            idem.InferenceSession(model, sess_options=so)
        so = idem.SessionOptions()
        so.optimized_model_filepath = "/tmp/out.onnx"
        with self.assertRaises(idem.NotImplemented) as cm:
            idem.InferenceSession(model, sess_options=so)
        self.assertIn("optimized_model_filepath", str(cm.exception))
        with self.assertRaises(idem.InvalidArgument):
            idem.InferenceSession(model, sess_options={"graph_optimization_level": 0})
        with self.assertRaises(idem.InvalidArgument):
            idem.InferenceSession(model, bogus_keyword=1)

    def test_run_options_terminate_and_timeout(self):
        sess = idem.InferenceSession(identity_bytes(tensor_type(TensorProto.FLOAT, [1])))
        feeds = {"x": np.zeros(1, np.float32)}
        ro = idem.RunOptions()
        self.assertFalse(ro.terminate)
        self.assertIsNone(ro.timeout)
        sess.run(None, feeds, ro)
        ro.terminate = True
        with self.assertRaises(idem.Fail) as cm:
            sess.run(None, feeds, ro)
        self.assertEqual(cm.exception.code, "CANCELLED")
        ro.terminate = False
        ro.timeout = 0.0
        with self.assertRaises(idem.Fail) as cm:
            sess.run(None, feeds, ro)
        self.assertEqual(cm.exception.code, "DEADLINE_EXCEEDED")
        ro.timeout = 60.0
        sess.run(None, feeds, ro)
        with self.assertRaises(idem.InvalidArgument):
            sess.run(None, feeds, run_options="fast")
        # NaN is refused when set (it used to become a deadline through an undefined conversion);
        # infinity means no practical deadline.
        with self.assertRaises(idem.InvalidArgument) as cm:
            ro.timeout = float("nan")
        self.assertIn("nan", str(cm.exception))
        self.assertEqual(ro.timeout, 60.0)
        ro.timeout = float("inf")
        sess.run(None, feeds, ro)


class ErrorClassesTest(unittest.TestCase):
    def test_hierarchy(self):
        for cls in (idem.InvalidArgument, idem.InvalidGraph, idem.NotImplemented, idem.Fail,
                    idem.NoSuchFile):
            self.assertTrue(issubclass(cls, idem.Error), cls)
            self.assertEqual(cls.__module__, "idem")

    def test_not_implemented_does_not_break_comparisons(self):
        # idem.NotImplemented (onnxruntime's exception name) must not leak into the package's
        # own comparison methods, which return the builtin NotImplemented.
        raw = idem.RawTensor("bfloat16", [1], b"\0\0")
        self.assertFalse(raw == 5)
        self.assertTrue(raw != 5)
        self.assertTrue(raw == idem.RawTensor("bfloat16", [1], b"\0\0"))
        self.assertIsNot(idem.NotImplemented, NotImplemented)

    def test_classes_follow_status_codes(self):
        with self.assertRaises(idem.NoSuchFile) as cm:
            idem.InferenceSession("/nonexistent/model.onnx")
        self.assertIn("/nonexistent/model.onnx", str(cm.exception))
        with self.assertRaises(idem.InvalidGraph) as cm:
            idem.InferenceSession(b"\xff\xff\xff garbage")
        self.assertEqual(cm.exception.code, "INVALID_MODEL")
        unknown_op = make_model([helper.make_node("NoSuchOp", ["x"], ["y"], name="n0")],
                                [("x", tensor_type(TensorProto.FLOAT, [1]))],
                                [("y", tensor_type(TensorProto.FLOAT, [1]))])
        with self.assertRaises(idem.NotImplemented) as cm:
            idem.InferenceSession(unknown_op)
        self.assertIn("NoSuchOp", str(cm.exception))
        empty_optional = make_model(
            [helper.make_node("OptionalGetElement", ["x"], ["y"], name="get")],
            [("x", opt_type(tensor_type(TensorProto.FLOAT, [1])))],
            [("y", tensor_type(TensorProto.FLOAT, [1]))])
        with self.assertRaises(idem.Fail) as cm:
            idem.InferenceSession(empty_optional).run(None, {"x": None})
        self.assertEqual(cm.exception.code, "RUNTIME_ERROR")


class Issue12PythonTest(unittest.TestCase):
    """Regression tests for the Python items of the safety issue; each failed before the fix."""

    def model_bytes(self):
        return identity_bytes(tensor_type(TensorProto.FLOAT, [1]))

    def test_strided_memoryview_reads_the_logical_bytes_only(self):
        data = self.model_bytes()
        # Every second byte of a buffer twice the size: the logical bytes are the model. Before
        # the fix idem read len(data) bytes from the start, i.e. interleaved garbage.
        doubled = bytearray(2 * len(data))
        doubled[::2] = data
        view = memoryview(doubled)[::2]
        self.assertFalse(view.c_contiguous)
        self.assertEqual(len(idem.Session(view).outputs), 1)
        # Reversed: the pointer is the last byte; reading forward ran past the exporter.
        rev = memoryview(bytes(reversed(data)))[::-1]
        self.assertEqual(rev.tobytes(), data)
        self.assertEqual(len(idem.InferenceSession(rev).get_outputs()), 1)
        # A C-contiguous view with a multi-byte format is read as its bytes, no more.
        padded = data + b"\0" * (-len(data) % 8)
        with self.assertRaises(idem.InvalidGraph):  # the zero padding is not a valid field
            idem.Session(memoryview(padded).cast("q"))

    def test_nul_in_path_is_an_error_not_a_truncated_open(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            with open(path, "wb") as f:
                f.write(self.model_bytes())
            idem.Session(path)
            for bad in (path + "\0ignored", path + "\0"):
                with self.subTest(path=bad):
                    with self.assertRaises(idem.InvalidArgument) as cm:
                        idem.InferenceSession(bad)
                    self.assertIn("NUL", str(cm.exception))
            with self.assertRaises(idem.Error):
                idem.run_backend_test(d + "\0x")

    def test_wrong_model_argument_types_are_idem_errors(self):
        for bad in (12, 1.5, None, object(), [b"x"]):
            with self.subTest(model=bad):
                with self.assertRaises(idem.InvalidArgument):
                    idem.Session(bad)
                with self.assertRaises(idem.InvalidArgument):
                    idem.InferenceSession(bad)
        with self.assertRaises(idem.InvalidArgument):
            idem.Session(self.model_bytes(), eliminate_identity="yes please")
        with self.assertRaises(idem.InvalidArgument):
            idem.Session(self.model_bytes(), base_dir=3)

    def test_non_utf8_names_are_str_with_surrogateescape(self):
        name = b"in\xff\xfe"
        t = tensor_type(TensorProto.FLOAT, [1])
        graph = onnx.GraphProto()
        graph.name = "g"
        node = graph.node.add()
        node.op_type = "Identity"
        node.input.append("placeholder_in")
        node.output.append("placeholder_out")
        # protobuf's Python API refuses non-UTF-8 str, so patch the names in the bytes.
        for vi_name, field in (("placeholder_in", graph.input), ("placeholder_out", graph.output)):
            vi = field.add()
            vi.name = vi_name
            vi.type.CopyFrom(t)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        model.ir_version = 10
        data = model.SerializeToString()
        data = data.replace(b"placeholder_in", name.ljust(len("placeholder_in"), b"_"))
        raw_name = name.ljust(len("placeholder_in"), b"_")
        session = idem.Session(data)
        (info,) = session.inputs
        self.assertIsInstance(info.name, str)
        self.assertEqual(info.name.encode("utf-8", "surrogateescape"), raw_name)
        x = np.ones(1, np.float32)
        (y,) = session.run({info.name: x})   # the str name feeds the exact bytes
        np.testing.assert_array_equal(y, x)
        (y,) = session.run({raw_name: x})    # bytes names too
        sess = idem.InferenceSession(data)
        self.assertEqual(sess.get_inputs()[0].name, info.name)
        sess.run(None, {info.name: x})
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(None, {"\ud800": x})  # a lone surrogate that is no escaped byte
        # An error message naming the raw name is readable text, not a UnicodeDecodeError.
        with self.assertRaises(idem.Error) as cm:
            session.run({info.name: np.ones(1, np.float64)})
        self.assertIn("\\xff", str(cm.exception))

    def test_raw_tensor_arguments_are_idem_errors(self):
        for args in (("bfloat16", ["a"], b""), ("bfloat16", 3, b""), ("bfloat16", [1], 1.5)):
            with self.subTest(args=args):
                with self.assertRaises(idem.InvalidArgument):
                    idem.RawTensor(*args)

    def test_rank_beyond_numpy_is_an_idem_error(self):
        rank = 40
        t = tensor_type(TensorProto.FLOAT, [1] * rank)
        init = helper.make_tensor("w", TensorProto.FLOAT, [1] * rank, [1.0])
        model = make_model([helper.make_node("Identity", ["w"], ["y"], name="id0")],
                           [], [("y", t)], initializers=[init])
        sess = idem.InferenceSession(model)
        self.assertEqual(len(sess.get_outputs()[0].shape), rank)
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess.run(None, {})
        self.assertIn("rank 40", str(cm.exception))
        # Plain nested lists deeper than numpy allows: numpy's ValueError becomes an idem error.
        deep = 1.0
        for _ in range(rank):
            deep = [deep]
        with self.assertRaises(idem.InvalidArgument):
            idem.Session(identity_bytes(tensor_type(TensorProto.FLOAT, None))).run([deep])


if __name__ == "__main__":
    unittest.main()
