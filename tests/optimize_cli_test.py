#!/usr/bin/python3
"""End-to-end tests of `idem optimize` (counts, --explain, --check, --in-place, atomic writes,
external data, error lines). Usage: optimize_cli_test.py IDEM_EXE"""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IDEM = None


def idem(*args):
    return subprocess.run([IDEM, *args], capture_output=True, text=True, timeout=60)


def f3(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [3])


def save(model, path, ir=8):
    model.ir_version = ir
    onnx.save(model, path)
    return path


def chain_model(path):
    # x -> a -> t -> y (output); x -> z (output): one removable, two kept (graph input).
    nodes = [helper.make_node("Identity", ["x"], ["t"], name="a"),
             helper.make_node("Identity", ["t"], ["y"], name="b"),
             helper.make_node("Identity", ["x"], ["z"], name="c")]
    g = helper.make_graph(nodes, "g", [f3("x")], [f3("y"), f3("z")])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


class OptimizeCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def p(self, name):
        return os.path.join(self.dir, name)

    def test_counts_explain_and_check(self):
        src = chain_model(self.p("m.onnx"))
        r = idem("optimize", src, "-o", self.p("o.onnx"), "--explain", "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed 1 Identity nodes, kept 2", r.stdout)
        self.assertIn("kept graph: node 'b' (#1): graph-input", r.stdout)
        self.assertIn("kept graph: node 'c' (#2): graph-input", r.stdout)
        self.assertIn("check: OK: 2 outputs bit-identical", r.stdout)
        out = onnx.load(self.p("o.onnx"))
        onnx.checker.check_model(out)
        self.assertEqual([n.name for n in out.graph.node], ["b", "c"])
        self.assertEqual(list(out.graph.node[0].input), ["x"])
        r = idem("run", self.p("o.onnx"), "--input", "x=" + self.write_npy())
        self.assertEqual(r.returncode, 0, r.stderr)
        # Optimizing the result changes nothing, byte for byte.
        r = idem("optimize", self.p("o.onnx"), "-o", self.p("o2.onnx"))
        self.assertIn("removed 0 Identity nodes, kept 2", r.stdout)
        with open(self.p("o.onnx"), "rb") as a, open(self.p("o2.onnx"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def write_npy(self):
        path = self.p("x.npy")
        np.save(path, np.array([1, -0.0, np.nan], dtype=np.float32))
        return path

    def test_check_on_a_model_idem_cannot_run(self):
        nodes = [helper.make_node("Softsign", ["x"], ["r"]),
                 helper.make_node("Identity", ["r"], ["y"], name="id")]
        g = helper.make_graph(nodes, "g", [f3("x")], [f3("y")])
        src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
                   self.p("softsign.onnx"))
        r = idem("optimize", src, "-o", self.p("o.onnx"), "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed 1 Identity nodes, kept 0", r.stdout)
        self.assertIn("outputs not compared", r.stdout)
        self.assertIn("Softsign", r.stdout)
        out = onnx.load(self.p("o.onnx"))
        onnx.checker.check_model(out)
        self.assertEqual(list(out.graph.node[0].output), ["y"])

    def test_refuses_to_overwrite_input_and_in_place_keeps_mode(self):
        src = chain_model(self.p("m.onnx"))
        os.chmod(src, 0o640)
        with open(src, "rb") as f:
            before = f.read()
        os.link(src, self.p("hard.onnx"))
        for out in (src, self.p("./m.onnx"), self.p("hard.onnx")):
            r = idem("optimize", src, "-o", out)
            self.assertEqual(r.returncode, 1)
            self.assertTrue(r.stderr.startswith("error:"), r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1)
            self.assertIn("--in-place", r.stderr)
        with open(src, "rb") as f:
            self.assertEqual(f.read(), before)
        r = idem("optimize", src, "--in-place")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(src).st_mode), 0o640)
        with open(src, "rb") as f:
            self.assertNotEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(self.dir)), ["hard.onnx", "m.onnx"])  # no temp left

    def test_only_a_regular_file_or_a_new_path_is_replaced(self):
        # The write renames a temp over OUT: a symlink would be swapped for a file (with
        # --in-place the real model stayed unchanged), a FIFO or device (/dev/null as root) would be
        # destroyed. Each is refused, in one error line, and left as it was; nothing else appears.
        src = chain_model(self.p("m.onnx"))
        with open(src, "rb") as f:
            before = f.read()
        with open(self.p("victim"), "w") as f:
            f.write("victim")
        os.symlink("victim", self.p("link.onnx"))
        os.symlink("m.onnx", self.p("inlink.onnx"))
        os.symlink("nowhere/x.onnx", self.p("dangling.onnx"))
        os.mkfifo(self.p("fifo"))
        os.mkdir(self.p("dir.onnx"))
        cases = [(src, "-o", self.p("link.onnx")), (src, "-o", self.p("dangling.onnx")),
                 (src, "-o", self.p("fifo")), (src, "-o", self.p("dir.onnx")),
                 (self.p("inlink.onnx"), "--in-place")]
        for args in cases:
            r = idem("optimize", *args)
            self.assertEqual(r.returncode, 1, args)
            self.assertTrue(r.stderr.startswith("error:"), r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1)
            self.assertIn("is not a regular file", r.stderr)
        self.assertTrue(os.path.islink(self.p("link.onnx")))
        self.assertTrue(os.path.islink(self.p("inlink.onnx")))
        self.assertTrue(os.path.islink(self.p("dangling.onnx")))
        self.assertTrue(stat.S_ISFIFO(os.lstat(self.p("fifo")).st_mode))
        with open(self.p("victim")) as f:
            self.assertEqual(f.read(), "victim")
        with open(src, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["dangling.onnx", "dir.onnx", "fifo", "inlink.onnx", "link.onnx", "m.onnx",
                          "victim"])
        self.assertEqual(os.listdir(self.p("dir.onnx")), [])
        # Through the symlink's target it works.
        r = idem("optimize", src, "--in-place")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed 1", r.stdout)

    def test_longest_file_name_can_be_written(self):
        # OUT may use all NAME_MAX (255) bytes; the temporary file beside it must still fit.
        src = chain_model(self.p("m.onnx"))
        out = self.p("o" * 250 + ".onnx")
        r = idem("optimize", src, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(onnx.load(out).graph.output[0].name, "y")
        self.assertEqual(len(os.listdir(self.dir)), 2)

    def test_check_generates_small_integers_and_bounds_each_run(self):
        # A Loop whose trip count is an int64 input, with a scan output: generated from random
        # bytes, the count was ~2^62 and --check ran until 16 GB of scan values were held.
        i64 = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, [])
        b = lambda n: helper.make_tensor_value_info(n, TensorProto.BOOL, [])
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c_out"]),
             helper.make_node("Add", ["v", "v"], ["v_out"]),
             helper.make_node("Identity", ["v_out"], ["s"])],
            "body", [i64("i"), b("c"), f3("v")], [b("c_out"), f3("v_out"), f3("s")])
        g = helper.make_graph(
            [helper.make_node("Loop", ["n", "go", "x"], ["v_final", "stacked"], body=body),
             helper.make_node("Identity", ["stacked"], ["y"])],
            "g", [f3("x"), i64("n"), b("go")],
            [f3("v_final"), helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]),
                    self.p("loop.onnx"))
        r = idem("optimize", path, "-o", self.p("loop.opt.onnx"), "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("check: OK: 2 outputs bit-identical", r.stdout)
        # One run that would hold 2 GiB (an Add broadcasting [2^14,1] and [1,2^15]) is over the
        # check's 1 GiB run budget: refused before allocating, the file is still written.
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 14, 1])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1 << 15])
        g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["s"]),
                               helper.make_node("Identity", ["s"], ["out"])], "g", [x, y],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
        path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]),
                    self.p("wide.onnx"))
        r = idem("optimize", path, "-o", self.p("wide.opt.onnx"), "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("both models fail on generated inputs", r.stdout)
        self.assertIn("max_run_bytes 1073741824", r.stdout)
        self.assertTrue(os.path.exists(self.p("wide.opt.onnx")))

    def test_explain_escapes_names(self):
        # Node names from the file are printed quoted and escaped: a newline cannot forge a
        # "kept ..." line and an escape code cannot reach the terminal.
        nodes = [helper.make_node("Identity", ["x"], ["y"], name="a\nkept graph: node 'z'\x1b[31m")]
        g = helper.make_graph(nodes, "g", [f3("x")], [f3("y")])
        src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), self.p("m.onnx"))
        r = idem("optimize", src, "-o", self.p("o.onnx"), "--explain")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        self.assertIn("node 'a\\nkept graph: node \\'z\\'\\x1b[31m' (#0): graph-input", lines[1])
        self.assertNotIn("\x1b", r.stdout)

    def test_errors_are_one_line(self):
        r = idem("optimize", self.p("missing.onnx"), "-o", self.p("o.onnx"))
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith("error:") and "missing.onnx" in r.stderr, r.stderr)
        with open(self.p("junk.onnx"), "wb") as f:
            f.write(b"\xff\xff\xff\xff")
        r = idem("optimize", self.p("junk.onnx"), "-o", self.p("o.onnx"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("protobuf parsing failed", r.stderr)
        self.assertFalse(os.path.exists(self.p("o.onnx")))
        r = idem("optimize", self.p("junk.onnx"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("-o OUT", r.stderr)

    def test_external_data_stays_valid_or_is_refused(self):
        w = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.float32), "w")
        nodes = [helper.make_node("Identity", ["w"], ["t"], name="a"),
                 helper.make_node("Identity", ["t"], ["y"], name="b")]
        g = helper.make_graph(nodes, "g", [], [f3("y")], initializer=[w])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        onnx.save_model(m, self.p("m.onnx"), save_as_external_data=True, location="w.bin",
                        size_threshold=0)
        r = idem("optimize", self.p("m.onnx"), "-o", self.p("o.onnx"), "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("check: OK", r.stdout)
        os.makedirs(self.p("sub"))
        r = idem("optimize", self.p("m.onnx"), "-o", self.p("sub/o.onnx"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("external data", r.stderr)
        self.assertEqual(os.listdir(self.p("sub")), [])

    def test_out_is_never_one_of_the_models_external_data_files(self):
        # Same folder, so the folder rule allows it; but OUT = w.bin (or a hard link to it) would
        # replace the weights with the model, which then ran on its own bytes as tensor data.
        w = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.float32), "w")
        nodes = [helper.make_node("Identity", ["w"], ["t"], name="a"),
                 helper.make_node("Identity", ["t"], ["y"], name="b")]
        g = helper.make_graph(nodes, "g", [], [f3("y")], initializer=[w])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        onnx.save_model(m, self.p("m.onnx"), save_as_external_data=True, location="w.bin",
                        size_threshold=0)
        with open(self.p("w.bin"), "rb") as f:
            weights = f.read()
        os.link(self.p("w.bin"), self.p("alias.bin"))
        for out in ("w.bin", "./w.bin", "alias.bin"):
            r = idem("optimize", self.p("m.onnx"), "-o", self.p(out))
            self.assertEqual(r.returncode, 1, out)
            self.assertIn("external data file 'w.bin'", r.stderr)
            with open(self.p("w.bin"), "rb") as f:
                self.assertEqual(f.read(), weights)
        r = idem("run", self.p("m.onnx"), "--allow-hard-links")  # alias.bin is a second link
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("y float[3] = [1, 2, 3]", r.stdout)


if __name__ == "__main__":
    IDEM = sys.argv.pop(1)
    unittest.main()
