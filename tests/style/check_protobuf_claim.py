#!/usr/bin/env python3
"""The layout's protobuf claim stays true: only src/onnx includes protobuf or libonnx headers,
except the files (or folders) that README.md or docs/*.md list, each with its reason, between
the markers <!-- protobuf-users --> and <!-- /protobuf-users -->, one `- `PATH`: reason` a line.

A file "includes" protobuf when it, or a project header it includes (followed through every
level), includes <google/protobuf/...> or <onnx/...>. Fails naming each unlisted file (with the
include chain), each listed path that no longer includes protobuf, and entries without a reason.

usage: check_protobuf_claim.py SOURCE_DIR
"""
import glob
import os
import re
import subprocess
import sys

SOURCE = re.compile(r"\.(c|cc|cpp|cxx|h|hh|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
PROTOBUF = re.compile(r"^(google/protobuf/|onnx/)")
ENTRY = re.compile(r"^\s*[-*]\s+`([^`]+)`\s*[:—-]+\s*(.*\S)?\s*$")


def project_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=root, capture_output=True, text=True, check=True).stdout
        files = out.split()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*"),
                                                             recursive=True)
                 if not os.path.relpath(p, root).startswith("build")]
    return sorted(f for f in files if SOURCE.search(f) and os.path.isfile(os.path.join(root, f)))


class Includes:
    def __init__(self, root):
        self.root = root
        self.memo = {}

    def direct(self, f):
        try:
            with open(os.path.join(self.root, f), errors="replace") as fh:
                text = fh.read()
        except OSError:
            return [], False
        deps, proto = [], False
        for name in INCLUDE.findall(text):
            if PROTOBUF.match(name):
                proto = True
                continue
            for cand in (name, os.path.join(os.path.dirname(f), name),
                         os.path.join("include", name)):
                if os.path.isfile(os.path.join(self.root, cand)):
                    deps.append(os.path.normpath(cand))
                    break
        return deps, proto

    def chain(self, f, stack=()):
        """The include chain from f to a protobuf/onnx header, or None."""
        if f in self.memo:
            return self.memo[f]
        if f in stack:
            return None
        deps, proto = self.direct(f)
        result = [f] if proto else None
        for d in deps if result is None else []:
            sub = self.chain(d, stack + (f,))
            if sub:
                result = [f] + sub
                break
        self.memo[f] = result
        return result


def listed_entries(root):
    docs = [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    entries, where, problems = [], [], []
    for path in docs:
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for block in re.findall(r"<!-- protobuf-users -->(.*?)<!-- /protobuf-users -->", text, re.S):
            where.append(os.path.relpath(path, root))
            for line in block.splitlines():
                if not line.strip():
                    continue
                m = ENTRY.match(line)
                if not m:
                    problems.append(f"{os.path.relpath(path, root)}: not an entry: {line.strip()}")
                    continue
                if not m.group(2) or len(m.group(2)) < 10:
                    problems.append(f"{m.group(1)}: listed without a reason")
                entries.append(m.group(1))
    return entries, where, problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    includes = Includes(root)
    users = {}
    for f in project_files(root):
        if f.startswith("src/onnx/"):
            continue
        c = includes.chain(f)
        if c:
            users[f] = c
    entries, where, problems = listed_entries(root)
    if len(where) != 1:
        problems.append(f"expected one <!-- protobuf-users --> list in README.md or docs/, found "
                        f"{len(where)} ({', '.join(where) or 'none'})")

    def covers(entry, f):
        return f == entry or (entry.endswith("/") and f.startswith(entry))

    for f, c in sorted(users.items()):
        if not any(covers(e, f) for e in entries):
            via = f" (via {' -> '.join(c[1:])})" if len(c) > 1 else ""
            problems.append(f"{f} includes protobuf/onnx headers{via} but is not listed: keep "
                            "protobuf inside src/onnx, or list it with the reason")
    for e in entries:
        if not any(covers(e, f) for f in users):
            problems.append(f"{e} is listed but includes no protobuf/onnx header: remove it "
                            "from the list")
    for p in problems:
        print("FAIL", p)
    if not problems:
        print(f"protobuf claim holds: outside src/onnx, {len(users)} files include protobuf, all "
              f"covered by the {len(entries)} entries in {where[0]}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
