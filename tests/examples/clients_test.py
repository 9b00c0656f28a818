#!/usr/bin/python3
"""Real clients' code on idem: tests/examples/clients.py (silero-vad's OnnxWrapper, openWakeWord's
VAD, AudioFeatures and Model, as their projects write them) run with ``onnxruntime`` bound to idem
-- what ``import idem as onnxruntime`` does -- and with it bound to ONNX Runtime 1.30
(tests/examples/ort_shim), on the real models; results must agree. Also: the 20 models' inputs and
outputs exactly as ONNX Runtime reports them, the window size a client reads from ONNX Runtime's
error text, and Silero's state carried through an IOBinding.

Environment: IDEM_MODEL_CACHE (the models, scripts/fetch_models.sh), IDEM_ORT_NODE_MODULES
(onnxruntime-node 1.30), PYTHONPATH with idem's package. Exit 77 (skipped) when the models or
ONNX Runtime are missing, unless CI=true.
"""
import importlib
import importlib.util
import os
import re
import shutil
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("IDEM_MODEL_CACHE", "")
NODE_MODULES = os.environ.get("IDEM_ORT_NODE_MODULES", "")
ATOL = 2e-3

import idem  # noqa: E402 - the package under test (PYTHONPATH)


def model(name):
    return os.path.join(CACHE, name + ".onnx")


def manifest():
    with open(os.path.join(ROOT, "tests", "models", "models.tsv")) as f:
        return [line.split("\t")[0] for line in f if line.strip() and not line.startswith("#")]


def ort_shim():
    """ONNX Runtime's ``onnxruntime`` stand-in, imported under its own name."""
    spec = importlib.util.spec_from_file_location(
        "ort_shim_onnxruntime", os.path.join(HERE, "ort_shim", "onnxruntime", "__init__.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ORT = None


class Runtime:
    """Binds ``onnxruntime`` to `module` (idem or ONNX Runtime) and loads a fresh copy of
    tests/examples/clients.py against it: ``import idem as onnxruntime``, for a whole file."""

    def __init__(self, module):
        self.module = module

    def __enter__(self):
        self.saved = sys.modules.get("onnxruntime")
        sys.modules["onnxruntime"] = self.module
        spec = importlib.util.spec_from_file_location("clients_" + self.module.__name__,
                                                      os.path.join(HERE, "clients.py"))
        clients = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(clients)
        return clients

    def __exit__(self, *exc):
        if self.saved is None:
            sys.modules.pop("onnxruntime", None)
        else:
            sys.modules["onnxruntime"] = self.saved


def both(make):
    """make(clients) run on idem, then on ONNX Runtime."""
    results = []
    for module in (idem, ORT):
        with Runtime(module) as clients:
            results.append(make(clients))
    return results


def audio(seconds, seed=3):
    """Deterministic speech-like audio in [-1, 1]: bursts of harmonics with pauses, over noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000.0
    envelope = (np.sin(2 * np.pi * 0.7 * t) > 0.2).astype(np.float64)
    voice = sum(np.sin(2 * np.pi * f * t * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))) / k
                for k, f in enumerate((140, 280, 420, 700, 1100), 1))
    x = 0.3 * envelope * voice / 2 + rng.normal(0, 0.01, t.size)
    return np.clip(x, -1, 1).astype(np.float32)


class MetadataTest(unittest.TestCase):
    def test_inputs_and_outputs_as_onnxruntime_reports_them(self):
        for name in manifest():
            with self.subTest(model=name):
                mine = idem.InferenceSession(model(name))
                theirs = ORT.InferenceSession(model(name))
                for a, b in ((mine.get_inputs(), theirs.get_inputs()),
                             (mine.get_outputs(), theirs.get_outputs())):
                    self.assertEqual([(x.name, x.type, x.shape) for x in a],
                                     [(x.name, x.type, x.shape) for x in b])


class SileroClientsTest(unittest.TestCase):
    def test_onnx_wrapper(self):
        x = audio(6)[None]
        for name in ("silero_vad", "silero_vad_v5", "silero_vad_16k_op15",
                     "silero_vad_op18_ifless"):
            for force_cpu in (True, False):
                with self.subTest(model=name, force_onnx_cpu=force_cpu):
                    got, want = both(lambda c: c.OnnxWrapper(model(name), force_cpu)
                                     .audio_forward(x, 16000))
                    self.assertEqual(got.shape, (1, x.shape[1] // 512 + 1))
                    np.testing.assert_allclose(got, want, atol=ATOL)
                    self.assertGreater(want.max(), 0.5)  # the bursts are heard as speech
                    self.assertLess(want.min(), 0.2)

    def test_onnx_wrapper_batches_and_8k(self):
        x = audio(3)
        batch = np.stack([x, x[::-1].copy()])
        for name in ("silero_vad", "silero_vad_op18_ifless"):
            with self.subTest(model=name):
                got, want = both(lambda c: c.OnnxWrapper(model(name), True)
                                 .audio_forward(batch, 16000))
                np.testing.assert_allclose(got, want, atol=ATOL)
                with Runtime(idem) as c:  # each row as it would run alone
                    alone = c.OnnxWrapper(model(name), True).audio_forward(batch[1:], 16000)
                np.testing.assert_allclose(got[1:], alone, atol=1e-6)
                x8 = x[::2].copy()[None]
                got, want = both(lambda c: c.OnnxWrapper(model(name), True)
                                 .audio_forward(x8, 8000))
                np.testing.assert_allclose(got, want, atol=ATOL)

    def test_openwakeword_vad(self):
        pcm = (audio(4) * 32767).astype(np.int16)

        def run(c):
            vad = c.VAD(model("silero_vad_legacy"))
            for k in range(0, pcm.size - 1280, 1280):
                vad(pcm[k:k + 1280])
            return np.array(vad.prediction_buffer)

        got, want = both(run)
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, atol=ATOL)

    def test_sr_fed_as_a_one_element_array(self):
        # Many clients feed np.array([16000]); ONNX Runtime does not check a scalar's shape.
        x = np.zeros((1, 576), np.float32)
        state = np.zeros((2, 1, 128), np.float32)
        for sr in (np.array(16000, np.int64), np.array([16000], np.int64),
                   np.array([[16000]], np.int64)):
            with self.subTest(sr=sr.shape):
                got = idem.InferenceSession(model("silero_vad")).run(
                    None, {"input": x, "state": state, "sr": sr})
                want = ORT.InferenceSession(model("silero_vad")).run(
                    None, {"input": x, "state": state, "sr": sr})
                np.testing.assert_allclose(got[0], want[0], atol=ATOL)
        with self.assertRaises(idem.InvalidArgument):
            idem.InferenceSession(model("silero_vad")).run(
                None, {"input": x, "state": state, "sr": np.array([16000, 8000])})

    def test_state_in_place_through_an_iobinding(self):
        # The streaming loop with the state kept in the binding: stateN bound without a buffer,
        # then bound back as the next run's state (no copy), against plain run(): the same bits.
        sess = idem.InferenceSession(model("silero_vad"))
        x = audio(2)
        windows = [np.concatenate([np.zeros(64, np.float32), x[:512]])[None]]
        for k in range(512, x.size - 512, 512):
            windows.append(x[k - 64:k + 512][None])
        sr = np.array(16000, np.int64)
        state = np.zeros((2, 1, 128), np.float32)
        plain = []
        for w in windows:
            out, state = sess.run(None, {"input": w, "state": state, "sr": sr})
            plain.append(out.copy())
        binding = sess.io_binding()
        binding.bind_cpu_input("sr", sr)
        binding.bind_ortvalue_input("state", idem.OrtValue.ortvalue_from_numpy(
            np.zeros((2, 1, 128), np.float32)))
        binding.bind_output("output")
        binding.bind_output("stateN")
        bound = []
        for w in windows:
            binding.bind_cpu_input("input", w)
            sess.run_with_iobinding(binding)
            out, state_value = binding.get_outputs()
            binding.bind_ortvalue_input("state", state_value)
            bound.append(out.numpy().copy())
        self.assertEqual([b.tobytes() for b in bound], [p.tobytes() for p in plain])
        # The same with the state written into one caller buffer each run.
        buffer = np.zeros((2, 1, 128), np.float32)
        binding = sess.io_binding()
        binding.bind_cpu_input("sr", sr)
        binding.bind_cpu_input("state", buffer)
        binding.bind_output("stateN", "cpu", 0, np.float32, buffer.shape, buffer)
        binding.bind_output("output")
        into = []
        for w in windows:
            binding.bind_cpu_input("input", w)
            sess.run_with_iobinding(binding)
            into.append(binding.copy_outputs_to_cpu()[1])
        self.assertEqual([b.tobytes() for b in into], [p.tobytes() for p in plain])
        np.testing.assert_array_equal(buffer, state)


class OpenWakeWordClientsTest(unittest.TestCase):
    HEADS = ["hey_jarvis_v0.1", "alexa_v0.1", "timer_v0.1", "hello_deepa"]

    def test_model_and_audio_features(self):
        pcm = (audio(5) * 20000).astype(np.int16)

        def run(c):
            m = c.WakeWordModel([(model(h), h) for h in self.HEADS], model("melspectrogram"),
                                model("embedding_model"))
            shapes = (dict(m.model_inputs), dict(m.model_outputs),
                      m.preprocessor.onnx_execution_provider)
            frames = [m.predict(pcm[k:k + 1280]) for k in range(0, pcm.size - 1280, 1280)]
            scores = {k: np.array([f[k] for f in frames], np.float64) for k in frames[0]}
            return shapes, scores, m.preprocessor.feature_buffer

        (shapes, got, features), (want_shapes, want, want_features) = both(run)
        self.assertEqual(shapes, want_shapes)
        self.assertEqual(shapes[0], {"hey_jarvis_v0.1": 16, "alexa_v0.1": 16, "timer_v0.1": 34,
                                     "hello_deepa": 25})
        self.assertEqual(shapes[1]["timer_v0.1"], 7)
        self.assertEqual(shapes[2], "CPUExecutionProvider")
        self.assertEqual(set(got), set(want))
        for k in want:
            np.testing.assert_allclose(got[k], want[k], atol=ATOL, err_msg=k)
        np.testing.assert_allclose(features, want_features, rtol=1e-3, atol=1e-3)

    def test_batched_melspectrograms(self):
        clips = (np.stack([audio(1, seed=1), audio(1, seed=2)]) * 20000).astype(np.int16)

        def run(c):
            f = c.AudioFeatures(model("melspectrogram"), model("embedding_model"))
            return f._get_melspectrogram_batch(clips)

        (per_clip, together), (want_clip, want_together) = both(run)
        self.assertEqual(together.shape, (2, 97, 32))
        np.testing.assert_allclose(per_clip, want_clip, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(together, want_together, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(together, per_clip, rtol=1e-5, atol=1e-5)

    def test_window_size_from_the_error_text(self):
        # A head fed the wrong number of embeddings: onnxruntime's words, which clients parse.
        x = np.zeros((1, 24, 96), np.float32)
        name = "hey_jarvis_v0.1"
        with self.assertRaises(idem.InvalidArgument) as cm:
            sess = idem.InferenceSession(model(name))
            sess.run(None, {sess.get_inputs()[0].name: x})
        with self.assertRaises(RuntimeError) as theirs:
            sess = ORT.InferenceSession(model(name))
            sess.run(None, {sess.get_inputs()[0].name: x})
        self.assertIn(str(cm.exception), str(theirs.exception))
        self.assertEqual(re.search(r"Got: \d+ Expected: (\d+)", str(cm.exception)).group(1), "16")


def main():
    global ORT
    missing = []
    if not CACHE or not all(os.path.exists(model(n)) for n in manifest()):
        missing.append(f"the models in IDEM_MODEL_CACHE={CACHE!r} (scripts/fetch_models.sh)")
    if not os.path.isdir(os.path.join(NODE_MODULES, "onnxruntime-node")):
        missing.append(f"onnxruntime-node in IDEM_ORT_NODE_MODULES={NODE_MODULES!r}")
    if shutil.which("node") is None:
        missing.append("node")
    if missing:
        if os.environ.get("CI") == "true":
            print("FAIL: cannot run: missing " + ", ".join(missing))
            return 1
        print("SKIP: missing " + ", ".join(missing))
        return 77
    ORT = ort_shim()
    program = unittest.main(exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
