#!/usr/bin/python3
"""Builds the seed corpora of the idem fuzz targets from the test data.

usage: build_corpus.py OUT_DIR

Writes OUT_DIR/{model,graph,value,backend_case}/ (one file per seed of at most 64 KiB, named by
SHA-1) from tests/data, the cases tests/gen/gen_cases.py and gen_bad_cases.py generate (into
OUT_DIR/gen), Debian's libonnx-testdata node and simple cases when installed, and the
regression inputs in tests/regressions. OUT_DIR is meant to live outside git (fuzz/corpus-work/ is ignored).

Seed formats (see fuzz/harness.h):
  model         a model.onnx file as is, or a recipe (below) after the 4 bytes 00 'I' 'G' 'R'
  graph         a recipe for fuzz/graph_recipe.cc: byte 0 picks the opset, byte 1 the node
                count, then per node one byte picks the operator and the following bytes its
                inputs, shapes and attributes (seeded here for every operator at every opset)
  value         1 selector byte ((element type code << 3) | kind) + a .pb value file;
                kind 0 tensor, 1 seq(tensor), 2 optional(tensor), 3 optional(seq(tensor)),
                4 seq(seq), 5 optional(optional), 6 seq(optional)
  backend_case  u32 LE model length, u32 LE input length, model, input_0.pb, output_0.pb
"""
import hashlib, os, random, shutil, stat, struct, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def regular(path):
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read(path):
    with open(path, 'rb') as f:
        return f.read()


MAX_LEN = 65536  # the fuzzers' -max_len


def put(folder, data):
    if len(data) > MAX_LEN:
        return
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), 'wb') as f:
        f.write(data)


def selector(type_proto):
    """Selector byte of fuzz_value for an onnx TypeProto (None when not expressible)."""
    kinds = []
    t = type_proto
    while True:
        which = t.WhichOneof('value')
        if which == 'tensor_type':
            elem = t.tensor_type.elem_type
            break
        if which == 'sequence_type':
            kinds.append('s'); t = t.sequence_type.elem_type
        elif which == 'optional_type':
            kinds.append('o'); t = t.optional_type.elem_type
        else:
            return None
    kind = {'': 0, 's': 1, 'o': 2, 'os': 3, 'ss': 4, 'oo': 5, 'so': 6}.get(''.join(kinds))
    if kind is None or not 0 <= elem <= 31:
        return None
    return (elem << 3) | kind


def case_folders(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        if 'model.onnx' in filenames and regular(os.path.join(dirpath, 'model.onnx')):
            yield dirpath


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(argv[1])
    gen = os.path.join(out, 'gen')
    for sub in ('model', 'graph', 'value', 'backend_case'):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))
    shutil.rmtree(gen, ignore_errors=True)
    os.makedirs(gen)
    for script, sub in (('gen_cases.py', 'cases'), ('gen_bad_cases.py', 'bad')):
        subprocess.run(['/usr/bin/python3', os.path.join(ROOT, 'tests/gen', script),
                        os.path.join(gen, sub)], check=True, stdout=subprocess.DEVNULL)

    import onnx  # Debian's python3-onnx
    tops = [os.path.join(ROOT, 'tests/data'), gen]
    # Debian's libonnx-testdata (scripts/setup.sh installs it): hundreds of official node cases.
    tops += [d for d in ('/usr/share/libonnx-testdata/data/node',
                         '/usr/share/libonnx-testdata/data/simple') if os.path.isdir(d)]
    counts = {'model': 0, 'graph': 0, 'value': 0, 'backend_case': 0}
    # Recipes: one node of each operator (the builder's 44 choices) at each of its 16 opsets,
    # with deterministic pseudo-random bytes below 0xE0 (valid-range choices), and chains of up
    # to 6 nodes. The model corpus gets the single-node recipes of 6 opsets, prefixed.
    rng = random.Random(17)
    for opset in range(16):
        for op in range(44):
            body = bytes([opset, 0, op]) + bytes(rng.randrange(0xE0) for _ in range(120))
            put(os.path.join(out, 'graph'), body)
            counts['graph'] += 1
            if opset < 6:
                put(os.path.join(out, 'model'), b'\x00IGR' + body)
                counts['model'] += 1
    for k in range(200):
        body = bytes([rng.randrange(16), 5]) + bytes(rng.randrange(0xE0) for _ in range(400))
        put(os.path.join(out, 'graph'), body)
        counts['graph'] += 1
    for top in tops:
        for case in case_folders(top):
            model_bytes = read(os.path.join(case, 'model.onnx'))
            put(os.path.join(out, 'model'), model_bytes)
            counts['model'] += 1
            inputs, outputs = [], []
            try:
                m = onnx.ModelProto()
                m.ParseFromString(model_bytes)
                inits = {i.name for i in m.graph.initializer}
                inputs = [v.type for v in m.graph.input if v.name not in inits]
                outputs = [v.type for v in m.graph.output]
            except Exception:  # a deliberately broken model: no typed seeds from it
                pass
            for data_set in sorted(os.listdir(case)):
                ds = os.path.join(case, data_set)
                if not data_set.startswith('test_data_set_') or not os.path.isdir(ds):
                    continue
                for prefix, declared in (('input', inputs), ('output', outputs)):
                    for k in range(16):
                        pb = os.path.join(ds, f'{prefix}_{k}.pb')
                        if not regular(pb):
                            continue
                        sel = selector(declared[k]) if k < len(declared) else None
                        for s in ([sel] if sel is not None else [0, 1, 2, 3]):
                            put(os.path.join(out, 'value'), bytes([s]) + read(pb))
                            counts['value'] += 1
                parts = []
                for name in ('input_0.pb', 'output_0.pb'):
                    path = os.path.join(ds, name)
                    parts.append(read(path) if regular(path) else b'')
                put(os.path.join(out, 'backend_case'),
                    struct.pack('<II', len(model_bytes), len(parts[0])) + model_bytes +
                    parts[0] + parts[1])
                counts['backend_case'] += 1
    # Regression inputs are seeds too (same formats), so fuzzing starts from the known bugs.
    reg = os.path.join(ROOT, 'tests/regressions')
    for name in sorted(os.listdir(reg)):
        for sub in counts:
            if name.startswith(f'fuzz_{sub}-'):
                put(os.path.join(out, sub), read(os.path.join(reg, name)))
                counts[sub] += 1
    for sub, n in counts.items():
        print(f'{sub}: {len(os.listdir(os.path.join(out, sub)))} seeds ({n} before dedup)')


if __name__ == '__main__':
    main(sys.argv)
