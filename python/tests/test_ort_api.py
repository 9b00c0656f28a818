"""onnxruntime's Python API on idem.InferenceSession, issue 19: SessionOptions' attributes and their
checks, config entries, providers, feeds as onnxruntime takes them (one-element arrays for
scalars, its error texts), OrtValue, IOBinding and state carried in place. The same calls on the
real models, against ONNX Runtime itself, are in tests/examples/clients_test.py."""
import re
import unittest

import numpy as np
from onnx import TensorProto, helper

import idem

from test_idem import make_model, tensor_type


def stateful_model():
    """y = x + state[0], stateN = state * 2 + 1: a streaming model with its state carried out."""
    x = tensor_type(TensorProto.FLOAT, ["N", 4])
    state = tensor_type(TensorProto.FLOAT, [2, 4])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    return make_model(
        [helper.make_node("Gather", ["state", "zero"], ["s"], name="first", axis=0),
         helper.make_node("Add", ["x", "s"], ["y"], name="add"),
         helper.make_node("Mul", ["state", "two"], ["doubled"], name="mul"),
         helper.make_node("Add", ["doubled", "one"], ["stateN"], name="inc")],
        [("x", x), ("state", state), ("sr", tensor_type(TensorProto.INT64, []))],
        [("y", x), ("stateN", state)], initializers=[one, two, zero], opset=17)


def stateful_reference(x, state):
    return x + state[0], state * 2 + 1


def identity(type_proto):
    return make_model([helper.make_node("Identity", ["x"], ["y"], name="id0")],
                      [("x", type_proto)], [("y", type_proto)])


class SessionOptionsTest(unittest.TestCase):
    def test_onnxruntime_defaults(self):
        so = idem.SessionOptions()
        self.assertEqual(so.graph_optimization_level, idem.GraphOptimizationLevel.ORT_ENABLE_ALL)
        self.assertEqual(so.execution_mode, idem.ExecutionMode.ORT_SEQUENTIAL)
        self.assertEqual((so.intra_op_num_threads, so.inter_op_num_threads), (0, 0))
        self.assertTrue(so.enable_cpu_mem_arena)
        self.assertTrue(so.enable_mem_pattern)
        self.assertEqual(so.log_severity_level, -1)
        self.assertFalse(so.enable_profiling)
        self.assertEqual(int(idem.GraphOptimizationLevel.ORT_ENABLE_ALL), 99)
        self.assertEqual(int(idem.ExecutionMode.ORT_PARALLEL), 1)

    def test_attributes_are_checked_when_set(self):
        so = idem.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = np.int64(2)  # numpy ints are ints
        self.assertEqual((so.intra_op_num_threads, so.inter_op_num_threads), (1, 2))
        so.graph_optimization_level = 0  # an int names a level, as in onnxruntime
        self.assertIs(so.graph_optimization_level, idem.GraphOptimizationLevel.ORT_DISABLE_ALL)
        for attr, bad in (("intra_op_num_threads", -1), ("inter_op_num_threads", "1"),
                          ("intra_op_num_threads", 1.5), ("intra_op_num_threads", True),
                          ("graph_optimization_level", 7), ("execution_mode", "parallel"),
                          ("enable_cpu_mem_arena", 2), ("log_severity_level", 5),
                          ("logid", 3)):
            with self.subTest(attr=attr, value=bad):
                with self.assertRaises(idem.InvalidArgument) as cm:
                    setattr(so, attr, bad)
                self.assertIn(attr, str(cm.exception))
        self.assertEqual(so.intra_op_num_threads, 1)  # unchanged by the refused value
        with self.assertRaises(AttributeError):  # a typo is not silently kept
            so.intra_op_threads = 1

    def test_thread_and_memory_options_do_not_change_results(self):
        model = stateful_model()
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        state = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
        feeds = {"x": x, "state": state, "sr": np.array(16000, np.int64)}
        expected = idem.InferenceSession(model).run(None, feeds)
        for threads in (1, 2, 8):
            so = idem.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = threads
            so.execution_mode = idem.ExecutionMode.ORT_PARALLEL
            so.enable_cpu_mem_arena = False
            so.enable_mem_pattern = False
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            got = idem.InferenceSession(model, sess_options=so).run(None, feeds)
            self.assertEqual([g.tobytes() for g in got], [e.tobytes() for e in expected])

    def test_config_entries(self):
        model = identity(tensor_type(TensorProto.FLOAT, [1]))
        so = idem.SessionOptions()
        for key, value in (("session.intra_op.allow_spinning", "0"),
                           ("session.inter_op.allow_spinning", "1"),
                           ("session.set_denormal_as_zero", "0"),
                           ("session.load_model_format", "ONNX")):
            so.add_session_config_entry(key, value)
            self.assertEqual(so.get_session_config_entry(key), value)
        idem.InferenceSession(model, sess_options=so)
        with self.assertRaises(idem.InvalidArgument):
            so.get_session_config_entry("session.never_set")
        # Entries that could change results are refused when the session is made, named.
        for key, value in (("session.set_denormal_as_zero", "1"),
                           ("optimization.minimal_build_optimizations", "save"),
                           ("session.qdqisint8allowed", "1")):
            bad = idem.SessionOptions()
            bad.add_session_config_entry(key, value)
            with self.subTest(key=key):
                with self.assertRaises(idem.NotImplemented) as cm:
                    idem.InferenceSession(model, sess_options=bad)
                self.assertIn(key, str(cm.exception))
                self.assertEqual(cm.exception.code, "UNSUPPORTED")

    def test_what_idem_cannot_honour_is_refused(self):
        so = idem.SessionOptions()
        for call in (lambda: so.add_free_dimension_override_by_name("N", 1),
                     lambda: so.add_free_dimension_override_by_denotation("DATA_BATCH", 1),
                     lambda: so.add_initializer("w", None),
                     lambda: so.register_custom_ops_library("libcustom.so")):
            with self.assertRaises(idem.NotImplemented):
                call()

    def test_module_functions(self):
        self.assertEqual(idem.get_all_providers(), ["CPUExecutionProvider"])
        idem.set_default_logger_severity(3)
        idem.set_default_logger_verbosity(0)
        with self.assertRaises(idem.InvalidArgument):
            idem.set_default_logger_severity(9)
        self.assertRegex(idem.__version__, r"^\d+\.\d+\.\d+$")


class FeedsTest(unittest.TestCase):
    def setUp(self):
        self.sess = idem.InferenceSession(stateful_model())
        self.x = np.ones((3, 4), np.float32)
        self.state = np.zeros((2, 4), np.float32)

    def test_a_scalar_input_takes_a_one_element_array(self):
        for sr in (np.array(16000, np.int64), np.array([16000], np.int64),
                   np.array([[16000]], np.int64)):
            y, _ = self.sess.run(None, {"x": self.x, "state": self.state, "sr": sr})
            np.testing.assert_array_equal(y, self.x)
        with self.assertRaises(idem.InvalidArgument):
            self.sess.run(None, {"x": self.x, "state": self.state,
                                 "sr": np.array([1, 2], np.int64)})

    def test_onnxruntime_words_for_refused_feeds(self):
        sr = np.array(16000, np.int64)
        cases = [
            ({"x": self.x.astype(np.float64), "state": self.state, "sr": sr},
             "Unexpected input data type. Actual: (tensor(double)) , expected: (tensor(float))"),
            ({"x": self.x[0], "state": self.state, "sr": sr},
             "Invalid rank for input: x Got: 1 Expected: 2 Please fix either the inputs/outputs "
             "or the model."),
            ({"x": np.ones((3, 6), np.float32), "state": self.state, "sr": sr},
             "Got invalid dimensions for input: x for the following indices\n index: 1 Got: 6 "
             "Expected: 4\n Please fix either the inputs/outputs or the model."),
            ({"x": self.x, "state": np.zeros((3, 5), np.float32), "sr": sr},
             "Got invalid dimensions for input: state for the following indices\n index: 0 Got: "
             "3 Expected: 2\n index: 1 Got: 5 Expected: 4\n Please fix either the "
             "inputs/outputs or the model."),
        ]
        for feeds, message in cases:
            with self.subTest(message=message[:40]):
                with self.assertRaises(idem.InvalidArgument) as cm:
                    self.sess.run(None, feeds)
                self.assertEqual(str(cm.exception), message)
                self.assertIsInstance(cm.exception.__cause__, idem.Error)  # idem's own words
        # The window size a client reads from the text.
        with self.assertRaises(idem.InvalidArgument) as cm:
            self.sess.run(None, cases[2][0])
        self.assertEqual(re.search(r"Got: \d+ Expected: (\d+)", str(cm.exception)).group(1), "4")

    def test_ort_value_feeds_and_run_with_ort_values(self):
        xv = idem.OrtValue.ortvalue_from_numpy(self.x)
        outs = self.sess.run_with_ort_values(
            ["stateN", "y"], {"x": xv, "state": idem.OrtValue.ortvalue_from_numpy(self.state),
                              "sr": idem.OrtValue.ortvalue_from_numpy(np.array(8000))})
        self.assertTrue(all(isinstance(o, idem.OrtValue) for o in outs))
        np.testing.assert_array_equal(outs[0].numpy(), np.ones((2, 4), np.float32))
        np.testing.assert_array_equal(outs[1].numpy(), self.x)
        self.assertEqual(outs[1].shape(), [3, 4])
        self.assertEqual(outs[1].data_type(), "tensor(float)")


class OrtValueTest(unittest.TestCase):
    def test_from_numpy_shares_memory(self):
        a = np.arange(6, dtype=np.int64).reshape(2, 3)
        v = idem.OrtValue.ortvalue_from_numpy(a)
        self.assertTrue(np.shares_memory(v.numpy(), a))
        self.assertEqual((v.shape(), v.data_type(), v.element_type(), v.device_name()),
                         ([2, 3], "tensor(int64)", np.int64, "cpu"))
        self.assertTrue(v.is_tensor() and v.has_value())
        self.assertFalse(v.is_sparse_tensor() or v.is_tensor_sequence())
        self.assertEqual(v.data_ptr(), a.ctypes.data)
        v.update_inplace(np.full((2, 3), 7, np.int64))
        self.assertEqual(int(a.sum()), 42)
        with self.assertRaises(idem.InvalidArgument):
            v.update_inplace(np.zeros((3, 2), np.int64))
        with self.assertRaises(idem.InvalidArgument):
            idem.OrtValue.ortvalue_from_numpy([1, 2])
        with self.assertRaises(idem.InvalidArgument):
            idem.OrtValue.ortvalue_from_numpy(a, "cuda", 0)

    def test_from_shape_and_type(self):
        v = idem.OrtValue.ortvalue_from_shape_and_type([2, 1, 128], np.float32)
        self.assertEqual((v.shape(), v.data_type()), ([2, 1, 128], "tensor(float)"))
        self.assertFalse(v.numpy().any())
        with self.assertRaises(idem.InvalidArgument):
            idem.OrtValue.ortvalue_from_shape_and_type([-1], np.float32)


class IOBindingTest(unittest.TestCase):
    def setUp(self):
        self.sess = idem.InferenceSession(stateful_model())
        self.sr = np.array(16000, np.int64)

    def windows(self, n=5):
        rng = np.random.default_rng(1)
        return [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(n)]

    def plain(self, windows):
        state = np.zeros((2, 4), np.float32)
        ys = []
        for x in windows:
            y, state = self.sess.run(None, {"x": x, "state": state, "sr": self.sr})
            ys.append(np.array(y))
        return ys, state

    def test_state_moves_from_run_to_run_as_an_ort_value(self):
        windows = self.windows()
        want, final = self.plain(windows)
        binding = self.sess.io_binding()
        binding.bind_cpu_input("sr", self.sr)
        binding.bind_ortvalue_input(
            "state", idem.OrtValue.ortvalue_from_shape_and_type([2, 4], np.float32))
        binding.bind_output("y")
        binding.bind_output("stateN")
        got = []
        for x in windows:
            binding.bind_cpu_input("x", x)
            self.sess.run_with_iobinding(binding)
            y, state = binding.get_outputs()
            binding.bind_ortvalue_input("state", state)  # no copy: the output itself
            got.append(y.numpy())
        self.assertEqual([g.tobytes() for g in got], [w.tobytes() for w in want])
        np.testing.assert_array_equal(state.numpy(), final)
        # s <- 2 s + 1 five times from 0; y = x + s[0] with the state before the run.
        np.testing.assert_array_equal(final, np.full((2, 4), 31, np.float32))
        np.testing.assert_allclose(got[2], stateful_reference(windows[2],
                                                              np.full((2, 4), 3, np.float32))[0])

    def test_state_written_into_one_buffer(self):
        windows = self.windows()
        want, final = self.plain(windows)
        buffer = np.zeros((2, 4), np.float32)
        y_buffer = np.zeros((2, 4), np.float32)
        binding = self.sess.io_binding()
        binding.bind_cpu_input("sr", self.sr)
        binding.bind_input("state", "cpu", 0, np.float32, [2, 4], buffer)
        binding.bind_output("stateN", "cpu", 0, np.float32, [2, 4], buffer)
        binding.bind_ortvalue_output("y", idem.OrtValue.ortvalue_from_numpy(y_buffer))
        for x, w in zip(windows, want):
            binding.bind_cpu_input("x", x)
            self.sess.run_with_iobinding(binding)
            np.testing.assert_array_equal(y_buffer, w)
            copies = binding.copy_outputs_to_cpu()
            self.assertFalse(np.shares_memory(copies[0], buffer))
            copies[0][...] = 0  # writable copies
        np.testing.assert_array_equal(buffer, final)
        self.assertTrue(np.shares_memory(binding.get_outputs()[0].numpy(), buffer))

    def test_raw_bytes_buffer(self):
        raw = bytearray(2 * 4 * 4)
        binding = self.sess.io_binding()
        binding.bind_cpu_input("x", np.ones((2, 4), np.float32))
        binding.bind_cpu_input("sr", self.sr)
        binding.bind_input("state", "cpu", 0, np.float32, [2, 4], raw)
        binding.bind_output("stateN", "cpu", 0, np.float32, [2, 4], raw)
        self.sess.run_with_iobinding(binding)
        np.testing.assert_array_equal(np.frombuffer(raw, np.float32), np.ones(8, np.float32))

    def test_binding_mistakes(self):
        binding = self.sess.io_binding()
        with self.assertRaises(idem.InvalidArgument) as cm:
            binding.bind_cpu_input("nope", np.zeros(1, np.float32))
        self.assertIn("Invalid input name: nope", str(cm.exception))
        with self.assertRaises(idem.InvalidArgument):
            binding.bind_output("nope")
        with self.assertRaises(idem.InvalidArgument) as cm:  # raw addresses are not taken
            binding.bind_input("state", "cpu", 0, np.float32, [2, 4], 140000000)
        self.assertIn("raw address", str(cm.exception))
        with self.assertRaises(idem.InvalidArgument):  # too small for the shape
            binding.bind_input("state", "cpu", 0, np.float32, [2, 4], np.zeros(7, np.float32))
        with self.assertRaises(idem.InvalidArgument):
            binding.bind_output("y", "cuda", 0)
        with self.assertRaises(idem.InvalidArgument):
            idem.InferenceSession(stateful_model()).run_with_iobinding(binding)
        # A preallocated output of the wrong shape: refused after the run, nothing written.
        binding.bind_cpu_input("x", np.ones((3, 4), np.float32))
        binding.bind_cpu_input("state", np.zeros((2, 4), np.float32))
        binding.bind_cpu_input("sr", self.sr)
        y_buffer = np.full((2, 4), 5, np.float32)
        binding.bind_output("y", "cpu", 0, np.float32, [2, 4], y_buffer)
        with self.assertRaises(idem.InvalidArgument) as cm:
            self.sess.run_with_iobinding(binding)
        self.assertIn("output 'y'", str(cm.exception))
        self.assertTrue((y_buffer == 5).all())
        binding.clear_binding_outputs()
        self.sess.run_with_iobinding(binding)
        self.assertEqual(binding.get_outputs(), [])
        binding.clear_binding_inputs()
        binding.bind_output("y")
        with self.assertRaises(idem.Error):  # inputs cleared: 'x' is missing
            self.sess.run_with_iobinding(binding)


if __name__ == "__main__":
    unittest.main()
