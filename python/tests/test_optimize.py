"""Tests of idem.optimize: results validated with onnx.checker (Debian's onnx 1.12, IR <= 8) and
run through idem next to the original where idem can run them (outputs compared bit for bit).
Run with /usr/bin/python3 -m unittest discover -s python/tests (PYTHONPATH = build/python)."""
import os
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

import idem


def f(name, shape=(3,)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def model(nodes, inputs, outputs, opset=16, ir=8, **kw):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, **kw),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def feeds_for(session):
    rng = np.random.default_rng(7)
    feeds = {}
    for info in session.inputs:
        shape = [d if isinstance(d, int) else 2 for d in (info.shape or [2])]
        feeds[info.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


class OptimizeTest(unittest.TestCase):
    def optimize_checked(self, m, runnable):
        data = m.SerializeToString()
        out, report = idem.optimize(data)
        result = onnx.load_from_string(out)
        onnx.checker.check_model(result)
        again, report2 = idem.optimize(out)
        self.assertEqual(again, out)
        self.assertEqual(report2["removed"], 0)
        if runnable:
            a, b = idem.Session(data), idem.Session(out)
            feeds = feeds_for(a)
            for x, y in zip(a.run(feeds), b.run(feeds)):
                self.assertEqual(np.asarray(x).tobytes(), np.asarray(y).tobytes())
        return result, report

    def test_chain_runs_identically(self):
        nodes = [helper.make_node("Identity", ["x"], ["t0"], name="i0")]
        nodes += [helper.make_node("Identity", [f"t{k}"], [f"t{k + 1}"], name=f"i{k + 1}")
                  for k in range(20)]
        nodes += [helper.make_node("Identity", ["t20"], ["y"], name="last")]
        result, report = self.optimize_checked(model(nodes, [f("x")], [f("y")]), runnable=True)
        self.assertEqual(report["removed"], 21)
        self.assertEqual(report["kept"], 1)
        self.assertEqual(report["kept_nodes"][0]["rule"], "graph-input")
        self.assertEqual(report["kept_nodes"][0]["node"], "last")
        self.assertEqual(list(result.graph.node[0].input), ["x"])

    def test_unsupported_operators_and_if_branches(self):
        # A model idem cannot run: checked with onnx.checker only.
        then_g = helper.make_graph([helper.make_node("Identity", ["r"], ["then_out"], name="pt")],
                                   "then", [], [f("then_out")])
        else_g = helper.make_graph([helper.make_node("Neg", ["r2"], ["n"]),
                                    helper.make_node("Identity", ["n"], ["else_out"], name="loc")],
                                   "else", [], [f("else_out")])
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Identity", ["r"], ["r2"], name="alias"),
                 helper.make_node("ReduceSum", ["r2"], ["s"], keepdims=0),
                 helper.make_node("Greater", ["s", "zero"], ["c"]),
                 helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
                 helper.make_node("Identity", ["y"], ["out"], name="to_out")]
        zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
        m = model(nodes, [f("x")], [f("out")], opset=13, initializer=[zero])
        m.doc_string = "keep me"
        helper.set_model_props(m, {"author": "idem"})
        result, report = self.optimize_checked(m, runnable=False)
        self.assertEqual(report["removed"], 3)  # alias, loc, to_out
        self.assertEqual([k["rule"] for k in report["kept_nodes"]], ["outer-scope"])
        self.assertEqual(report["kept_nodes"][0]["graph"], "graph/#4.then_branch")
        self.assertEqual(result.doc_string, "keep me")
        self.assertEqual(result.metadata_props[0].key, "author")
        self.assertEqual(list(result.graph.node[1].input), ["r"])  # r2 -> r
        self.assertEqual(list(result.graph.node[3].output), ["out"])  # If now produces out
        branches = {a.name: a.g for a in result.graph.node[3].attribute}
        else_nodes = branches["else_branch"].node
        self.assertEqual([list(n.input) for n in else_nodes], [["r"]])
        self.assertEqual(list(else_nodes[0].output), ["else_out"])
        self.assertEqual(result.graph.input[0].SerializeToString(),
                         m.graph.input[0].SerializeToString())

    def test_sequence_and_optional(self):
        seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
        opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
        nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
                 helper.make_node("Identity", ["s"], ["s_out"], name="a"),
                 helper.make_node("Optional", ["x"], ["o"]),
                 helper.make_node("Identity", ["o"], ["o2"], name="b"),
                 helper.make_node("OptionalGetElement", ["o2"], ["e"]),
                 helper.make_node("Identity", ["e"], ["y"], name="c")]
        m = model(nodes, [f("x")], [helper.make_value_info("s_out", seq), f("y")], opset=18)
        m.graph.value_info.append(helper.make_value_info("o2", opt))
        result, report = self.optimize_checked(m, runnable=True)
        self.assertEqual(report["removed"], 3)
        self.assertEqual(len(result.graph.value_info), 0)  # o2 no longer exists

    def test_nothing_removable_is_byte_identical_and_paths(self):
        m = model([helper.make_node("Identity", ["x"], ["y"], name="only")], [f("x")], [f("y")])
        data = m.SerializeToString()
        out, report = idem.optimize(data)
        self.assertIs(type(out), bytes)
        self.assertEqual(out, data)
        self.assertEqual(report["kept"], 1)
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
            with open(src, "wb") as fh:
                fh.write(data)
            self.assertEqual(idem.optimize(src)[0], data)
            none, report = idem.optimize(src, dst)
            self.assertIsNone(none)
            with open(dst, "rb") as fh:
                self.assertEqual(fh.read(), data)
            with self.assertRaises(idem.Error) as e:
                idem.optimize(src, src)
            self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
            self.assertIn("--in-place", str(e.exception))
            idem.optimize(src, src, in_place=True)
        with self.assertRaises(ValueError):
            idem.optimize(data, "x.onnx")
        with self.assertRaises(idem.Error) as e:
            idem.optimize(b"\xff\xff")
        self.assertEqual(e.exception.code, "INVALID_MODEL")

    def test_model_proto_input(self):
        nodes = [helper.make_node("Identity", ["x"], ["t"]),
                 helper.make_node("Identity", ["t"], ["y"])]
        out, report = idem.optimize(model(nodes, [f("x")], [f("y")]))
        self.assertEqual(report["removed"], 1)
        self.assertEqual(len(onnx.load_from_string(out).graph.node), 1)

    def test_report_paths_with_long_non_ascii_names_decode(self):
        # Report paths clip long names; a cut inside a UTF-8 character made the report undecodable
        # (UnicodeDecodeError on a valid model).
        name = "a" + "\u00e9" * 40
        inner = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="i")], "b", [],
                                  [f("y")])
        m = model([helper.make_node("If", ["c"], ["y"], name=name, then_branch=inner,
                                    else_branch=inner)],
                  [f("x"), helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [f("y")])
        _, report = idem.optimize(m)
        self.assertEqual(report["kept"], 2)
        self.assertTrue(report["kept_nodes"][0]["graph"].startswith("graph/a\u00e9"))
        self.assertIn("...", report["kept_nodes"][0]["graph"])

    def test_paths_are_read_like_the_cli_and_every_failure_is_an_idem_error(self):
        # A FIFO used to block forever in open().read(), /dev/zero to read until memory ran out;
        # a missing file, a folder or a wrong argument raised OSError/TypeError/ValueError.
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "fifo.onnx")
            os.mkfifo(fifo)
            for path in (fifo, "/dev/zero", d):
                with self.assertRaises(idem.NoSuchFile) as ctx:
                    idem.optimize(path)
                self.assertIn("not a regular file", str(ctx.exception))
            with self.assertRaises(idem.NoSuchFile) as ctx:
                idem.optimize(os.path.join(d, "missing.onnx"))
            self.assertIn("No such file", str(ctx.exception))
            with self.assertRaises(idem.InvalidArgument):
                idem.optimize(None)
            with self.assertRaises(idem.InvalidArgument) as ctx:
                idem.optimize(b"\x08\x08", out_path=os.path.join(d, "out.onnx"))
            self.assertIn("out_path needs a model path", str(ctx.exception))
            with self.assertRaises(idem.InvalidArgument) as ctx:
                idem.optimize(os.path.join(d, "a\0b.onnx"))
            self.assertIn("NUL", str(ctx.exception))
            # A regular file is still read and optimized.
            path = os.path.join(d, "m.onnx")
            onnx.save(model([helper.make_node("Neg", ["x"], ["t"]),
                             helper.make_node("Identity", ["t"], ["y"])], [f("x")], [f("y")]), path)
            out, report = idem.optimize(path)
            self.assertEqual(report["removed"], 1)
            self.assertEqual(len(onnx.load_from_string(out).graph.node), 1)

    def test_report_names_that_are_not_utf8_decode_with_surrogateescape(self):
        # A node name is bytes in the file; invalid UTF-8 used to raise UnicodeDecodeError.
        nodes = [helper.make_node("Identity", ["x"], ["y"], name="idQQ")]
        data = model(nodes, [f("x")], [f("y")]).SerializeToString()
        data = data.replace(b"idQQ", b"id\xff\xfe")
        _, report = idem.optimize(data)
        self.assertEqual(report["kept"], 1)
        name = report["kept_nodes"][0]["node"]
        self.assertEqual(name, "id\udcff\udcfe")
        self.assertEqual(name.encode("utf-8", "surrogateescape"), b"id\xff\xfe")


if __name__ == "__main__":
    unittest.main()


# ---- randomized models: meaning must not change ------------------------------------------------
#
# Random graphs with Identity chains, custom operators holding nested graphs (up to 3 deep), reads
# of outer values, shadowing, graph outputs that are inputs, initializers or outer values, and
# value_info that sometimes disagrees. Each model is interpreted symbolically (a custom node's
# output is a term over its node name and input terms; Identity returns its input's term; a nested
# graph contributes its output names and terms), before and after idem.optimize: the main outputs'
# names and terms must be equal, and every default-domain Identity is either removed or reported.

def _random_model(rng, runnable):
    counter = [0]

    def fresh():
        counter[0] += 1
        return f"v{counter[0]}"

    def vi(name, dim=2):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [dim])

    def graph(visible, depth, main):
        inputs, inits, nodes, value_info = [], [], [], []
        local = []
        if main:
            for k in range(rng.integers(1, 3)):
                inputs.append(vi(f"x{k}"))
                local.append(f"x{k}")
            if not runnable and rng.random() < 0.5:
                inits.append(helper.make_tensor("w0", TensorProto.FLOAT, [2], [1.0, 2.0]))
                local.append("w0")
        else:
            for k in range(rng.integers(0, 3)):
                # Sometimes shadow an outer name (invalid ONNX, but it must stay correct).
                name = (rng.choice(visible) if visible and rng.random() < 0.15 else fresh())
                inputs.append(vi(name))
                local.append(name)
        for _ in range(rng.integers(1, 9)):
            pool = local + visible
            if not pool:
                break
            if runnable or rng.random() < 0.55:
                out = fresh()
                nodes.append(helper.make_node("Identity", [rng.choice(pool)], [out],
                                              name=f"n{counter[0]}"))
                local.append(out)
                continue
            outs = [fresh() for _ in range(rng.integers(1, 3))]
            if rng.random() < 0.1 and not main and visible:
                outs[0] = rng.choice(visible)  # shadowing definition
            elif rng.random() < 0.05 and local:
                outs[0] = rng.choice(local)  # a second definition (invalid SSA)
            ins = [rng.choice(pool) for _ in range(rng.integers(1, 3))]
            node = helper.make_node("Op", ins, outs, name=f"c{counter[0]}", domain="custom")
            if depth < 3 and rng.random() < 0.4:
                for a in range(rng.integers(1, 3)):
                    node.attribute.append(helper.make_attribute(
                        f"g{a}", graph(pool, depth + 1, False)))
            nodes.append(node)
            local.extend(outs)
        if rng.random() < 0.08:
            rng.shuffle(nodes)  # not topologically sorted
        pool = local + ([] if main else visible)
        outputs = []
        for name in rng.permutation(pool)[: rng.integers(1, 4)] if pool else []:
            outputs.append(vi(str(name)))
        if rng.random() < 0.3 and nodes:
            # value_info for an intermediate, sometimes disagreeing with Identity's output type
            value_info.append(vi(rng.choice(local), 2 if rng.random() < 0.7 else 3))
        return helper.make_graph(nodes, f"g{counter[0]}", inputs, outputs or [vi(local[0])]
                                 if local else [], initializer=inits, value_info=value_info)

    g = graph([], 0, True)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16),
                                            helper.make_opsetid("custom", 1)])
    m.ir_version = 8
    return m


def _meaning(m):
    """Main output names and symbolic terms; nested graphs are evaluated in their scope."""
    def run_graph(g, outer):
        env = dict()
        scope = [env] + outer
        for i in g.input:
            env[i.name] = ("input", id(g) if False else g.name, i.name)
        for t in g.initializer:
            env[t.name] = ("init", t.name)

        def look(name):
            for e in scope:
                if name in e:
                    return e[name]
            return ("undefined", name)
        for n in g.node:
            if n.op_type == "Identity" and n.domain in ("", "ai.onnx"):
                env[n.output[0]] = look(n.input[0])
                continue
            subs = tuple((a.name, run_graph(a.g, scope)) for a in n.attribute if a.HasField("g"))
            args = tuple(look(i) for i in n.input)
            for k, o in enumerate(n.output):
                env[o] = ("op", n.name, k, args, subs)
        return tuple((o.name, look(o.name)) for o in g.output)

    return run_graph(m.graph, [])


def _count_identities(g):
    count = 0
    for n in g.node:
        count += n.op_type == "Identity" and n.domain in ("", "ai.onnx")
        for a in n.attribute:
            if a.HasField("g"):
                count += _count_identities(a.g)
    return count


class RandomModelTest(unittest.TestCase):
    def test_random_models_keep_meaning(self):
        rng = np.random.default_rng(20261130)
        removed_total = 0
        for i in range(400):
            runnable = i % 4 == 0
            m = _random_model(rng, runnable)
            data = m.SerializeToString()
            out, report = idem.optimize(data)
            result = onnx.load_from_string(out)
            with self.subTest(model=i):
                self.assertEqual(_meaning(result), _meaning(m))
                self.assertEqual(report["removed"] + report["kept"], _count_identities(m.graph))
                self.assertEqual(_count_identities(result.graph), report["kept"])
                again, report2 = idem.optimize(out)
                self.assertEqual(report2["removed"], 0)
                self.assertEqual(again, out)
                if report["removed"] == 0:
                    self.assertEqual(out, data)
                if runnable:
                    try:
                        a = idem.Session(data)
                    except idem.Error:
                        continue
                    b = idem.Session(out)
                    feeds = {v.name: np.arange(2, dtype=np.float32) + k
                             for k, v in enumerate(a.inputs)}
                    for x, y in zip(a.run(feeds), b.run(feeds)):
                        self.assertEqual(np.asarray(x).tobytes(), np.asarray(y).tobytes())
            removed_total += report["removed"]
        self.assertGreater(removed_total, 400)  # the generator does exercise removals
