#!/usr/bin/python3
"""Generate invalid models / feeds / test folders, each with expect.json.

Usage: gen_bad_cases.py OUTDIR

expect.json: {"command": "check"|"run"|"test", "args": [...], "exit_code": 1,
              "stderr_contains": [...], optionally "stdout_contains": [...]}
"{dir}" in args stands for the case folder. The stderr substrings are kept
to names the generator chose (node, value, location), ONNX type strings,
"Identity-N" and at most one lowercase key word, because the exact wording
of messages is the engine's business.

Some cases create a FIFO and symlinks, so generate them at test time (into
the build tree) rather than committing the output.
"""
import json
import os
import sys

import numpy as np
from google.protobuf.message import DecodeError
from onnx import ModelProto, OptionalProto, SequenceProto, TensorProto

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_cases import (CODE, external_tensor, fresh_dir, identity_model, make_model,  # noqa: E402
                       make_optional, make_sequence, make_tensor, node, opt_type, sample_payload,
                       seq_type, tensor_type, vi, write_bytes, write_case)

F = CODE["float"]
FLOAT23 = tensor_type(F, [2, 3])


def write_expect(d, command, args, stderr_contains, stdout_contains=None):
    expect = {"command": command, "args": args, "exit_code": 1, "stderr_contains": stderr_contains}
    if stdout_contains is not None:
        expect["stdout_contains"] = stdout_contains
    write_bytes(os.path.join(d, "expect.json"), (json.dumps(expect, indent=2, sort_keys=True) + "\n").encode())


def check_case(out, name, model, stderr, files=None):
    """`idem check` on a model; "error:" starts every error line."""
    d = write_case(out, name, model, files=files)
    write_expect(d, "check", ["{dir}/model.onnx"], ["error:"] + stderr)
    return d


def raw_check_case(out, name, data, stderr):
    d = fresh_dir(os.path.join(out, name))
    write_bytes(os.path.join(d, "model.onnx"), data)
    write_expect(d, "check", ["{dir}/model.onnx"], ["error:"] + stderr)


def assert_unparsable(message_type, data):
    # The case only means something if the bytes really fail to parse.
    try:
        message_type().ParseFromString(data)
    except DecodeError:
        return
    raise AssertionError("bytes unexpectedly parse as %s" % message_type.__name__)


def float23(name, start=0):
    return make_tensor(name, F, [2, 3], sample_payload(F, 6, start), "raw")


def gen_file_level(out):
    raw_check_case(out, "bad_empty_file", b"", [])
    valid = identity_model(FLOAT23, 13).SerializeToString()
    half = valid[:len(valid) // 2]
    assert_unparsable(ModelProto, half)
    raw_check_case(out, "bad_truncated", half, [])
    garbage = np.random.default_rng(20240611).integers(0, 256, 512, dtype=np.uint8).tobytes()
    assert_unparsable(ModelProto, garbage)
    raw_check_case(out, "bad_garbage", garbage, [])


def gen_graph_structure(out):
    ins, outs = [vi("x", FLOAT23)], [vi("y", FLOAT23)]
    check_case(out, "bad_unknown_ops", make_model(
        [node("Foo", ["x"], ["t"], "foo_node"), node("Bar", ["t"], ["y"], "bar_node")], ins, outs, 13),
        ["Foo", "Bar"])
    check_case(out, "bad_identity_two_inputs", make_model(
        [node("Identity", ["x", "x"], ["y"], "id_two_inputs")], ins, outs, 13), ["id_two_inputs"])
    check_case(out, "bad_identity_no_outputs", make_model(
        [node("Identity", ["x"], [], "id_no_outputs"), node("Identity", ["x"], ["y"], "id_ok")], ins, outs, 13),
        ["id_no_outputs"])
    check_case(out, "bad_identity_attribute", make_model(
        [node("Identity", ["x"], ["y"], "id_attr", foo=1)], ins, outs, 13), ["id_attr"])
    check_case(out, "bad_undefined_value", make_model(
        [node("Identity", ["nowhere"], ["y"], "id_undef")], ins, outs, 13), ["nowhere", "undefined"])
    check_case(out, "bad_cycle", make_model(
        [node("Identity", ["b"], ["a"], "id_cyc_a"), node("Identity", ["a"], ["b"], "id_cyc_b")],
        ins, [vi("a", FLOAT23)], 13), ["cycle"])
    check_case(out, "bad_two_producers", make_model(
        [node("Identity", ["x"], ["dup_value"], "id_p1"), node("Identity", ["x"], ["dup_value"], "id_p2")],
        ins, [vi("dup_value", FLOAT23)], 13), ["dup_value"])
    mismatch = make_model([node("Identity", ["x"], ["out_mismatch"], "id0")], ins,
                          [vi("out_mismatch", tensor_type(CODE["int32"], [2, 3]))], 13)
    check_case(out, "bad_output_type_mismatch", mismatch, ["out_mismatch", "tensor(int32)"])


def gen_type_rules(out):
    """Types the Identity version in force does not allow. IR versions are
    high enough for the type itself, so only the Identity rule is broken."""
    seq_f = seq_type(tensor_type(F))
    cases = [
        # name, node, value type, opset, ir, type string, resolved version
        ("bad_seq_opset13", "id_seq13", seq_f, 13, 7, "seq(tensor(float))", 13),
        ("bad_opt_opset14", "id_opt14", opt_type(tensor_type(F, [2])), 14, 8, "optional(tensor(float))", 14),
        ("bad_bfloat16_opset1", "id_bf16", tensor_type(CODE["bfloat16"], [2]), 1, 7, "tensor(bfloat16)", 1),
        ("bad_float8e4m3fn_opset18", "id_f8", tensor_type(CODE["float8e4m3fn"], [2]), 18, 9,
         "tensor(float8e4m3fn)", 16),
        ("bad_int4_opset19", "id_int4", tensor_type(CODE["int4"], [3]), 19, 10, "tensor(int4)", 19),
        ("bad_float4e2m1_opset22", "id_f4", tensor_type(CODE["float4e2m1"], [3]), 22, 11,
         "tensor(float4e2m1)", 21),
        ("bad_float8e8m0_opset23", "id_e8m0", tensor_type(CODE["float8e8m0"], [2]), 23, 12,
         "tensor(float8e8m0)", 23),
        ("bad_uint2_opset24", "id_uint2", tensor_type(CODE["uint2"], [3]), 24, 13, "tensor(uint2)", 24),
        # New element types never widen the sequence / optional sets.
        ("bad_seq_bfloat16_opset25", "id_seq_bf16", seq_type(tensor_type(CODE["bfloat16"])), 25, 13,
         "seq(tensor(bfloat16))", 25),
        ("bad_opt_float8e4m3fn_opset25", "id_opt_f8", opt_type(tensor_type(CODE["float8e4m3fn"], [2])), 25, 13,
         "optional(tensor(float8e4m3fn))", 25),
    ]
    for name, node_name, tp, opset, ir, type_str, version in cases:
        model = make_model([node("Identity", ["x"], ["y"], node_name)], [vi("x", tp)], [vi("y", tp)], opset, ir=ir)
        check_case(out, name, model, [node_name, "Identity-%d" % version, type_str])
    # A code past the last known element type (26).
    check_case(out, "bad_elem_type_27", identity_model(tensor_type(27, [2]), 25), ["27"])


def gen_versions(out):
    check_case(out, "bad_opset29", identity_model(FLOAT23, 29), ["28"])
    for ir, stderr in [(14, ["14"]), (2, [])]:
        model = identity_model(FLOAT23, 13)
        model.ir_version = ir
        check_case(out, "bad_ir%d" % ir, model, stderr)


def run_case(out, name, model, feeds, stderr):
    """`idem run` with feeds {input name: message}; each goes to {dir}/<name>.pb."""
    d = write_case(out, name, model)
    args = ["{dir}/model.onnx"]
    for input_name, msg in feeds.items():
        write_bytes(os.path.join(d, input_name + ".pb"), msg.SerializeToString())
        args += ["--input", "%s={dir}/%s.pb" % (input_name, input_name)]
    write_expect(d, "run", args, ["error:"] + stderr)


def gen_run(out):
    model = make_model([node("Identity", ["feed_x"], ["y"], "id0")], [vi("feed_x", FLOAT23)],
                       [vi("y", FLOAT23)], 13)
    i32 = CODE["int32"]
    run_case(out, "bad_run_wrong_elem_type", model,
             {"feed_x": make_tensor("feed_x", i32, [2, 3], sample_payload(i32, 6), "raw")},
             ["feed_x", "tensor(int32)"])
    run_case(out, "bad_run_sequence_for_tensor", model,
             {"feed_x": make_sequence("feed_x", [float23("")])}, ["feed_x"])
    run_case(out, "bad_run_wrong_shape", model,
             {"feed_x": make_tensor("feed_x", F, [3, 2], sample_payload(F, 6), "raw")}, ["feed_x"])
    run_case(out, "bad_run_missing_feed", model, {}, ["feed_x"])

    # A TensorProto read as the declared SequenceProto: float_data (field 4)
    # lands in sparse_tensor_values and its first byte, 0x00, is an invalid
    # tag, so the parse fails instead of yielding some odd sequence.
    seq_model = make_model([node("Identity", ["feed_seq"], ["y"], "id0")], [vi("feed_seq", seq_type(tensor_type(F)))],
                           [vi("y", seq_type(tensor_type(F)))], 14)
    t = make_tensor("feed_seq", F, [2, 3], np.arange(6, dtype="<f4").tobytes(), "typed")
    assert_unparsable(SequenceProto, t.SerializeToString())
    run_case(out, "bad_run_tensor_for_sequence", seq_model, {"feed_seq": t}, ["feed_seq"])


def gen_initializer_data(out):
    """Initializers whose payload and dims disagree; Identity reads each one."""
    def init_model(t, code=F):
        return make_model([node("Identity", [t.name], ["y"], "id0")], [], [vi("y", tensor_type(code))], 13,
                          initializers=[t])

    def tensor(name, code, dims, **fields):
        t = TensorProto()
        t.name = name
        t.data_type = code
        t.dims.extend(dims)
        for key, value in fields.items():
            if isinstance(value, list):
                getattr(t, key).extend(value)
            else:
                setattr(t, key, value)
        return t

    check_case(out, "bad_init_raw_size", init_model(tensor("w_badsize", F, [2, 3], raw_data=b"\0" * 20)),
               ["w_badsize", "raw_data"])
    check_case(out, "bad_init_typed_count", init_model(tensor("w_badcount", F, [2, 3], float_data=[1.0] * 5)),
               ["w_badcount"])
    # int4 [5] needs ceil(5/2) = 3 bytes.
    int4 = CODE["int4"]
    check_case(out, "bad_init_int4_raw_size",
               make_model([node("Identity", ["w_int4"], ["y"], "id0")], [], [vi("y", tensor_type(int4))], 21,
                          initializers=[tensor("w_int4", int4, [5], raw_data=b"\x12\x34")]),
               ["w_int4", "raw_data"])
    check_case(out, "bad_init_string_raw",
               init_model(tensor("w_strraw", CODE["string"], [2], raw_data=b"ab"), CODE["string"]),
               ["w_strraw", "raw_data"])
    check_case(out, "bad_init_negative_dim", init_model(tensor("w_negdim", F, [-1, 3], raw_data=b"\0" * 12)),
               ["w_negdim"])
    check_case(out, "bad_init_dims_overflow",
               init_model(tensor("w_overflow", F, [2 ** 62, 2 ** 62], raw_data=b"\0" * 4)), ["w_overflow"])
    # 2**32 * 2**32 wraps to exactly 0 in 64-bit arithmetic, matching the
    # empty payload for a careless size check.
    check_case(out, "bad_init_dims_wrap_to_zero",
               init_model(tensor("w_wrap", F, [2 ** 32, 2 ** 32], raw_data=b"")), ["w_wrap"])
    # Must be rejected without allocating 400 GB.
    check_case(out, "bad_init_huge_no_payload", init_model(tensor("w_huge", F, [100000000000])), ["w_huge"])


def ext_model(location, offset=0, length=24):
    return make_model([node("Identity", ["w_ext"], ["y"], "id0")], [], [vi("y", FLOAT23)], 13,
                      initializers=[external_tensor("w_ext", F, [2, 3], location, offset, length)])


def gen_external(out):
    """External data that must not be read. A naive loader would succeed on
    most of these, because the bytes it would read exist and fit."""
    payload = sample_payload(F, 6)
    check_case(out, "bad_ext_absolute", ext_model("/etc/passwd"), ["external", "/etc/passwd"])
    check_case(out, "bad_ext_missing", ext_model("missing.bin"), ["external", "missing.bin"])
    check_case(out, "bad_ext_past_end", ext_model("short.bin", offset=16), ["external", "short.bin"],
               files={"short.bin": b"\0" * 30})
    check_case(out, "bad_ext_length_mismatch", ext_model("w.bin", length=20), ["w_ext"],
               files={"w.bin": payload})
    check_case(out, "bad_ext_negative_offset", ext_model("w.bin", offset=-8), ["external"],
               files={"w.bin": payload})
    check_case(out, "bad_ext_no_location",
               make_model([node("Identity", ["w_ext"], ["y"], "id0")], [], [vi("y", FLOAT23)], 13,
                          initializers=[external_tensor("w_ext", F, [2, 3], None, 0, 24)]), ["external"])

    d = check_case(out, "bad_ext_directory", ext_model("adir"), ["external", "adir"])
    write_bytes(os.path.join(d, "adir", "w.bin"), payload)

    d = check_case(out, "bad_ext_fifo", ext_model("fifo.bin"), ["external", "fifo.bin"])
    os.mkfifo(os.path.join(d, "fifo.bin"))  # opening it for reading would block

    # The model sits one level down so "../" escapes into a file that exists
    # (and model/sub/ exists so the nested spelling resolves on the OS too).
    for name, location in [("bad_ext_dotdot", "../outside.bin"), ("bad_ext_dotdot_nested", "sub/../../outside.bin")]:
        d = fresh_dir(os.path.join(out, name))
        write_case(d, "model", ext_model(location), files={"sub/keep.bin": b""})
        write_bytes(os.path.join(d, "outside.bin"), payload)
        write_expect(d, "check", ["{dir}/model/model.onnx"], ["error:", "external", location])

    # Symlinks inside the model folder resolving outside it (relative
    # targets, so the generated tree can be moved).
    d = fresh_dir(os.path.join(out, "bad_ext_symlink"))
    write_case(d, "model", ext_model("link.bin"))
    write_bytes(os.path.join(d, "secret.bin"), payload)
    os.symlink("../secret.bin", os.path.join(d, "model", "link.bin"))
    write_expect(d, "check", ["{dir}/model/model.onnx"], ["error:", "external", "link.bin"])

    d = fresh_dir(os.path.join(out, "bad_ext_symlink_dir"))
    write_case(d, "model", ext_model("lnk/w.bin"))
    write_bytes(os.path.join(d, "elsewhere", "w.bin"), payload)
    os.symlink("../elsewhere", os.path.join(d, "model", "lnk"))
    write_expect(d, "check", ["{dir}/model/model.onnx"], ["error:", "external", "lnk/w.bin"])


def npy_bytes(header, payload=b"", version=1, declared_len=None):
    """A .npy file with the given header text (padded as numpy pads it)."""
    h = header.encode("latin1")
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    n = len(h) if declared_len is None else declared_len
    if version == 1:
        prefix = b"\x93NUMPY\x01\x00" + n.to_bytes(2, "little")
    else:
        prefix = b"\x93NUMPY\x02\x00" + n.to_bytes(4, "little")
    return prefix + h + payload


def gen_value_files(out):
    """Value files that a lenient reader misreads or crashes on (issue 12): messages of the wrong
    kind, typed fields out of range for the element type, .npy headers a regex parser chokes on."""
    # A TensorProto with raw_data fed where a sequence is declared: as a SequenceProto its fields
    # are unknown (dims, raw_data) or land in elem_type, so a lenient parse gives an empty
    # sequence and the run "succeeds".
    seq_model = make_model([node("Identity", ["feed_seq"], ["y"], "id0")],
                           [vi("feed_seq", seq_type(tensor_type(F)))], [vi("y", seq_type(tensor_type(F)))], 14)
    run_case(out, "bad_run_raw_tensor_for_sequence", seq_model,
             {"feed_seq": make_tensor("feed_seq", F, [2, 3], sample_payload(F, 6), "raw")},
             ["feed_seq", "TensorProto"])
    # Likewise in `idem test`: input and expected output are two unrelated tensors.
    d = write_case(out, "bad_test_tensors_for_sequences", identity_model(seq_type(tensor_type(F)), 14),
                   [([make_tensor("x", F, [2, 3], sample_payload(F, 6), "raw")],
                     [make_tensor("y", F, [3], sample_payload(F, 3, 7), "raw")])])
    write_expect(d, "test", ["{dir}"], [], stdout_contains=["FAIL", "TensorProto", "0 passed, 1 failed"])
    opt_model = make_model([node("Identity", ["feed_opt"], ["y"], "id0")],
                           [vi("feed_opt", opt_type(tensor_type(F)))], [vi("y", opt_type(tensor_type(F)))], 16)
    run_case(out, "bad_run_raw_tensor_for_optional", opt_model,
             {"feed_opt": make_tensor("feed_opt", F, [2, 3], sample_payload(F, 6), "raw")},
             ["feed_opt", "TensorProto"])

    # Typed fields holding values the element type cannot: narrowing would change them silently.
    def typed_case(name, elem, field, values, opset=13, shape=None):
        code = CODE[elem]
        t = TensorProto()
        t.name = "feed_t"
        t.data_type = code
        t.dims.extend(shape if shape is not None else [len(values)])
        getattr(t, field).extend(values)
        tp = tensor_type(code)
        m = make_model([node("Identity", ["feed_t"], ["y"], "id0")], [vi("feed_t", tp)], [vi("y", tp)], opset)
        run_case(out, name, m, {"feed_t": t}, ["feed_t", field])
    typed_case("bad_range_uint8_300", "uint8", "int32_data", [1, 300])
    typed_case("bad_range_int8_minus129", "int8", "int32_data", [-129])
    typed_case("bad_range_bool_2", "bool", "int32_data", [0, 2])
    typed_case("bad_range_float16_bits", "float16", "int32_data", [0x10000])
    typed_case("bad_range_uint32_2p40", "uint32", "uint64_data", [1 << 40])
    typed_case("bad_range_uint4_byte", "uint4", "int32_data", [0x1FF], opset=21, shape=[2])
    # A bool is byte 0 or 1 in raw_data too: byte 2 printed as true but was written back as 2.
    braw = TensorProto()
    braw.name = "feed_t"
    braw.data_type = CODE["bool"]
    braw.dims.extend([2])
    braw.raw_data = b"\x01\x02"
    bt = tensor_type(CODE["bool"])
    run_case(out, "bad_range_bool_raw_2", make_model([node("Identity", ["feed_t"], ["y"], "id0")], [vi("feed_t", bt)],
                                                     [vi("y", bt)], 13), {"feed_t": braw}, ["feed_t", "raw_data[1]"])

    # The dims-overflow rule must not depend on the order of the dims.
    for name, dims in [("bad_dims_zero_first", [0, 1 << 62, 1 << 62]), ("bad_dims_zero_last", [1 << 62, 1 << 62, 0])]:
        w = TensorProto()
        w.name = "w_big"
        w.data_type = F
        w.dims.extend(dims)
        check_case(out, name, make_model([node("Identity", ["w_big"], ["y"], "id0")], [],
                                         [vi("y", tensor_type(F))], 13, initializers=[w]), ["w_big", "overflows"])

    # .npy headers: numpy's own spelling with double quotes must parse; these must be refused with
    # an error line, never an abort (std::stoul) or a stack overflow (std::regex).
    model = make_model([node("Identity", ["feed_x"], ["y"], "id0")], [vi("feed_x", tensor_type(F))],
                       [vi("y", tensor_type(F))], 13)
    s_model = make_model([node("Identity", ["feed_x"], ["y"], "id0")], [vi("feed_x", tensor_type(CODE["string"]))],
                         [vi("y", tensor_type(CODE["string"]))], 13)
    npys = {
        "bad_npy_huge_s_width": (s_model, npy_bytes("{'descr': '|S99999999999999999999999', 'fortran_order': False, 'shape': (1,), }")),
        "bad_npy_s_width_overflows_count": (s_model, npy_bytes("{'descr': '|S4294967296', 'fortran_order': False, 'shape': (4294967296,), }")),
        "bad_npy_long_header": (model, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 20000 + "), 'x': 1}", version=2)),
        "bad_npy_negative_dim": (model, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }")),
        "bad_npy_fractional_dim": (model, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,), }", b"\0" * 8)),
        "bad_npy_dim_overflow": (model, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }")),
        "bad_npy_header_past_end": (model, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", declared_len=60000)),
        "bad_npy_no_shape": (model, npy_bytes("{\"descr\": \"<f4\", \"fortran_order\": False}")),
    }
    b_model = make_model([node("Identity", ["feed_x"], ["y"], "id0")], [vi("feed_x", tensor_type(CODE["bool"]))],
                         [vi("y", tensor_type(CODE["bool"]))], 13)
    npys["bad_npy_bool_byte_2"] = (b_model, npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                                                      b"\x01\x02"))
    for name, (m, data) in npys.items():
        d = write_case(out, name, m, files={"x.npy": data})
        write_expect(d, "run", ["{dir}/model.onnx", "--input", "feed_x={dir}/x.npy"], ["error:", "x.npy"])


def gen_messages(out):
    """Names from the file are escaped: a newline cannot forge a second `error:` line and escape
    codes do not reach the terminal (run_bad_cases.py requires exactly one stderr line)."""
    bad_in = [vi("x", seq_type(tensor_type(F)))]
    check_case(out, "bad_name_newline", make_model(
        [node("Identity", ["x"], ["y"], "id0\nerror: forged line")], bad_in, [vi("y", seq_type(tensor_type(F)))], 13),
        ["id0\\nerror: forged line"])
    check_case(out, "bad_name_escape_code", make_model(
        [node("Identity", ["x"], ["y"], "id\x1b[31mred")], bad_in, [vi("y", seq_type(tensor_type(F)))], 13),
        ["id\\x1b[31mred"])
    check_case(out, "bad_empty_output_name", make_model(
        [node("Identity", ["x"], [""], "id0")], [vi("x", FLOAT23)], [vi("y", FLOAT23)], 13),
        ["id0", "empty name"])


def gen_hard_link(out):
    """An external-data file with a second hard link is refused by default: the link may be the
    only trace of a file outside the model's folder."""
    payload = sample_payload(F, 6)
    d = fresh_dir(os.path.join(out, "bad_ext_hard_link"))
    write_case(d, "model", ext_model("w.bin"))
    write_bytes(os.path.join(d, "outside.bin"), payload)
    os.link(os.path.join(d, "outside.bin"), os.path.join(d, "model", "w.bin"))
    write_expect(d, "check", ["{dir}/model/model.onnx"], ["error:", "w.bin", "hard link"])


def test_case(out, name, model, inputs, expected):
    """A backend test folder whose expected output is wrong: `idem test` must
    report the failure on stdout and exit 1."""
    d = write_case(out, name, model, [(inputs, expected)])
    write_expect(d, "test", ["{dir}"], [], stdout_contains=["FAIL", "0 passed, 1 failed"])


def with_first_float(bits, start=0):
    """float [2,3] raw payload whose first element has the given bit pattern."""
    return bits.to_bytes(4, "little") + sample_payload(F, 5, start)


def gen_test_failures(out):
    model = identity_model(FLOAT23, 13)
    # Output declared without shape, so a wrong expected shape is a value
    # mismatch rather than a type error.
    model_noshape = make_model([node("Identity", ["x"], ["y"], "id0")], [vi("x", FLOAT23)],
                               [vi("y", tensor_type(F))], 13)

    test_case(out, "bad_test_nan_payload", model,
              [make_tensor("x", F, [2, 3], with_first_float(0x7FC00001), "raw")],
              [make_tensor("y", F, [2, 3], with_first_float(0x7FC00002), "raw")])
    test_case(out, "bad_test_negative_zero", model,
              [make_tensor("x", F, [2, 3], with_first_float(0x80000000), "raw")],
              [make_tensor("y", F, [2, 3], with_first_float(0x00000000), "raw")])
    p = sample_payload(F, 6)
    test_case(out, "bad_test_shape", model_noshape, [make_tensor("x", F, [2, 3], p, "raw")],
              [make_tensor("y", F, [6], p, "raw")])

    s = CODE["string"]
    strings = sample_payload(s, 6)
    test_case(out, "bad_test_string_bytes", identity_model(tensor_type(s, [2, 3]), 13),
              [make_tensor("x", s, [2, 3], strings, "typed")],
              [make_tensor("y", s, [2, 3], strings[:2] + [b"\xff\xfe\x81"] + strings[3:], "typed")])

    opt_model = identity_model(opt_type(tensor_type(F, [2, 3])), 16)
    test_case(out, "bad_test_optional_presence", opt_model, [make_optional("x", float23(""))],
              [make_optional("y", elem_type=OptionalProto.TENSOR)])

    seq_model = identity_model(seq_type(tensor_type(F, [2, 3])), 14)
    test_case(out, "bad_test_sequence_length", seq_model,
              [make_sequence("x", [float23(""), float23("", 1)])], [make_sequence("y", [float23("")])])


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: gen_bad_cases.py OUTDIR")
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    gen_file_level(out)
    gen_graph_structure(out)
    gen_type_rules(out)
    gen_versions(out)
    gen_run(out)
    gen_initializer_data(out)
    gen_external(out)
    gen_test_failures(out)
    gen_value_files(out)
    gen_messages(out)
    gen_hard_link(out)


if __name__ == "__main__":
    main(sys.argv)
