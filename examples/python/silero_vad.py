#!/usr/bin/env python3
"""Speech timestamps from a WAV file with Silero VAD, through onnxruntime's Python API.

Written the way silero-vad's own ONNX path drives the model (its ``OnnxWrapper`` and
``get_speech_timestamps``), with numpy where it uses torch: one session with one intra-op and one
inter-op thread, the audio cut into 512-sample windows at 16 kHz (256 at 8 kHz), each run fed the
window with the previous window's last 64 (32) samples before it, the state the last run returned,
and ``sr`` as a 0-d int64 array; then the speech probabilities turned into segments (threshold,
250 ms shortest speech, 100 ms shortest silence, 30 ms of padding). The v4 model (``h``/``c``
state, no context) and the model without an ``sr`` input are driven the same way.

  /usr/bin/python3 examples/python/silero_vad.py MODEL.onnx AUDIO.wav [--threshold 0.5]
      [--json] [--probs] [--runtime MODULE]

AUDIO.wav: mono PCM16 or float32 at 8 or 16 kHz (or a multiple of 16 kHz, taken every n-th
sample as silero-vad does). Prints one line per speech segment, "start-end" in seconds; --json
prints {"sampling_rate", "speeches": [{"start", "end"} in samples]} (and "probs" with --probs).

--runtime names the module with onnxruntime's API to run on: ``idem`` (the default; build idem's
Python package and put it on PYTHONPATH) or ``onnxruntime``.
"""
import argparse
import importlib
import json
import struct
import sys

import numpy as np


# ---- WAV ------------------------------------------------------------------------------------------

def read_wav(path):
    """(sampling rate, float32 samples in [-1, 1]) of a mono PCM16 or float32 RIFF/WAVE file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError(f"{path}: not a RIFF/WAVE file")
    fmt = None
    at = 12
    while at + 8 <= len(data):
        chunk, size = data[at:at + 4], struct.unpack_from("<I", data, at + 4)[0]
        body = data[at + 8:at + 8 + size]
        if chunk == b"fmt ":
            tag, channels, rate = struct.unpack_from("<HHI", body)
            bits = struct.unpack_from("<H", body, 14)[0]
            if tag == 0xFFFE and size >= 26:  # WAVE_FORMAT_EXTENSIBLE: the subformat's tag
                tag = struct.unpack_from("<H", body, 24)[0]
            fmt = (tag, channels, rate, bits)
        elif chunk == b"data":
            if fmt is None:
                raise ValueError(f"{path}: data before fmt")
            tag, channels, rate, bits = fmt
            if channels != 1:
                raise ValueError(f"{path}: {channels} channels; mono expected")
            if (tag, bits) == (1, 16):
                samples = np.frombuffer(body[:len(body) // 2 * 2], "<i2").astype(np.float32)
                return rate, samples / np.float32(32768.0)
            if (tag, bits) == (3, 32):
                return rate, np.frombuffer(body[:len(body) // 4 * 4], "<f4").astype(np.float32)
            raise ValueError(f"{path}: format {tag}/{bits} bits; PCM16 or float32 expected")
        at += 8 + size + (size & 1)
    raise ValueError(f"{path}: no data chunk")


# ---- The model, as silero-vad's OnnxWrapper drives it ---------------------------------------------

class OnnxWrapper:
    def __init__(self, path, onnxruntime, force_onnx_cpu=True):
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        if force_onnx_cpu and "CPUExecutionProvider" in onnxruntime.get_available_providers():
            self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"],
                                                        sess_options=opts)
        else:
            self.session = onnxruntime.InferenceSession(path, sess_options=opts)
        names = [i.name for i in self.session.get_inputs()]
        self.legacy = "h" in names  # v4: h and c, no context
        self.takes_sr = "sr" in names
        self.reset_states()

    def reset_states(self, batch_size=1):
        if self.legacy:
            self._h = np.zeros((2, batch_size, 64), np.float32)
            self._c = np.zeros((2, batch_size, 64), np.float32)
        else:
            self._state = np.zeros((2, batch_size, 128), np.float32)
        self._context = np.zeros((batch_size, 0), np.float32)
        self._last_sr = 0

    def __call__(self, x, sr):
        """The speech probability of one window (x: [batch, 512] at 16 kHz, [batch, 256] at 8)."""
        num_samples = 512 if sr == 16000 else 256
        if x.shape[-1] != num_samples:
            raise ValueError(f"got {x.shape[-1]} samples; {num_samples} expected at {sr} Hz")
        if self._last_sr and self._last_sr != sr:
            self.reset_states(x.shape[0])
        feeds = {}
        if self.legacy:
            feeds.update(input=x, h=self._h, c=self._c)
        else:
            context_size = 64 if sr == 16000 else 32
            if not self._context.shape[1]:
                self._context = np.zeros((x.shape[0], context_size), np.float32)
            x = np.concatenate([self._context, x], axis=1)
            feeds.update(input=x, state=self._state)
        if self.takes_sr:
            feeds["sr"] = np.array(sr, dtype="int64")
        outs = self.session.run(None, feeds)
        if self.legacy:
            out, self._h, self._c = outs
        else:
            out, self._state = outs
            self._context = x[..., -context_size:]
        self._last_sr = sr
        return out


# ---- From probabilities to segments (silero-vad's get_speech_timestamps) ----------------------------

def speech_probabilities(audio, model, sampling_rate):
    window = 512 if sampling_rate == 16000 else 256
    model.reset_states()
    probs = []
    for start in range(0, len(audio), window):
        chunk = audio[start:start + window]
        if len(chunk) < window:
            chunk = np.pad(chunk, (0, window - len(chunk)))
        probs.append(float(model(chunk[None].astype(np.float32), sampling_rate).reshape(-1)[0]))
    return probs


def speech_timestamps(probs, audio_length, sampling_rate, threshold=0.5,
                      min_speech_duration_ms=250, min_silence_duration_ms=100, speech_pad_ms=30):
    """Segments [{"start", "end"}] in samples, as get_speech_timestamps computes them with its
    defaults (no longest-segment limit)."""
    window = 512 if sampling_rate == 16000 else 256
    min_speech = sampling_rate * min_speech_duration_ms / 1000
    min_silence = sampling_rate * min_silence_duration_ms / 1000
    pad = sampling_rate * speech_pad_ms / 1000
    neg_threshold = max(threshold - 0.15, 0.01)
    speeches, current, triggered, temp_end = [], {}, False, 0
    for i, p in enumerate(probs):
        if p >= threshold and temp_end:
            temp_end = 0
        if p >= threshold and not triggered:
            triggered = True
            current["start"] = window * i
            continue
        if p < neg_threshold and triggered:
            if not temp_end:
                temp_end = window * i
            if window * i - temp_end < min_silence:
                continue
            current["end"] = temp_end
            if current["end"] - current["start"] > min_speech:
                speeches.append(current)
            current, triggered, temp_end = {}, False, 0
    if current and audio_length - current["start"] > min_speech:
        current["end"] = audio_length
        speeches.append(current)
    for i, s in enumerate(speeches):
        if i == 0:
            s["start"] = int(max(0, s["start"] - pad))
        if i != len(speeches) - 1:
            gap = speeches[i + 1]["start"] - s["end"]
            if gap < 2 * pad:
                s["end"] += int(gap // 2)
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - gap // 2))
            else:
                s["end"] = int(min(audio_length, s["end"] + pad))
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - pad))
        else:
            s["end"] = int(min(audio_length, s["end"] + pad))
    return speeches


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("audio")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--probs", action="store_true", help="with --json: each window's prob")
    parser.add_argument("--runtime", default="idem", help="module with onnxruntime's API")
    args = parser.parse_args()
    onnxruntime = importlib.import_module(args.runtime)

    rate, audio = read_wav(args.audio)
    step = 1
    if rate > 16000 and rate % 16000 == 0:
        step, rate = rate // 16000, 16000
        audio = audio[::step]
    if rate not in (8000, 16000):
        sys.exit(f"{args.audio}: {rate} Hz; Silero VAD takes 8000 or 16000 (or a multiple)")
    model = OnnxWrapper(args.model, onnxruntime)
    probs = speech_probabilities(audio, model, rate)
    speeches = speech_timestamps(probs, len(audio), rate, args.threshold)
    if args.json:
        out = {"sampling_rate": rate * step,
               "speeches": [{"start": s["start"] * step, "end": s["end"] * step}
                            for s in speeches]}
        if args.probs:
            out["probs"] = probs
        print(json.dumps(out))
    else:
        for s in speeches:
            print(f"{s['start'] / rate:.3f}-{s['end'] / rate:.3f}")


if __name__ == "__main__":
    main()
