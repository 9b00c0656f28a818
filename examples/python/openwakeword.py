#!/usr/bin/env python3
"""Wake-word detection on a WAV file with openWakeWord's ONNX models, through onnxruntime's API.

Written the way openWakeWord's own Python code drives them (its ``AudioFeatures`` and ``Model``):
16-bit audio fed in frames of 1280 samples (80 ms); for each frame the melspectrogram model runs
on the frame and the 480 samples before it (as float32 int16 values, [1, 1760] -> 8 mel frames),
its output transformed by x/10 + 2; the embedding model runs on the last 76 mel frames ([1, 76,
32, 1] -> 96 values; the first embeddings come from 4 s of noise, in windows of 76 frames with a
step of 8, as AudioFeatures seeds its buffer); each wake-word head runs on its last N embeddings
([1, N, 96], N read from ``get_inputs()[0].shape[1]``), its score zeroed for the first 5 frames.
Sessions are made as openWakeWord makes them: ``SessionOptions`` with one inter-op and one
intra-op thread, ``providers=["CPUExecutionProvider"]``.

  /usr/bin/python3 examples/python/openwakeword.py --melspectrogram MEL.onnx \\
      --embedding EMB.onnx HEAD.onnx [HEAD.onnx ...] --audio AUDIO.wav [--threshold 0.5]
      [--json] [--runtime MODULE]

AUDIO.wav: mono 16-bit PCM at 16 kHz (padded with 1 s of silence at each end, as
``Model.predict_clip`` does). Prints each detection ("NAME at T s, score S": a run of frames
scoring at least the threshold, its time the first frame's end), or with --json every model's
frame scores and detections. --runtime: ``idem`` (default) or ``onnxruntime``.
"""
import argparse
import collections
import importlib
import json
import os
import wave

import numpy as np

FRAME = 1280  # samples per prediction (80 ms at 16 kHz)


class AudioFeatures:
    """Melspectrogram -> embedding, streaming (openWakeWord's AudioFeatures)."""

    def __init__(self, melspec_model_path, embedding_model_path, ort, sr=16000, ncpu=1, seed=0):
        sessionOptions = ort.SessionOptions()
        sessionOptions.inter_op_num_threads = ncpu
        sessionOptions.intra_op_num_threads = ncpu
        self.melspec_model = ort.InferenceSession(melspec_model_path, sess_options=sessionOptions,
                                                  providers=["CPUExecutionProvider"])
        self.onnx_execution_provider = self.melspec_model.get_providers()[0]
        self.melspec_model_predict = lambda x: self.melspec_model.run(None, {"input": x})
        self.embedding_model = ort.InferenceSession(embedding_model_path,
                                                    sess_options=sessionOptions,
                                                    providers=["CPUExecutionProvider"])
        self.embedding_model_predict = lambda x: self.embedding_model.run(
            None, {"input_1": x})[0].squeeze()

        self.raw_data_buffer = collections.deque(maxlen=sr * 10)
        self.melspectrogram_buffer = np.ones((76, 32))  # frames x mel bins
        self.melspectrogram_max_len = 10 * 97  # 10 s of frames
        self.accumulated_samples = 0
        # openWakeWord seeds its embeddings with random noise; seeded here, so runs repeat.
        noise = np.random.default_rng(seed).integers(-1000, 1000, 16000 * 4).astype(np.int16)
        self.feature_buffer = self._get_embeddings(noise)
        self.feature_buffer_max_len = 120  # ~10 s of embeddings

    def _get_melspectrogram(self, x):
        x = np.asarray(x, dtype=np.int16)
        x = x[None] if x.ndim < 2 else x
        spec = np.squeeze(self.melspec_model_predict(x.astype(np.float32))[0])
        return spec / 10 + 2  # the transform that matches Google's speech_embedding front end

    def _get_embeddings(self, x, window_size=76, step_size=8):
        spec = self._get_melspectrogram(x)
        windows = [spec[i:i + window_size] for i in range(0, spec.shape[0], step_size)
                   if spec[i:i + window_size].shape[0] == window_size]
        batch = np.expand_dims(np.array(windows), axis=-1).astype(np.float32)
        return self.embedding_model_predict(batch)

    def __call__(self, x):
        """Adds one frame of 1280 samples: 8 mel frames and one embedding."""
        if len(x) != FRAME:
            raise ValueError(f"frames are {FRAME} samples, got {len(x)}")
        self.raw_data_buffer.extend(x.tolist())
        self.accumulated_samples += len(x)
        samples = list(self.raw_data_buffer)[-self.accumulated_samples - 160 * 3:]
        self.melspectrogram_buffer = np.vstack((self.melspectrogram_buffer,
                                                self._get_melspectrogram(samples)))
        self.melspectrogram_buffer = self.melspectrogram_buffer[-self.melspectrogram_max_len:]
        window = self.melspectrogram_buffer[-76:].astype(np.float32)[None, :, :, None]
        self.feature_buffer = np.vstack((self.feature_buffer, self.embedding_model_predict(window)))
        self.feature_buffer = self.feature_buffer[-self.feature_buffer_max_len:]
        self.accumulated_samples = 0

    def get_features(self, n_feature_frames=16):
        return self.feature_buffer[-n_feature_frames:][None].astype(np.float32)


class Model:
    """Wake-word heads over shared features (openWakeWord's Model)."""

    def __init__(self, wakeword_models, melspec_model_path, embedding_model_path, ort):
        self.models, self.model_inputs, self.model_outputs = {}, {}, {}
        self.model_prediction_function, self.class_mapping = {}, {}
        for mdl_path in wakeword_models:
            mdl_name = os.path.splitext(os.path.basename(mdl_path))[0]
            sessionOptions = ort.SessionOptions()
            sessionOptions.inter_op_num_threads = 1
            sessionOptions.intra_op_num_threads = 1
            session = ort.InferenceSession(mdl_path, sess_options=sessionOptions,
                                           providers=["CPUExecutionProvider"])
            self.models[mdl_name] = session
            self.model_inputs[mdl_name] = session.get_inputs()[0].shape[1]
            self.model_outputs[mdl_name] = session.get_outputs()[0].shape[1]
            input_name = session.get_inputs()[0].name
            self.model_prediction_function[mdl_name] = (
                lambda x, s=session, n=input_name: s.run(None, {n: x}))
            self.class_mapping[mdl_name] = self._classes(session, self.model_outputs[mdl_name])
        self.prediction_buffer = collections.defaultdict(
            lambda: collections.deque(maxlen=30))
        self.preprocessor = AudioFeatures(melspec_model_path, embedding_model_path, ort)

    @staticmethod
    def _classes(session, outputs):
        # A multi-class head (timer) names its classes in its output's name, as JSON; class 0
        # ("none") is not reported, as in openWakeWord's class mappings.
        if outputs == 1:
            return None
        try:
            mapping = json.loads(session.get_outputs()[0].name)
        except ValueError:
            mapping = {str(i): str(i) for i in range(1, outputs)}
        return mapping

    def predict(self, x):
        """Scores of every model (or class) for one 1280-sample frame of int16 audio."""
        self.preprocessor(x)
        predictions = {}
        for mdl in self.models:
            prediction = self.model_prediction_function[mdl](
                self.preprocessor.get_features(self.model_inputs[mdl]))
            if self.class_mapping[mdl] is None:
                predictions[mdl] = float(prediction[0][0][0])
            else:
                for index, cls in self.class_mapping[mdl].items():
                    predictions[cls] = float(prediction[0][0][int(index)])
        for cls in predictions:
            if len(self.prediction_buffer[cls]) < 5:
                predictions[cls] = 0.0
            self.prediction_buffer[cls].append(predictions[cls])
        return predictions

    def predict_clip(self, clip, padding=1, chunk_size=FRAME):
        with wave.open(clip, mode="rb") as f:
            if (f.getnchannels(), f.getsampwidth(), f.getframerate()) != (1, 2, 16000):
                raise ValueError(f"{clip}: mono 16-bit PCM at 16 kHz expected")
            data = np.frombuffer(f.readframes(f.getnframes()), dtype=np.int16)
        if padding:
            silence = np.zeros(16000 * padding, np.int16)
            data = np.concatenate((silence, data, silence))
        return [self.predict(data[i:i + chunk_size])
                for i in range(0, data.shape[0] - chunk_size, chunk_size)]


def detections(scores, threshold):
    """Runs of frames scoring >= threshold: [(first frame, last frame, peak score)]."""
    runs, start = [], None
    for k, s in enumerate(scores + [float("-inf")]):
        if s >= threshold and start is None:
            start = k
        elif s < threshold and start is not None:
            runs.append((start, k - 1, max(scores[start:k])))
            start = None
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("heads", nargs="+", help="wake-word models (.onnx)")
    parser.add_argument("--melspectrogram", required=True)
    parser.add_argument("--embedding", required=True)
    parser.add_argument("--audio", required=True)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runtime", default="idem", help="module with onnxruntime's API")
    args = parser.parse_args()
    ort = importlib.import_module(args.runtime)

    model = Model(args.heads, args.melspectrogram, args.embedding, ort)
    frames = model.predict_clip(args.audio)
    names = list(frames[0]) if frames else []
    scores = {n: [f[n] for f in frames] for n in names}
    found = {n: detections(scores[n], args.threshold) for n in names}
    if args.json:
        print(json.dumps({"frame_seconds": FRAME / 16000, "scores": scores,
                          "detections": {n: [list(r) for r in runs]
                                         for n, runs in found.items()}}))
        return
    for n in names:
        for first, _, peak in found[n]:
            # The frame's end, in the padded clip's time (predict_clip adds 1 s before).
            print(f"{n} at {(first + 1) * FRAME / 16000 - 1:.2f} s, score {peak:.3f}")


if __name__ == "__main__":
    main()
