"""The operators of the real models for gen_ort_differential.py (issue 17): random but valid
AveragePool, BatchNormalization, Cast, Clip, Concat, ConstantOfShape, Conv, ConvTranspose, Div,
Equal, Flatten, Gather, Gemm, GlobalAveragePool, GreaterOrEqual, HardSigmoid, LSTM, LeakyRelu,
Log, MatMul, Max, MaxPool, Mul, Neg, Pad, Pow, ReduceMax, ReduceMean, Relu, Reshape, Resize,
Sigmoid, Size, Softmax, Split, Sqrt, Squeeze, Sub, Tanh, Transpose nodes with random valid
attributes and shapes; every output shape is computed here (the generator tracks shapes exactly).

A model holding an accumulating or transcendental operator (Conv, ConvTranspose, Gemm, MatMul,
LSTM, AveragePool, GlobalAveragePool, BatchNormalization, Softmax, ReduceMean, linear/cubic
Resize, Sigmoid, Tanh, Log, Pow, HardSigmoid) is marked `tolerant`: it is compared within ONNX's
backend-test tolerances (rtol 1e-3, atol 1e-5; integers, bools, strings and shapes exact). Every
other model stays bit-exact. Their operands are "moderate" data (uniform in [-1, 1], no NaN or
infinity, small integers), so a different summation order cannot move a result past the
tolerance through cancellation.

Where idem and ONNX Runtime 1.30 differ (each documented at the kernel, the spec deciding), the
generator keeps the models out of the difference:
  - Conv/pools auto_pad SAME_* only with dilations 1 (ONNX Runtime refuses Conv SAME with
    dilations, and pads pools with the undilated kernel); pools' VALID without ceil_mode (ONNX
    Runtime's ceil_mode can add an output there); SAME only where its pads are not negative;
  - ConvTranspose: no SAME_* (ONNX Runtime gives the full size where in * stride exceeds it) and
    output_shape at most the full output (it refuses larger ones);
  - LSTM: layout 0 (ONNX Runtime's CPU LSTM refuses layout 1); Affine, ThresholdedRelu and
    ScaledTanh only with explicit activation_alpha/beta (ONNX Runtime's defaults are 0, the spec's
    those of the operators); ThresholdedRelu not at all (x >= alpha in the spec, x > alpha in ONNX
    Runtime); sequence_lens >= 1;
  - Pad: no wrap (ONNX Runtime 1.30 refuses it); operand types as ONNX Runtime's kernels have
    them (LSTM, AveragePool, LeakyRelu, HardSigmoid float; Clip-11 float), so few models are
    refused;
  - MaxPool, Max, Clip, Relu: no NaN inputs (ONNX Runtime's NaN handling follows its SIMD min/max,
    idem the spec/numpy);
  - Cast: no float32/float16 -> string (idem prints float32 with the shortest round-trip digits,
    as numpy and the official tests; ONNX Runtime "%.8g"), float -> integer only in range (out
    of range is undefined; ONNX Runtime's vectorized and scalar loops disagree), no float16 NaN
    (its payload depends on ONNX Runtime's 8-wide blocks);
  - Resize: align_corners only with sizes (with scales idem takes the fractional scale * dim as
    the ONNX reference does); no tf_half_pixel_for_nn past 12;
  - float16 arithmetic only where ONNX Runtime has a float16 kernel (it computes float16 Sub,
    Mul, Div, Pow in float between inserted Casts and rounds chains once: not used);
  - integer Div: no zero divisor (ONNX Runtime crashes with SIGFPE); integer Pow: small bases and
    exponents (ONNX Runtime goes through double).
"""
import numpy as np
from onnx import TensorProto as TP, helper

F16, BF16 = TP.FLOAT16, TP.BFLOAT16
FLOATS = (TP.FLOAT, TP.DOUBLE, F16)
NP = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT8: np.int8,
      TP.INT16: np.int16, TP.INT32: np.int32, TP.INT64: np.int64, TP.UINT8: np.uint8,
      TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64, TP.BOOL: np.bool_}


def moderate_array(rng, elem, shape, positive=False, nonzero=False):
    """Values no summation order can move past the tolerances: floats in [-1, 1] (or (0.1, 2]
    when positive), small integers, random bools."""
    n = int(np.prod(shape)) if shape else 1
    if elem in FLOATS or elem == BF16:
        if positive:
            vals = rng.uniform(0.1, 2.0, size=n)
        else:
            vals = rng.uniform(-1.0, 1.0, size=n)
        if elem == BF16:
            return (vals.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).reshape(shape)
        return vals.astype(NP[elem]).reshape(shape)
    if elem == TP.BOOL:
        return (rng.integers(0, 2, size=n) == 1).reshape(shape)
    if elem == TP.STRING:
        vals = [str(int(v)) for v in rng.integers(-20, 20, size=n)]
        return np.array([v.encode() for v in vals], dtype=object).reshape(shape)
    lo = 1 if positive else (0 if np.issubdtype(NP[elem], np.unsignedinteger) else -3)
    vals = rng.integers(lo, 4, size=n)
    if nonzero:
        vals[vals == 0] = 1
    return vals.astype(NP[elem]).reshape(shape)


def conv_axis(in_, k, s, d, pb, pe):
    ek = (k - 1) * d + 1
    return (in_ + pb + pe - ek) // s + 1


class KernelOps:
    """Mixed into Gen: needs self.rng, p, pick, fresh, node, const, find, opset, feeds."""

    # ---- operands ------------------------------------------------------------------------------
    def moderate(self, g, elem, shape, positive=False, nonzero=False, reuse=True):
        """A tensor of exactly elem and shape holding moderate values: an existing moderate
        value, a constant, or (in the main graph) a new graph input."""
        shape = tuple(shape)
        if reuse and not positive and not nonzero and self.p(0.3):
            hit = self.find(g, lambda v: v.kind == "t" and v.elem == elem and v.shape == shape
                            and getattr(v, "moderate", False))
            if hit:
                return hit[0]
        arr = moderate_array(self.rng, elem, shape, positive, nonzero)
        if g.parent is None and elem != BF16 and self.p(0.3):
            name = self.fresh("in")
            v = self.V_cls("t", elem, shape)
            v.moderate = True
            g.inputs.append((name, v))
            g.add(name, v)
            self.feeds.append((name, elem, arr))
            return name
        name = self.const(g, elem, shape, arr)
        g.scope[name].moderate = True
        return name

    def out(self, g, elem, shape, moderate=False):
        name = self.fresh("k")
        v = self.V_cls("t", elem, None if shape is None else tuple(int(x) for x in shape))
        v.moderate = moderate
        g.add(name, v)
        return name

    def tensor(self, g, pred, elem=None, shape=None, moderate_only=False):
        """An existing tensor with a known shape satisfying pred, or a new moderate one."""
        if self.p(0.6):
            hit = self.find(g, lambda v: v.kind == "t" and v.shape is not None and pred(v) and (
                not moderate_only or getattr(v, "moderate", False)))
            if hit:
                return hit
        e = elem if elem is not None else TP.FLOAT
        s = shape
        for _ in range(50):
            if s is not None and pred(self.V_cls("t", e, tuple(s))):
                break
            s = self.random_shape()
        else:
            s = (1, 2)
        name = self.moderate(g, e, s, reuse=False)
        return name, g.scope.get(name) or dict(g.visible())[name]

    def dims(self, rank, lo=1, hi=None):
        hi = hi if hi is not None else 3
        return tuple(int(self.rng.integers(lo, hi + 1)) for _ in range(rank))

    # ---- elementwise ---------------------------------------------------------------------------
    def op_k_unary(self, g):
        op = self.pick(["Neg", "Sqrt", "Relu", "LeakyRelu"] if self.exact_only else
                       ["Neg", "Sqrt", "Log", "Tanh", "Sigmoid", "Relu", "LeakyRelu",
                        "HardSigmoid"])
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE])
        if op in ("LeakyRelu", "HardSigmoid"):
            elem = TP.FLOAT  # ONNX Runtime's CPU kernels: float only
        if op in ("Neg", "Relu") and self.opset >= 14 and self.p(0.2):
            elem = self.pick([TP.INT32, TP.INT64, TP.INT8])
        nan_ok = op not in ("Relu",)
        x, v = self.tensor(g, lambda v: v.elem == elem, elem, moderate_only=not nan_ok)
        attrs = {}
        if op == "LeakyRelu" and self.p(0.6):
            attrs["alpha"] = float(self.pick([0.1, 0.01, 2.0, -0.5]))
        if op == "HardSigmoid" and self.p(0.6):
            attrs["alpha"] = float(self.pick([0.2, 0.5, 1.0]))
            attrs["beta"] = float(self.pick([0.5, 0.0, 0.25]))
        if op in ("Log", "Tanh", "Sigmoid", "HardSigmoid"):
            self.tolerant = True
        o = self.out(g, elem, v.shape, moderate=op in ("Tanh", "Sigmoid", "HardSigmoid") or (
            getattr(v, "moderate", False) and op in ("Neg", "Relu", "LeakyRelu")))
        self.node(g, op, [x], [o], **attrs)

    def op_k_binary(self, g):
        ops = ["Sub", "Mul", "Div", "Pow", "Max", "Equal"]
        if self.opset >= 12:
            ops.append("GreaterOrEqual")
        if self.exact_only:
            ops.remove("Pow")
        op = self.pick(ops)
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64])
        if op == "Max" and self.opset < 12:
            elem = TP.FLOAT  # Max-8: floats only
        a, va = self.tensor(g, lambda v: v.elem == elem, elem,
                            moderate_only=op in ("Max", "Pow") or elem not in FLOATS)
        shape = list(va.shape[int(self.rng.integers(0, len(va.shape) + 1)):])
        shape = [1 if self.p(0.3) else d for d in shape]
        if self.p(0.2) and len(va.shape) < 3:
            shape = [int(self.rng.integers(1, 3))] + list(va.shape)
        nonzero = op == "Div" and elem not in FLOATS
        positive = op == "Pow"
        b = self.moderate(g, elem, shape, positive=positive, nonzero=nonzero)
        out_shape = np.broadcast_shapes(va.shape, tuple(shape))
        ins = [a, b] if (op in ("Div", "Pow") or self.p(0.5)) else [b, a]
        if op == "Pow":
            if elem not in FLOATS:
                # A small base: the exponent (1..3) keeps the power exact in double.
                ins = [self.moderate(g, elem, va.shape), b]
            else:
                ins = [self.moderate(g, elem, va.shape, positive=True), b]
            self.tolerant = True
        if op == "Max" and self.p(0.3):
            ins.append(self.moderate(g, elem, shape))
        out_elem = TP.BOOL if op in ("Equal", "GreaterOrEqual") else elem
        o = self.out(g, out_elem, out_shape)
        self.node(g, op, ins, [o])

    def op_k_clip(self, g):
        # ONNX Runtime's CPU Clip: float at 11; from 12 also double and integers.
        elem = self.pick([TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64]) if self.opset >= 12 else \
            TP.FLOAT
        x, v = self.tensor(g, lambda v: v.elem == elem, elem, moderate_only=True)
        ins = [x]
        lo = np.array(self.pick([-0.5, -1.0, 0.0]), NP[elem])
        hi = np.array(self.pick([0.5, 1.0, 0.25]), NP[elem])
        if elem not in FLOATS:
            lo, hi = np.array(-1, NP[elem]), np.array(2, NP[elem])
        mode = self.pick(["min", "max", "both", "none"])
        if mode in ("min", "both"):
            ins.append(self.const(g, elem, (), lo))
        elif mode == "max":
            ins.append("")
        if mode in ("max", "both"):
            ins.append(self.const(g, elem, (), hi))
        o = self.out(g, elem, v.shape, moderate=True)
        self.node(g, "Clip", ins, [o])

    def op_k_cast(self, g):
        types = [TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64, TP.INT8, TP.UINT8, TP.INT16, TP.BOOL,
                 F16, TP.STRING, TP.UINT16, TP.UINT32]
        frm = self.pick(types)
        to = self.pick(types + ([BF16] if self.opset >= 13 else []))
        if frm in (TP.FLOAT, F16) and to == TP.STRING:
            to = TP.INT32
        x, v = self.tensor(g, lambda v: v.elem == frm and (
            frm != F16 or getattr(v, "moderate", False)), frm,
                           moderate_only=frm in FLOATS and to not in FLOATS)
        if to == BF16:
            # Not a graph output type for ONNX Runtime's Node binding: back to float.
            mid = self.out(g, BF16, v.shape)
            self.node(g, "Cast", [x], [mid], to=BF16)
            o = self.out(g, TP.FLOAT, v.shape)
            self.node(g, "Cast", [mid], [o], to=TP.FLOAT)
            return
        o = self.out(g, to, v.shape)
        attrs = {"to": to}
        if self.opset >= 19 and self.p(0.2):
            attrs["saturate"] = 1
        self.node(g, "Cast", [x], [o], **attrs)

    # ---- data movement -------------------------------------------------------------------------
    def op_k_concat(self, g):
        x, v = self.tensor(g, lambda v: len(v.shape) >= 1 and v.elem != BF16)
        r = len(v.shape)
        axis = int(self.rng.integers(-r, r))
        a = axis % r
        ins, total = [x], v.shape[a]
        for _ in range(int(self.rng.integers(0, 3))):
            shape = list(v.shape)
            shape[a] = int(self.rng.integers(0, 3))
            total += shape[a]
            ins.append(self.moderate(g, v.elem, shape))
        shape = list(v.shape)
        shape[a] = total
        o = self.out(g, v.elem, shape)
        self.node(g, "Concat", ins, [o], axis=axis)

    def op_k_constant_of_shape(self, g):
        rank = int(self.rng.integers(0, 4))
        shape = self.dims(rank, 0, 3)
        if self.p(0.4):
            x, v = self.tensor(g, lambda v: v.elem != BF16 and len(v.shape) <= 3)
            s = self.fresh("shape")
            self.node(g, "Shape", [x], [s])
            g.add(s, self.V_cls("t", TP.INT64, (len(v.shape),)))
            shape = v.shape
        else:
            s = self.const(g, TP.INT64, (rank,), np.array(shape, np.int64))
        attrs = {}
        elem = TP.FLOAT
        if self.p(0.6):
            elem = self.pick([TP.FLOAT, TP.INT64, TP.INT32, TP.DOUBLE, TP.BOOL, TP.UINT8, TP.INT8])
            attrs["value"] = self.to_tensor_fn("value", elem, moderate_array(self.rng, elem, (1,)))
        o = self.out(g, elem, shape)
        self.node(g, "ConstantOfShape", [s], [o], **attrs)

    def op_k_pad(self, g):
        # The types ONNX Runtime's CPU Pad implements.
        types = (TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64, TP.UINT32, TP.UINT64, TP.INT8,
                 TP.UINT8, TP.BOOL)
        x, v = self.tensor(g, lambda v: len(v.shape) >= 1 and v.elem in types)
        r = len(v.shape)
        # No wrap: ONNX Runtime 1.30's CPU Pad refuses it ("Unexpected mode of 3").
        modes = ["constant", "reflect", "edge"]
        mode = self.pick(modes)
        axes = list(range(r))
        if self.opset >= 18 and self.p(0.3):
            k = int(self.rng.integers(1, r + 1))
            axes = sorted(self.rng.choice(r, size=k, replace=False).tolist())
        begins, ends, shape = [], [], list(v.shape)
        for a in axes:
            d = v.shape[a]
            if mode == "constant":
                b, e = (int(self.rng.integers(-min(d, 1), 3)), int(self.rng.integers(-min(d, 1), 3)))
                if d + b + e < 0:
                    e = -(d + b)
            elif d == 0:
                b = e = 0
            elif mode == "reflect":
                b, e = int(self.rng.integers(0, d)), int(self.rng.integers(0, d))
            else:
                b, e = int(self.rng.integers(0, 3)), int(self.rng.integers(0, 3))
            begins.append(b)
            ends.append(e)
            shape[a] = d + b + e
        ins = [x, self.const(g, TP.INT64, (2 * len(axes),), np.array(begins + ends, np.int64))]
        if mode == "constant" and self.p(0.5) and v.elem != TP.STRING:
            ins.append(self.const(g, v.elem, (), moderate_array(self.rng, v.elem, ())))
        if axes != list(range(r)):
            if len(ins) == 2:
                ins.append("")
            ins.append(self.const(g, TP.INT64, (len(axes),),
                                  np.array([a - r if self.p(0.3) else a for a in axes], np.int64)))
        o = self.out(g, v.elem, shape)
        attrs = {} if mode == "constant" and self.p(0.5) else {"mode": mode}
        self.node(g, "Pad", ins, [o], **attrs)

    def op_k_reshape(self, g):
        x, v = self.tensor(g, lambda v: v.elem != BF16)
        n = int(np.prod(v.shape)) if v.shape else 1
        # A target: the element count factored at random, with one -1 or 0s copying dims.
        target = []
        left = n
        for _ in range(int(self.rng.integers(0, 3))):
            divs = [d for d in range(1, left + 1) if left % d == 0] if left > 0 else [0, 1]
            d = self.pick(divs)
            target.append(d)
            left = left // d if d else left
        target.append(left if n > 0 else 0)
        shape = list(target)
        if n > 0 and self.p(0.4):
            i = int(self.rng.integers(len(target)))
            target[i] = -1
        allowzero = 0
        if any(d == 0 for d in target) and self.opset >= 14 and self.p(0.5):
            allowzero = 1
        elif any(d == 0 for d in target):
            return  # 0 would mean "copy the input's dim"
        o = self.out(g, v.elem, shape)
        attrs = {"allowzero": 1} if allowzero else {}
        self.node(g, "Reshape", [x, self.const(g, TP.INT64, (len(target),),
                                                np.array(target, np.int64))], [o], **attrs)

    def op_k_transpose(self, g):
        x, v = self.tensor(g, lambda v: v.elem != BF16 or self.opset >= 13)
        r = len(v.shape)
        perm = self.rng.permutation(r).tolist()
        attrs = {"perm": perm} if r and self.p(0.8) else {}
        if "perm" not in attrs:
            perm = list(range(r))[::-1]
        o = self.out(g, v.elem, tuple(v.shape[p] for p in perm))
        self.node(g, "Transpose", [x], [o], **attrs)

    def op_k_flatten(self, g):
        x, v = self.tensor(g, lambda v: v.elem != BF16 and len(v.shape) >= 1)
        r = len(v.shape)
        if r == 0:
            return
        axis = int(self.rng.integers(-r, r + 1))
        a = axis + r if axis < 0 else axis
        head = int(np.prod(v.shape[:a])) if a else 1
        tail = int(np.prod(v.shape[a:])) if a < r else 1
        o = self.out(g, v.elem, (head, tail))
        self.node(g, "Flatten", [x], [o], axis=axis)

    def op_k_gather(self, g):
        x, v = self.tensor(g, lambda v: len(v.shape) >= 1 and v.elem != BF16)
        r = len(v.shape)
        axis = int(self.rng.integers(-r, r))
        d = v.shape[axis]
        if d == 0:
            return
        a = axis % r
        if v.elem == TP.STRING and int(np.prod(v.shape[a + 1:])) > 1:
            # ONNX Runtime 1.30 gathers strings wrongly when a slice holds more than one: only
            # each slice's first string is copied, the others come back empty (seed 6375802068:
            # data [2,1,2], axis 1). idem gives the spec's result; a live seed must not hit this.
            return
        ishape = self.random_shape(2)
        idx = self.rng.integers(-d, d, size=int(np.prod(ishape)) if ishape else 1)
        it = self.pick([TP.INT64, TP.INT32])
        ind = self.const(g, it, ishape, idx.astype(NP[it]).reshape(ishape))
        o = self.out(g, v.elem, v.shape[:a] + tuple(ishape) + v.shape[a + 1:])
        self.node(g, "Gather", [x, ind], [o], axis=axis)

    def op_k_split(self, g):
        x, v = self.tensor(g, lambda v: len(v.shape) >= 1 and v.elem != BF16)
        r = len(v.shape)
        axis = int(self.rng.integers(-r, r))
        d = v.shape[axis]
        if d == 0:
            return
        a = axis % r
        ins, attrs = [x], {"axis": axis}
        if self.opset >= 18 and self.p(0.4):
            k = int(self.rng.integers(1, d + 1))
            size = -(-d // k)
            sizes = [size] * (d // size) + ([d % size] if d % size else [])
            if len(sizes) != k:
                return  # ONNX Runtime and the spec part ways on uneven num_outputs: skip
            attrs["num_outputs"] = k
        else:
            sizes, left = [], d
            while left > 0:
                c = int(self.rng.integers(1, left + 1))
                sizes.append(c)
                left -= c
            if self.p(0.7):
                if self.opset >= 13:
                    ins.append(self.const(g, TP.INT64, (len(sizes),), np.array(sizes, np.int64)))
                else:
                    attrs["split"] = sizes
            else:
                # Equal parts: implied by the output count (before 18) or num_outputs (18+,
                # which needs one of split and num_outputs).
                if len(set(sizes)) != 1:
                    sizes = [1] * d
                if self.opset >= 18:
                    attrs["num_outputs"] = len(sizes)
        outs = []
        for s in sizes:
            shape = list(v.shape)
            shape[a] = s
            outs.append(self.out(g, v.elem, shape))
        self.node(g, "Split", ins, outs, **attrs)

    def op_k_squeeze(self, g):
        x, v = self.tensor(g, lambda v: 1 in v.shape and v.elem != BF16)
        ones = [i for i, d in enumerate(v.shape) if d == 1]
        if not ones:
            return
        k = int(self.rng.integers(0, len(ones) + 1))
        axes = sorted(self.rng.choice(ones, size=k, replace=False).tolist()) if k else ones
        r = len(v.shape)
        shape = tuple(d for i, d in enumerate(v.shape) if i not in axes)
        o = self.out(g, v.elem, shape)
        given = [a - r if self.p(0.3) else a for a in axes]
        if self.opset >= 13:
            ins = [x] if (k == 0 and self.p(0.5)) else [
                x, self.const(g, TP.INT64, (len(given),), np.array(given, np.int64))]
            self.node(g, "Squeeze", ins, [o])
        else:
            self.node(g, "Squeeze", [x], [o], **({} if k == 0 else {"axes": given}))

    def op_k_size(self, g):
        x, v = self.tensor(g, lambda v: v.elem != BF16 or self.opset >= 13)
        o = self.out(g, TP.INT64, ())
        self.node(g, "Size", [x], [o])

    # ---- reductions and normalization ----------------------------------------------------------
    def op_k_reduce(self, g):
        mean = self.p(0.5) and not self.exact_only
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64])
        x, v = self.tensor(g, lambda v: v.elem == elem and 0 not in v.shape and len(v.shape) >= 1,
                           elem, shape=self.dims(int(self.rng.integers(1, 4))),
                           moderate_only=True)
        r = len(v.shape)
        k = int(self.rng.integers(0, r + 1))
        axes = sorted(self.rng.choice(r, size=k, replace=False).tolist()) if k else []
        keep = int(self.pick([0, 1]))
        reduced = axes if axes else list(range(r))
        shape = [1 if i in reduced else d for i, d in enumerate(v.shape)] if keep else [
            d for i, d in enumerate(v.shape) if i not in reduced]
        op = "ReduceMean" if mean else "ReduceMax"
        given = [a - r if self.p(0.3) else a for a in axes]
        attrs = {"keepdims": keep} if (keep == 0 or self.p(0.5)) else {}
        ins = [x]
        axes_input = (self.opset >= 18)
        if axes:
            if axes_input:
                ins.append(self.const(g, TP.INT64, (len(given),), np.array(given, np.int64)))
            else:
                attrs["axes"] = given
        if mean:
            self.tolerant = True
        o = self.out(g, elem, shape, moderate=True)
        self.node(g, op, ins, [o], **attrs)

    def op_k_softmax(self, g):
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE])
        x, v = self.tensor(g, lambda v: v.elem == elem and len(v.shape) >= 1, elem,
                           moderate_only=True)
        r = len(v.shape)
        attrs = {}
        if self.p(0.7):
            attrs["axis"] = int(self.rng.integers(-r, r))
        self.tolerant = True
        o = self.out(g, elem, v.shape, moderate=True)
        self.node(g, "Softmax", [x], [o], **attrs)

    def op_k_batchnorm(self, g):
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE])
        shape = (int(self.rng.integers(1, 3)), int(self.rng.integers(1, 4))) + self.dims(
            int(self.rng.integers(0, 3)))
        x = self.moderate(g, elem, shape)
        c = shape[1]
        ins = [x, self.moderate(g, elem, (c,)), self.moderate(g, elem, (c,)),
               self.moderate(g, elem, (c,)), self.moderate(g, elem, (c,), positive=True)]
        attrs = {}
        if self.p(0.5):
            attrs["epsilon"] = float(self.pick([1e-5, 1e-3, 0.1]))
        self.tolerant = True
        o = self.out(g, elem, shape)
        self.node(g, "BatchNormalization", ins, [o], **attrs)

    # ---- the kernels ---------------------------------------------------------------------------
    def op_k_conv(self, g):
        spatial = int(self.pick([1, 2, 2, 3]))
        group = int(self.pick([1, 1, 1, 2, 3]))
        n = int(self.rng.integers(1, 3))
        cg = int(self.rng.integers(1, 3))
        mg = int(self.rng.integers(1, 3))
        ins_ = self.dims(spatial, 1, 5)
        ks = [int(self.rng.integers(1, min(3, d) + 1)) for d in ins_]
        strides = [int(self.pick([1, 1, 2])) for _ in ks]
        dil = [int(self.pick([1, 1, 2])) for _ in ks]
        auto = self.pick(["NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
        if auto.startswith("SAME"):
            dil = [1] * spatial
        attrs = {}
        pads = [0] * (2 * spatial)
        out = []
        for i, (d, k, s, dl) in enumerate(zip(ins_, ks, strides, dil)):
            ek = (k - 1) * dl + 1
            if auto == "NOTSET":
                pb, pe = int(self.rng.integers(0, k)), int(self.rng.integers(0, k))
                if d + pb + pe < ek:
                    pe += ek - (d + pb + pe)
                pads[i], pads[spatial + i] = pb, pe
                out.append(conv_axis(d, k, s, dl, pb, pe))
            elif auto == "VALID":
                if d < ek:
                    dil[i] = dl = 1
                    ek = k
                out.append((d - ek) // s + 1)
            else:
                out.append(-(-d // s))
        if auto == "NOTSET":
            if any(pads) or self.p(0.3):
                attrs["pads"] = pads
        else:
            attrs["auto_pad"] = auto
        if any(x != 1 for x in strides) or self.p(0.3):
            attrs["strides"] = strides
        if any(x != 1 for x in dil) or self.p(0.2):
            attrs["dilations"] = dil
        if group != 1 or self.p(0.2):
            attrs["group"] = group
        if self.p(0.5):
            attrs["kernel_shape"] = ks
        x = self.moderate(g, TP.FLOAT, (n, cg * group) + tuple(ins_))
        w = self.moderate(g, TP.FLOAT, (mg * group, cg) + tuple(ks))
        ins = [x, w]
        if self.p(0.5):
            ins.append(self.moderate(g, TP.FLOAT, (mg * group,)))
        self.tolerant = True
        o = self.out(g, TP.FLOAT, (n, mg * group) + tuple(out))
        self.node(g, "Conv", ins, [o], **attrs)

    def op_k_conv_transpose(self, g):
        spatial = int(self.pick([1, 2, 2, 3]))
        group = int(self.pick([1, 1, 2]))
        n, cg, mg = int(self.rng.integers(1, 3)), int(self.rng.integers(1, 3)), int(
            self.rng.integers(1, 3))
        ins_ = self.dims(spatial, 1, 4)
        ks = [int(self.rng.integers(1, 4)) for _ in ins_]
        strides = [int(self.pick([1, 1, 2, 3])) for _ in ks]
        dil = [int(self.pick([1, 1, 2])) for _ in ks]
        attrs, out, pads, opad = {}, [], [0] * (2 * spatial), [0] * spatial
        use_shape = self.p(0.25)
        shape_attr = []
        for i, (d, k, s, dl) in enumerate(zip(ins_, ks, strides, dil)):
            if s > 1 and self.p(0.4):
                opad[i] = int(self.rng.integers(0, s))
            full = s * (d - 1) + opad[i] + (k - 1) * dl + 1
            if use_shape:
                o = int(self.rng.integers(max(1, full - 2), full + 1))
                shape_attr.append(o)
                out.append(o)
                continue
            pb, pe = int(self.rng.integers(0, 2)), int(self.rng.integers(0, 2))
            if full - pb - pe < 1:
                pb = pe = 0
            pads[i], pads[spatial + i] = pb, pe
            out.append(full - pb - pe)
        if use_shape:
            attrs["output_shape"] = shape_attr
        elif any(pads) or self.p(0.3):
            attrs["pads"] = pads
        if any(opad):
            attrs["output_padding"] = opad
        if any(x != 1 for x in strides) or self.p(0.3):
            attrs["strides"] = strides
        if any(x != 1 for x in dil) or self.p(0.2):
            attrs["dilations"] = dil
        if group != 1 or self.p(0.2):
            attrs["group"] = group
        if self.p(0.4):
            attrs["kernel_shape"] = ks
        x = self.moderate(g, TP.FLOAT, (n, cg * group) + tuple(ins_))
        w = self.moderate(g, TP.FLOAT, (cg * group, mg) + tuple(ks))
        ins = [x, w]
        if self.p(0.5):
            ins.append(self.moderate(g, TP.FLOAT, (mg * group,)))
        self.tolerant = True
        o = self.out(g, TP.FLOAT, (n, mg * group) + tuple(out))
        self.node(g, "ConvTranspose", ins, [o], **attrs)

    def op_k_gemm(self, g):
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE])
        m, k, n = (int(self.rng.integers(1, 5)) for _ in range(3))
        ta, tb = self.p(0.4), self.p(0.4)
        a = self.moderate(g, elem, (k, m) if ta else (m, k))
        b = self.moderate(g, elem, (n, k) if tb else (k, n))
        ins = [a, b]
        if self.opset < 11 or self.p(0.7):
            cs = self.pick([(m, n), (n,), (1, n), (m, 1), (1,), ()])
            ins.append(self.moderate(g, elem, cs))
        attrs = {}
        if ta:
            attrs["transA"] = 1
        if tb:
            attrs["transB"] = 1
        if self.p(0.4):
            attrs["alpha"] = float(self.pick([0.5, 2.0, -1.0]))
        if self.p(0.4):
            attrs["beta"] = float(self.pick([0.5, 0.0, 2.0]))
        self.tolerant = True
        o = self.out(g, elem, (m, n))
        self.node(g, "Gemm", ins, [o], **attrs)

    def op_k_matmul(self, g):
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE, TP.INT32, TP.INT64])
        ra, rb = int(self.rng.integers(1, 5)), int(self.rng.integers(1, 5))
        k = int(self.rng.integers(1, 4))
        batch = self.dims(max(ra, rb) - 2, 1, 3) if max(ra, rb) > 2 else ()
        a_batch = tuple(1 if self.p(0.3) else d for d in batch[len(batch) - max(ra - 2, 0):])
        b_batch = tuple(1 if self.p(0.3) else d for d in batch[len(batch) - max(rb - 2, 0):])
        m, n = int(self.rng.integers(1, 4)), int(self.rng.integers(1, 4))
        ashape = (k,) if ra == 1 else a_batch + (m, k)
        bshape = (k,) if rb == 1 else b_batch + (k, n)
        bb = np.broadcast_shapes(a_batch if ra > 2 else (), b_batch if rb > 2 else ())
        out = tuple(bb) + ((m,) if ra > 1 else ()) + ((n,) if rb > 1 else ())
        a = self.moderate(g, elem, ashape)
        b = self.moderate(g, elem, bshape)
        self.tolerant = True
        o = self.out(g, elem, out)
        self.node(g, "MatMul", [a, b], [o])

    def op_k_lstm(self, g):
        elem = TP.FLOAT  # ONNX Runtime: "LSTM operator does not support double yet"
        direction = self.pick(["forward", "reverse", "bidirectional"])
        dirs = 2 if direction == "bidirectional" else 1
        seq, batch, inp = (int(self.rng.integers(1, 4)) for _ in range(3))
        h = int(self.rng.integers(1, 4))
        ins = [self.moderate(g, elem, (seq, batch, inp)), self.moderate(g, elem, (dirs, 4 * h, inp)),
               self.moderate(g, elem, (dirs, 4 * h, h))]
        optional = []
        optional.append(self.moderate(g, elem, (dirs, 8 * h)) if self.p(0.6) else "")
        if self.p(0.3):
            lens = self.rng.integers(1, seq + 1, size=batch).astype(np.int32)
            optional.append(self.const(g, TP.INT32, (batch,), lens))
        else:
            optional.append("")
        optional.append(self.moderate(g, elem, (dirs, batch, h)) if self.p(0.4) else "")
        optional.append(self.moderate(g, elem, (dirs, batch, h)) if self.p(0.4) else "")
        optional.append(self.moderate(g, elem, (dirs, 3 * h)) if self.p(0.3) else "")
        while optional and optional[-1] == "":
            optional.pop()
        ins += optional
        attrs = {"hidden_size": h}
        if direction != "forward" or self.p(0.3):
            attrs["direction"] = direction
        if self.p(0.3):
            acts, alphas, betas = [], [], []
            for _ in range(dirs):
                for slot in range(3):
                    name = self.pick(["Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu",
                                      "Affine", "ScaledTanh", "Elu", "Softsign", "Softplus"])
                    acts.append(name)
                    if name in ("HardSigmoid", "Affine", "ScaledTanh"):
                        alphas.append(float(self.pick([0.5, 0.2, 1.0])))
                        betas.append(float(self.pick([0.5, 0.1, 1.0])))
                    elif name in ("LeakyRelu", "Elu"):
                        alphas.append(float(self.pick([0.1, 1.0, 0.5])))
            attrs["activations"] = acts
            if alphas:
                attrs["activation_alpha"] = alphas
            if betas:
                attrs["activation_beta"] = betas
        if self.p(0.2):
            attrs["clip"] = float(self.pick([0.5, 1.0, 3.0]))
        if self.p(0.2):
            attrs["input_forget"] = 1
        want = [self.p(0.7), self.p(0.6), self.p(0.5)]
        if not any(want):
            want[1] = True
        shapes = [(seq, dirs, batch, h), (dirs, batch, h), (dirs, batch, h)]
        outs = [self.out(g, elem, s) if w else "" for w, s in zip(want, shapes)]
        while outs and outs[-1] == "":
            outs.pop()
        self.tolerant = True
        self.node(g, "LSTM", ins, outs, **attrs)

    def op_k_pool(self, g):
        kind = self.pick(["MaxPool"] if self.exact_only else
                         ["AveragePool", "MaxPool", "GlobalAveragePool"])
        # ONNX Runtime's CPU AveragePool and GlobalAveragePool are float only.
        elem = self.pick([TP.FLOAT, TP.FLOAT, TP.DOUBLE]) if kind == "MaxPool" else TP.FLOAT
        spatial = int(self.pick([1, 2, 2, 3]))
        shape = (int(self.rng.integers(1, 3)), int(self.rng.integers(1, 3))) + self.dims(
            spatial, 1, 5)
        x = self.moderate(g, elem, shape)
        if kind == "GlobalAveragePool":
            self.tolerant = True
            o = self.out(g, elem, shape[:2] + (1,) * spatial, moderate=True)
            self.node(g, kind, [x], [o])
            return
        ins_ = shape[2:]
        ks = [int(self.rng.integers(1, min(3, d) + 1)) for d in ins_]
        strides = [int(self.pick([1, 1, 2])) for _ in ks]
        can_dilate = self.opset >= (10 if kind == "MaxPool" else 19)
        dil = [int(self.pick([1, 1, 2])) if can_dilate else 1 for _ in ks]
        ceil = int(self.opset >= 10 and self.p(0.3))
        auto = self.pick(["NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
        if auto == "VALID":
            ceil = 0
        if auto.startswith("SAME"):
            dil = [1] * spatial
            if any(k < s for k, s in zip(ks, strides)):
                auto = "NOTSET"  # a negative SAME pad: ONNX Runtime fails
        attrs = {"kernel_shape": ks}
        out, pads = [], [0] * (2 * spatial)
        for i, (d, k, s, dl) in enumerate(zip(ins_, ks, strides, dil)):
            ek = (k - 1) * dl + 1
            if auto == "NOTSET":
                pb, pe = int(self.rng.integers(0, k)), int(self.rng.integers(0, k))
                if dl > 1:
                    # No pads with dilations: a window of only padding is an error in idem
                    # (MaxPool) or 0 / 0 (AveragePool), and -FLT_MAX or 0 in ONNX Runtime.
                    pb = pe = 0
                if d + pb + pe < ek:
                    dil[i], dl, ek = 1, 1, k
                pads[i], pads[spatial + i] = pb, pe
                span = d + pb + pe - ek
                o = (-(-span // s) if ceil else span // s) + 1
                if ceil and (o - 1) * s >= d + pb:
                    o -= 1
                out.append(o)
            elif auto == "VALID":
                if d < ek:
                    dil[i], dl, ek = 1, 1, k
                out.append((d - ek) // s + 1)
            else:
                out.append(-(-d // s))
        if auto == "NOTSET":
            if any(pads) or self.p(0.3):
                attrs["pads"] = pads
        else:
            attrs["auto_pad"] = auto
        if any(x != 1 for x in strides) or self.p(0.3):
            attrs["strides"] = strides
        if any(x != 1 for x in dil):
            attrs["dilations"] = dil
        if ceil:
            attrs["ceil_mode"] = 1
        outs = [self.out(g, elem, shape[:2] + tuple(out), moderate=True)]
        if kind == "AveragePool":
            self.tolerant = True
            if self.opset >= 7 and self.p(0.5):
                attrs["count_include_pad"] = int(self.pick([0, 1]))
        elif self.p(0.3):
            outs.append(self.out(g, TP.INT64, shape[:2] + tuple(out)))
            if self.p(0.3):
                attrs["storage_order"] = 1
        self.node(g, kind, [x], outs, **attrs)

    def op_k_resize(self, g):
        if self.opset < 11:
            return
        elem = TP.FLOAT
        mode = self.pick(["nearest"] if self.exact_only else ["nearest", "linear", "cubic"])
        # ONNX Runtime interpolates 2-D inputs, or 4-D ones whose two outer axes keep their size
        # (linear also 3-D and 5-D); nearest any rank.
        rank = int(self.pick([2, 3, 4] if mode == "nearest" else [2, 4, 4]))
        shape = self.dims(rank, 1, 4)
        coords = ["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"]
        if self.opset <= 12:
            coords.append("tf_half_pixel_for_nn")
        if self.opset >= 19:
            coords.append("half_pixel_symmetric")
        coord = self.pick(coords)
        if coord == "tf_half_pixel_for_nn" and mode != "nearest":
            coord = "asymmetric"
        axes = list(range(rank))
        if self.opset >= 18 and (self.p(0.3) or (mode != "nearest" and rank == 4)):
            axes = list(range(rank - 2, rank))  # the spatial axes, as exporters write them
        keep_outer = mode != "nearest" and rank == 4 and len(axes) == rank
        use_sizes = coord == "align_corners" or self.p(0.4)
        x = self.moderate(g, elem, shape) if mode != "nearest" else self.tensor(
            g, lambda v: v.elem == elem and len(v.shape) == rank and 0 not in v.shape, elem,
            shape)[0]
        if mode == "nearest":
            shape = dict(g.visible())[x].shape
        out = list(shape)
        attrs = {"mode": mode}
        if coord != "half_pixel" or self.p(0.5):
            attrs["coordinate_transformation_mode"] = coord
        if mode == "nearest" and self.p(0.5):
            attrs["nearest_mode"] = self.pick(["round_prefer_floor", "round_prefer_ceil", "floor",
                                               "ceil"])
        if mode == "cubic" and self.p(0.4):
            attrs["cubic_coeff_a"] = float(self.pick([-0.5, -0.75]))
        if self.opset >= 18 and mode != "nearest" and self.p(0.3):
            attrs["antialias"] = 1
        # ONNX Runtime: exclude_outside with cubic, or linear with antialias.
        if (mode == "cubic" or "antialias" in attrs) and self.p(0.3):
            attrs["exclude_outside"] = 1
        if axes != list(range(rank)):
            attrs["axes"] = axes
        empty_roi = "" if self.opset >= 13 else self.const(g, TP.FLOAT, (0,),
                                                           np.zeros((0,), np.float32))
        if use_sizes:
            sizes = [int(self.rng.integers(1, 7)) for _ in axes]
            if keep_outer:
                sizes[0], sizes[1] = shape[0], shape[1]
            for a, s in zip(axes, sizes):
                out[a] = s
            ins = [x, empty_roi, empty_roi,
                   self.const(g, TP.INT64, (len(sizes),), np.array(sizes, np.int64))]
        else:
            scales = [float(self.pick([0.5, 1.0, 1.5, 2.0, 3.0, 0.75])) for _ in axes]
            if keep_outer:
                scales[0] = scales[1] = 1.0
            for a, s in zip(axes, scales):
                out[a] = int(np.floor(np.float32(shape[a]) * np.float32(s)))
            if 0 in out:
                return
            ins = [x, empty_roi,
                   self.const(g, TP.FLOAT, (len(scales),), np.array(scales, np.float32))]
        if mode != "nearest":
            self.tolerant = True
        o = self.out(g, elem, out)
        self.node(g, "Resize", ins, [o], **attrs)

    def kernel_ops(self):
        if self.exact_only:
            return [self.op_k_unary, self.op_k_binary, self.op_k_clip, self.op_k_cast,
                    self.op_k_concat, self.op_k_constant_of_shape, self.op_k_pad,
                    self.op_k_reshape, self.op_k_transpose, self.op_k_flatten, self.op_k_gather,
                    self.op_k_split, self.op_k_squeeze, self.op_k_size, self.op_k_reduce,
                    self.op_k_pool, self.op_k_resize, self.op_k_pad, self.op_k_pool,
                    self.op_k_resize]
        return [self.op_k_unary, self.op_k_binary, self.op_k_clip, self.op_k_cast,
                self.op_k_concat, self.op_k_constant_of_shape, self.op_k_pad, self.op_k_reshape,
                self.op_k_transpose, self.op_k_flatten, self.op_k_gather, self.op_k_split,
                self.op_k_squeeze, self.op_k_size, self.op_k_reduce, self.op_k_softmax,
                self.op_k_batchnorm, self.op_k_conv, self.op_k_conv_transpose, self.op_k_gemm,
                self.op_k_matmul, self.op_k_lstm, self.op_k_pool, self.op_k_resize,
                self.op_k_conv, self.op_k_pool, self.op_k_resize, self.op_k_lstm]
