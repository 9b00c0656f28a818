#!/usr/bin/env python3
"""Text from an image with PaddleOCR's PP-OCRv4 models (det + cls + rec), through onnxruntime's
Python API.

The pipeline is PaddleOCR's, with numpy and Pillow where PaddleOCR uses OpenCV and pyclipper:
- detection: the image (BGR, as cv2 reads it) resized so its longer side is at most 960 and both
  sides are multiples of 32, normalised with ImageNet's mean and std, run through the det model;
  its probability map thresholded at 0.3, each connected region turned into its minimum-area
  rectangle, kept when the mean probability inside is at least 0.6, grown by
  area x 1.5 / perimeter on every side (DB's unclip) and scaled back to the image; the boxes sorted
  top to bottom, then left to right;
- each box cropped upright (turned 90 degrees when it is at least 1.5 times taller than wide);
- direction: the crop at height 48 (width at most 192, zero-padded), (x/255 - 0.5)/0.5, through
  the cls model; turned 180 degrees when it says "180" with a score above 0.9;
- recognition: the crop at height 48 and width 48 x max(320/48, w/h), through the rec model; CTC
  greedy decoding (best class per step, repeats merged, blanks dropped) with the dictionary the
  model package ships (ppocr_keys_v1.txt, plus " "); lines scoring below 0.5 dropped.
Each crop is run on its own (batch 1).

  /usr/bin/python3 examples/python/paddleocr.py --det DET.onnx --cls CLS.onnx --rec REC.onnx
      --dict ppocr_keys_v1.txt IMAGE [--json] [--runtime MODULE]

Prints one line per text line found, "text (score)", top to bottom; --json prints
[{"box": [[x, y] x 4], "text", "score"}]. --runtime: ``idem`` (default) or ``onnxruntime``.
"""
import argparse
import importlib
import json
import math

import numpy as np
from PIL import Image


# ---- detection ------------------------------------------------------------------------------------

def resize(rgb, width, height):
    """Bilinear resize of an HxWx3 uint8 image."""
    return np.asarray(Image.fromarray(rgb).resize((width, height), Image.BILINEAR))


def det_input(bgr, limit_side_len=960):
    h, w = bgr.shape[:2]
    ratio = limit_side_len / max(h, w) if max(h, w) > limit_side_len else 1.0
    rh = max(int(round(int(h * ratio) / 32) * 32), 32)
    rw = max(int(round(int(w * ratio) / 32) * 32), 32)
    img = resize(bgr, rw, rh).astype(np.float32) / 255.0
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    return ((img - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def components(bitmap):
    """The 8-connected regions of a boolean map, each as its runs [(y, x0, x1)] (x1 inclusive),
    by union-find over each row's runs."""
    runs, parent = [], []
    previous = []  # (index, x0, x1) of the previous row's runs

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for y in range(bitmap.shape[0]):
        row = np.concatenate(([0], bitmap[y].astype(np.int8), [0]))
        edges = np.flatnonzero(np.diff(row))
        current = []
        for x0, x1 in zip(edges[0::2], edges[1::2] - 1):
            k = len(runs)
            runs.append((y, int(x0), int(x1)))
            parent.append(k)
            for j, p0, p1 in previous:
                if p0 <= x1 + 1 and x0 <= p1 + 1:
                    a, b = find(j), find(k)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
            current.append((k, int(x0), int(x1)))
        previous = current
    groups = {}
    for k, run in enumerate(runs):
        groups.setdefault(find(k), []).append(run)
    return list(groups.values())


def convex_hull(points):
    """Andrew's monotone chain; points: (N, 2) float array. Returns the hull, counter-clockwise."""
    pts = sorted(set(map(tuple, points.tolist())))
    if len(pts) <= 2:
        return np.array(pts, np.float64)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1], np.float64)


def min_area_rect(points):
    """The smallest rectangle around points: (center, (width, height), unit axis u, axis v)."""
    hull = convex_hull(points)
    if len(hull) == 1:
        return hull[0], (0.0, 0.0), np.array([1.0, 0.0]), np.array([0.0, 1.0])
    best = None
    for i in range(len(hull)):
        edge = hull[(i + 1) % len(hull)] - hull[i]
        length = math.hypot(*edge)
        if length == 0:
            continue
        u = edge / length
        v = np.array([-u[1], u[0]])
        pu, pv = hull @ u, hull @ v
        area = (pu.max() - pu.min()) * (pv.max() - pv.min())
        if best is None or area < best[0] - 1e-9:
            best = (area, u, v, pu.min(), pu.max(), pv.min(), pv.max())
    _, u, v, u0, u1, v0, v1 = best
    center = u * (u0 + u1) / 2 + v * (v0 + v1) / 2
    return center, (u1 - u0, v1 - v0), u, v


def rect_corners(center, size, u, v):
    """The 4 corners, ordered top-left, top-right, bottom-right, bottom-left (PaddleOCR's
    get_mini_boxes order)."""
    w, h = size
    pts = np.array([center + s * u * w / 2 + t * v * h / 2
                    for s, t in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
    pts = pts[np.argsort(pts[:, 0], kind="stable")]
    left, right = pts[:2], pts[2:]
    tl, bl = (left[0], left[1]) if left[0][1] <= left[1][1] else (left[1], left[0])
    tr, br = (right[0], right[1]) if right[0][1] <= right[1][1] else (right[1], right[0])
    return np.array([tl, tr, br, bl])


def box_score(prob, box):
    """Mean probability inside the (convex) quadrilateral `box`."""
    h, w = prob.shape
    x0, x1 = int(np.clip(np.floor(box[:, 0].min()), 0, w - 1)), int(
        np.clip(np.ceil(box[:, 0].max()), 0, w - 1))
    y0, y1 = int(np.clip(np.floor(box[:, 1].min()), 0, h - 1)), int(
        np.clip(np.ceil(box[:, 1].max()), 0, h - 1))
    ys, xs = np.mgrid[y0:y1 + 1, x0:x1 + 1]
    inside = np.ones(ys.shape, bool)
    for k in range(4):
        a, b = box[k], box[(k + 1) % 4]
        inside &= (b[0] - a[0]) * (ys - a[1]) - (b[1] - a[1]) * (xs - a[0]) >= -1e-6
    if not inside.any():
        return 0.0
    return float(prob[y0:y1 + 1, x0:x1 + 1][inside].mean())


def detect(session, bgr, thresh=0.3, box_thresh=0.6, unclip_ratio=1.5, min_size=3):
    x = det_input(bgr)
    prob = session.run(None, {session.get_inputs()[0].name: x})[0][0, 0]
    height, width = prob.shape
    src_h, src_w = bgr.shape[:2]
    boxes = []
    for runs in components(prob > thresh)[:1000]:
        pts = np.array([(x0, y) for y, x0, _ in runs] + [(x1, y) for y, _, x1 in runs],
                       np.float64)
        center, (w, h), u, v = min_area_rect(pts)
        if min(w, h) < min_size:
            continue
        box = rect_corners(center, (w, h), u, v)
        if box_score(prob, box) < box_thresh:
            continue
        distance = w * h * unclip_ratio / (2 * (w + h))
        w, h = w + 2 * distance, h + 2 * distance
        if min(w, h) < min_size + 2:
            continue
        box = rect_corners(center, (w, h), u, v)
        box[:, 0] = np.clip(np.round(box[:, 0] / width * src_w), 0, src_w)
        box[:, 1] = np.clip(np.round(box[:, 1] / height * src_h), 0, src_h)
        side_w = int(np.linalg.norm(box[0] - box[1]))
        side_h = int(np.linalg.norm(box[0] - box[3]))
        if side_w <= 3 or side_h <= 3:
            continue
        boxes.append(box)
    # Top to bottom, then left to right; boxes within 10 px vertically count as one row.
    boxes.sort(key=lambda b: (b[0][1], b[0][0]))
    for i in range(len(boxes) - 1):
        for j in range(i, -1, -1):
            if abs(boxes[j + 1][0][1] - boxes[j][0][1]) < 10 and \
                    boxes[j + 1][0][0] < boxes[j][0][0]:
                boxes[j], boxes[j + 1] = boxes[j + 1], boxes[j]
            else:
                break
    return boxes


def crop(rgb, box):
    """The box's contents as an upright image (PaddleOCR's get_rotate_crop_image)."""
    w = int(max(np.linalg.norm(box[0] - box[1]), np.linalg.norm(box[2] - box[3])))
    h = int(max(np.linalg.norm(box[0] - box[3]), np.linalg.norm(box[1] - box[2])))
    tl, tr, br, bl = box
    quad = (*tl, *bl, *br, *tr)  # Pillow's QUAD: upper-left, lower-left, lower-right, upper-right
    out = np.asarray(Image.fromarray(rgb).transform((max(w, 1), max(h, 1)), Image.QUAD,
                                                    [float(c) for c in quad], Image.BILINEAR))
    if out.shape[0] / max(out.shape[1], 1) >= 1.5:
        out = np.rot90(out)
    return np.ascontiguousarray(out)


# ---- direction and recognition --------------------------------------------------------------------

def line_input(rgb, width, height=48):
    """Height 48, width from the aspect ratio (at most `width`), BGR, (x/255 - 0.5)/0.5, zero-padded
    on the right to `width`."""
    h, w = rgb.shape[:2]
    resized_w = min(width, int(math.ceil(height * w / h)))
    img = resize(rgb, max(resized_w, 1), height)[:, :, ::-1].astype(np.float32)
    img = (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
    out = np.zeros((1, 3, height, width), np.float32)
    out[0, :, :, :resized_w] = img
    return out


def classify(session, rgb):
    """The crop turned upright: ("0" or "180", score)."""
    probs = session.run(None, {session.get_inputs()[0].name: line_input(rgb, 192)})[0][0]
    k = int(np.argmax(probs))
    return ("0", "180")[k], float(probs[k])


def recognize(session, rgb, characters):
    h, w = rgb.shape[:2]
    width = int(48 * max(320 / 48, w / h))
    probs = session.run(None, {session.get_inputs()[0].name: line_input(rgb, width)})[0][0]
    best, conf = probs.argmax(axis=1), probs.max(axis=1)
    keep = np.ones(len(best), bool)
    keep[1:] = best[1:] != best[:-1]  # merge repeats
    keep &= best != 0  # drop blanks
    text = "".join(characters[i] for i in best[keep])
    score = float(conf[keep].mean()) if keep.any() else 0.0
    return text, score


def read_dictionary(path):
    with open(path, "rb") as f:
        lines = [line.decode("utf-8").strip("\n").strip("\r\n") for line in f]
    return ["blank"] + lines + [" "]


class PaddleOcr:
    def __init__(self, det, cls, rec, dictionary, ort):
        # One session per model, as PaddleOCR's ONNX path makes them.
        make = lambda p: ort.InferenceSession(p, providers=["CPUExecutionProvider"])  # noqa: E731
        self.det, self.cls, self.rec = make(det), make(cls), make(rec)
        self.characters = read_dictionary(dictionary)
        classes = self.rec.get_outputs()[0].shape[-1]
        if isinstance(classes, int) and classes != len(self.characters):
            raise ValueError(f"{dictionary}: {len(self.characters)} symbols with blank and space; "
                             f"the rec model has {classes} classes")

    def __call__(self, rgb, drop_score=0.5):
        bgr = np.ascontiguousarray(rgb[:, :, ::-1])
        results = []
        for box in detect(self.det, bgr):
            line = crop(rgb, box)
            angle, score = classify(self.cls, line)
            if angle == "180" and score > 0.9:
                line = np.ascontiguousarray(line[::-1, ::-1])
            text, confidence = recognize(self.rec, line, self.characters)
            if confidence >= drop_score:
                results.append({"box": box.astype(int).tolist(), "text": text,
                                "score": confidence, "angle": angle})
        return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("image")
    parser.add_argument("--det", required=True)
    parser.add_argument("--cls", required=True)
    parser.add_argument("--rec", required=True)
    parser.add_argument("--dict", required=True, help="ppocr_keys_v1.txt")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runtime", default="idem", help="module with onnxruntime's API")
    args = parser.parse_args()
    ort = importlib.import_module(args.runtime)
    ocr = PaddleOcr(args.det, args.cls, args.rec, args.dict, ort)
    rgb = np.asarray(Image.open(args.image).convert("RGB"))
    results = ocr(rgb)
    if args.json:
        print(json.dumps(results, ensure_ascii=False))
    else:
        for r in results:
            print(f"{r['text']} ({r['score']:.3f})")


if __name__ == "__main__":
    main()
