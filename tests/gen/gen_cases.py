#!/usr/bin/python3
"""Generate valid ONNX backend-format test cases for the Identity operator.

Usage: gen_cases.py OUTDIR [--big]

Every case is OUTDIR/<name>/model.onnx plus test_data_set_N/{input,output}_K.pb
(see README.md). Output is byte-for-byte deterministic.

This module also holds the model/tensor/file helpers shared by
gen_bad_cases.py and gen_seed_examples.py.
"""
import collections
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import OptionalProto, SequenceProto, TensorProto

# --------------------------------------------------------------------------
# Element types.
#
# onnx 1.12 only knows codes up to 16, so every type is handled by its plain
# integer code and tensors are filled by hand (never via onnx.helper /
# numpy_helper, which would reject or silently convert codes 17..26).
#
# Per code: name, first Identity opset that accepts it, bits per stored
# component, components per element (2 for complex), the typed TensorProto
# field, the numpy dtype the typed field values are read as from raw bytes,
# and component bit patterns chosen to break engines that convert instead of
# copying (NaN payloads, signalling NaNs, -0.0, subnormals, inf, extremes).
# Patterns are repeated cyclically to fill a tensor.
# --------------------------------------------------------------------------
FLOAT_BITS = [0x7FC00001, 0x80000000, 0x00000001, 0x7F800000, 0x7F800001,
              0xFFBFFFFF, 0x007FFFFF, 0xFF800000]
DOUBLE_BITS = [0x7FF8000000000001, 0x8000000000000000, 0x0000000000000001,
               0x7FF0000000000000, 0x7FF0000000000001, 0xFFF7FFFFFFFFFFFF,
               0x000FFFFFFFFFFFFF, 0xFFF0000000000000]


ElemType = collections.namedtuple(
    "ElemType", "code name opset bits comps field typed_dtype patterns")


ELEM_TYPES = {t.code: t for t in [
    ElemType(1, "float", 1, 32, 1, "float_data", "<u4", FLOAT_BITS),
    ElemType(2, "uint8", 1, 8, 1, "int32_data", "<u1", [0, 255, 1, 128, 127, 42]),
    ElemType(3, "int8", 1, 8, 1, "int32_data", "<i1", [0x80, 0x7F, 0xFF, 0, 1, 0x2A]),
    ElemType(4, "uint16", 1, 16, 1, "int32_data", "<u2", [0, 0xFFFF, 0x8000, 1, 0x1234, 0x7FFF]),
    ElemType(5, "int16", 1, 16, 1, "int32_data", "<i2", [0x8000, 0x7FFF, 0xFFFF, 0, 1, 0x1234]),
    ElemType(6, "int32", 1, 32, 1, "int32_data", "<i4",
             [0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0, 1, 0x12345678]),
    ElemType(7, "int64", 1, 64, 1, "int64_data", "<i8",
             [1 << 63, (1 << 63) - 1, (1 << 64) - 1, 0, 1, 0x0123456789ABCDEF]),
    ElemType(8, "string", 1, None, 1, "string_data", None,
             [b"", b"a\x00b", b"\xff\xfe\x80", "h\u00e9llo".encode(), b"\x00", b"\xc3("]),
    ElemType(9, "bool", 1, 8, 1, "int32_data", "<u1", [1, 0, 1, 1, 0, 0]),
    ElemType(10, "float16", 1, 16, 1, "int32_data", "<u2",
             [0x7E01, 0x8000, 0x0001, 0x7C00, 0x7C01, 0xFDFF, 0x3C00]),
    ElemType(11, "double", 1, 64, 1, "double_data", "<u8", DOUBLE_BITS),
    ElemType(12, "uint32", 1, 32, 1, "uint64_data", "<u4",
             [0, 0xFFFFFFFF, 0x80000000, 1, 0x12345678, 0x7FFFFFFF]),
    ElemType(13, "uint64", 1, 64, 1, "uint64_data", "<u8",
             [0, (1 << 64) - 1, 1 << 63, 1, 0x0123456789ABCDEF, (1 << 63) - 1]),
    ElemType(14, "complex64", 1, 32, 2, "float_data", "<u4", FLOAT_BITS),
    ElemType(15, "complex128", 1, 64, 2, "double_data", "<u8", DOUBLE_BITS),
    ElemType(16, "bfloat16", 13, 16, 1, "int32_data", "<u2",
             [0x7FC1, 0x8000, 0x0001, 0x7F80, 0x7F81, 0xFFBF, 0x3F80]),
    ElemType(17, "float8e4m3fn", 19, 8, 1, "int32_data", "<u1", [0x7F, 0x80, 0x01, 0x7E, 0xFF, 0x38]),
    ElemType(18, "float8e4m3fnuz", 19, 8, 1, "int32_data", "<u1", [0x80, 0x00, 0x01, 0x7F, 0xFF, 0x40]),
    ElemType(19, "float8e5m2", 19, 8, 1, "int32_data", "<u1", [0x7D, 0x80, 0x01, 0x7C, 0xFF, 0x3C]),
    ElemType(20, "float8e5m2fnuz", 19, 8, 1, "int32_data", "<u1", [0x80, 0x00, 0x01, 0x7F, 0xFF, 0x40]),
    # Sub-byte types: patterns are element values (nibbles / 2-bit fields);
    # the typed field holds the packed bytes, one byte per int32.
    ElemType(21, "uint4", 21, 4, 1, "int32_data", "<u1", [0, 15, 1, 8, 7]),
    ElemType(22, "int4", 21, 4, 1, "int32_data", "<u1", [8, 7, 15, 0, 1]),
    ElemType(23, "float4e2m1", 23, 4, 1, "int32_data", "<u1", [0x8, 0x2, 0x1, 0x7, 0xF]),
    ElemType(24, "float8e8m0", 24, 8, 1, "int32_data", "<u1", [0xFF, 0x00, 0x7F, 0xFE, 0x01, 0x80]),
    ElemType(25, "uint2", 25, 2, 1, "int32_data", "<u1", [3, 0, 1, 2, 3, 2, 1]),
    ElemType(26, "int2", 25, 2, 1, "int32_data", "<u1", [2, 3, 0, 1, 2, 1, 3]),
]}
CODE = {t.name: t.code for t in ELEM_TYPES.values()}
NEWEST_OPSET = 28

# Minimum IR version for a default-domain opset (onnx's VERSION_TABLE). It
# agrees with identity.md's table at every Identity since-version and is
# exact for the opsets in between.
_IR_BY_OPSET = [(25, 13), (24, 12), (23, 11), (21, 10), (19, 9), (15, 8),
                (12, 7), (11, 6), (10, 5), (9, 4), (1, 3)]


def min_ir(opset):
    return next(ir for first, ir in _IR_BY_OPSET if opset >= first)


def first_opset(code):
    return ELEM_TYPES[code].opset


# --------------------------------------------------------------------------
# Tensor payloads
# --------------------------------------------------------------------------
def numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def pack_bits(values, bits):
    """Sub-byte packing: first element in the lowest bits, zero padding."""
    per_byte = 8 // bits
    out = bytearray((len(values) + per_byte - 1) // per_byte)
    for i, v in enumerate(values):
        out[i // per_byte] |= (v & ((1 << bits) - 1)) << (bits * (i % per_byte))
    return bytes(out)


def sample_payload(code, n, start=0):
    """Raw-format bytes (or list of byte strings for strings) for n elements."""
    t = ELEM_TYPES[code]
    count = n * t.comps
    comps = [t.patterns[(start + i) % len(t.patterns)] for i in range(count)]
    if code == CODE["string"]:
        return comps
    if t.bits < 8:
        return pack_bits(comps, t.bits)
    return np.array(comps, dtype="<u%d" % (t.bits // 8)).tobytes()


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _set_packed_bits(tensor, field_number, raw):
    # float_data / double_data are filled from the wire so the exact bits
    # (signalling NaNs included) land in the field; going through Python
    # floats would quiet them on the float->double->float round trip.
    tensor.MergeFromString(_varint(field_number << 3 | 2) + _varint(len(raw)) + raw)


def make_tensor(name, code, shape, payload, form):
    """TensorProto holding payload (from sample_payload) in 'raw' or 'typed' form."""
    t = TensorProto()
    t.name = name
    t.data_type = code
    t.dims.extend(shape)
    et = ELEM_TYPES[code]
    if code == CODE["string"]:
        t.string_data.extend(payload)  # strings have no raw form
    elif form == "raw":
        t.raw_data = payload
    elif et.field in ("float_data", "double_data"):
        if payload:
            _set_packed_bits(t, TensorProto.DESCRIPTOR.fields_by_name[et.field].number, payload)
    else:
        getattr(t, et.field).extend(int(v) for v in np.frombuffer(payload, dtype=et.typed_dtype))
    return t


def other_form(form):
    return "typed" if form == "raw" else "raw"


def make_sequence(name, tensors):
    s = SequenceProto()
    s.name = name
    s.elem_type = SequenceProto.TENSOR
    s.tensor_values.extend(tensors)
    return s


def make_optional(name, value=None, elem_type=None):
    """OptionalProto; value None means an empty optional of elem_type."""
    o = OptionalProto()
    o.name = name
    if isinstance(value, TensorProto):
        o.elem_type = OptionalProto.TENSOR
        o.tensor_value.CopyFrom(value)
    elif isinstance(value, SequenceProto):
        o.elem_type = OptionalProto.SEQUENCE
        o.sequence_value.CopyFrom(value)
    else:
        o.elem_type = elem_type
    return o


# --------------------------------------------------------------------------
# Types and models
# --------------------------------------------------------------------------
def tensor_type(code, shape=None):
    """shape None = no shape field; an int dim is dim_value, a str dim_param,
    None a dim with neither."""
    tp = onnx.TypeProto()
    tp.tensor_type.elem_type = code
    if shape is not None:
        tp.tensor_type.shape.SetInParent()  # a present-but-empty shape is rank 0
        for d in shape:
            dim = tp.tensor_type.shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, str):
                dim.dim_param = d
    return tp


def seq_type(elem):
    tp = onnx.TypeProto()
    tp.sequence_type.elem_type.CopyFrom(elem)
    return tp


def opt_type(elem):
    tp = onnx.TypeProto()
    tp.optional_type.elem_type.CopyFrom(elem)
    return tp


def vi(name, tp):
    v = onnx.ValueInfoProto()
    v.name = name
    v.type.CopyFrom(tp)
    return v


def node(op, inputs, outputs, name, **attrs):
    return onnx.helper.make_node(op, inputs, outputs, name=name, **attrs)


def make_model(nodes, inputs, outputs, opset, initializers=(), ir=None, name="g"):
    m = onnx.ModelProto()
    m.ir_version = min_ir(opset) if ir is None else ir
    m.producer_name = "idem-gen"
    imp = m.opset_import.add()
    imp.domain = ""
    imp.version = opset
    g = m.graph
    g.name = name
    g.node.extend(nodes)
    g.input.extend(inputs)
    g.output.extend(outputs)
    g.initializer.extend(initializers)
    return m


def identity_model(tp, opset, name="g"):
    """x -> Identity -> y with both sides of type tp."""
    return make_model([node("Identity", ["x"], ["y"], "id0")],
                      [vi("x", tp)], [vi("y", tp)], opset, name=name)


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------
def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def fresh_dir(path):
    """Remove whatever a previous run left (also symlinks/FIFOs) and recreate."""
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def write_case(out, name, model, datasets=(), files=None):
    """datasets: list of (inputs, outputs) message lists. files: {relpath: bytes}
    written next to model.onnx (external data)."""
    d = fresh_dir(os.path.join(out, name))
    write_bytes(os.path.join(d, "model.onnx"), model.SerializeToString(deterministic=True))
    for rel, data in (files or {}).items():
        write_bytes(os.path.join(d, rel), data)
    for i, (ins, outs) in enumerate(datasets):
        ds = os.path.join(d, "test_data_set_%d" % i)
        for k, msg in enumerate(ins):
            write_bytes(os.path.join(ds, "input_%d.pb" % k), msg.SerializeToString(deterministic=True))
        for k, msg in enumerate(outs):
            write_bytes(os.path.join(ds, "output_%d.pb" % k), msg.SerializeToString(deterministic=True))
    return d


def identity_case(out, name, code, shape, opset, in_form, start=0):
    """Identity on one tensor; the expected output uses the other storage form
    so comparing protobuf bytes instead of decoded values fails."""
    payload = sample_payload(code, numel(shape), start)
    model = identity_model(tensor_type(code, shape), opset)
    x = make_tensor("x", code, shape, payload, in_form)
    y = make_tensor("y", code, shape, payload, other_form(in_form))
    write_case(out, name, model, [([x], [y])])


# --------------------------------------------------------------------------
# Case groups
# --------------------------------------------------------------------------
def gen_types(out):
    """Every element type at its first opset (typed and raw input) and later."""
    for code, t in ELEM_TYPES.items():
        if t.bits == 4:
            shapes = ([1, 5], [3])  # odd counts leave a padding nibble
        elif t.bits == 2:
            shapes = ([7], [2, 3])  # counts not a multiple of 4
        else:
            shapes = ([2, 3], [3, 2])
        identity_case(out, "gen_type_%s_opset%d_typed" % (t.name, t.opset), code, shapes[0], t.opset, "typed")
        if code != CODE["string"]:
            identity_case(out, "gen_type_%s_opset%d_raw" % (t.name, t.opset), code, shapes[0], t.opset, "raw")
        # Types new in Identity-25 get their second model at the newest opset.
        later = 25 if t.opset < 25 else NEWEST_OPSET
        identity_case(out, "gen_type_%s_opset%d" % (t.name, later), code, shapes[1], later, "raw", start=1)


def gen_shapes(out):
    for tname, form in [("float", "raw"), ("string", "typed"), ("int64", "typed"),
                        ("bool", "raw"), ("float16", "typed"), ("complex128", "raw"), ("int4", "raw")]:
        code = CODE[tname]
        identity_case(out, "gen_scalar_%s" % tname, code, [], max(first_opset(code), 13), form)
    for tname, shape in [("float", [0]), ("float", [3, 0, 2]), ("string", [0]),
                         ("int64", [3, 0, 2]), ("int4", [0, 5]), ("complex64", [0])]:
        code = CODE[tname]
        label = "x".join(map(str, shape))
        for form in (("typed",) if tname == "string" else ("raw", "typed")):
            identity_case(out, "gen_zero_%s_%s_%s" % (tname, label, form), code, shape,
                          max(first_opset(code), 13), form)
    identity_case(out, "gen_rank6_float", CODE["float"], [1, 2, 1, 3, 1, 2], 13, "raw")
    identity_case(out, "gen_rank5_int8", CODE["int8"], [2, 1, 2, 1, 2], 13, "typed")
    identity_case(out, "gen_rank8_bool", CODE["bool"], [1, 2, 1, 1, 2, 1, 1, 2], 13, "raw")

    # dim_param: one model, several feeds of different N (N = 0 included).
    f = CODE["float"]
    model = identity_model(tensor_type(f, ["N", 3]), 13)
    sets = []
    for i, n in enumerate([2, 5, 0]):
        p = sample_payload(f, n * 3, start=i)
        sets.append(([make_tensor("x", f, [n, 3], p, "raw")], [make_tensor("y", f, [n, 3], p, "typed")]))
    write_case(out, "gen_symbolic_dim", model, sets)

    # No shape field at all: any rank is acceptable.
    model = identity_model(tensor_type(f), 13)
    sets = []
    for i, shape in enumerate([[], [4], [2, 1, 3]]):
        p = sample_payload(f, numel(shape), start=i)
        sets.append(([make_tensor("x", f, shape, p, "typed")], [make_tensor("y", f, shape, p, "raw")]))
    write_case(out, "gen_unknown_shape", model, sets)

    # A dim with neither dim_value nor dim_param.
    i64 = CODE["int64"]
    model = identity_model(tensor_type(i64, [None, 3]), 13)
    sets = []
    for i, n in enumerate([1, 4]):
        p = sample_payload(i64, n * 3, start=i)
        sets.append(([make_tensor("x", i64, [n, 3], p, "raw")], [make_tensor("y", i64, [n, 3], p, "typed")]))
    write_case(out, "gen_unknown_dim", model, sets)


def gen_graphs(out):
    f = CODE["float"]
    tp = tensor_type(f, [2, 3])
    p = sample_payload(f, 6)
    x = make_tensor("x", f, [2, 3], p, "raw")

    def y(name):
        return make_tensor(name, f, [2, 3], p, "typed")

    names = ["x"] + ["t%d" % i for i in range(1, 10)] + ["y"]
    nodes = [node("Identity", [names[i]], [names[i + 1]], "id%d" % i) for i in range(10)]
    write_case(out, "gen_chain10", make_model(nodes, [vi("x", tp)], [vi("y", tp)], 13), [([x], [y("y")])])

    nodes = [node("Identity", ["x"], ["y%d" % i], "id%d" % i) for i in range(3)]
    model = make_model(nodes, [vi("x", tp)], [vi("y%d" % i, tp) for i in range(3)], 13)
    write_case(out, "gen_fanout3", model, [([x], [y("y0"), y("y1"), y("y2")])])

    # Graph input listed directly as a graph output, next to an Identity output.
    model = make_model([node("Identity", ["x"], ["y"], "id0")], [vi("x", tp)], [vi("x", tp), vi("y", tp)], 13)
    write_case(out, "gen_passthrough", model, [([x], [y("x"), y("y")])])


def gen_initializers(out):
    f = CODE["float"]
    tp = tensor_type(f, [2, 3])
    pw = sample_payload(f, 6, start=2)
    px = sample_payload(f, 6, start=5)

    for tname, form in [("float", "raw"), ("string", "typed"), ("int64", "typed")]:
        code = CODE[tname]
        p = sample_payload(code, 6, start=3)
        model = make_model([node("Identity", ["w"], ["y"], "id0")], [], [vi("y", tensor_type(code, [2, 3]))], 13,
                           initializers=[make_tensor("w", code, [2, 3], p, form)])
        write_case(out, "gen_initializer_%s" % tname, model,
                   [([], [make_tensor("y", code, [2, 3], p, other_form(form))])])

    # The initializer w is also a graph input and listed FIRST, so input_0.pb
    # pairs with x (the first input that is not an initializer); w keeps its
    # default because backend data cannot feed it. The IR 3 variant is the
    # old rule where every initializer had to be a graph input.
    for name, opset in [("gen_initializer_as_input", 13), ("gen_initializer_as_input_ir3", 1)]:
        nodes = [node("Identity", ["w"], ["yw"], "idw"), node("Identity", ["x"], ["yx"], "idx")]
        model = make_model(nodes, [vi("w", tp), vi("x", tp)], [vi("yw", tp), vi("yx", tp)], opset,
                           initializers=[make_tensor("w", f, [2, 3], pw, "raw")])
        write_case(out, name, model, [([make_tensor("x", f, [2, 3], px, "raw")],
                                       [make_tensor("yw", f, [2, 3], pw, "typed"),
                                        make_tensor("yx", f, [2, 3], px, "typed")])])


def external_tensor(name, code, shape, location, offset=None, length=None):
    t = TensorProto()
    t.name = name
    t.data_type = code
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in [("location", location), ("offset", offset), ("length", length)]:
        if value is not None:
            e = t.external_data.add()
            e.key = key
            e.value = str(value)
    return t


def gen_external(out):
    f, i64 = CODE["float"], CODE["int64"]
    pw = sample_payload(f, 6)
    pv = sample_payload(i64, 4, start=2)
    # 13 junk bytes make the float data start at an odd, unaligned offset;
    # the int64 tensor follows after more junk.
    junk = b"JUNK-HEADER!\x00"
    blob = junk + pw + b"\xEE" * 7 + pv
    off_v = len(junk) + len(pw) + 7
    model = make_model(
        [node("Identity", ["w"], ["y"], "id0"), node("Identity", ["v"], ["z"], "id1")], [],
        [vi("y", tensor_type(f, [2, 3])), vi("z", tensor_type(i64, [4]))], 13,
        initializers=[external_tensor("w", f, [2, 3], "weights.bin", len(junk), len(pw)),
                      external_tensor("v", i64, [4], "weights.bin", off_v, len(pv))])
    write_case(out, "gen_external_offset", model,
               [([], [make_tensor("y", f, [2, 3], pw, "typed"), make_tensor("z", i64, [4], pv, "typed")])],
               files={"weights.bin": blob})

    model = make_model([node("Identity", ["w"], ["y"], "id0")], [], [vi("y", tensor_type(f, [2, 3]))], 13,
                       initializers=[external_tensor("w", f, [2, 3], "sub/w.bin", 8, len(pw))])
    write_case(out, "gen_external_subdir", model, [([], [make_tensor("y", f, [2, 3], pw, "typed")])],
               files={"sub/w.bin": b"\x00" * 8 + pw})

    # No offset/length keys: the whole file is the tensor.
    model = make_model([node("Identity", ["w"], ["y"], "id0")], [], [vi("y", tensor_type(f, [2, 3]))], 13,
                       initializers=[external_tensor("w", f, [2, 3], "w.bin")])
    write_case(out, "gen_external_whole_file", model, [([], [make_tensor("y", f, [2, 3], pw, "typed")])],
               files={"w.bin": pw})


def gen_big_external(out):
    """256 MiB float32 external initializer; model only, no data set."""
    n = 64 * 1024 * 1024
    model = make_model([node("Identity", ["w"], ["y"], "id0")], [], [vi("y", tensor_type(CODE["float"], [n]))], 13,
                       initializers=[external_tensor("w", CODE["float"], [n], "weights.bin", 0, n * 4)])
    d = write_case(out, "big_external", model)
    # Element i holds float(i % 2**24), exactly representable, so a reader
    # can spot-check any position.
    with open(os.path.join(d, "weights.bin"), "wb") as fh:
        chunk = 1 << 22
        for start in range(0, n, chunk):
            fh.write((np.arange(start, start + chunk, dtype=np.int64) % (1 << 24)).astype("<f4").tobytes())


SEQ_SHAPES = [[2, 3], [], [0, 4]]  # three tensors of different shapes


def seq_value(name, code, count, form):
    return make_sequence(name, [make_tensor("", code, s, sample_payload(code, numel(s), start=i), form)
                                for i, s in enumerate(SEQ_SHAPES[:count])])


def gen_sequences(out):
    plan = {14: ["float", "int64", "string", "bool", "float16", "complex64", "uint8", "double"],
            16: ["float", "string", "int64"],
            25: ["float", "string", "int64"]}
    for opset, tnames in plan.items():
        for tname in tnames:
            code = CODE[tname]
            # Element type without a shape: the elements differ in rank.
            model = identity_model(seq_type(tensor_type(code)), opset)
            sets = [([seq_value("x", code, c, "raw")], [seq_value("y", code, c, "typed")]) for c in (0, 1, 3)]
            write_case(out, "gen_seq_%s_opset%d" % (tname, opset), model, sets)


def gen_optionals(out):
    f, i64, s = CODE["float"], CODE["int64"], CODE["string"]
    for opset in (16, 25):
        for tname, code in [("float", f), ("string", s)]:
            p = sample_payload(code, 6)
            model = identity_model(opt_type(tensor_type(code, [2, 3])), opset)
            sets = [([make_optional("x", make_tensor("", code, [2, 3], p, "raw"))],
                     [make_optional("y", make_tensor("", code, [2, 3], p, "typed"))]),
                    ([make_optional("x", elem_type=OptionalProto.TENSOR)],
                     [make_optional("y", elem_type=OptionalProto.TENSOR)])]
            write_case(out, "gen_opt_tensor_%s_opset%d" % (tname, opset), model, sets)

        # Present optional holding 2 tensors, present optional holding an
        # EMPTY sequence (not the same as an empty optional), empty optional.
        model = identity_model(opt_type(seq_type(tensor_type(i64))), opset)
        sets = [([make_optional("x", seq_value("", i64, n, "raw"))],
                 [make_optional("y", seq_value("", i64, n, "typed"))]) for n in (2, 0)]
        sets.append(([make_optional("x", elem_type=OptionalProto.SEQUENCE)],
                     [make_optional("y", elem_type=OptionalProto.SEQUENCE)]))
        write_case(out, "gen_opt_seq_int64_opset%d" % opset, model, sets)

    # identity.md: an empty optional's elem_type may be UNDEFINED. Both
    # encodings denote the same value.
    model = identity_model(opt_type(tensor_type(f, [2, 3])), 16)
    write_case(out, "gen_opt_empty_undefined_elem", model,
               [([make_optional("x", elem_type=OptionalProto.UNDEFINED)],
                 [make_optional("y", elem_type=OptionalProto.TENSOR)])])


def gen_versions(out):
    """Version resolution: every Identity since-version plus opsets in between."""
    for opset in (1, 7, 13, 14, 15, 16, 18, 19, 21, 22, 23, 24, 25, 27, 28):
        # Alternate storage forms and payload offsets between opsets.
        identity_case(out, "gen_version_opset%d_float" % opset, CODE["float"], [2, 3], opset,
                      "raw" if opset % 2 else "typed", start=opset)
    identity_case(out, "gen_version_opset28_int2", CODE["int2"], [5], 28, "typed")
    identity_case(out, "gen_version_opset28_float8e8m0", CODE["float8e8m0"], [2, 2], 28, "raw")


def main(argv):
    args = [a for a in argv[1:] if a != "--big"]
    if len(args) != 1:
        sys.exit("usage: gen_cases.py OUTDIR [--big]")
    out = args[0]
    os.makedirs(out, exist_ok=True)
    gen_types(out)
    gen_shapes(out)
    gen_graphs(out)
    gen_initializers(out)
    gen_external(out)
    gen_sequences(out)
    gen_optionals(out)
    gen_versions(out)
    if "--big" in argv[1:]:
        gen_big_external(out)


if __name__ == "__main__":
    main(sys.argv)
