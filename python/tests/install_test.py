"""`pip install --no-build-isolation .` end to end (ctest `python_install`).

Creates a virtual environment (`/usr/bin/python3 -m venv --system-site-packages`, so Debian's
numpy and onnx are visible), installs the checkout into it with pip (offline: --no-index), imports
`idem` from a folder outside the source tree with no PYTHONPATH, runs a model through both APIs,
then `pip uninstall idem` and checks the package is gone.

Usage: install_test.py SOURCE_DIR [CMAKE_BUILD_DIR]
    CMAKE_BUILD_DIR: a configured build tree to reuse (IDEM_CMAKE_BUILD_DIR for setup.py), so the
    test does not compile idem a second time. Without it pip builds from scratch.
"""
import os
import subprocess
import sys
import tempfile

CHECK = r'''
import os, sys
import numpy as np
from onnx import TensorProto, helper
import idem, idem.backend

venv = sys.argv[1]
assert os.path.realpath(idem.__file__).startswith(os.path.realpath(venv)), idem.__file__
t = helper.make_tensor_type_proto(TensorProto.STRING, [2])
graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_value_info("x", t)], [helper.make_value_info("y", t)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="p")
model.ir_version = 10
sess = idem.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
(y,) = sess.run(None, {"x": np.array(["a", b"\xff"], dtype=object)})
assert [s.encode("utf-8", "surrogateescape") for s in y] == [b"a", b"\xff"], y
assert sess.get_modelmeta().producer_name == "p"
assert ("", "Identity", 1) in idem.supported_operators()
print("installed idem works:", idem.__file__)
'''


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def main():
    source = os.path.abspath(sys.argv[1])
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if len(sys.argv) > 2:
        env["IDEM_CMAKE_BUILD_DIR"] = os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="idem-install-") as tmp:
        venv = os.path.join(tmp, "venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], env=env)
        python = os.path.join(venv, "bin", "python")
        run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
             "--no-cache-dir", "--quiet", source], env=env, cwd=tmp)
        run([python, "-c", CHECK, venv], env=env, cwd=tmp)
        run([python, "-m", "pip", "uninstall", "--yes", "--quiet", "idem"], env=env, cwd=tmp)
        gone = subprocess.run([python, "-c", "import idem"], env=env, cwd=tmp,
                              capture_output=True, text=True)
        if gone.returncode == 0 or "No module named 'idem'" not in gone.stderr:
            print("idem is still importable after pip uninstall:", gone.stderr)
            return 1
        print("pip uninstall removed idem")
    return 0


if __name__ == "__main__":
    sys.exit(main())
