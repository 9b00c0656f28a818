#!/usr/bin/python3
"""`idem optimize` over every backend-test case under the given folders: each model.onnx is
optimized in place in a copy of its case, then `idem test --skip-unsupported --rtol 1e-3
--atol 1e-5` must pass the copies just as it passes the originals. Also: a model with nothing removed comes back
byte-identical, and a result onnx.checker accepts the original of, it accepts too (IR <= 8).
Usage: optimize_conformance.py IDEM_EXE FOLDER..."""
import os
import shutil
import subprocess
import sys
import tempfile

import onnx


def cases(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "model.onnx" in filenames:
            yield dirpath


def checker_accepts(path):
    try:
        m = onnx.load(path)
        if m.ir_version > 8:
            return None
        onnx.checker.check_model(m)
        return True
    except Exception:  # noqa: BLE001 - onnx 1.12 refuses newer models in many ways
        return False


def stale_cases():
    """Official cases whose data is stale (tests/node_stale_cases.txt): not this test's subject."""
    names = set()
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_stale_cases.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line.split("\t", 1)[0])
    return names


def main():
    idem_exe, roots = sys.argv[1], sys.argv[2:]
    stale = stale_cases()
    total = removed_models = identical = failures = 0
    with tempfile.TemporaryDirectory() as out_root:
        for root in roots:
            for case in cases(root):
                if os.path.basename(case) in stale:
                    continue
                total += 1
                dst = os.path.join(out_root, f"{total:05d}_{os.path.basename(case)}")
                # The whole case (external data included), then the model optimized in place.
                shutil.copytree(case, dst, symlinks=True)
                src_model = os.path.join(case, "model.onnx")
                out_model = os.path.join(dst, "model.onnx")
                r = subprocess.run([idem_exe, "optimize", out_model, "--in-place"],
                                   capture_output=True, text=True, timeout=60)
                if r.returncode != 0:
                    # Not a model protobuf can parse: the optimizer must say so, in one line.
                    if not r.stderr.startswith("error:") or len(r.stderr.splitlines()) != 1:
                        print(f"FAIL {case}: {r.stderr}")
                        failures += 1
                    continue
                with open(src_model, "rb") as a, open(out_model, "rb") as b:
                    same = a.read() == b.read()
                if "removed 0 " in r.stdout:
                    identical += same
                    if not same:
                        print(f"FAIL {case}: nothing removed but the bytes changed")
                        failures += 1
                else:
                    removed_models += 1
                    if checker_accepts(src_model) and checker_accepts(out_model) is False:
                        print(f"FAIL {case}: onnx.checker refuses the result")
                        failures += 1
        # The tolerance the originals are held to (conformance_debian_node): Debian's expected
        # outputs are numpy's, which transcendental kernels match only within it.
        r = subprocess.run([idem_exe, "test", "--skip-unsupported", "-q", "--rtol", "1e-3",
                            "--atol", "1e-5", out_root],
                           capture_output=True, text=True, timeout=1200)
        print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr)
        if r.returncode != 0:
            print(r.stdout)
            failures += 1
    print(f"{total} models: {removed_models} with Identity removed, {identical} byte-identical "
          f"(nothing removable); {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
