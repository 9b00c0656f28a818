#!/usr/bin/python3
"""Differential testing of idem against ONNX Runtime: random but valid models.

Each model is a random program over what idem runs: Identity (tensors of many element types,
sequences, optionals, empty optionals, outer values), the sequence operators, the optional
operators, Constant/Add/Not/Slice/Unsqueeze/Shape, and If/Loop/Scan/SequenceMap nested up to
depth 3 whose bodies read outer values, carry tensors/sequences/optionals and produce scan
outputs. Opsets 11 to 21; zero-size dims; NaN payloads, -0.0, subnormals, infinities.

The generator tracks every value's type, shape, sequence length and optional presence exactly, so
every model is valid and runs without a run-time error (a position is always in range, a
concatenation always fits); ONNX Runtime then computes the expected outputs.

ONNX Runtime for Node.js feeds and returns tensors only (no bfloat16, no complex, strings cut at
NUL), so graph inputs and outputs are tensors of the types it carries; sequences and optionals
are built and taken apart inside the model, and bfloat16 values are observed through Shape.

Since issue 17 the programs also use the operators of the real models (Conv, ConvTranspose,
LSTM, pools, Resize, Pad, Gemm, MatMul, Cast, Softmax, reductions, ...; ort_differential_ops.py
says how, and where the generator steers around documented differences from ONNX Runtime). A
model with an accumulating or transcendental operator is named ortdiff_tol_SEED and compared
within rtol 1e-3 / atol 1e-5 (integers, bools, strings and shapes exact); the others stay
bit-exact.

usage:
  gen_ort_differential.py generate OUTDIR --seed S --count N [--tolerant-dir DIR]
      # models + inputs (feeds.json); tolerant models into DIR (default OUTDIR)
  gen_ort_differential.py oracle OUTDIR... --node-modules NODE_MODULES
      # ONNX Runtime's outputs -> output_K.pb; cases it refuses are removed
  gen_ort_differential.py live IDEM_EXE NODE_MODULES [--seed S] [--count N]
      generate, run in ONNX Runtime, run `idem test`; exit 77 when ONNX Runtime is absent.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_differential_ops import KernelOps  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# ONNX's backend-test tolerances, for models with an accumulating or transcendental operator.
TOLERANCES = ["--rtol", "1e-3", "--atol", "1e-5"]

F16, BF16 = TP.FLOAT16, TP.BFLOAT16
NP = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT8: np.int8,
      TP.INT16: np.int16, TP.INT32: np.int32, TP.INT64: np.int64, TP.UINT8: np.uint8,
      TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64, TP.BOOL: np.bool_}
ORT_NAME = {TP.FLOAT: "float32", TP.DOUBLE: "float64", TP.FLOAT16: "float16", TP.INT8: "int8",
            TP.INT16: "int16", TP.INT32: "int32", TP.INT64: "int64", TP.UINT8: "uint8",
            TP.UINT16: "uint16", TP.UINT32: "uint32", TP.UINT64: "uint64", TP.BOOL: "bool",
            TP.STRING: "string"}
# Types a graph input or output may have (what onnxruntime-node carries).
IO_TYPES = list(ORT_NAME)
ALL_TYPES = IO_TYPES + [BF16]
ADD_TYPES = [TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64, TP.FLOAT16, TP.UINT32, TP.UINT64, TP.INT8,
             TP.INT16, TP.UINT8, TP.UINT16]

# Largest dim of a random shape (IDEM_DIFF_MAX_DIM=9 for bigger tensors: longer SIMD runs).
MAX_DIM = int(os.environ.get("IDEM_DIFF_MAX_DIM", "3"))
# Add-14 added these.
ADD14_TYPES = [TP.INT8, TP.INT16, TP.UINT8, TP.UINT16]
# ONNX Runtime 1.30 implements SplitToSequence for these only.
SPLIT_TYPES = [TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64, TP.STRING]


class V:
    """What the generator knows about a value: kind 't' (tensor), 's' (sequence), 'o' (optional).

    Tensors: elem, shape (tuple, or None when not known). Sequences: elem, shape (of every
    element, or None when they differ or are unknown), length (or None) and minlen (a guaranteed
    lower bound). Optionals: inner (a V of kind 't' or 's'), present (True, False or None)."""

    def __init__(self, kind, elem, shape=None, length=None, minlen=0, inner=None, present=None,
                 known=None):
        self.kind, self.elem, self.shape = kind, elem, shape
        self.length, self.minlen, self.inner, self.present = length, minlen, inner, present
        self.known = known  # the value of a scalar whose value the generator knows

    def same_type(self, o):
        if self.kind != o.kind or self.elem != o.elem:
            return False
        return self.kind != "o" or self.inner.same_type(o.inner)

    def same(self, o):
        """Same type and the same shape, length and presence (exactly known)."""
        if not self.same_type(o):
            return False
        if self.kind == "t":
            return self.shape is not None and self.shape == o.shape
        if self.kind == "s":
            return self.length is not None and self.length == o.length and self.shape == o.shape
        return self.present is not None and self.present == o.present and (
            not self.present or self.inner.same(o.inner))

    def merge(self, o):
        """What is known of a value that is either self or o (same type)."""
        if self.kind == "t":
            return V("t", self.elem, self.shape if self.shape == o.shape else None)
        if self.kind == "s":
            return V("s", self.elem, self.shape if self.shape == o.shape else None,
                     self.length if self.length == o.length else None,
                     min(self.minlen, o.minlen))
        inner = self.inner.merge(o.inner)
        return V("o", self.elem, inner=inner,
                 present=self.present if self.present == o.present else None)

    def type_proto(self, rng, declare_shape=True, exact=False):
        if self.kind == "t":
            shape = None
            if exact and self.shape is not None:
                return helper.make_tensor_type_proto(self.elem, list(self.shape))
            if declare_shape and self.shape is not None and rng.random() < 0.8:
                shape = list(self.shape)
                if shape and rng.random() < 0.2:
                    shape[rng.integers(len(shape))] = None  # an unnamed dim
            return helper.make_tensor_type_proto(self.elem, shape)
        if self.kind == "s":
            inner = V("t", self.elem, self.shape)
            return helper.make_sequence_type_proto(inner.type_proto(rng, declare_shape))
        return helper.make_optional_type_proto(self.inner.type_proto(rng, declare_shape))


def random_array(rng, elem, shape):
    n = int(np.prod(shape)) if shape else 1
    if elem == TP.STRING:
        # ASCII and multi-byte UTF-8 (no NUL: Node's binding cuts strings there).
        alphabet = list("abcxyz019 _-") + ["\u00e9", "\u4e2d", "\U0001f600"]
        vals = ["".join(rng.choice(alphabet, size=rng.integers(0, 5))) for _ in range(n)]
        return np.array([v.encode() for v in vals], dtype=object).reshape(shape)
    if elem == TP.BOOL:
        return (rng.integers(0, 2, size=n) == 1).reshape(shape)
    if elem in (TP.FLOAT, TP.DOUBLE, F16, BF16):
        if elem == TP.FLOAT:
            bits_t, specials = np.uint32, [0x7FC00001, 0xFFC12345, 0x7F800001, 0x80000000,
                                          0x00000001, 0x7F800000, 0xFF800000, 0x007FFFFF]
        elif elem == TP.DOUBLE:
            bits_t, specials = np.uint64, [0x7FF8000000000123, 0xFFF0000000000001,
                                          0x8000000000000000, 1, 0x7FF0000000000000]
        else:
            bits_t, specials = np.uint16, [0x7E01, 0xFD05, 0x8000, 0x0001, 0x7C00, 0x03FF]
            if elem == BF16:
                specials = [0x7FC1, 0xFF81, 0x8000, 0x0001, 0x7F80]
        if elem == BF16:
            vals = (rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16)
            vals = vals.astype(np.uint16)
        else:
            dt = NP[elem]
            vals = (rng.standard_normal(n) * 10).astype(dt).view(bits_t)
        mask = rng.random(n) < 0.25
        if mask.any():
            vals[mask] = rng.choice(np.array(specials, dtype=bits_t), size=int(mask.sum()))
        if elem == BF16:
            return vals.reshape(shape)
        return vals.view(NP[elem]).reshape(shape)
    info = np.iinfo(NP[elem])
    lo, hi = (int(info.min), int(info.max)) if rng.random() < 0.5 else (-5, 5)
    lo = max(lo, int(info.min))
    return rng.integers(lo, hi, size=n, endpoint=True, dtype=NP[elem]).reshape(shape)


def slice_len(d, start, end, step):
    """The length ONNX's Slice gives along an axis of size d. Not Python's slicing: a start below
    -d with a negative step clamps to 0 (Python's range(2)[-3:-4:-2] is empty, ONNX takes
    element 0)."""
    start = start + d if start < 0 else start
    end = end + d if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return max(0, -(-(start - end) // -step))


def to_tensor(name, elem, arr):
    if elem == BF16:
        t = TP()
        t.name, t.data_type = name, BF16
        t.dims.extend(arr.shape)
        t.raw_data = np.ascontiguousarray(arr, dtype=np.uint16).tobytes()
        return t
    t = numpy_helper.from_array(np.asarray(arr, dtype=object if elem == TP.STRING else NP[elem]),
                                name)
    return t


def is_input(b, name):
    """A body output that is a body input itself (not a copy). ONNX Runtime 1.30 gets some of
    these wrong: a Loop's iteration number as a scan output reads [2, 2] instead of [0, 1], a
    Scan element as a scan output reads zeros, a string Scan state passed through reads empty
    strings. The generator copies such outputs first (and always copies a sequence a Loop passes
    through); idem follows the spec there (tests/control_flow_test.cc,
    LoopTest.IterationNumberReturnedStraightAsAScanOutputIsEachIterations)."""
    return name in [n for n, _ in b.inputs]


def quiet_f16(arr):
    """arr with every float16 NaN replaced by an infinity of its sign."""
    bits = np.array(arr, dtype=np.float16).view(np.uint16).copy()
    nan = (bits & 0x7C00) == 0x7C00
    nan &= (bits & 0x3FF) != 0
    bits[nan] = (bits[nan] & 0x8000) | 0x7C00
    return bits.view(np.float16)


DEFAULT_NAN = {TP.FLOAT: (np.uint32, 0xFFC00000), TP.DOUBLE: (np.uint64, 0xFFF8000000000000)}


def canonical_nan(arr, elem):
    """arr with every NaN replaced by x86's default NaN."""
    bits_t, nan = DEFAULT_NAN[elem]
    bits = np.array(arr, dtype=NP[elem]).view(bits_t).copy()
    bits[np.isnan(bits.view(NP[elem]))] = nan
    return bits.view(NP[elem])


def one_nan(graph, elem):
    """Makes every NaN of type elem (float or double) in graph and its subgraphs the default NaN.
    When both inputs of ONNX Runtime 1.30's Add are NaNs, which one comes out depends on the
    element's position (vectorized blocks, scalar tails and broadcasting paths take the operands
    in different orders), not on the model; with one NaN pattern per model (also the one Inf -
    Inf makes) the answer is the same either way. A NaN added to a number keeps its payload in
    both runtimes, which models without a float Add still test."""
    todo = [graph]
    while todo:
        g = todo.pop()
        tensors = list(g.initializer)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    tensors.append(a.t)
                elif a.type == onnx.AttributeProto.GRAPH:
                    todo.append(a.g)
        for t in tensors:
            if t.data_type == elem and t.raw_data:
                t.raw_data = canonical_nan(np.frombuffer(t.raw_data, NP[elem]), elem).tobytes()


def no_f16_nan(graph):
    """Removes float16 NaNs from every tensor in graph and its subgraphs. ONNX Runtime 1.30's
    float16 Add (x86-64) gives a NaN's payload for outputs computed 8 at a time (F16C) and the
    canonical 0x7E00 (sign kept) for the rest (a block of fewer than 8, or each short
    broadcasting span): which bits come out depends on the element's position and the host's
    SIMD, not on the model. idem keeps the payload (numpy's conversion, the ONNX reference), so
    models with a float16 Add are generated without float16 NaNs (an Inf + -Inf still makes one,
    the same everywhere)."""
    todo = [graph]
    while todo:
        g = todo.pop()
        tensors = list(g.initializer)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    tensors.append(a.t)
                elif a.type == onnx.AttributeProto.GRAPH:
                    todo.append(a.g)
        for t in tensors:
            if t.data_type == F16:
                t.raw_data = quiet_f16(np.frombuffer(t.raw_data, np.float16)).tobytes()


class Graph:
    def __init__(self, gen, parent, name, depth):
        self.gen, self.parent, self.name, self.depth = gen, parent, name, depth
        self.nodes, self.scope, self.inputs, self.inits = [], {}, [], []

    def visible(self):
        """(name, V) of this graph's values, then of each enclosing graph's."""
        out, g = [], self
        while g is not None:
            out.extend(g.scope.items())
            g = g.parent
        return out

    def add(self, name, v):
        self.scope[name] = v
        return name


class Gen(KernelOps):
    V_cls = V
    to_tensor_fn = staticmethod(to_tensor)

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.counter = 0
        self.opset = int(self.rng.choice([11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21],
                                         p=[.04, .04, .06, .06, .08, .14, .16, .12, .1, .1, .1]))
        self.feeds = []  # (name, elem, array)
        self.f16_add = False  # a float16 Add exists: keep float16 NaNs out (see no_f16_nan)
        self.f16_graphs = set()  # graphs (by id) holding a float16 Add (see add_ok)
        self.float_add = set()  # float/double with an Add: one NaN only (see one_nan)
        # An accumulating or transcendental operator is in the model: compared within ONNX's
        # backend-test tolerances, not bit for bit (see ort_differential_ops.py).
        self.tolerant = False
        # Some models use only the exact operators of the real models (Cast, Pad, Concat,
        # MaxPool, nearest Resize, ...), so those are checked bit for bit too.
        self.exact_only = bool(self.rng.random() < 0.4)

    # ---- helpers -------------------------------------------------------------------------------
    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def p(self, x):
        return self.rng.random() < x

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def elem_types(self):
        types = [t for t in IO_TYPES]
        if self.opset >= 13:
            types.append(BF16)
        return types

    def scan_ok(self, v):
        return v.elem != BF16 or self.opset >= 16  # Scan-16 added bfloat16

    def add_ok(self, elem, g):
        """May an Add of elem go into graph g. One float16 Add per graph at most: ONNX Runtime
        1.30's CPU provider has no float16 Add; it computes Add in float between Casts and drops
        the Cast pairs between two such Adds, so a chain of float16 Adds is rounded once at its
        end (Add(y, Add(x, y)) with x = 0x4A99, y = 0x4CF3 gives 0x5299; rounding each Add, as
        the spec's float16 arithmetic and numpy do, gives 0x529A). idem rounds each Add."""
        if elem == F16:
            if id(g) in self.f16_graphs:
                return False
        return elem in ADD_TYPES and (self.opset >= 14 or elem not in ADD14_TYPES)

    def note_add(self, elem, g):
        if elem == F16:
            self.f16_add = True
            self.f16_graphs.add(id(g))
        if elem in (TP.FLOAT, TP.DOUBLE):
            self.float_add.add(elem)

    def seq_ok(self, elem):
        return self.opset >= 11 and elem != BF16

    def random_shape(self, max_rank=3):
        rank = int(self.rng.integers(0, max_rank + 1))
        zero = self.p(0.15)
        shape = [int(self.rng.integers(1, MAX_DIM + 1)) for _ in range(rank)]
        if zero and rank:
            shape[int(self.rng.integers(rank))] = 0
        return tuple(shape)

    def node(self, g, op, inputs, outputs, **attrs):
        g.nodes.append(helper.make_node(op, inputs, outputs, name=self.fresh(op + "_"), **attrs))

    def const(self, g, elem, shape, arr=None, as_init=None):
        """A tensor constant (Constant node or, in any graph, an initializer)."""
        if arr is None:
            arr = random_array(self.rng, elem, shape)
        name = self.fresh("c")
        if as_init is None:
            as_init = self.p(0.3)
        known = None
        if shape == () and elem in (TP.INT64, TP.INT32, TP.BOOL):
            known = arr.item() if hasattr(arr, "item") else arr
            known = bool(known) if elem == TP.BOOL else int(known)
        if as_init:
            g.inits.append(to_tensor(name, elem, arr))
        elif (self.opset >= 12 and elem in (TP.FLOAT, TP.INT64, TP.STRING) and len(shape) <= 1
              and self.p(0.4) and int(np.prod(shape) if shape else 1) > 0
              and not (elem == TP.FLOAT and np.isnan(arr).any())):  # payloads need a tensor
            attr = {TP.FLOAT: "value_float", TP.INT64: "value_int", TP.STRING: "value_string"}[elem]
            flat = np.asarray(arr).reshape(-1)
            if len(shape) == 1:
                vals = [float(x) for x in flat] if elem == TP.FLOAT else (
                    [int(x) for x in flat] if elem == TP.INT64 else [bytes(x) for x in flat])
                self.node(g, "Constant", [], [name], **{attr + "s": vals})
            else:
                val = float(flat[0]) if elem == TP.FLOAT else (
                    int(flat[0]) if elem == TP.INT64 else bytes(flat[0]))
                self.node(g, "Constant", [], [name], **{attr: val})
            if elem == TP.FLOAT:  # value_float(s) go through a Python double: re-read the bits
                arr = np.array([float(x) for x in flat], np.float32).reshape(shape)
        else:
            self.node(g, "Constant", [], [name], value=to_tensor(name, elem, arr))
        return g.add(name, V("t", elem, tuple(shape), known=known))

    def scalar(self, g, elem, value):
        return self.const(g, elem, (), np.array(value, dtype=NP[elem]))

    def find(self, g, pred, outer=0.5):
        """A visible value satisfying pred (prefers this graph's own values)."""
        own = [(n, v) for n, v in g.scope.items() if pred(v)]
        allv = [(n, v) for n, v in g.visible() if pred(v)]
        if allv and (not own or self.p(outer)):
            return self.pick(allv)
        if own:
            return self.pick(own)
        return None

    def synth(self, g, v):
        """A value of exactly v's type, shape, length and presence, built in g (or reused)."""
        if self.p(0.5):
            hit = self.find(g, lambda w: v.same(w))
            if hit:
                return hit[0]
        if v.kind == "t":
            shape = v.shape if v.shape is not None else self.random_shape()
            return self.const(g, v.elem, shape)
        if v.kind == "s":
            length = v.length if v.length is not None else int(self.rng.integers(v.minlen,
                                                                                 v.minlen + 3))
            shape = v.shape if v.shape is not None else self.random_shape()
            if length == 0:
                out = self.fresh("se")
                self.node(g, "SequenceEmpty", [], [out], dtype=v.elem)
                return g.add(out, V("s", v.elem, None if v.shape is None else shape, 0, 0))
            parts = [self.synth(g, V("t", v.elem, shape)) for _ in range(length)]
            out = self.fresh("sc")
            self.node(g, "SequenceConstruct", parts, [out])
            return g.add(out, V("s", v.elem, shape, length, length))
        present = v.present if v.present is not None else self.p(0.6)
        out = self.fresh("op")
        if present:
            inner = self.synth(g, v.inner)
            self.node(g, "Optional", [inner], [out])
            return g.add(out, V("o", v.elem, inner=g.scope.get(inner) or v.inner, present=True))
        self.node(g, "Optional", [], [out], type=v.inner.type_proto(self.rng, False))
        return g.add(out, V("o", v.elem, inner=v.inner, present=False))

    # ---- operators -----------------------------------------------------------------------------
    def op_identity(self, g):
        def ok(v):
            if v.kind == "s":
                return self.opset >= 14
            if v.kind == "o":
                return self.opset >= 16
            return v.elem != BF16 or self.opset >= 13
        hit = self.find(g, ok, outer=0.6)
        if not hit:
            return
        src, v = hit
        for _ in range(int(self.rng.integers(1, 3))):  # chains
            out = self.fresh("id")
            self.node(g, "Identity", [src], [out])
            src = g.add(out, v)

    def op_const(self, g):
        self.const(g, self.pick(self.elem_types()), self.random_shape())

    def op_add(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and self.add_ok(v.elem, g)
                        and v.shape is not None)
        if not hit:
            return
        a, va = hit
        # Second operand: a broadcastable shape (a suffix with some dims set to 1) or the same.
        shape = list(va.shape[int(self.rng.integers(0, len(va.shape) + 1)):])
        shape = [1 if self.p(0.3) else d for d in shape]
        if self.p(0.2) and len(va.shape) < 3:
            shape = [int(self.rng.integers(1, 3))] + list(va.shape)  # b has the higher rank
        bv = V("t", va.elem, tuple(shape))
        b = self.synth(g, bv)
        self.note_add(va.elem, g)
        out_shape = np.broadcast_shapes(va.shape, tuple(shape))
        out = self.fresh("add")
        ins = [a, b] if self.p(0.5) else [b, a]
        self.node(g, "Add", ins, [out])
        g.add(out, V("t", va.elem, tuple(out_shape)))

    def op_not(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and v.elem == TP.BOOL)
        if not hit:
            return
        out = self.fresh("not")
        self.node(g, "Not", [hit[0]], [out])
        known = None if hit[1].known is None else not hit[1].known
        g.add(out, V("t", TP.BOOL, hit[1].shape, known=known))

    def op_shape(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and (v.elem != BF16 or self.opset >= 13))
        if not hit:
            return
        x, v = hit
        out = self.fresh("shape")
        attrs = {}
        if self.opset >= 15 and self.p(0.5):
            attrs["start"] = int(self.rng.integers(-4, 4))
            if self.p(0.5):
                attrs["end"] = int(self.rng.integers(-4, 5))
        self.node(g, "Shape", [x], [out], **attrs)
        shape = None
        if v.shape is not None:
            r = len(v.shape)
            s = attrs.get("start", 0)
            e = attrs.get("end", r)
            s, e = (s + r if s < 0 else s), (e + r if e < 0 else e)
            s, e = min(max(s, 0), r), min(max(e, 0), r)
            shape = (max(e - s, 0),)
        g.add(out, V("t", TP.INT64, shape))

    def op_unsqueeze(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and v.shape is not None and len(v.shape) < 4
                        and (v.elem != BF16 or self.opset >= 13))
        if not hit:
            return
        x, v = hit
        r = len(v.shape)
        k = int(self.rng.integers(1, 3))
        out_r = r + k
        axes = sorted(self.rng.choice(out_r, size=k, replace=False).tolist())
        shape = list(v.shape)
        for a in axes:
            shape.insert(a, 1)
        axes = [a - out_r if self.p(0.4) else a for a in axes]
        out = self.fresh("unsq")
        if self.opset >= 13:
            ax = self.const(g, TP.INT64, (k,), np.array(axes, np.int64))
            self.node(g, "Unsqueeze", [x, ax], [out])
        else:
            self.node(g, "Unsqueeze", [x], [out], axes=axes)
        g.add(out, V("t", v.elem, tuple(shape)))

    def op_slice(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and v.shape is not None and len(v.shape) >= 1
                        and (v.elem != BF16 or self.opset >= 13))
        if not hit:
            return
        x, v = hit
        r = len(v.shape)
        k = int(self.rng.integers(1, r + 1))
        axes = self.rng.choice(r, size=k, replace=False).tolist()
        starts, ends, steps, shape = [], [], [], list(v.shape)
        for a in axes:
            d = v.shape[a]
            step = int(self.pick([1, 1, 2, -1, -2, 3]))
            st = int(self.rng.integers(-d - 2, d + 3))
            en = int(self.rng.integers(-d - 2, d + 3))
            if self.p(0.1):
                # ONNX Runtime reads an end of INT32_MAX or INT64_MAX with a negative step as
                # "through the first element"; the spec clamps it to dims-1 (nothing is taken),
                # and idem follows the spec. Kept out of the differential cases.
                en = self.pick([2**62, -2**62, -2**63] + ([2**63 - 1] if step > 0 else []))
            starts.append(st)
            ends.append(en)
            steps.append(step)
            shape[a] = slice_len(d, st, en, step)
        out = self.fresh("slice")
        it = self.pick([TP.INT64, TP.INT32]) if all(
            -2**31 <= z < 2**31 for z in starts + ends) else TP.INT64
        ins = [x, self.const(g, it, (k,), np.array(starts, NP[it])),
               self.const(g, it, (k,), np.array(ends, NP[it]))]
        sorted_axes = sorted(axes) == axes and axes == list(range(k))
        use_steps = any(s != 1 for s in steps) or self.p(0.3)
        if not sorted_axes or use_steps or self.p(0.5):
            ins.append(self.const(g, it, (k,), np.array([a - r if self.p(0.3) else a
                                                         for a in axes], NP[it])))
        if use_steps:
            ins.append(self.const(g, it, (k,), np.array(steps, NP[it])))
        self.node(g, "Slice", ins, [out])
        g.add(out, V("t", v.elem, tuple(shape)))

    def tensor_for_seq(self, g, elem=None, shape=None):
        def ok(v):
            return (v.kind == "t" and self.seq_ok(v.elem) and (elem is None or v.elem == elem)
                    and (shape is None or v.shape == shape))
        hit = self.find(g, ok) if self.p(0.6) else None
        if hit:
            return hit
        e = elem if elem is not None else self.pick([t for t in IO_TYPES])
        s = shape if shape is not None else self.random_shape()
        return self.const(g, e, s), V("t", e, s)

    def op_seq_construct(self, g):
        x, v = self.tensor_for_seq(g)
        n = int(self.rng.integers(1, 4))
        parts, same = [x], True
        for _ in range(n - 1):
            if self.p(0.7):
                y, w = self.tensor_for_seq(g, v.elem, v.shape)
            else:
                y, w = self.tensor_for_seq(g, v.elem)
            same = same and w.shape == v.shape
            parts.append(y)
        out = self.fresh("seq")
        self.node(g, "SequenceConstruct", parts, [out])
        g.add(out, V("s", v.elem, v.shape if same else None, n, n))

    def op_seq_empty(self, g):
        elem = self.pick([t for t in IO_TYPES])
        out = self.fresh("sempty")
        attrs = {} if elem == TP.FLOAT and self.p(0.5) else {"dtype": elem}
        self.node(g, "SequenceEmpty", [], [out], **attrs)
        g.add(out, V("s", elem, None, 0, 0))

    def position(self, g, length, insert=False):
        """A position input valid for a sequence of this length (known exactly)."""
        hi = length if insert else length - 1
        lo = -length
        val = int(self.rng.integers(lo, hi + 1))
        return self.scalar(g, self.pick([TP.INT64, TP.INT32]), val), val

    def op_seq_insert(self, g):
        hit = self.find(g, lambda v: v.kind == "s")
        if not hit:
            return
        s, v = hit
        shape = v.shape if (v.shape is not None and self.p(0.8)) or v.length == 0 else None
        if v.length == 0 and v.shape is None:
            shape = None
        x, w = self.tensor_for_seq(g, v.elem, shape)
        ins = [s, x]
        if v.length is not None and self.p(0.5):
            ins.append(self.position(g, v.length, insert=True)[0])
        elif v.length is None and v.minlen > 0 and self.p(0.3):
            ins.append(self.scalar(g, TP.INT64, self.pick([0, -v.minlen])))
        out = self.fresh("sins")
        self.node(g, "SequenceInsert", ins, [out])
        new_shape = w.shape if (v.length == 0 or v.shape == w.shape) else None
        g.add(out, V("s", v.elem, new_shape, None if v.length is None else v.length + 1,
                     v.minlen + 1))

    def op_seq_erase(self, g):
        hit = self.find(g, lambda v: v.kind == "s" and v.minlen >= 1)
        if not hit:
            return
        s, v = hit
        ins = [s]
        if v.length is not None and self.p(0.6):
            ins.append(self.position(g, v.length)[0])
        elif self.p(0.3):
            ins.append(self.scalar(g, TP.INT32, self.pick([0, -1])))
        out = self.fresh("serase")
        self.node(g, "SequenceErase", ins, [out])
        g.add(out, V("s", v.elem, v.shape, None if v.length is None else v.length - 1,
                     v.minlen - 1))

    def op_seq_at(self, g):
        hit = self.find(g, lambda v: v.kind == "s" and v.minlen >= 1)
        if not hit:
            return
        s, v = hit
        if v.length is not None:
            pos = self.position(g, v.length)[0]
        else:
            pos = self.scalar(g, self.pick([TP.INT64, TP.INT32]), self.pick([0, -v.minlen]))
        out = self.fresh("sat")
        self.node(g, "SequenceAt", [s, pos], [out])
        g.add(out, V("t", v.elem, v.shape))

    def op_seq_length(self, g):
        hit = self.find(g, lambda v: v.kind == "s")
        if not hit:
            return
        out = self.fresh("slen")
        self.node(g, "SequenceLength", [hit[0]], [out])
        g.add(out, V("t", TP.INT64, (), known=hit[1].length))

    def op_split(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and v.shape is not None and len(v.shape) >= 1
                        and v.elem in SPLIT_TYPES)
        if not hit:
            return
        x, v = hit
        r = len(v.shape)
        axis = int(self.rng.integers(-r, r))
        d = v.shape[axis]
        rest = list(v.shape)
        mode = self.pick(["none", "scalar", "list"])
        out = self.fresh("split")
        keepdims = 1
        if mode == "none":
            if d == 0:
                return  # ORT and the spec disagree on zero-length axes without split: skip
            keepdims = int(self.pick([0, 1]))
            if keepdims:
                rest[axis] = 1
            else:
                del rest[axis]
            attrs = {"axis": axis}
            if keepdims == 0 or self.p(0.5):
                attrs["keepdims"] = keepdims
            self.node(g, "SplitToSequence", [x], [out], **attrs)
            g.add(out, V("s", v.elem, tuple(rest), d, d))
            return
        if mode == "scalar":
            if d == 0:
                return
            k = int(self.rng.integers(1, d + 1))
            sizes = [k] * (d // k) + ([d % k] if d % k else [])
            sp = self.scalar(g, self.pick([TP.INT64, TP.INT32]), k)
        else:
            sizes, left = [], d
            while left > 0:
                c = int(self.rng.integers(0 if self.p(0.2) else 1, left + 1))
                sizes.append(c)
                left -= c
            if not sizes or self.p(0.2):
                sizes.append(0)
            it = self.pick([TP.INT64, TP.INT32])
            sp = self.const(g, it, (len(sizes),), np.array(sizes, NP[it]))
        self.node(g, "SplitToSequence", [x, sp], [out], axis=axis)
        shape = None
        if len(set(sizes)) == 1:
            rest[axis] = sizes[0]
            shape = tuple(rest)
        g.add(out, V("s", v.elem, shape, len(sizes), len(sizes)))

    def op_concat(self, g):
        hit = self.find(g, lambda v: v.kind == "s" and v.minlen >= 1 and v.shape is not None)
        if not hit:
            return
        s, v = hit
        r = len(v.shape)
        new_axis = int(self.p(0.5)) if r > 0 else 1
        lim = r + new_axis
        axis = int(self.rng.integers(-lim, lim))
        if v.length is None:
            shape = None
        else:
            shape = list(v.shape)
            if new_axis:
                shape.insert(axis % lim, v.length)
            else:
                shape[axis] *= v.length
            shape = tuple(shape)
        out = self.fresh("concat")
        attrs = {"axis": axis}
        if new_axis or self.p(0.3):
            attrs["new_axis"] = new_axis
        self.node(g, "ConcatFromSequence", [s], [out], **attrs)
        g.add(out, V("t", v.elem, shape))

    def op_optional(self, g):
        if self.opset < 15:
            return
        if self.p(0.3):
            inner = (V("t", self.pick(self.elem_types()), self.random_shape()) if self.p(0.6)
                     else V("s", self.pick(IO_TYPES), self.random_shape(), 0, 0))
            if inner.elem == BF16:  # no version of Optional takes bfloat16
                inner.elem = TP.FLOAT
            out = self.fresh("oempty")
            self.node(g, "Optional", [], [out], type=inner.type_proto(self.rng))
            g.add(out, V("o", inner.elem, inner=inner, present=False))
            return
        hit = self.find(g, lambda v: v.kind in "ts" and v.elem != BF16)
        if not hit:
            return
        out = self.fresh("opt")
        self.node(g, "Optional", [hit[0]], [out])
        g.add(out, V("o", hit[1].elem, inner=hit[1], present=True))

    def op_has(self, g):
        if self.opset < 15:
            return
        plain = self.opset >= 18 and self.p(0.2)
        hit = self.find(g, lambda v: v.kind == "o" or (plain and v.kind in "ts"))
        if not hit:
            return
        out = self.fresh("has")
        self.node(g, "OptionalHasElement", [hit[0]], [out])
        known = True if hit[1].kind != "o" else hit[1].present
        g.add(out, V("t", TP.BOOL, (), known=known))

    def op_get(self, g):
        if self.opset < 15:
            return
        plain = self.opset >= 18 and self.p(0.2)
        hit = self.find(g, lambda v: (v.kind == "o" and v.present is True)
                        or (plain and v.kind in "ts"))
        if not hit:
            return
        out = self.fresh("get")
        self.node(g, "OptionalGetElement", [hit[0]], [out])
        g.add(out, hit[1].inner if hit[1].kind == "o" else hit[1])

    # ---- control flow --------------------------------------------------------------------------
    def kind_ok(self, v, op):
        """May v be carried by If/Loop at this opset (If/Loop-11: tensors; 13: + sequences;
        16: + optionals and bfloat16)."""
        if v.kind == "s":
            return self.opset >= 13
        if v.kind == "o":
            return self.opset >= 16
        return v.elem != BF16 or self.opset >= 16

    def body(self, g, name):
        return Graph(self, g, name, g.depth + 1)

    def fill(self, g, n):
        ops = [self.op_identity, self.op_const, self.op_add, self.op_not, self.op_shape,
               self.op_unsqueeze, self.op_slice, self.op_seq_construct, self.op_seq_empty,
               self.op_seq_insert, self.op_seq_erase, self.op_seq_at, self.op_seq_length,
               self.op_split, self.op_concat, self.op_optional, self.op_has, self.op_get,
               self.op_identity, self.op_seq_at, self.op_concat] + self.kernel_ops()
        cf = [self.op_if, self.op_loop, self.op_scan, self.op_seqmap]
        for _ in range(n):
            if g.depth < self.max_depth and self.p(0.25 if g.depth == 0 else 0.15):
                self.pick(cf)(g)
            else:
                self.pick(ops)(g)

    def cond(self, g):
        hit = self.find(g, lambda v: v.kind == "t" and v.elem == TP.BOOL and v.shape == ())
        if hit and self.p(0.6):
            return hit
        c = self.scalar(g, TP.BOOL, self.p(0.5))
        return c, g.scope[c]

    def make_graph(self, g, outputs, declare=True, exact_inputs=0, exact_outputs=False):
        """GraphProto of g; outputs: [(name, V)]. The first exact_inputs inputs, and every
        output when exact_outputs, declare their full shape (ONNX Runtime needs the shapes of a
        Loop body's iteration number and condition, and of all Scan body outputs)."""
        ins = [helper.make_value_info(n, v.type_proto(self.rng, exact=i < exact_inputs))
               for i, (n, v) in enumerate(g.inputs)]
        outs = []
        for n, v in outputs:
            if declare or exact_outputs or self.p(0.7):
                outs.append(helper.make_value_info(n, v.type_proto(self.rng,
                                                                   exact=exact_outputs)))
            else:
                vi = onnx.ValueInfoProto()
                vi.name = n
                outs.append(vi)
        return helper.make_graph(g.nodes, g.name, ins, outs, initializer=g.inits)

    def op_if(self, g):
        c, _ = self.cond(g)
        k = int(self.rng.integers(1, 4))
        want = []
        for _ in range(k):
            hit = self.find(g, lambda v: self.kind_ok(v, "If"))
            if hit is None or self.p(0.3):
                e = self.pick([t for t in ALL_TYPES if t != BF16 or self.opset >= 16])
                want.append(V("t", e, self.random_shape()))
            else:
                want.append(hit[1])
        results, branches = [], []
        for bname in ("then", "else"):
            b = self.body(g, self.fresh(bname))
            self.fill(b, int(self.rng.integers(0, 5)))
            outs, used = [], set()
            for v in want:
                if self.p(0.3) and v.kind == "t":  # a different shape in this branch
                    v = V("t", v.elem, self.random_shape())
                name = self.synth(b, v)
                if name in used or name not in b.scope or self.p(0.2):
                    name = self.copy(b, name)
                used.add(name)
                outs.append((name, dict(b.visible())[name]))
            branches.append(self.make_graph(b, outs, declare=self.p(0.6)))
            results.append(outs)
        names = [self.fresh("if") for _ in want]
        self.node(g, "If", [c], names, then_branch=branches[0], else_branch=branches[1])
        for i, n in enumerate(names):
            g.add(n, results[0][i][1].merge(results[1][i][1]))

    def copy(self, b, name):
        out = self.fresh("cp")
        v = dict(b.visible())[name]
        if v.kind == "s" and self.opset < 14 or v.kind == "o" and self.opset < 16:
            # Identity cannot carry it at this opset: build an equal value instead.
            v2 = V(v.kind, v.elem, v.shape, v.length, v.minlen, v.inner, v.present)
            if v.kind == "s" and v.length is None:
                return name if name in b.scope else self.synth(b, V("s", v.elem, v.shape, 0, 0))
            return self.synth(b, v2)
        self.node(b, "Identity", [name], [out])
        return b.add(out, v)

    def op_loop(self, g):
        carried = []
        for _ in range(int(self.rng.integers(0, 4))):
            # No string tensors: ONNX Runtime 1.30 moves a carried string tensor's strings out
            # (the Loop's output and the outer value it came from then read as empty strings).
            hit = self.find(g, lambda v: self.kind_ok(v, "Loop") and (
                v.kind != "t" or (v.shape is not None and v.elem != TP.STRING)))
            if hit:
                carried.append(hit)
        trips = int(self.rng.integers(0, 4))
        m_name = ""
        if self.p(0.8):
            m_name = self.scalar(g, TP.INT64, trips)
        cond_mode = self.pick(["pass", "pass", "not", "false"]) if m_name else self.pick(
            ["not", "false"])
        c_name, c_init = "", True
        if self.p(0.6) or not m_name:
            c_init = self.p(0.85)
            c_name = self.scalar(g, TP.BOOL, c_init)
        if not m_name:
            trips = 1 if c_init else 0
        elif not c_init:
            trips = 0
        elif cond_mode != "pass":
            trips = min(trips, 1)
        b = self.body(g, self.fresh("loop_body"))
        it, cin = self.fresh("i"), self.fresh("cond")
        b.inputs = [(it, V("t", TP.INT64, ())), (cin, V("t", TP.BOOL, ()))]
        b.add(it, b.inputs[0][1])
        b.add(cin, V("t", TP.BOOL, ()))
        plans = []
        for src, v in carried:
            name = self.fresh("v")
            if v.kind == "t":
                mode = self.pick(["pass", "add", "replace"]) if self.add_ok(v.elem, b) else \
                    self.pick(["pass", "replace"])
                if mode == "add":
                    self.note_add(v.elem, b)  # before fill(b) adds others
                bv = v
            elif v.kind == "s":
                mode = self.pick(["pass", "grow", "fresh"])
                k = int(self.rng.integers(0, 3))
                lo = v.minlen if mode != "fresh" else min(v.minlen, k)
                bv = V("s", v.elem, v.shape, None, lo)
                if v.shape is None and mode == "fresh":
                    mode = "pass"
            else:
                mode = self.pick(["pass", "wrap", "empty"] +
                                 (["unwrap"] if v.present and v.inner.kind == "t" else []))
                pres = v.present if mode == "pass" else (
                    True if mode == "wrap" and v.present else (
                        False if mode == "empty" and v.present is False else None))
                inner = v.inner
                if inner.kind == "s":
                    inner = V("s", inner.elem, inner.shape, inner.length, inner.minlen)
                bv = V("o", v.elem, inner=inner, present=pres)
                if mode == "wrap" and inner.kind == "s" and inner.length is None:
                    mode = "pass"
                    bv.present = v.present
            b.inputs.append((name, bv))
            b.add(name, bv)
            plans.append((name, v, bv, mode, k if v.kind == "s" else 0))
        self.fill(b, int(self.rng.integers(0, 6)))
        outs = []
        if cond_mode == "pass":
            outs.append((self.copy(b, cin) if self.p(0.5) else cin, V("t", TP.BOOL, ())))
        elif cond_mode == "not":
            co = self.fresh("ncond")
            self.node(b, "Not", [cin], [co])
            outs.append((b.add(co, V("t", TP.BOOL, ())), V("t", TP.BOOL, ())))
        else:
            outs.append((self.scalar(b, TP.BOOL, False), V("t", TP.BOOL, ())))
        finals = []
        for name, v, bv, mode, k in plans:
            if v.kind == "t":
                if mode == "pass":
                    o = self.copy(b, name) if self.p(0.5) else name
                elif mode == "add":
                    other = self.synth(b, V("t", v.elem, tuple(1 if self.p(0.3) else d
                                                               for d in v.shape)))
                    o = self.fresh("acc")
                    self.node(b, "Add", [name, other], [o])
                    b.add(o, v)
                else:
                    o = self.synth(b, v)
                    if o not in b.scope or o in [x for x, _ in outs] or is_input(b, o):
                        o = self.copy(b, o)
                final = v
            elif v.kind == "s":
                if mode == "pass":
                    o = self.copy(b, name)
                    final = v
                elif mode == "grow":
                    x, _ = self.tensor_for_seq(b, v.elem, v.shape)
                    o = self.fresh("grow")
                    ins = [name, x]
                    if self.p(0.3):
                        ins.append(self.scalar(b, TP.INT64, 0))
                    self.node(b, "SequenceInsert", ins, [o])
                    b.add(o, bv)
                    length = None if v.length is None else v.length + trips
                    shape = v.shape
                    if v.shape is None and v.length == 0 and trips > 0:
                        shape = None
                    final = V("s", v.elem, shape if trips == 0 else (
                        v.shape if v.length else None) if v.shape is None else v.shape,
                        length, v.minlen + trips)
                else:
                    o = self.synth(b, V("s", v.elem, v.shape, k, k))
                    if o not in b.scope or o in [x for x, _ in outs]:
                        o = self.copy(b, o)
                    final = v if trips == 0 else V("s", v.elem, v.shape, k, k)
            else:
                if mode == "pass":
                    o = self.copy(b, name) if self.p(0.5) else name
                    final = v
                elif mode == "wrap":
                    inner = self.synth(b, v.inner)
                    o = self.fresh("wrap")
                    self.node(b, "Optional", [inner], [o])
                    b.add(o, bv)
                    final = v if trips == 0 else V("o", v.elem, inner=v.inner, present=True)
                elif mode == "unwrap":
                    # The body returns the optional's tensor, not an optional: ONNX Runtime
                    # re-wraps it for the next iteration and the Loop's output is the tensor
                    # (test_loop16_seq_none relies on it; the spec is silent).
                    o = self.fresh("unwrap")
                    self.node(b, "OptionalGetElement", [name], [o])
                    bv = v.inner
                    b.add(o, bv)
                    final = v.inner
                else:
                    o = self.fresh("none")
                    self.node(b, "Optional", [], [o], type=v.inner.type_proto(self.rng, False))
                    b.add(o, bv)
                    final = v if trips == 0 else V("o", v.elem, inner=v.inner, present=False)
            outs.append((o, bv))
            finals.append(final)
        scans = []
        for _ in range(int(self.rng.integers(0, 3))):
            # No strings: ONNX Runtime 1.30 moves a string tensor the body returns into the
            # stacked output, so a constant or outer value reads as empty strings afterwards.
            hit = self.find(b, lambda v: v.kind == "t" and v.shape is not None and (
                v.elem != BF16 or self.opset >= 16) and v.elem != TP.STRING, outer=0.3)
            if hit:
                o = hit[0] if hit[0] in b.scope and hit[0] not in [x for x, _ in outs] \
                    and not is_input(b, hit[0]) \
                    else self.copy(b, hit[0])
                outs.append((o, hit[1]))
                scans.append(hit[1])
        if not plans and not scans:  # Loop needs an output: stack the iteration numbers
            outs.append((self.copy(b, it), b.inputs[0][1]))
            scans.append(b.inputs[0][1])
        outs = [(o if o not in [x for x, _ in outs[:i]] else self.copy(b, o), v)
                for i, (o, v) in enumerate(outs)]
        # Zero iterations: the scan outputs' shapes come from shape inference, which sees more
        # in ONNX Runtime (constant Slice starts, Unsqueeze-13 axes) than in idem; declaring
        # them keeps the live stage to what both know (the frozen cases cover the rest).
        body = self.make_graph(b, outs, declare=self.p(0.8), exact_inputs=2,
                               exact_outputs=trips == 0 and bool(scans))
        names = [self.fresh("lo") for _ in range(len(plans) + len(scans))]
        self.node(g, "Loop", [m_name, c_name] + [s for s, _ in carried], names, body=body)
        for n, f in zip(names, finals):
            g.add(n, f)
        for n, v in zip(names[len(plans):], scans):
            # After zero iterations the scan output's shape is a runtime choice; leave it unknown.
            g.add(n, V("t", v.elem, (trips,) + v.shape if trips > 0 else None))

    def op_scan(self, g):
        if self.opset < 9:
            return
        states = []
        for _ in range(int(self.rng.integers(0, 3))):
            # No string states: ONNX Runtime 1.30 moves the strings of a body constant returned
            # as a state out of it (later iterations and the final state read empty strings).
            hit = self.find(g, lambda v: v.kind == "t" and v.shape is not None
                            and self.scan_ok(v) and v.elem != TP.STRING)
            if hit:
                states.append(hit)
        hit = self.find(g, lambda v: v.kind == "t" and v.shape is not None and len(v.shape) >= 1
                        and self.scan_ok(v))
        if not hit:
            return
        scan_ins = [hit]
        r0 = len(hit[1].shape)
        ax0 = int(self.rng.integers(0, r0))
        n = hit[1].shape[ax0]
        axes = [ax0]
        if self.p(0.4):
            shape = list(self.random_shape(2))
            a = int(self.rng.integers(0, len(shape) + 1))
            shape.insert(a, n)
            c = self.const(g, self.pick(IO_TYPES), tuple(shape))
            scan_ins.append((c, g.scope[c]))
            axes.append(a)
        b = self.body(g, self.fresh("scan_body"))
        plans = []
        for src, v in states:
            name = self.fresh("st")
            b.inputs.append((name, v))
            b.add(name, v)
            plans.append((name, v))
        for (src, v), a in zip(scan_ins, axes):
            name = self.fresh("el")
            ev = V("t", v.elem, tuple(d for i, d in enumerate(v.shape) if i != a))
            b.inputs.append((name, ev))
            b.add(name, ev)
        self.fill(b, int(self.rng.integers(0, 5)))
        outs = []
        for name, v in plans:
            if self.add_ok(v.elem, b) and self.p(0.4):
                other = self.synth(b, V("t", v.elem, v.shape))
                o = self.fresh("acc")
                self.note_add(v.elem, b)
                self.node(b, "Add", [name, other], [o])
                b.add(o, v)
            else:
                o = self.synth(b, v)
                if o not in b.scope or o in [x for x, _ in outs] or is_input(b, o) or self.p(0.3):
                    o = self.copy(b, o)
            outs.append((o, v))
        scans, out_axes, out_dirs = [], [], []
        for _ in range(int(self.rng.integers(1, 3))):
            hit = self.find(b, lambda v: v.kind == "t" and v.shape is not None and self.scan_ok(v),
                            outer=0.3)
            if not hit:
                continue
            o = hit[0] if hit[0] in b.scope and hit[0] not in [x for x, _ in outs] \
                and not is_input(b, hit[0]) else self.copy(b, hit[0])
            outs.append((o, hit[1]))
            r = len(hit[1].shape)
            a = int(self.rng.integers(-(r + 1), r + 1))
            out_axes.append(a)
            out_dirs.append(int(self.p(0.4)))
            shape = list(hit[1].shape)
            shape.insert(a % (r + 1), n)
            scans.append(V("t", hit[1].elem, tuple(shape)))
        if not scans:
            return
        outs = [(o if o not in [x for x, _ in outs[:i]] else self.copy(b, o), v)
                for i, (o, v) in enumerate(outs)]
        body = self.make_graph(b, outs, declare=True, exact_outputs=True)
        attrs = {"num_scan_inputs": len(scan_ins)}
        if any(axes) or self.p(0.3):
            attrs["scan_input_axes"] = [a - len(v.shape) if self.p(0.3) else a
                                        for (_, v), a in zip(scan_ins, axes)]
        if self.p(0.4):
            attrs["scan_input_directions"] = [int(self.p(0.5)) for _ in scan_ins]
        if any(out_axes) or self.p(0.3):
            attrs["scan_output_axes"] = out_axes
        if any(out_dirs):
            attrs["scan_output_directions"] = out_dirs
        names = [self.fresh("so") for _ in range(len(plans) + len(scans))]
        self.node(g, "Scan", [s for s, _ in states] + [s for s, _ in scan_ins], names,
                  body=body, **attrs)
        for nm, (_, v) in zip(names, plans):
            g.add(nm, v)
        for nm, v in zip(names[len(plans):], scans):
            g.add(nm, v)

    def op_seqmap(self, g):
        if self.opset < 17:
            return
        hit = self.find(g, lambda v: v.kind == "s")
        if not hit:
            return
        s, v = hit
        extra = []
        for _ in range(int(self.rng.integers(0, 3))):
            if self.p(0.5):
                e = self.find(g, lambda w: w.kind == "t")
            else:
                e = self.find(g, lambda w: w.kind == "s" and w.length is not None
                              and w.length == v.length)
            if e:
                extra.append(e)
        b = self.body(g, self.fresh("map_body"))
        for src, w in [hit] + extra:
            name = self.fresh("m")
            bv = V("t", w.elem, w.shape) if w.kind == "s" else w
            b.inputs.append((name, bv))
            b.add(name, bv)
        self.fill(b, int(self.rng.integers(0, 5)))
        outs = []
        for _ in range(int(self.rng.integers(1, 3))):
            h = self.find(b, lambda w: w.kind == "t" and self.seq_ok(w.elem), outer=0.3)
            if not h:
                continue
            o = h[0] if h[0] in b.scope and h[0] not in [x for x, _ in outs] \
                else self.copy(b, h[0])
            outs.append((o, h[1]))
        if not outs:
            return
        outs = [(o if o not in [x for x, _ in outs[:i]] else self.copy(b, o), w)
                for i, (o, w) in enumerate(outs)]
        body = self.make_graph(b, outs, declare=True)
        names = [self.fresh("map") for _ in outs]
        self.node(g, "SequenceMap", [s] + [e for e, _ in extra], names, body=body)
        for nm, (_, w) in zip(names, outs):
            g.add(nm, V("s", w.elem, w.shape, v.length, v.minlen))

    # ---- the model -----------------------------------------------------------------------------
    def model(self):
        self.max_depth = int(self.rng.choice([1, 2, 3], p=[.3, .4, .3]))
        g = Graph(self, None, "main", 0)
        for _ in range(int(self.rng.integers(1, 4))):
            elem = self.pick(IO_TYPES)
            shape = self.random_shape()
            name = self.fresh("in")
            arr = random_array(self.rng, elem, shape)
            v = V("t", elem, shape)
            g.inputs.append((name, v))
            g.add(name, v)
            self.feeds.append((name, elem, arr))
        self.fill(g, int(self.rng.integers(3, 12)))
        # Outputs: tensors ORT can return; sequences and optionals observed through operators.
        outputs = []
        for name, v in list(g.scope.items()):
            if v.kind == "s" and self.p(0.5):
                if v.minlen >= 1 and self.p(0.6):
                    pos = self.scalar(g, TP.INT64, self.pick([0, -v.minlen]))
                    o = self.fresh("seq_at")
                    self.node(g, "SequenceAt", [name, pos], [o])
                    g.add(o, V("t", v.elem, v.shape))
                o = self.fresh("seq_len")
                self.node(g, "SequenceLength", [name], [o])
                g.add(o, V("t", TP.INT64, ()))
            elif v.kind == "o" and self.p(0.5) and self.opset >= 15:
                o = self.fresh("has")
                self.node(g, "OptionalHasElement", [name], [o])
                g.add(o, V("t", TP.BOOL, ()))
                if v.present and v.inner.kind == "t":
                    o = self.fresh("get")
                    self.node(g, "OptionalGetElement", [name], [o])
                    g.add(o, v.inner)
        cands = [(n, v) for n, v in g.scope.items() if v.kind == "t" and v.elem in IO_TYPES]
        bf = [(n, v) for n, v in g.scope.items() if v.kind == "t" and v.elem == BF16]
        for n, v in bf[:2]:
            o = self.fresh("bf_shape")
            self.node(g, "Shape", [n], [o])
            cands.append((g.add(o, V("t", TP.INT64, None)), V("t", TP.INT64, None)))
        # Prefer what came last (it depends on the most); always some.
        k = min(len(cands), int(self.rng.integers(2, 7)))
        chosen = cands[-k:] if self.p(0.5) else [cands[i] for i in sorted(
            self.rng.choice(len(cands), size=k, replace=False))]
        init_names = {t.name for t in g.inits}
        for n, v in chosen:
            if n in [x for x, _ in outputs] or n in init_names or self.p(0.3):
                o = self.fresh("out")
                self.node(g, "Identity", [n], [o])
                n = o
            outputs.append((n, v))
        gp = self.make_graph(g, outputs)
        for elem in self.float_add:
            one_nan(gp, elem)
            self.feeds = [(n, e, canonical_nan(a, e) if e == elem else a)
                          for n, e, a in self.feeds]
        if self.f16_add:
            no_f16_nan(gp)
            self.feeds = [(n, e, quiet_f16(a) if e == F16 else a) for n, e, a in self.feeds]
        ir = 8 if self.opset <= 17 else (9 if self.opset <= 19 else 10)
        m = helper.make_model(gp, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="gen_ort_differential")
        m.ir_version = ir
        return m


def feed_json(name, elem, arr):
    d = {"name": name, "type": ORT_NAME[elem], "dims": list(arr.shape)}
    if elem == TP.STRING:
        d["strings"] = [x.decode() for x in arr.reshape(-1)]
    else:
        d["hex"] = np.ascontiguousarray(arr).tobytes().hex()
    return d


def generate(outdir, seed, count, tolerant_dir=None):
    """Models into outdir/ortdiff_SEED (bit-exact) and, for models with an accumulating operator,
    tolerant_dir (default outdir)/ortdiff_tol_SEED (compared within rtol 1e-3 / atol 1e-5)."""
    os.makedirs(outdir, exist_ok=True)
    if tolerant_dir:
        os.makedirs(tolerant_dir, exist_ok=True)
    dirs = []
    for i in range(count):
        gen = Gen(seed + i)
        m = gen.model()
        if gen.opset <= 17:
            try:
                onnx.checker.check_model(m)
            except onnx.checker.ValidationError as e:
                # onnx 1.12's checker wants a shape on every declared tensor type; ONNX (and
                # ONNX Runtime) allow leaving it out, which the generator does on purpose.
                if "'shape' of 'type' is required" not in str(e):
                    raise
        if gen.tolerant:
            d = os.path.join(tolerant_dir or outdir, f"ortdiff_tol_{seed + i:06d}")
        else:
            d = os.path.join(outdir, f"ortdiff_{seed + i:06d}")
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(m.SerializeToString())
        for k, (name, elem, arr) in enumerate(gen.feeds):
            with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
                f.write(to_tensor(name, elem, arr).SerializeToString())
        with open(os.path.join(d, "feeds.json"), "w") as f:
            json.dump([feed_json(*x) for x in gen.feeds], f)
        dirs.append(d)
    return dirs


def finish(dirs):
    """ort.json -> output_K.pb; folders ORT refused are removed. Returns (kept, refused)."""
    elem_of = {v: k for k, v in ORT_NAME.items()}
    kept, refused = [], []
    for d in dirs:
        with open(os.path.join(d, "ort.json")) as f:
            r = json.load(f)
        if "error" in r:
            refused.append((d, r["stage"], r["error"]))
            shutil.rmtree(d)
            continue
        for k, o in enumerate(r["outputs"]):
            elem = elem_of[o["type"]]
            if elem == TP.STRING:
                arr = np.array([s.encode() for s in o["strings"]], dtype=object)
            else:
                arr = np.frombuffer(bytes.fromhex(o["hex"]), dtype=NP[elem])
            arr = arr.reshape(o["dims"])
            with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
                f.write(to_tensor(o["name"], elem, arr).SerializeToString())
        os.remove(os.path.join(d, "ort.json"))
        os.remove(os.path.join(d, "feeds.json"))
        kept.append(d)
    return kept, refused


def run_ort(dirs, node_modules):
    """Writes ort.json into each folder. ONNX Runtime crashes on some models (SIGFPE): the
    crashing case is recorded as refused and the runner restarted after it."""
    env = dict(os.environ, NODE_PATH=node_modules)
    todo = list(dirs)
    while todo:
        subprocess.run(["node", os.path.join(HERE, "..", "ort", "run_cases.js")] + todo[:50],
                       env=env, timeout=600, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        done = [d for d in todo[:50] if os.path.exists(os.path.join(d, "ort.json"))]
        rest = todo[len(done):]
        if len(done) < min(50, len(todo)):  # rest[0] crashed the runner
            with open(os.path.join(rest[0], "ort.json"), "w") as f:
                json.dump({"error": "ONNX Runtime crashed", "stage": "crash"}, f)
            rest = rest[1:]
        todo = rest


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("generate")
    a.add_argument("outdir")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--count", type=int, default=100)
    a.add_argument("--tolerant-dir", default=None,
                   help="where models compared within tolerances go (default: outdir)")
    a = sub.add_parser("oracle")
    a.add_argument("outdir", nargs="+")
    a.add_argument("--node-modules", required=True)
    a = sub.add_parser("live")
    a.add_argument("idem")
    a.add_argument("node_modules")
    a.add_argument("--seed", type=int, default=None)
    a.add_argument("--count", type=int, default=200)
    a.add_argument("--keep", default=None, help="copy failing cases here")
    a.add_argument("--verbose", action="store_true", help="print why ONNX Runtime refused")
    args = ap.parse_args()
    if args.cmd == "generate":
        generate(args.outdir, args.seed, args.count, args.tolerant_dir)
        return 0
    if args.cmd == "oracle":
        dirs = sorted(os.path.join(o, x) for o in args.outdir for x in os.listdir(o)
                      if os.path.isdir(os.path.join(o, x)))
        run_ort(dirs, args.node_modules)
        kept, refused = finish(dirs)
        for d, stage, e in refused:
            print(f"ORT refused {os.path.basename(d)} ({stage}): {e.splitlines()[0][:200]}")
        print(f"{len(kept)} cases, {len(refused)} refused by ONNX Runtime")
        return 0
    if shutil.which("node") is None or not os.path.isdir(
            os.path.join(args.node_modules, "onnxruntime-node")):
        print(f"SKIP: ONNX Runtime not installed ({args.node_modules}/onnxruntime-node; "
              "run IDEM_ORT=1 bash scripts/setup.sh)")
        return 77
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little") * 1000
    print(f"seed {seed}, {args.count} models")
    with tempfile.TemporaryDirectory() as tmp:
        dirs = generate(tmp, seed, args.count)
        run_ort(dirs, args.node_modules)
        kept, refused = finish(dirs)
        if args.verbose:
            for d, stage, e in refused:
                print(f"ORT refused {os.path.basename(d)} ({stage}): {e.splitlines()[0][:300]}")
        print(f"{len(kept)} run by ONNX Runtime, {len(refused)} refused by it (skipped)")
        exact = [d for d in kept if not os.path.basename(d).startswith("ortdiff_tol_")]
        tolerant = [d for d in kept if os.path.basename(d).startswith("ortdiff_tol_")]
        failed = False
        for cases, flags in ((exact, []), (tolerant, TOLERANCES)):
            if not cases:
                continue
            print(f"{len(cases)} cases " + (f"within {' '.join(flags)}" if flags else
                                             "bit for bit"))
            r = subprocess.run([args.idem, "test", "-q"] + flags + cases, capture_output=True,
                               text=True, timeout=1200)
            print(r.stdout + r.stderr)
            failed = failed or r.returncode != 0
            if r.returncode != 0 and args.keep:
                os.makedirs(args.keep, exist_ok=True)
                for line in r.stdout.splitlines():
                    if line.startswith("FAIL "):
                        name = line.split()[1].rstrip(":")
                        shutil.copytree(os.path.join(tmp, name), os.path.join(args.keep, name),
                                        dirs_exist_ok=True)
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
