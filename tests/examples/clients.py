"""Client code shaped exactly like the Python projects that run these models on onnxruntime, for
tests/examples/clients_test.py, which loads this file once with ``onnxruntime`` bound to idem (what
``import idem as onnxruntime`` does) and once bound to ONNX Runtime 1.30 (tests/examples/ort_shim),
and compares. The onnxruntime calls, their arguments and the way results are used are the clients';
only torch (for silero-vad's tensors) is replaced by numpy, and random seeds are fixed.

- ``OnnxWrapper``: silero-vad's (src/silero_vad/utils_vad.py, v5 models): SessionOptions with one
  inter-op and one intra-op thread, ``get_available_providers()``, ``InferenceSession(path,
  providers=['CPUExecutionProvider'], sess_options=opts)`` or ``InferenceSession(path,
  sess_options=opts)``, ``run(None, {'input', 'state', 'sr': np.array(sr, dtype='int64')})``,
  ``out, state = ort_outs``, batches of any size.
- ``VAD``: openWakeWord's (openwakeword/vad.py, the v4 model): ``import onnxruntime as ort`` at the
  top, ``sr`` as ``np.array(16000)``, ``out, self._h, self._c = ort_outs``.
- ``AudioFeatures`` and ``WakeWordModel``: openWakeWord's (openwakeword/utils.py, model.py):
  ``get_providers()[0]``, ``get_inputs()[0].shape[1]``, ``get_outputs()[0].shape[1]``,
  ``get_inputs()[0].name``, batched melspectrograms and embeddings.
"""
import collections

import numpy as np
import onnxruntime as ort  # noqa: E402 - bound by the test to idem or to ONNX Runtime


class OnnxWrapper():

    def __init__(self, path, force_onnx_cpu=False):
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1

        if force_onnx_cpu and 'CPUExecutionProvider' in onnxruntime.get_available_providers():
            self.session = onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'],
                                                        sess_options=opts)
        else:
            self.session = onnxruntime.InferenceSession(path, sess_options=opts)

        self.reset_states()
        if '16k' in path:
            self.sample_rates = [16000]
        else:
            self.sample_rates = [8000, 16000]

    def _validate_input(self, x, sr: int):
        if x.ndim == 1:
            x = x[None]
        if x.ndim > 2:
            raise ValueError(f"Too many dimensions for input audio chunk {x.ndim}")
        if sr not in self.sample_rates:
            raise ValueError(f"Supported sampling rates: {self.sample_rates}")
        return x, sr

    def reset_states(self, batch_size=1):
        self._state = np.zeros((2, batch_size, 128), np.float32)
        self._context = np.zeros(0, np.float32)
        self._last_sr = 0
        self._last_batch_size = 0

    def __call__(self, x, sr: int):
        x, sr = self._validate_input(x, sr)
        num_samples = 512 if sr == 16000 else 256
        if x.shape[-1] != num_samples:
            raise ValueError(f"Provided number of samples is {x.shape[-1]}")
        batch_size = x.shape[0]
        context_size = 64 if sr == 16000 else 32

        if not self._last_batch_size:
            self.reset_states(batch_size)
        if (self._last_sr) and (self._last_sr != sr):
            self.reset_states(batch_size)
        if (self._last_batch_size) and (self._last_batch_size != batch_size):
            self.reset_states(batch_size)

        if not len(self._context):
            self._context = np.zeros((batch_size, context_size), np.float32)

        x = np.concatenate([self._context, x], axis=1)
        if sr in [8000, 16000]:
            ort_inputs = {'input': x, 'state': self._state, 'sr': np.array(sr, dtype='int64')}
            ort_outs = self.session.run(None, ort_inputs)
            out, state = ort_outs
            self._state = state
        else:
            raise ValueError()

        self._context = x[..., -context_size:]
        self._last_sr = sr
        self._last_batch_size = batch_size
        return out

    def audio_forward(self, x, sr: int):
        outs = []
        x, sr = self._validate_input(x, sr)
        self.reset_states()
        num_samples = 512 if sr == 16000 else 256
        if x.shape[1] % num_samples:
            pad_num = num_samples - (x.shape[1] % num_samples)
            x = np.pad(x, ((0, 0), (0, pad_num)))
        for i in range(0, x.shape[1], num_samples):
            outs.append(self.__call__(x[:, i:i + num_samples], sr))
        return np.concatenate(outs, axis=1)


class VAD():
    def __init__(self, model_path):
        sessionOptions = ort.SessionOptions()
        sessionOptions.inter_op_num_threads = 1
        sessionOptions.intra_op_num_threads = 1
        self.model = ort.InferenceSession(model_path, sess_options=sessionOptions,
                                          providers=["CPUExecutionProvider"])
        self.prediction_buffer = collections.deque(maxlen=125)
        self.sample_rate = np.array(16000)
        self.reset_states()

    def reset_states(self, batch_size=1):
        self._h = np.zeros((2, batch_size, 64)).astype('float32')
        self._c = np.zeros((2, batch_size, 64)).astype('float32')
        self._last_sr = 0
        self._last_batch_size = 0

    def predict(self, x, frame_size=480):
        chunks = [(x[i:i + frame_size] / 32767).astype(np.float32)
                  for i in range(0, x.shape[0], frame_size)]
        frame_predictions = []
        for chunk in chunks:
            ort_inputs = {'input': chunk[None, ],
                          'h': self._h, 'c': self._c, 'sr': self.sample_rate}
            ort_outs = self.model.run(None, ort_inputs)
            out, self._h, self._c = ort_outs
            frame_predictions.append(out[0][0])
        return np.mean(frame_predictions)

    def __call__(self, x, frame_size=160 * 4):
        self.prediction_buffer.append(self.predict(x, frame_size))


class AudioFeatures():
    def __init__(self, melspec_model_path, embedding_model_path, sr=16000, ncpu=1):
        sessionOptions = ort.SessionOptions()
        sessionOptions.inter_op_num_threads = ncpu
        sessionOptions.intra_op_num_threads = ncpu

        self.melspec_model = ort.InferenceSession(melspec_model_path, sess_options=sessionOptions,
                                                  providers=["CPUExecutionProvider"])
        self.onnx_execution_provider = self.melspec_model.get_providers()[0]
        self.melspec_model_predict = lambda x: self.melspec_model.run(None, {'input': x})

        self.embedding_model = ort.InferenceSession(embedding_model_path,
                                                    sess_options=sessionOptions,
                                                    providers=["CPUExecutionProvider"])
        self.embedding_model_predict = lambda x: self.embedding_model.run(
            None, {'input_1': x})[0].squeeze()

        self.raw_data_buffer = collections.deque(maxlen=sr * 10)
        self.melspectrogram_buffer = np.ones((76, 32))
        self.melspectrogram_max_len = 10 * 97
        self.accumulated_samples = 0
        self.raw_data_remainder = np.empty(0)
        rng = np.random.default_rng(0)
        self.feature_buffer = self._get_embeddings(
            rng.integers(-1000, 1000, 16000 * 4).astype(np.int16))
        self.feature_buffer_max_len = 120

    def _get_melspectrogram(self, x, melspec_transform=lambda x: x / 10 + 2):
        x = np.array(x).astype(np.int16) if isinstance(x, list) else x
        if x.dtype != np.int16:
            raise ValueError("Input data must be 16-bit integers (i.e., 16-bit PCM audio).")
        x = x[None, ] if len(x.shape) < 2 else x
        x = x.astype(np.float32) if x.dtype != np.float32 else x
        outputs = self.melspec_model_predict(x)
        spec = np.squeeze(outputs[0])
        return melspec_transform(spec)

    def _get_embeddings(self, x, window_size=76, step_size=8):
        spec = self._get_melspectrogram(x)
        windows = []
        for i in range(0, spec.shape[0], 8):
            window = spec[i:i + window_size]
            if window.shape[0] == window_size:
                windows.append(window)
        batch = np.expand_dims(np.array(windows), axis=-1).astype(np.float32)
        return self.embedding_model_predict(batch)

    def _get_melspectrogram_batch(self, x):
        # The CPU path in openWakeWord maps clips over a thread pool; the batch of clips in one
        # run is its CUDA path. Both shapes are fed here.
        assert "CPU" in self.onnx_execution_provider
        per_clip = np.array([self._get_melspectrogram(clip) for clip in x])
        together = np.squeeze(self.melspec_model_predict(x.astype(np.float32))[0]) / 10 + 2
        return per_clip, together

    def _streaming_melspectrogram(self, n_samples):
        self.melspectrogram_buffer = np.vstack(
            (self.melspectrogram_buffer,
             self._get_melspectrogram(list(self.raw_data_buffer)[-n_samples - 160 * 3:])))
        if self.melspectrogram_buffer.shape[0] > self.melspectrogram_max_len:
            self.melspectrogram_buffer = self.melspectrogram_buffer[-self.melspectrogram_max_len:, :]

    def __call__(self, x):
        self.raw_data_buffer.extend(x.tolist())
        self.accumulated_samples += x.shape[0]
        if self.accumulated_samples >= 1280 and self.accumulated_samples % 1280 == 0:
            self._streaming_melspectrogram(self.accumulated_samples)
            for i in np.arange(self.accumulated_samples // 1280 - 1, -1, -1):
                ndx = -8 * i
                ndx = ndx if ndx != 0 else len(self.melspectrogram_buffer)
                x = self.melspectrogram_buffer[-76 + ndx:ndx].astype(np.float32)[None, :, :, None]
                if x.shape[1] == 76:
                    self.feature_buffer = np.vstack((self.feature_buffer,
                                                     self.embedding_model_predict(x)))
            self.accumulated_samples = 0
        if self.feature_buffer.shape[0] > self.feature_buffer_max_len:
            self.feature_buffer = self.feature_buffer[-self.feature_buffer_max_len:, :]

    def get_features(self, n_feature_frames=16):
        return self.feature_buffer[int(-1 * n_feature_frames):, :][None, ].astype(np.float32)


class WakeWordModel():
    def __init__(self, wakeword_models, melspec_model_path, embedding_model_path):
        self.models, self.model_inputs, self.model_outputs = {}, {}, {}
        self.model_prediction_function = {}
        for mdl_path, mdl_name in wakeword_models:
            sessionOptions = ort.SessionOptions()
            sessionOptions.inter_op_num_threads = 1
            sessionOptions.intra_op_num_threads = 1
            self.models[mdl_name] = ort.InferenceSession(mdl_path, sess_options=sessionOptions,
                                                         providers=["CPUExecutionProvider"])
            self.model_inputs[mdl_name] = self.models[mdl_name].get_inputs()[0].shape[1]
            self.model_outputs[mdl_name] = self.models[mdl_name].get_outputs()[0].shape[1]
            self.model_prediction_function[mdl_name] = (
                lambda x, mdl_name=mdl_name: self.models[mdl_name].run(
                    None, {self.models[mdl_name].get_inputs()[0].name: x}))
        self.prediction_buffer = collections.defaultdict(
            lambda: collections.deque(maxlen=30))
        self.preprocessor = AudioFeatures(melspec_model_path, embedding_model_path)

    def predict(self, x):
        self.preprocessor(x)
        predictions = {}
        for mdl in self.models.keys():
            prediction = self.model_prediction_function[mdl](
                self.preprocessor.get_features(self.model_inputs[mdl]))
            if self.model_outputs[mdl] == 1:
                predictions[mdl] = prediction[0][0][0]
            else:
                for int_label in range(1, self.model_outputs[mdl]):
                    predictions[f"{mdl}_{int_label}"] = prediction[0][0][int_label]
            for cls in predictions.keys():
                if len(self.prediction_buffer[cls]) < 5:
                    predictions[cls] = 0.0
                self.prediction_buffer[cls].append(predictions[cls])
        return predictions
