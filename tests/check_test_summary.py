#!/usr/bin/python3
"""Runs `idem test ...` and holds its result to a floor: 0 failed and at least MIN passed.

Usage: check_test_summary.py MIN_PASSED IDEM_EXE test [ARGS...]

The stage over Debian's official node tests (tests/CMakeLists.txt) uses it: the floor there is
raised as operators land, so a kernel that stops passing a case it used to pass fails the stage
even when `idem test` itself would report success (e.g. the case became SKIP).

idem's output is parsed strictly: one PASS/FAIL/SKIP line per case (the command must not be
given -q), then the summary "N passed, N failed[, N skipped]" as the last line; the counted lines
must agree with the summary and the exit code with the failures. Anything else (a crash, an
`error:` line, a changed format) fails the stage with what was seen.
"""
import os
import re
import subprocess
import sys

# Official cases whose data is wrong for what idem (and ONNX Runtime) rightly do: each must FAIL
# with its reason's text, so the list stays true both ways (a listed case that passes, or fails
# for another reason, fails the stage).
STALE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_stale_cases.txt")


def read_stale():
    stale = {}
    with open(STALE) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, expect = line.split("\t", 1)
                stale[name] = expect.strip()
    return stale

SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")


def main():
    if len(sys.argv) < 4 or not sys.argv[1].isdigit() or sys.argv[3] != "test":
        print(__doc__)
        return 2
    floor = int(sys.argv[1])
    command = sys.argv[2:]
    if "-q" in command or "--quiet" in command:
        print("check_test_summary: do not pass -q: the per-case lines are counted")
        return 2
    r = subprocess.run(command, capture_output=True, text=True, timeout=3000)
    lines = r.stdout.splitlines()
    problems = []
    m = SUMMARY.match(lines[-1]) if lines else None
    if m is None:
        problems.append("no summary line ('N passed, N failed[, N skipped]') at the end")
        passed = failed = skipped = None
    else:
        passed, failed = int(m.group(1)), int(m.group(2))
        skipped = int(m.group(3) or 0)
        counted = {kind: sum(1 for line in lines[:-1] if line.startswith(kind + " "))
                   for kind in ("PASS", "FAIL", "SKIP")}
        if (counted["PASS"], counted["FAIL"], counted["SKIP"]) != (passed, failed, skipped):
            problems.append(f"the case lines ({counted}) disagree with the summary")
        if len(lines) - 1 != sum(counted.values()):
            problems.append(f"{len(lines) - 1 - sum(counted.values())} unexpected lines")
        if (r.returncode == 0) != (failed == 0):
            problems.append(f"exit code {r.returncode} with {failed} failed")
        stale = read_stale()
        for line in lines[:-1]:
            kind, _, rest = line.partition(" ")
            name = rest.split(":", 1)[0]
            if name in stale:
                if kind != "FAIL" or stale[name] not in rest:
                    problems.append(f"{name} is listed in {STALE} as failing with "
                                    f"'{stale[name]}' but: {line}")
                else:
                    failed -= 1
        if failed:
            problems.append(f"{failed} failed")
        if passed < floor:
            problems.append(f"{passed} passed, fewer than the floor of {floor}")
    if r.stderr.strip():
        problems.append("stderr: " + r.stderr.strip()[-2000:])
    for line in lines:
        if line.startswith("FAIL "):
            print(line)
    if lines:
        print(lines[-1])
    if problems:
        for p in problems:
            print("check_test_summary: " + p)
        if m is None:
            print("last lines of the output:\n" + "\n".join(lines[-10:]))
        return 1
    print(f"check_test_summary: OK: {passed} passed (floor {floor}), 0 failed, {skipped} skipped")
    if passed > floor:
        print(f"check_test_summary: {passed - floor} more than the floor: raise it to {passed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
