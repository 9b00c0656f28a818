#!/usr/bin/python3
"""The examples (examples/, docs/examples.md) run on idem and on ONNX Runtime 1.30, on inputs made
here, and compared: the same speech segments, wake-word detections and text.

usage: run_examples.py EXAMPLE --cache DIR --node-modules DIR --build DIR [--work DIR] [--cpp EXE]
  EXAMPLE: silero (examples/python/silero_vad.py and examples/cpp/silero_vad.cc), openwakeword
  (examples/python/openwakeword.py) or paddleocr (examples/python/paddleocr.py)

Each Python example runs twice, unchanged: with ``--runtime idem`` (the package built in --build)
and with ``--runtime onnxruntime`` resolved to tests/examples/ort_shim, an ``onnxruntime`` module
over ONNX Runtime 1.30's Node.js build. The C++ example (idem's C++ API) is compared with the
Python one on ONNX Runtime, and with the Python one on idem bit for bit (both run idem). Inputs:
speech from espeak-ng resampled by sox and mixed with silence; text pages from ImageMagick. Besides
agreeing, the results must be right: segments where the speech was put, the wake words that were
spoken, the lines that were drawn.

Exit 77 (ctest: skipped) when the models, ONNX Runtime, node or the input tools are missing, unless
CI=true, where that fails.
"""
import argparse
import difflib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples")
SHIM = os.path.join(HERE, "ort_shim")
LATIN_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
CJK_FONT = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
SILERO = ["silero_vad", "silero_vad_v5", "silero_vad_legacy", "silero_vad_16k_op15",
          "silero_vad_half", "silero_vad_op18_ifless"]
SILERO_8K = ["silero_vad", "silero_vad_v5", "silero_vad_legacy", "silero_vad_op18_ifless"]
WAKE_HEADS = ["hey_jarvis_v0.1", "alexa_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1",
              "timer_v0.1", "weather_v0.1", "hello_deepa", "hello_deepa_old", "namaste_deepa"]
SCORE_ATOL = 2e-3  # per-frame / per-window scores, idem vs ONNX Runtime


class Unavailable(Exception):
    pass


class Failure(Exception):
    pass


def run(cmd, env=None, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def convert_exe():
    # /usr/bin/convert is ImageMagick's; another `convert` may come first on PATH.
    return "/usr/bin/convert" if os.path.exists("/usr/bin/convert") else shutil.which("convert")


class Context:
    def __init__(self, args):
        self.cache = os.path.abspath(args.cache)
        self.build = os.path.abspath(args.build)
        self.node_modules = os.path.abspath(args.node_modules)
        self.work = args.work
        self.cpp = args.cpp

    def model(self, name):
        path = os.path.join(self.cache, name + ".onnx")
        if not os.path.exists(path):
            raise Unavailable(f"{path} is missing (scripts/fetch_models.sh fetches it)")
        return path

    def python(self, script, args, runtime):
        """Runs examples/python/SCRIPT with --runtime RUNTIME; returns its stdout."""
        env = dict(os.environ)
        if runtime == "idem":
            env["PYTHONPATH"] = os.path.join(self.build, "python")
        else:
            env["PYTHONPATH"] = SHIM
            env["IDEM_ORT_NODE_MODULES"] = self.node_modules
        return run([sys.executable, os.path.join(EXAMPLES, "python", script), *args,
                    "--runtime", runtime], env=env)

    def require(self, tools=(), fonts=(), modules=()):
        missing = [t for t in tools if t != "convert" and shutil.which(t) is None]
        if "convert" in tools:
            exe = convert_exe()
            if exe is None or b"ImageMagick" not in subprocess.run(
                    [exe, "-version"], capture_output=True).stdout:
                missing.append("imagemagick")
        missing += [f for f in fonts if not os.path.exists(f)]
        for m in modules:
            if subprocess.run([sys.executable, "-c", f"import {m}"],
                              capture_output=True).returncode:
                missing.append(f"python module {m}")
        if not os.path.isdir(os.path.join(self.node_modules, "onnxruntime-node")):
            missing.append(f"onnxruntime-node in {self.node_modules}")
        if shutil.which("node") is None:
            missing.append("node")
        if missing:
            raise Unavailable("missing " + ", ".join(missing) +
                              " (IDEM_MODELS=1 bash scripts/setup.sh installs them)")


# ---- inputs ---------------------------------------------------------------------------------------

def speech_wav(ctx, phrases, rate, name, gap=1.0):
    """A mono PCM16 WAV at `rate`: silence, phrase, silence, ..., silence. Returns (path,
    [(start, end)] of each phrase in samples)."""
    parts, spans, at = [], [], 0
    silence = os.path.join(ctx.work, f"{name}_silence.wav")
    run(["sox", "-n", "-r", str(rate), "-c", "1", "-b", "16", silence, "trim", "0", str(gap)])
    gap_samples = int(round(gap * rate))
    for k, phrase in enumerate(phrases):
        raw = os.path.join(ctx.work, f"{name}_raw{k}.wav")
        run(["espeak-ng", "-v", "en-us", "-s", "140", "-w", raw, phrase])
        wav = os.path.join(ctx.work, f"{name}_{k}.wav")
        run(["sox", raw, "-r", str(rate), "-c", "1", "-b", "16", wav])
        length = int(run(["soxi", "-s", wav]).strip())
        parts += [silence, wav]
        at += gap_samples
        spans.append((at, at + length))
        at += length
    out = os.path.join(ctx.work, f"{name}.wav")
    run(["sox", *parts, silence, out])
    return out, spans


def text_page(ctx, lines, name, rotate=0):
    """A page with `lines` [(text, font, pointsize)] drawn one under the other."""
    args = ["-size", "800x480", "xc:#f4f1ea", "-fill", "#1a1a1a"]
    y = 70
    for text, font, size in lines:
        args += ["-font", font, "-pointsize", str(size), "-annotate", f"+32+{y}", text]
        y += int(size * 2.4)
    path = os.path.join(ctx.work, f"{name}.png")
    run([convert_exe(), *args, "-rotate", str(rotate), path])
    return path


# ---- the examples ---------------------------------------------------------------------------------

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def close(a, b, atol):
    return len(a) == len(b) and all(abs(x - y) <= atol for x, y in zip(a, b))


def check_segments(where, speeches, spans, rate):
    """Each segment overlaps a phrase, and each phrase is covered by a segment."""
    if not speeches:
        raise Failure(f"{where}: no speech found")
    for s in speeches:
        if not any(s["start"] < e and b < s["end"] for b, e in spans):
            raise Failure(f"{where}: segment {s['start'] / rate:.2f}-{s['end'] / rate:.2f} s lies "
                          f"in silence (speech at {spans})")
    for b, e in spans:
        if not any(s["start"] < e and b < s["end"] for s in speeches):
            raise Failure(f"{where}: the phrase at {b / rate:.2f}-{e / rate:.2f} s was missed")


def example_silero(ctx, log):
    ctx.require(tools=("espeak-ng", "sox", "soxi"))
    cpp = ctx.cpp or os.path.join(ctx.build, "examples", "idem_example_silero_vad")
    if not os.path.exists(cpp):
        raise Failure(f"{cpp} is not built (ninja examples)")
    phrases = ["Voice activity detection finds the speech in a recording.",
               "Then it reports where each part starts and ends."]
    inputs = {rate: speech_wav(ctx, phrases, rate, f"speech{rate // 1000}k")
              for rate in (16000, 8000)}
    for rate in (16000, 8000):
        wav, spans = inputs[rate]
        for name in SILERO if rate == 16000 else SILERO_8K:
            where = f"{name} at {rate // 1000} kHz"
            path = ctx.model(name)
            args = [path, wav, "--json", "--probs"]
            on_idem = json.loads(ctx.python("silero_vad.py", args, "idem"))
            on_ort = json.loads(ctx.python("silero_vad.py", args, "onnxruntime"))
            in_cpp = json.loads(run([cpp, *args]))
            if on_idem["speeches"] != on_ort["speeches"]:
                raise Failure(f"{where}: Python on idem {on_idem['speeches']} != on ONNX Runtime "
                              f"{on_ort['speeches']}")
            if in_cpp["speeches"] != on_ort["speeches"]:
                raise Failure(f"{where}: C++ on idem {in_cpp['speeches']} != Python on ONNX "
                              f"Runtime {on_ort['speeches']}")
            if not close(on_idem["probs"], on_ort["probs"], SCORE_ATOL):
                worst = max(abs(a - b) for a, b in zip(on_idem["probs"], on_ort["probs"]))
                raise Failure(f"{where}: probabilities differ from ONNX Runtime's by {worst:.3g}")
            # Both run idem, with the same feeds: the same bits (the C++ example prints each
            # float32 with 9 significant digits, which round-trips).
            if list(map(f32, in_cpp["probs"])) != list(map(f32, on_idem["probs"])):
                raise Failure(f"{where}: the C++ example's probabilities differ from the Python "
                              "example's on idem")
            check_segments(where, on_ort["speeches"], spans, rate)
            segs = ", ".join(f"{s['start'] / rate:.2f}-{s['end'] / rate:.2f}"
                             for s in on_idem["speeches"])
            log(f"{where:32} same segments (Python on idem and ONNX Runtime, C++): {segs}")


def example_openwakeword(ctx, log):
    ctx.require(tools=("espeak-ng", "sox", "soxi"))
    phrases = ["Hey Jarvis, what is the weather like today?",
               "Alexa, set a timer for five minutes.", "Hey Mycroft, play some music."]
    wav, spans = speech_wav(ctx, phrases, 16000, "wake")
    args = ["--melspectrogram", ctx.model("melspectrogram"),
            "--embedding", ctx.model("embedding_model"),
            *[ctx.model(h) for h in WAKE_HEADS], "--audio", wav, "--json"]
    on_idem = json.loads(ctx.python("openwakeword.py", args, "idem"))
    on_ort = json.loads(ctx.python("openwakeword.py", args, "onnxruntime"))
    if set(on_idem["scores"]) != set(on_ort["scores"]):
        raise Failure(f"models/classes differ: {sorted(on_idem['scores'])} vs "
                      f"{sorted(on_ort['scores'])}")
    for name in on_ort["scores"]:
        a, b = on_idem["scores"][name], on_ort["scores"][name]
        if not close(a, b, SCORE_ATOL):
            worst = max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) else float("inf")
            raise Failure(f"{name}: frame scores differ from ONNX Runtime's by {worst:.3g}")
        d_idem = [r[:2] for r in on_idem["detections"][name]]
        d_ort = [r[:2] for r in on_ort["detections"][name]]
        if d_idem != d_ort:
            raise Failure(f"{name}: detections (frames) on idem {d_idem}, on ONNX Runtime {d_ort}")
    # Right as well as the same: the spoken wake words are found, during their phrase.
    frame = on_ort["frame_seconds"]
    expected = {"hey_jarvis_v0.1": 0, "alexa_v0.1": 1}
    for name, phrase in expected.items():
        b, e = (s / 16000 + 1 for s in spans[phrase])  # predict_clip pads 1 s before
        hits = [r for r in on_ort["detections"][name]
                if b - 0.5 <= (r[0] + 1) * frame <= e + 1.5]
        if not hits:
            raise Failure(f"{name}: not detected during its phrase ({b - 1:.2f}-{e - 1:.2f} s); "
                          f"detections {on_ort['detections'][name]}")
    found = {n: len(r) for n, r in on_idem["detections"].items() if r}
    log(f"openWakeWord, {len(on_ort['scores'])} scores per frame: the same detections {found}, "
        f"frame scores within {SCORE_ATOL:g}")


def similar(a, b):
    norm = lambda s: "".join(s.split()).lower()  # noqa: E731
    return difflib.SequenceMatcher(None, norm(a), norm(b)).ratio()


def example_paddleocr(ctx, log):
    ctx.require(tools=("convert",), fonts=(LATIN_FONT, CJK_FONT), modules=("PIL",))
    dictionary = os.path.join(ctx.cache, "ppocr_keys_v1.txt")
    if not os.path.exists(dictionary):
        raise Unavailable(f"{dictionary} is missing (scripts/fetch_models.sh fetches it)")
    lines = [("INVOICE No. 2025-0617", LATIN_FONT, 38), ("Customer: Idem Runtime Ltd.", LATIN_FONT, 24),
             ("发票号码 识别测试", CJK_FONT, 30), ("TOTAL 1,200.00 CNY", LATIN_FONT, 28)]
    base = ["--det", ctx.model("ch_PP-OCRv4_det_infer"),
            "--cls", ctx.model("ch_ppocr_mobile_v2.0_cls_infer"),
            "--rec", ctx.model("ch_PP-OCRv4_rec_infer"), "--dict", dictionary, "--json"]
    for rotate in (0, 180):
        image = text_page(ctx, lines, f"page{rotate}", rotate)
        on_idem = json.loads(ctx.python("paddleocr.py", [image, *base], "idem"))
        on_ort = json.loads(ctx.python("paddleocr.py", [image, *base], "onnxruntime"))
        strip = lambda rs: [(r["box"], r["text"], r["angle"]) for r in rs]  # noqa: E731
        if strip(on_idem) != strip(on_ort):
            raise Failure(f"page turned {rotate}: idem read {strip(on_idem)}, ONNX Runtime "
                          f"{strip(on_ort)}")
        if not close([r["score"] for r in on_idem], [r["score"] for r in on_ort], SCORE_ATOL):
            raise Failure(f"page turned {rotate}: line scores differ from ONNX Runtime's")
        for text, _, _ in lines:
            best = max((similar(text, r["text"]) for r in on_ort), default=0)
            if best < 0.8:
                raise Failure(f"page turned {rotate}: '{text}' was not read (best match "
                              f"{best:.2f}; read {[r['text'] for r in on_ort]})")
        if rotate == 180 and not all(r["angle"] == "180" for r in on_ort):
            raise Failure("the page turned 180 degrees: cls did not turn every line")
        log(f"PaddleOCR, page turned {rotate}: the same {len(on_idem)} lines "
            f"{[r['text'] for r in on_idem]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("example", choices=("silero", "openwakeword", "paddleocr"))
    parser.add_argument("--cache", required=True)
    parser.add_argument("--node-modules", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--work")
    parser.add_argument("--cpp", help="the C++ example (default: BUILD/examples/...)")
    args = parser.parse_args()
    ctx = Context(args)
    temp = None
    if ctx.work is None:
        temp = tempfile.TemporaryDirectory()
        ctx.work = temp.name
    os.makedirs(ctx.work, exist_ok=True)

    def log(text):
        print(text, flush=True)

    runner = {"silero": example_silero, "openwakeword": example_openwakeword,
              "paddleocr": example_paddleocr}[args.example]
    try:
        runner(ctx, log)
    except Unavailable as e:
        if os.environ.get("CI") == "true":
            log(f"FAIL: the example stage cannot run: {e}")
            return 1
        log(f"SKIP: {e}")
        return 77
    except Failure as e:
        log(f"FAIL: {e}")
        return 1
    finally:
        if temp is not None:
            temp.cleanup()
    log(f"PASS: {args.example}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
